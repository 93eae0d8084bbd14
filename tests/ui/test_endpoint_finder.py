"""First start without a known endpoint: the app finds the model servers the user runs and lets
them pick one, on the welcome page and in Settings → Endpoint (probing off the GUI thread)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings

from desktop_mem.engine.config import load_config
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.settings.endpoint_finder import EndpointFinder
from desktop_mem.ui.settings.settings_dialog import SettingsDialog
from desktop_mem.ui.task_runner import TaskRunner

DEAD_URL = "http://127.0.0.1:9/v1"


def test_find_in_settings_lists_the_servers_models_and_fills_url_and_model(
        qtbot: Any, tmp_path: Path, runner: Any, settle: Any, scripted_llm: Any, make_config: Any) -> None:
    env = {"OPENAI_BASE_URL": scripted_llm.base_url}
    file = tmp_path / "config.yaml"
    file.write_text(f"llm:\n  base_url: {DEAD_URL}\n", encoding="utf-8")
    config = load_config(file, env={}, flags={"store.path": str(tmp_path / "s")})
    dialog = SettingsDialog(config, runner, app_settings=QSettings(str(tmp_path / "ui.ini"),
                            QSettings.Format.IniFormat), group="llm", env=env)
    qtbot.addWidget(dialog)
    finder = dialog.endpoint_finder
    finder.find_button.click()
    settle(runner)
    items = [finder.choices.itemText(i) for i in range(finder.choices.count())]
    assert items and all(scripted_llm.base_url in item for item in items)
    assert finder.use_button.isVisibleTo(dialog)
    model = finder.choices.itemData(0)[1]
    finder.use_button.click()
    assert dialog.value("llm.base_url") == scripted_llm.base_url and dialog.value("llm.model") == model
    assert dialog.changes()["llm.base_url"] == scripted_llm.base_url  # saved only on Save


def test_with_nothing_running_the_finder_says_what_to_install(
        qtbot: Any, tmp_path: Path, runner: Any, settle: Any) -> None:
    from desktop_mem.engine.chat.endpoint_discovery import KnownServer
    from desktop_mem.ui.settings import endpoint_finder

    finder = endpoint_finder.EndpointFinder(runner, DEAD_URL, env={})
    qtbot.addWidget(finder)
    real = endpoint_finder.discover_endpoints
    endpoint_finder.discover_endpoints = lambda env, url, key: real(  # type: ignore[assignment]
        env, url, key, servers=[KnownServer("Ollama", 9, "")], timeout=1)
    try:
        finder.find_servers()
        settle(runner)
    finally:
        endpoint_finder.discover_endpoints = real
    assert not finder.use_button.isVisibleTo(finder)
    assert "Ollama" in finder.status_label.text() and "LM Studio" in finder.status_label.text()


def test_the_welcome_page_looks_at_once_and_a_pick_opens_settings_filled_in(
        qtbot: Any, make_config: Any, scripted_llm: Any, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)  # what the finder looks at
    file = tmp_path / "config.yaml"
    file.write_text(f"llm:\n  base_url: {DEAD_URL}\n  model: none\n", encoding="utf-8")
    config = load_config(file, env={}, flags={"store.path": str(tmp_path / "s"), "watcher.enabled": False})
    win = MainWindow(config, TaskRunner(), settings=QSettings(str(tmp_path / "ui.ini"),
                                                              QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win.show()
    try:
        with qtbot.waitSignal(win.store_opened, timeout=60000):
            win.open_store()
        assert win.welcome is not None
        [finder] = win.welcome.findChildren(EndpointFinder)
        qtbot.waitUntil(lambda: finder.choices.count() > 0, timeout=20000)
        finder.use_button.click()
        dialog = win.settings_dialog
        assert dialog.tabs.tabText(dialog.tabs.currentIndex()) == "Endpoint"
        assert dialog.value("llm.base_url") == scripted_llm.base_url
        dialog.reject()
        # a server on another port is typed on the welcome page itself (issue #39)
        assert finder.url_edit.isVisibleTo(win.welcome) and finder.url_edit.text() == DEAD_URL
        finder.url_edit.setText("http://127.0.0.1:8765/v1")
        finder.use_url_button.click()
        dialog = win.settings_dialog
        assert dialog.value("llm.base_url") == "http://127.0.0.1:8765/v1"
        assert dialog.value("llm.model") == "none"
        dialog.reject()
    finally:
        win.runner.wait_for_done()
        win.shutdown()


def test_find_reads_the_url_typed_in_settings_names_its_state_and_shows_each_run(
        qtbot: Any, tmp_path: Path, runner: Any, settle: Any, scripted_llm: Any) -> None:
    # issue #39: "No model server answered" right under a URL Test connection had just reached
    file = tmp_path / "config.yaml"
    file.write_text(f"llm:\n  base_url: {DEAD_URL}\n", encoding="utf-8")
    config = load_config(file, env={}, flags={"store.path": str(tmp_path / "s")})
    dialog = SettingsDialog(config, runner, app_settings=QSettings(str(tmp_path / "ui.ini"),
                            QSettings.Format.IniFormat), group="llm", env={})
    qtbot.addWidget(dialog)
    dialog.set_text("llm.base_url", scripted_llm.base_url)  # typed, not saved
    finder = dialog.endpoint_finder
    finder.find_button.click()
    settle(runner)
    status = finder.status_label.text()
    assert f"Your URL {scripted_llm.base_url} answers" in status and "Looked at" in status
    assert finder.use_button.isVisibleTo(dialog)
