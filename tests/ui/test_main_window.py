"""The main window over a real store: loading, first run with the demo store, panes, shortcuts,
conversations, the second-instance dialog, settings and remembered window state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.workspace import MEMORIES_TAB, SUMMARY_TAB


@pytest.fixture
def ui_settings(tmp_path: Path) -> QSettings:
    return QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def window_config(make_config: Any, scripted_llm: Any) -> Any:
    return make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model", llm__api_key="test")


@pytest.fixture
def window(qtbot: Any, window_config: Any, ui_settings: QSettings) -> Iterator[MainWindow]:
    answers: list[bool] = []
    win = MainWindow(window_config, TaskRunner(), settings=ui_settings,
                     confirm=lambda *_: answers.pop(0) if answers else True)
    win.answers = answers  # type: ignore[attr-defined]
    qtbot.addWidget(win)
    win.show()
    yield win
    win.shutdown()


def _open(qtbot: Any, win: MainWindow) -> None:
    with qtbot.waitSignal(win.index_ready, timeout=60000), qtbot.waitSignal(win.store_opened, timeout=30000):
        win.open_store()
        assert win.stack.currentWidget() is win.loading_label  # shown before the store is open


def test_an_empty_store_offers_a_demo_store_that_fills_every_pane(qtbot: Any, window: MainWindow,
                                                                  qtmodeltester: Any) -> None:
    _open(qtbot, window)
    assert window.welcome is not None and window.stack.currentWidget() is window.welcome
    window.welcome.demo_button.click()
    qtbot.waitUntil(lambda: window.stack.currentWidget() is window.workspace, timeout=60000)
    ws = window.workspace
    assert ws is not None
    qtbot.waitUntil(lambda: ws.conversations.model.rowCount() >= 3, timeout=10000)
    qtmodeltester.check(ws.conversations.model)
    titles = [ws.conversations.model.index(r, 0).data() for r in range(ws.conversations.model.rowCount())]
    # the user's own facts are no conversation to chat in (issue #39): "Your facts", in Memories
    assert "Trip to Lisbon" in titles and "Global memory" not in titles and "global" not in titles
    combo = ws.browser.conversation_combo
    assert combo.itemText(combo.findData("global")) == "Your facts"
    qtbot.waitUntil(lambda: ws.browser.model.rowCount() > 5, timeout=10000)
    # Facts, not files: the demo's chat turns and summaries are counted apart (in the tooltip).
    qtbot.waitUntil(lambda: window.status.count_label.text().endswith("facts"), timeout=10000)
    assert "chat messages" in window.status.count_label.toolTip()
    # The probe imports openai in a worker: generous under load; the label says why if it fails.
    label = window.status.llm_label
    try:
        qtbot.waitUntil(lambda: label.text() == "LLM: connected", timeout=30000)
    except qtbot.TimeoutError as exc:
        raise AssertionError(f"{label.text()} | {label.toolTip()}") from exc

    ws.conversations.select("trip-to-lisbon")
    window.show_tab(SUMMARY_TAB)
    qtbot.waitUntil(lambda: ws.summary.state is not None and ws.summary.state.summary is not None,
                    timeout=10000)
    assert "Lisbon" in ws.summary.summary_view.toPlainText()
    assert "Summarizes" in ws.summary.meta_label.text()


def test_ctrl_f_focuses_search_and_search_finds_by_meaning(qtbot: Any, window: MainWindow) -> None:
    _open(qtbot, window)
    assert window.engine is not None
    added: list[Any] = []
    for text in ("The user is vegetarian and never eats meat", "The user's laptop is a ThinkPad"):
        window.runner.submit_write(window.engine.add, text, on_result=added.append)  # as the app writes
    qtbot.waitUntil(lambda: len(added) == 2, timeout=10000)
    if window.welcome is not None:
        window.welcome.empty_button.click()
    ws = window.workspace
    assert ws is not None
    window.find_action.trigger()
    assert ws.tabs.currentIndex() == MEMORIES_TAB and ws.browser.search_edit.hasFocus()
    qtbot.keyClicks(ws.browser.search_edit, "vegetarian")
    qtbot.waitUntil(lambda: ws.browser.model.searching, timeout=10000)
    assert ws.browser.model.memory_at(0).text.startswith("The user is vegetarian")  # type: ignore[union-attr]


def test_new_rename_and_delete_conversation(qtbot: Any, window: MainWindow) -> None:
    _open(qtbot, window)
    ws = window.workspace
    if window.welcome is not None:
        window.welcome.empty_button.click()
    assert ws is not None and window.engine is not None
    ws.conversations.create_conversation("Holiday plans")
    qtbot.waitUntil(lambda: ws.conversations.current == "holiday-plans"
                    and ws.conversations.model.row_of("holiday-plans") is not None, timeout=10000)
    assert ws.chat.conversation == "holiday-plans"
    ws.conversations.rename("holiday-plans", "Summer holiday")
    qtbot.waitUntil(lambda: "Summer holiday" in [ws.conversations.model.index(r, 0).data()
                                                 for r in range(ws.conversations.model.rowCount())],
                    timeout=10000)
    added: list[Any] = []
    window.runner.submit_write(window.engine.add, "The user wants to visit Crete",
                               conversation_id="holiday-plans", on_result=added.append)
    qtbot.waitUntil(lambda: bool(added), timeout=10000)
    ws.conversations.delete("holiday-plans")
    qtbot.waitUntil(lambda: ws.conversations.model.row_of("holiday-plans") is None, timeout=10000)
    assert all(m.deleted for m in window.engine.list_memories(conversation_id="holiday-plans",
                                                              include_deleted=True))


def test_a_second_window_on_the_same_store_offers_read_only(qtbot: Any, window: MainWindow,
                                                            window_config: Any, tmp_path: Path) -> None:
    _open(qtbot, window)
    answers = [True]
    second = MainWindow(window_config, TaskRunner(),
                        settings=QSettings(str(tmp_path / "second.ini"), QSettings.Format.IniFormat),
                        confirm=lambda _p, title, text: answers.pop(0) if title == "Store in use" else False)
    qtbot.addWidget(second)
    with qtbot.waitSignal(second.store_opened, timeout=30000):
        second.open_store()
    assert answers == [] and second.engine is not None and second.engine.read_only
    assert "read-only" in second.windowTitle()
    second.shutdown()


def test_window_geometry_is_remembered(qtbot: Any, window_config: Any, ui_settings: QSettings) -> None:
    first = MainWindow(window_config, TaskRunner(), settings=ui_settings)
    qtbot.addWidget(first)
    first.resize(720, 520)
    first.show()
    first.shutdown()
    second = MainWindow(window_config, TaskRunner(), settings=ui_settings)
    qtbot.addWidget(second)
    assert (second.width(), second.height()) == (720, 520)
    second.shutdown()


def test_sync_from_the_menu_pushes_and_reports_conflicts_without_blocking(
    qtbot: Any, make_config: Any, tmp_path: Path, ui_settings: QSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from desktop_mem.engine.facade import MemoryEngine
    from desktop_mem.engine.transfer.git_sync import sync

    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    other_config = make_config(tmp_path / "other", sync__remote_url=str(remote))
    config = make_config(tmp_path / "mine", sync__remote_url=str(remote))
    with MemoryEngine(other_config) as other:  # another machine: a fact, pushed
        shared = other.add("The user lives in Berlin")
        sync(other._parts)
    with MemoryEngine(config) as mine:  # this machine pulls it, then both edit it
        sync(mine._parts)
        mine.edit(shared.id, text="The user lives in Munich")
    with MemoryEngine(other_config) as other:
        other.edit(shared.id, text="The user lives in Hamburg")
        sync(other._parts)
    boxes: list[str] = []
    monkeypatch.setattr("PySide6.QtWidgets.QMessageBox.open", lambda box: boxes.append(box.text()))
    win = MainWindow(config, TaskRunner(), settings=ui_settings)
    qtbot.addWidget(win)
    win.show()
    _open(qtbot, win)
    try:
        with qtbot.waitSignal(win.sync_finished, timeout=60000) as blocker:
            win.sync_action.trigger()
        message = str(blocker.args[0])
        assert "1 commit(s) in" in message and "Changed on both machines" in message
        assert boxes and "yours kept" in boxes[0], "conflicts are shown in a non-modal box"
        engine = win.engine
        assert engine is not None
        texts = {m.text for m in engine.list_memories()}
        assert {"The user lives in Munich", "The user lives in Hamburg"} <= texts
    finally:
        win.shutdown()


def test_sync_without_a_remote_says_what_to_set(qtbot: Any, window: MainWindow) -> None:
    _open(qtbot, window)
    with qtbot.waitSignal(window.sync_finished, timeout=30000) as blocker:
        window.sync_action.trigger()
    assert "sync.remote_url" in str(blocker.args[0])
