"""Long work shows progress in the status bar and can be cancelled: import, index rebuild."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.widgets.progress import Cancelled, ProgressPanel, ProgressReporter
from tests.ui.conftest import open_demo


def test_the_panel_shows_a_workers_progress_and_cancel_stops_it(qtbot: Any) -> None:
    panel = ProgressPanel()
    qtbot.addWidget(panel)
    reporter = ProgressReporter("Importing facts.json", cancellable=True)
    panel.start(reporter)
    assert panel.isVisibleTo(panel.parentWidget() or panel) and panel.bar.maximum() == 0  # busy at first
    worker = threading.Thread(target=reporter, args=(5, 10))
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: panel.bar.value() == 5, timeout=2000)
    assert panel.label.text() == "Importing facts.json: 5 of 10" and panel.bar.maximum() == 10
    worker = threading.Thread(target=reporter, args=(2, 4, "reading later messages"))
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: panel.bar.value() == 2, timeout=2000)
    assert panel.label.text() == "Importing facts.json: reading later messages, 2 of 4"
    panel.cancel_button.click()
    assert "cancelling" in panel.label.text()
    with pytest.raises(Cancelled):
        reporter(6, 10)
    panel.finish(reporter)
    assert panel.isHidden() and reporter.finished


def _facts(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps([{"text": f"The user collected stamp number {i}"} for i in range(n)]),
                    encoding="utf-8")
    return path


def test_import_from_the_window_reports_what_it_did(qtbot: Any, opened_window: MainWindow,
                                                    tmp_path: Path) -> None:
    ws = open_demo(qtbot, opened_window)
    with qtbot.waitSignal(opened_window.operation_finished, timeout=60000) as finished:
        opened_window.import_file(_facts(tmp_path, 3))
    assert finished.args[0] == "Imported 3 facts and 0 turns in 1 conversation(s)."
    qtbot.waitUntil(lambda: any("stamp number 2" in (ws.browser.model.memory_at(r).text)  # type: ignore[union-attr]
                                for r in range(ws.browser.model.rowCount())), timeout=10000)


def test_a_cancelled_import_writes_nothing(qtbot: Any, opened_window: MainWindow, tmp_path: Path) -> None:
    open_demo(qtbot, opened_window)
    engine = opened_window.engine
    assert engine is not None
    before = len(engine.list_memories())
    gate = threading.Event()
    opened_window.runner.submit_write(gate.wait, 30)  # hold the writer so Cancel comes first
    with qtbot.waitSignal(opened_window.operation_finished, timeout=60000) as finished:
        reporter = opened_window.import_file(_facts(tmp_path, 50))
        assert reporter is not None
        reporter.cancel()
        gate.set()
    assert finished.args[0].startswith("Nothing was imported") and "cancelled" in finished.args[0]
    assert len(engine.list_memories()) == before
    assert not any("stamp number" in m.text for m in engine.list_memories())


def test_rebuild_index_from_the_menu(qtbot: Any, opened_window: MainWindow) -> None:
    open_demo(qtbot, opened_window)
    qtbot.waitUntil(lambda: opened_window.status.index_label.text() == "Index ready", timeout=60000)
    engine = opened_window.engine
    assert engine is not None
    count = len(engine.list_memories(include_deleted=True, include_summaries=True))
    with qtbot.waitSignal(opened_window.operation_finished, timeout=120000) as finished:
        opened_window.reindex_action.trigger()
    assert finished.args[0] == f"Index rebuilt: {count:,} memories embedded."
    assert opened_window.status.index_label.text() == "Index ready"
    assert engine.search("Lisbon"), "search works on the rebuilt index"
