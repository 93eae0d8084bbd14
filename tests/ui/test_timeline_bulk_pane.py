"""The timeline pane on a commit of many memory files (an import, a migration; issue #25)."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import Qt

from desktop_mem.engine.history import timeline
from desktop_mem.engine.models import EventType, Operation, TimelineEvent
from desktop_mem.ui.timeline.timeline_pane import TimelinePane

FILES = 40


def _bulk_pane(qtbot: Any, engine: Any, runner: Any, settle: Any, monkeypatch: pytest.MonkeyPatch,
               conversations: tuple[str, ...] = ("c1",)) -> tuple[TimelinePane, list[Any]]:
    """A Timeline pane over one import commit of FILES memories (a bulk commit), listed."""
    monkeypatch.setattr(timeline, "DETAIL_LIMIT", FILES - 1)
    with engine._parts.writer.transaction(Operation.IMPORT, f"Import {FILES} facts", "c1") as tx:
        added = [tx.add(f"Imported fact {i}", conversation_id=conversations[i % len(conversations)])
                 for i in range(FILES)]
    pane = TimelinePane(engine, runner, page_size=10)
    qtbot.addWidget(pane)
    pane.reload()
    settle(runner)
    return pane, added


def test_a_bulk_commit_lists_its_files_and_selecting_it_compares_no_events_pairwise(
    qtbot: Any, engine: Any, runner: Any, settle: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pane, added = _bulk_pane(qtbot, engine, runner, settle, monkeypatch)
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


def test_selecting_a_bulk_commit_checks_its_events_only_when_a_filter_can_leave_some_out(
    qtbot: Any, engine: Any, runner: Any, settle: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 42k-file import selected on the GUI thread checked (and built) every event against a
    filter that kept them all: 0.2-0.4 s of stall. With no event filter nothing is checked or
    dimmed, and rows are built as they are drawn; a filter still dims what it leaves out."""
    from desktop_mem.engine.history.timeline_query import TimelineQuery

    pane, _added = _bulk_pane(qtbot, engine, runner, settle, monkeypatch, conversations=("c2", "c1"))
    checked = [0]
    matches = TimelineQuery.event_matches

    def counting(self: TimelineQuery, commit: Any, event: TimelineEvent) -> bool:
        checked[0] += 1
        return matches(self, commit, event)

    monkeypatch.setattr(TimelineQuery, "event_matches", counting)
    pane.select_commit(0)
    settle(runner)
    assert checked[0] == 0 and pane.events_model.rowCount() == FILES
    grey = [pane.events_model.data(pane.events_model.index(r, 0), Qt.ItemDataRole.ForegroundRole)
            for r in range(FILES)]
    assert grey == [None] * FILES  # nothing dimmed

    pane.conversation_combo.setCurrentIndex(pane.conversation_combo.findData("c2"))
    settle(runner)
    pane.select_commit(0)
    settle(runner)
    model = pane.events_model
    dimmed = [model.data(model.index(r, 0), Qt.ItemDataRole.ForegroundRole) is not None for r in range(FILES)]
    events = [pane.events_model.event_at(r) for r in range(FILES)]
    assert dimmed == [e is not None and e.conversation_id != "c2" for e in events]
    assert sum(dimmed) == FILES // 2
    assert pane.events_model.event_at(pane.event_view.currentIndex().row()).conversation_id == "c2"
