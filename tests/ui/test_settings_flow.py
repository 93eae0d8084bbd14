"""Settings can fix what they are opened for: the tab the banner names, environment values shown
with their source and overridable in the app, and saving keeps the conversation and typed text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from PySide6.QtCore import QSettings

from desktop_mem.engine.config import load_config
from desktop_mem.ui.app_overrides import APP_SOURCE, apply_app_overrides
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.settings.settings_dialog import SettingsDialog
from desktop_mem.ui.workspace import CHAT_TAB
from tests.ui.conftest import open_demo

DEAD_URL = "http://127.0.0.1:9/v1"


def test_an_environment_value_is_shown_with_its_source_and_can_be_overridden_in_the_app(
        qtbot: Any, tmp_path: Path, runner: Any, scripted_llm: Any) -> None:
    env = {"OPENAI_BASE_URL": DEAD_URL, "DESKTOP_MEM_CONFIG": os.environ["DESKTOP_MEM_CONFIG"]}
    config = load_config(env=env, flags={"store.path": str(tmp_path / "store")})
    assert config.source("llm.base_url") == "environment variable OPENAI_BASE_URL"
    ui = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    dialog = SettingsDialog(config, runner, app_settings=ui, group="llm", env=env)
    qtbot.addWidget(dialog)
    assert dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Endpoint"  # the name the LLM errors use
    editor = dialog.editors["llm.base_url"]
    assert editor.isEnabled() and editor.text() == DEAD_URL  # type: ignore[attr-defined]
    note = dialog.source_labels["llm.base_url"].text()
    assert "OPENAI_BASE_URL" in note and "overrides it in this app" in note
    editor.setText(scripted_llm.base_url)  # type: ignore[attr-defined]
    with qtbot.waitSignal(dialog.saved) as saved:
        dialog.save()
    new = saved.args[0]
    assert new["llm.base_url"] == scripted_llm.base_url and new.source("llm.base_url") == APP_SOURCE
    # It persists for the window (the next start) and wins over the environment there ...
    assert apply_app_overrides(config, ui, env)["llm.base_url"] == scripted_llm.base_url
    # ... while the config file, which the environment would shadow, is left alone.
    written = yaml.safe_load(Path(env["DESKTOP_MEM_CONFIG"]).read_text(encoding="utf-8")) or {}
    assert "base_url" not in (written.get("llm") or {})

    again = SettingsDialog(new, runner, app_settings=ui, group="llm", env=env)
    qtbot.addWidget(again)
    assert f"Overrides OPENAI_BASE_URL={DEAD_URL}" in again.source_labels["llm.base_url"].text()
    again.editors["llm.base_url"].setText(DEAD_URL)  # type: ignore[attr-defined]
    with qtbot.waitSignal(again.saved) as back:
        again.save()
    assert back.args[0].source("llm.base_url") == "environment variable OPENAI_BASE_URL"
    assert apply_app_overrides(config, ui, env)["llm.base_url"] == DEAD_URL


def test_the_chat_banner_opens_the_endpoint_tab_and_saving_keeps_the_conversation_and_typed_text(
        qtbot: Any, opened_window: MainWindow) -> None:
    window = opened_window
    ws = open_demo(qtbot, window)
    qtbot.waitUntil(lambda: ws.conversations.model.row_of("trip-to-lisbon") is not None, timeout=10000)
    ws.conversations.select("trip-to-lisbon")
    window.show_tab(CHAT_TAB)
    qtbot.waitUntil(lambda: len(ws.chat.messages()) > 0, timeout=10000)
    shown = [m.text for m in ws.chat.messages()]
    ws.chat.input.setPlainText("A message I typed but did not send")

    ws.chat.settings_requested.emit()  # the banner's "Open Settings…" link
    dialog = window.settings_dialog
    assert dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Endpoint"
    dialog.editors["retrieval.top_k"].setValue(7)  # type: ignore[attr-defined]
    with qtbot.waitSignal(window.store_opened, timeout=30000):
        dialog.save()
    ws = window.workspace
    assert ws is not None and window.config["retrieval.top_k"] == 7
    assert window.stack.currentWidget() is ws and ws.tabs.currentIndex() == CHAT_TAB
    qtbot.waitUntil(lambda: ws.chat.conversation == "trip-to-lisbon", timeout=10000)
    qtbot.waitUntil(lambda: [m.text for m in ws.chat.messages()] == shown, timeout=10000)
    assert ws.chat.input.toPlainText() == "A message I typed but did not send"


def test_saving_settings_keeps_the_memories_search_filters_and_selection(
        qtbot: Any, opened_window: MainWindow) -> None:
    from desktop_mem.ui.workspace import MEMORIES_TAB

    window = opened_window
    ws = open_demo(qtbot, window)
    window.show_tab(MEMORIES_TAB)
    browser = ws.browser
    browser.deleted_check.setChecked(True)
    browser.kind_combo.setCurrentIndex(browser.kind_combo.findData("fact"))
    browser.refresh()
    qtbot.waitUntil(lambda: browser.model.rowCount() > 1 and browser.count_label.text()
                    not in ("loading…", "searching…"), timeout=20000)
    browser.select_memory(browser.model.memory_at(1).id)  # type: ignore[union-attr]
    chosen = browser.model.memory_at(1).id  # type: ignore[union-attr]
    window.open_settings()
    dialog = window.settings_dialog
    dialog.editors["retrieval.top_k"].setValue(6)  # type: ignore[attr-defined]
    with qtbot.waitSignal(window.store_opened, timeout=30000):
        dialog.save()
    ws = window.workspace
    assert ws is not None and ws.tabs.currentIndex() == MEMORIES_TAB
    browser = ws.browser
    assert browser.deleted_check.isChecked() and browser.kind_combo.currentData() == "fact"
    qtbot.waitUntil(lambda: browser.model.row_of(chosen) is not None
                    and browser.table.currentIndex().row() == browser.model.row_of(chosen), timeout=20000)


def test_settings_open_on_the_endpoint_tab_while_the_llm_is_unreachable(
        qtbot: Any, opened_window: MainWindow) -> None:
    window = opened_window
    open_demo(qtbot, window)
    window.status.show_llm_problem("unreachable")
    window.status.llm_label.setProperty("state", "bad")
    window.open_settings()  # Ctrl+, with no tab named
    dialog = window.settings_dialog
    assert dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Endpoint"
    dialog.reject()
