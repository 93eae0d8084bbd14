"""The window opens a store on the last session's first page of the memory list and loads the
catalog behind it (issue #36: at 100,000 memories the window was usable after 2.8 s, most of it
building every memory before the first page could show).

The catalog's load is held on the writer here (the real load, run once the test lets it go), so
what a user sees and does before it ends is observed, not raced: the page is there with the count
of all, marked as loading; a sort asked for meanwhile waits visibly and then sorts every memory,
not the page; nothing waits on the GUI thread; the listing then comes from the store itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.models import Operation, utc_now
from desktop_mem.ui import main_window, store_session
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.memories.memory_browser import LOADING_NOTE
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.workspace import MEMORIES_TAB

N = 2_000
HOLD_TIMEOUT = 60


def _texts(window: MainWindow) -> list[str]:
    assert window.workspace is not None
    model = window.workspace.browser.model
    return [m.text for m in (model.memory_at(r) for r in range(model.rowCount())) if m is not None]


@pytest.fixture
def store(make_config: Any, scripted_llm: Any) -> Iterator[Any]:
    """A store of N facts, closed once (which keeps its first page); the window's config."""
    config = make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model", llm__api_key="test")
    start = utc_now() - timedelta(days=30)
    with MemoryEngine.open(config) as engine, \
            engine._parts.writer.transaction(Operation.IMPORT, f"{N} facts") as tx:
        for i in range(N):
            # the text's order is not the age's order: a sort of the page alone would differ
            tx.add(f"Fact {(i * 7919) % N:04d} about the garden", conversation_id=f"conv-{i % 4}",
                   kind="fact", source="import", created_at=start + timedelta(minutes=i))
    yield config


@pytest.fixture
def held_load(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The writer's load of the catalog (the real one) starts only once the event is set."""
    release = threading.Event()
    real = store_session.finish_open

    def finish_open(engine: MemoryEngine, *rest: Any) -> Any:
        release.wait(HOLD_TIMEOUT)
        return real(engine, *rest)

    monkeypatch.setattr(main_window, "finish_open", finish_open)
    yield release
    release.set()


def _window(qtbot: Any, config: Any, tmp_path: Path) -> MainWindow:
    settings = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    settings.setValue("window/tab", MEMORIES_TAB)
    win = MainWindow(config, TaskRunner(), settings=settings, confirm=lambda *_: True)
    qtbot.addWidget(win)
    win.show()
    return win


def test_the_first_page_shows_before_the_catalog_and_a_sort_waits_for_all_of_it(
    qtbot: Any, store: Any, tmp_path: Path, held_load: threading.Event, caplog: pytest.LogCaptureFixture,
) -> None:
    with MemoryEngine.open(store) as engine:
        newest = [m.text for m in engine.list_page(0, 500).memories]
    caplog.set_level(logging.WARNING)
    win = _window(qtbot, store, tmp_path)
    with qtbot.waitSignal(win.store_opened, timeout=30000):
        win.open_store()
    ws = win.workspace
    assert ws is not None and win.stack.currentWidget() is ws
    browser = ws.browser
    assert not win.engine.catalog_loaded  # type: ignore[union-attr]
    # what the user sees while the catalog loads: the page and the count of all, marked
    assert browser.provisional
    assert browser.model.total() == N and _texts(win) == newest
    assert LOADING_NOTE in browser.count_label.text()
    # an open of a row works on the page's memory
    browser.table.selectRow(3)
    assert ws.editor.memory is not None and ws.editor.memory.text == newest[3]
    # a sort asked for now waits for every memory, visibly: the page is not sorted on its own
    loaded: list[int] = []
    browser.page_loaded.connect(loaded.append)
    browser.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)  # a click on "Text"
    qtbot.wait(300)
    assert loaded == [] and browser.provisional and _texts(win) == newest
    assert browser.count_label.text() == LOADING_NOTE
    assert not [r for r in caplog.records if "main thread waits" in r.getMessage()]  # no GUI freeze
    held_load.set()
    qtbot.waitUntil(lambda: bool(loaded) and not browser.provisional, timeout=60000)
    assert win.engine.catalog_loaded  # type: ignore[union-attr]
    assert _texts(win)[:3] == ["Fact 0000 about the garden", "Fact 0001 about the garden",
                               "Fact 0002 about the garden"]  # over all 2,000, not the page's 500
    assert browser.model.total() == N and browser.count_label.text() == f"{N:,} memories"
    assert not [r for r in caplog.records if "main thread waits" in r.getMessage()]
    win.shutdown()


def test_the_store_listing_replaces_the_page_and_the_index_opens(
    qtbot: Any, store: Any, tmp_path: Path,
) -> None:
    """Unheld: the page, then the store's own listing (the same rows), then the index."""
    win = _window(qtbot, store, tmp_path)
    with qtbot.waitSignal(win.index_ready, timeout=120000):
        win.open_store()
    ws = win.workspace
    assert ws is not None and not ws.browser.provisional
    assert ws.browser.model.total() == N
    with MemoryEngine.open_first(store, read_only=True) as reader:
        reader.finish_opening()
        assert _texts(win) == [m.text for m in reader.list_page(0, 500).memories]
    win.shutdown()
    # the close kept the page for the next start, and a store without one opens whole as before
    cache = Path(store.store_path) / "memory_index.json.first_page"
    assert cache.exists()
    cache.unlink()
    win2 = _window(qtbot, store, tmp_path)
    with qtbot.waitSignal(win2.store_opened, timeout=30000):
        win2.open_store()
    assert win2.engine is not None and win2.engine.catalog_loaded
    ws2 = win2.workspace
    assert ws2 is not None
    qtbot.waitUntil(lambda: ws2.browser.model.total() == N, timeout=30000)
    assert not ws2.browser.provisional
    win2.shutdown()
