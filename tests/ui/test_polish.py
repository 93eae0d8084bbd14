"""Small things a user notices: plain text in lists, Restore only for deleted memories, global
memory kept, a Help menu listing the shortcuts."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_mem.engine.models import GLOBAL_CONVERSATION, EventType
from desktop_mem.ui.conversation_list import ConversationList
from desktop_mem.ui.memories.memory_model import first_line
from desktop_mem.ui.timeline.timeline_pane import TimelinePane


@pytest.mark.parametrize(("markdown", "shown"), [
    ("**Lisbon** trip in *May*", "Lisbon trip in May"),
    ("- [x] buy `milk`", "buy milk"),
    ("## Plans with [a link](https://example.org)", "Plans with a link"),
    ("snake_case_name and 2 * 3 * 4 stay", "snake_case_name and 2 * 3 * 4 stay"),
    ("\n\n***both*** __bold__ ~~gone~~", "both bold gone"),
])
def test_lists_show_markdown_as_plain_text(markdown: str, shown: str) -> None:
    assert first_line(markdown) == shown


def test_restore_is_offered_only_while_the_memory_is_still_deleted(qtbot: Any, engine: Any, runner: Any,
                                                                   settle: Any) -> None:
    memory = engine.add("The user likes tea")
    engine.delete(memory.id)
    pane = TimelinePane(engine, runner)
    qtbot.addWidget(pane)
    pane.reload()
    settle(runner)
    pane.select_commit(0)  # "Delete fact: …", newest
    settle(runner)
    assert pane.current_event() is not None and pane.current_event().type == EventType.DELETE  # type: ignore[union-attr]
    assert pane.restore_button.isEnabled()
    engine.restore(memory.id)
    pane.reload()
    settle(runner)
    pane.select_commit(1)  # the same delete, now that the memory is live again
    settle(runner)
    assert pane.current_event().type == EventType.DELETE  # type: ignore[union-attr]
    assert not pane.restore_button.isEnabled() and "live now" in pane.restore_button.toolTip()


def test_global_memory_can_be_neither_renamed_nor_deleted(qtbot: Any, engine: Any, runner: Any,
                                                          settle: Any) -> None:
    engine.add("The user is left-handed")  # global
    engine.add("The user flies on Friday", conversation_id="trip")
    conversations = ConversationList(engine, runner, lambda *_: True)
    qtbot.addWidget(conversations)
    conversations.reload()
    settle(runner)
    # the user's own facts are not a conversation (issue #39): nothing offers to rename or delete them
    assert GLOBAL_CONVERSATION not in conversations.model.ids() and conversations.model.ids() == ["trip"]
    conversations.select("trip")
    assert conversations.rename_button.isEnabled() and conversations.delete_button.isEnabled()


def test_help_lists_every_shortcut(opened_window: Any) -> None:
    text = opened_window.shortcuts_text()
    for keys in ("Ctrl+N", "Ctrl+F", "Esc", "Ctrl+1", "Ctrl+,", "Ctrl+Enter", "F1"):
        assert keys in text
    assert "Stop reply" in text and "New conversation" in text


def test_a_notice_is_posted_non_modally_and_its_action_runs_once(qtbot: Any, opened_window: Any) -> None:
    undone: list[bool] = []
    opened_window.post_notice("Claude Desktop added 2 memories", "Undo", lambda: undone.append(True))
    bar = opened_window.notices
    assert bar.isVisible() and bar.label.text() == "Claude Desktop added 2 memories"
    assert bar.action_button.text() == "Undo" and bar.action_button.isVisible()
    bar.action_button.click()
    assert undone == [True] and not bar.isVisible()
    opened_window.post_notice("Synced")
    assert bar.isVisible() and not bar.action_button.isVisible()


def test_a_long_conversation_list_scrolls_with_a_drawn_scroll_bar(qtbot: Any, engine: Any, runner: Any,
                                                                   settle: Any) -> None:
    """500 conversations (an imported history): the side bar's scroll bar was a black bar, its
    track left unpainted under the list's transparent background (seen at 100k memories)."""
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QApplication

    from desktop_mem.ui.app import application

    app = QApplication.instance()
    assert isinstance(app, QApplication)
    before = app.styleSheet()
    application()  # the app's own style sheet, as the window runs with it
    try:
        for i in range(60):
            engine.new_conversation(f"Trip number {i}")
        side = ConversationList(engine, runner, lambda *_a: True)
        qtbot.addWidget(side)
        side.resize(220, 300)
        side.show()
        side.reload()
        settle(runner)
        bar = side.view.verticalScrollBar()
        qtbot.waitUntil(lambda: bar.isVisible() and bar.maximum() > 0)
        image = side.grab().toImage()
        dark = [(x, y) for y in range(0, bar.height(), 3) for x in range(bar.width())
                if image.pixelColor(bar.mapTo(side, QPoint(x, y))).lightness() < 60]
        assert dark == []
    finally:
        app.setStyleSheet(before)
