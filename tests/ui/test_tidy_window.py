"""Tidy-up in the window: Memories → Tidy up… runs on the writer with progress, its proposals open
in Review, and the Memories pane's health line counts likely duplicates after the index is open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.ui.conftest import duplicate_store, open_indexed_window


def test_tidy_up_from_the_menu_opens_its_proposals_in_review_and_the_health_line_counts(
        qtbot: Any, make_config: Any, scripted_llm: Any, tmp_path: Path) -> None:
    win = open_indexed_window(qtbot, duplicate_store(make_config, scripted_llm), tmp_path)
    try:
        assert win.workspace is not None
        win.show_tab(1)  # Memories
        health = win.workspace.browser.health_bar
        qtbot.waitUntil(lambda: "1 likely duplicates" in health.label.text(), timeout=30000)

        with qtbot.waitSignal(win.operation_finished, timeout=60000) as done:
            win.tidy_action.trigger()

        assert "1 proposals wait in Review (1 duplicate)" in str(done.args[0])
        qtbot.waitUntil(lambda: win.review_badge.dialog is not None and win.review_badge.dialog.isVisible(),
                        timeout=10000)
        dialog = win.review_badge.dialog
        qtbot.waitUntil(lambda: dialog.list.count() == 1, timeout=10000)
        assert dialog.list.item(0).text().startswith("Tidy-up: Merge 2 duplicates")
        assert win.engine is not None and len(win.engine.list_memories(role="memory")) == 2  # nothing applied
    finally:
        win.shutdown()


def test_the_idle_tidy_up_runs_once_per_spell_of_changes_and_is_off_by_default(qtbot: Any) -> None:
    from desktop_mem.engine.models import Operation, StoreChange
    from desktop_mem.ui.memories.idle_tidy import IdleTidy

    def change(operation: Operation) -> StoreChange:
        return StoreChange(operation=operation, memory_ids=(), conversation_id=None, commit=None)

    off = IdleTidy(0, lambda: None)
    off.on_store_changed(change(Operation.ADD))
    assert not off.waiting  # the default: never

    runs: list[int] = []
    idle = IdleTidy(1, lambda: runs.append(1))
    idle._timer.setInterval(50)  # a minute, shortened for the test
    idle.on_store_changed(change(Operation.TURN))
    qtbot.waitUntil(lambda: runs == [1], timeout=5000)
    idle.on_store_changed(change(Operation.REVIEW))  # its own proposals' commit
    qtbot.wait(200)
    assert runs == [1] and not idle.waiting
    idle.on_store_changed(change(Operation.EDIT))  # a new change: once more after the next quiet spell
    qtbot.waitUntil(lambda: runs == [1, 1], timeout=5000)
