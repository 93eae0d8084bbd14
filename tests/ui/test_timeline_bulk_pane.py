"""The timeline pane on a commit of many memory files (an import, a migration; issue #25)."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop_mem.engine.history import timeline
from desktop_mem.engine.models import EventType, Operation, TimelineEvent
from desktop_mem.ui.timeline_pane import TimelinePane

FILES = 40


def test_a_bulk_commit_lists_its_files_and_selecting_it_compares_no_events_pairwise(
    qtbot: Any, engine: Any, runner: Any, settle: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(timeline, "DETAIL_LIMIT", FILES - 1)
    with engine.writer.transaction(Operation.IMPORT, f"Import {FILES} facts", "c1") as tx:
        added = [tx.add(f"Imported fact {i}", conversation_id="c1") for i in range(FILES)]
    pane = TimelinePane(engine, runner, page_size=10)
    qtbot.addWidget(pane)
    pane.reload()
    settle(runner)

    compared = [0]
    equal = TimelineEvent.__eq__

    def counting(self: TimelineEvent, other: object) -> bool:
        compared[0] += 1
        return equal(self, other)

    monkeypatch.setattr(TimelineEvent, "__eq__", counting)
    pane.select_commit(0)  # on the GUI thread: it compared every event with every kept one
    settle(runner)
    assert compared[0] < 2 * FILES  # not FILES * FILES

    assert pane.events_model.rowCount() == FILES
    names = {pane.events_model.data(pane.events_model.index(r, 0), Qt.ItemDataRole.DisplayRole)
             for r in range(FILES)}
    assert all(n.startswith(f"{EventType.ADD.value}  ·  c1  ·  ") for n in names)
    assert {n.rsplit("  ·  ", 1)[1] for n in names} == {m.path.rsplit("/", 1)[1] for m in added}
    assert "changed 40 memory files" in pane.status_label.text()
