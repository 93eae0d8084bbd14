"""One message, one turn, whatever path the user takes (issue 21, item 4).

The path that stored a message twice: Send while the endpoint is down, the banner's "Open
Settings…", fix the URL, Save (the window reopens the store and rebuilds the panes), then Send on
the message put back in the box. The interrupted reply and its Retry must survive the Save, and
the message must be stored once. Real window, real pools, real store; the scripted LLM server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from desktop_mem.engine.config import load_config
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.workspace import CHAT_TAB

DEAD_URL = "http://127.0.0.1:9/v1"
MESSAGE = "My daughter Lena turns seven in May."


def _user_turns(window: MainWindow, conversation: str) -> list[str]:
    assert window.engine is not None
    return [m.text for m in window.engine.transcript(conversation) if m.role == "user"]


def _window(qtbot: Any, make_config: Any, tmp_path: Path) -> MainWindow:
    # The dead URL as the environment gives it (a command-line flag would outrank Settings).
    env = {"OPENAI_BASE_URL": DEAD_URL, "DESKTOP_MEM_CONFIG": os.environ["DESKTOP_MEM_CONFIG"]}
    config = load_config(env=env, flags={"store.path": str(tmp_path / "store"), "watcher.enabled": False,
                                         "llm.model": "test-model", "llm.api_key": "test",
                                         "llm.timeout": 2})
    win = MainWindow(config, TaskRunner(),
                     settings=QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat),
                     confirm=lambda *_: True)
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.store_opened, timeout=60000):
        win.open_store()
    assert win.welcome is not None
    win.welcome.empty_button.click()
    return win


def _fail_once(qtbot: Any, window: MainWindow) -> tuple[Any, str]:
    ws = window.workspace
    assert ws is not None
    window.show_tab(CHAT_TAB)
    ws.chat.input.setPlainText(MESSAGE)
    with qtbot.waitSignal(ws.chat.reply_finished, timeout=60000) as finished:
        ws.chat.send_button.click()
    assert finished.args[0].error_kind == "unreachable"
    assert not ws.chat.banner.isHidden() and "Open Settings" in ws.chat.banner_label.text()
    assert ws.chat.input.toPlainText() == MESSAGE  # put back in the box
    conversation = ws.chat.conversation
    assert conversation is not None
    qtbot.waitUntil(lambda: ws.chat.updating_memory == 0, timeout=60000)
    return ws, conversation


def _fix_url_in_settings(qtbot: Any, window: MainWindow, ws: Any, url: str) -> Any:
    ws.chat.settings_requested.emit()  # the banner's "Open Settings…"
    dialog = window.settings_dialog
    dialog.editors["llm.base_url"].setText(url)
    with qtbot.waitSignal(window.store_opened, timeout=60000):
        dialog.save()
    new = window.workspace
    assert new is not None and new is not ws
    return new


def test_send_after_fixing_the_url_in_settings_stores_the_message_once(
        qtbot: Any, make_config: Any, tmp_path: Path, scripted_llm: Any) -> None:
    scripted_llm.default_reply = "Seven is a great age."
    window = _window(qtbot, make_config, tmp_path)
    try:
        ws, conversation = _fail_once(qtbot, window)
        assert _user_turns(window, conversation) == [MESSAGE]
        ws = _fix_url_in_settings(qtbot, window, ws, scripted_llm.base_url)

        # The interrupted reply and its Retry are back, saying why the reply failed.
        qtbot.waitUntil(lambda: ws.chat.conversation == conversation and len(ws.chat.messages()) == 2,
                        timeout=10000)
        user, reply = ws.chat.messages()
        assert user.text == MESSAGE and "interrupted" in reply.who.text()
        assert not reply.retry_button.isHidden()
        assert "127.0.0.1:9" in reply.status_label.text() or "reach" in reply.status_label.text()
        assert ws.chat.input.toPlainText() == MESSAGE

        with qtbot.waitSignal(ws.chat.reply_finished, timeout=60000) as finished:
            ws.chat.send_button.click()  # Send on the message put back, not Retry
        assert finished.args[0].ok
        assert _user_turns(window, conversation) == [MESSAGE]
        assert [m.text for m in ws.chat.messages()] == [MESSAGE, "Seven is a great age."]
    finally:
        window.shutdown()


def test_retry_after_a_settings_save_stores_the_message_once(
        qtbot: Any, make_config: Any, tmp_path: Path, scripted_llm: Any) -> None:
    scripted_llm.default_reply = "Noted."
    window = _window(qtbot, make_config, tmp_path)
    try:
        ws, conversation = _fail_once(qtbot, window)
        ws = _fix_url_in_settings(qtbot, window, ws, scripted_llm.base_url)
        qtbot.waitUntil(lambda: len(ws.chat.messages()) == 2, timeout=10000)
        ws.chat.input.clear()
        with qtbot.waitSignal(ws.chat.reply_finished, timeout=60000) as finished:
            ws.chat.messages()[-1].retry_button.click()
        assert finished.args[0].ok
        assert _user_turns(window, conversation) == [MESSAGE]
        assert [m.text for m in ws.chat.messages()] == [MESSAGE, "Noted."]
    finally:
        window.shutdown()
