"""The window fits a 1280×720 screen in every pane and selection state, opens within a small
screen with its status bar visible; an empty store can chat."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QRect

from desktop_mem.ui.chat.chat_pane import NO_CONVERSATION_HINT
from desktop_mem.ui.main_window import FRAME_ALLOWANCE, MainWindow, initial_size
from desktop_mem.ui.workspace import CHAT_TAB, MEMORIES_TAB, SUMMARY_TAB, TIMELINE_TAB
from tests.ui.conftest import open_demo

SCREEN_W, SCREEN_H = 1280, 720
TITLE_BAR = 32  # a desktop's title bar (the offscreen platform draws none)


def _fits(qtbot: Any, win: MainWindow, state: str) -> None:
    qtbot.wait(50)  # let layouts settle after the state change
    hint = win.minimumSizeHint().expandedTo(win.minimumSize())
    assert hint.width() <= SCREEN_W and hint.height() <= SCREEN_H, f"{state}: minimum {hint.toTuple()}"
    win.resize(SCREEN_W, SCREEN_H)
    qtbot.waitUntil(lambda: (win.width(), win.height()) == (SCREEN_W, SCREEN_H), timeout=2000)


def test_every_pane_and_selection_fits_1280x720(qtbot: Any, opened_window: MainWindow) -> None:
    window = opened_window
    ws = open_demo(qtbot, window)
    qtbot.waitUntil(lambda: ws.browser.model.rowCount() > 5, timeout=30000)
    for tab in (CHAT_TAB, MEMORIES_TAB, SUMMARY_TAB, TIMELINE_TAB):
        window.show_tab(tab)
        _fits(qtbot, window, f"tab {tab}")

    window.show_tab(CHAT_TAB)
    ws.chat.show_problem("The LLM at http://127.0.0.1:9/v1 did not answer. " * 4)
    _fits(qtbot, window, "chat with a problem banner")

    window.show_tab(MEMORIES_TAB)
    ws.browser.table.selectRow(0)
    qtbot.waitUntil(lambda: ws.editor.memory is not None, timeout=5000)
    _fits(qtbot, window, "a live memory open")
    ws.browser.deleted_check.setChecked(True)
    def rows() -> list[Any]:
        return [ws.browser.model.memory_at(r) for r in range(ws.browser.model.rowCount())]

    qtbot.waitUntil(lambda: any(m.deleted for m in rows()), timeout=10000)
    deleted_row = next(r for r, m in enumerate(rows()) if m.deleted)
    ws.browser.table.selectRow(deleted_row)
    qtbot.waitUntil(lambda: ws.editor.memory is not None and ws.editor.memory.deleted, timeout=5000)
    _fits(qtbot, window, "a deleted memory open")
    ws.editor._show_conflict("This memory changed on disk while you were editing it. " * 3)
    _fits(qtbot, window, "editor conflict banner")

    window.show_tab(TIMELINE_TAB)
    qtbot.waitUntil(lambda: ws.timeline.model.rowCount() > 3, timeout=30000)  # loaded when first shown
    ws.timeline.commit_view.setCurrentIndex(ws.timeline.model.index(0, 0))
    qtbot.waitUntil(lambda: ws.timeline.events_model.rowCount() > 0, timeout=10000)
    ws.timeline.event_view.setCurrentIndex(ws.timeline.events_model.index(0, 0))
    _fits(qtbot, window, "a timeline event selected")

    window.show_tab(SUMMARY_TAB)
    ws.conversations.select("trip-to-lisbon")
    qtbot.waitUntil(lambda: ws.summary.state is not None and ws.summary.state.summary is not None,
                    timeout=10000)
    _fits(qtbot, window, "a summary with versions")


def test_an_empty_store_says_send_starts_a_conversation_and_it_does(qtbot: Any, opened_window: MainWindow,
                                                                     scripted_llm: Any) -> None:
    scripted_llm.default_reply = "Hello there!"
    window = opened_window
    assert window.welcome is not None
    window.welcome.empty_button.click()
    ws = window.workspace
    assert ws is not None and ws.conversations.model.rowCount() == 0
    assert ws.chat.empty_label.text() == NO_CONVERSATION_HINT and ws.chat.send_button.isEnabled()
    _fits(qtbot, window, "empty store")
    ws.chat.input.setPlainText("Hi, I am planning a trip to Crete")
    with qtbot.waitSignal(ws.chat.reply_finished, timeout=30000) as finished:
        ws.chat.send_button.click()
    assert finished.args[0].ok and finished.args[0].text == "Hello there!"
    qtbot.waitUntil(lambda: ws.conversations.current is not None
                    and ws.conversations.model.row_of(ws.conversations.current) is not None, timeout=10000)
    assert ws.chat.conversation == ws.conversations.current
    assert ws.conversations.model.index(0, 0).data() == "Hi, I am planning a trip"
    assert [m.text for m in ws.chat.messages()] == ["Hi, I am planning a trip to Crete", "Hello there!"]


def test_the_first_window_leaves_room_for_title_bar_panel_and_status_bar(qtbot: Any,
                                                                         opened_window: MainWindow) -> None:
    """1366×768 with a 32 px panel: the window used to open 780 px high, its status bar below the
    screen's edge. It now opens inside the free area with room for the title bar."""
    laptop = QRect(0, 32, 1366, 768 - 32)  # available geometry: a top panel left out
    size = initial_size(laptop)
    assert size.width() <= 1200 and size.height() + TITLE_BAR <= laptop.height(), size.toTuple()
    assert initial_size(QRect(0, 0, 2560, 1440)).toTuple() == (1200, 780)  # big screens: unchanged

    window = opened_window  # on the test screen (offscreen: 800×800; narrower than the panes need)
    free = window.screen().availableGeometry()
    frame = window.frameGeometry()
    assert frame.height() + TITLE_BAR <= free.height(), (frame.getRect(), free.getRect())
    status = window.statusBar()
    assert status.isVisible() and status.geometry().bottom() < window.height()
    # And the panes can be that small: the minimum fits the laptop's free area too.
    ws = open_demo(qtbot, window)
    qtbot.waitUntil(lambda: ws.browser.model.rowCount() > 5, timeout=30000)
    for tab in (CHAT_TAB, MEMORIES_TAB, SUMMARY_TAB, TIMELINE_TAB):
        window.show_tab(tab)
        qtbot.wait(50)
        hint = window.minimumSizeHint().expandedTo(window.minimumSize())
        assert hint.height() <= size.height() and hint.width() <= size.width(), (tab, hint.toTuple())
    assert FRAME_ALLOWANCE.height() >= TITLE_BAR
