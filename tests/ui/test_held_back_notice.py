"""The window asks "Redact or keep?" when a memory edited outside the app holds a likely secret:
real engine, real git, the answer on the writer; the secret never shows in the bar."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.ui.engine_bridge import EngineBridge
from desktop_mem.ui.held_back_notice import HeldBackNotice

KEY = "sk-proj-Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0HgFeDcBa"
AWS_KEY = "AKIAZ7QW3ERT5YUI9OPL"


def _hand_edit(engine: MemoryEngine, rel: str, text: str) -> None:
    path = engine.root / rel
    head, _, _body = path.read_text(encoding="utf-8").partition("\n---\n")
    path.write_text(f"{head}\n---\n\n{text}\n", encoding="utf-8")


def _committed(engine: MemoryEngine, rel: str) -> str:
    return subprocess.run(["git", "-C", str(engine.root), "show", f"HEAD:{rel}"], capture_output=True,
                          text=True, check=True).stdout


def _shown(notice: HeldBackNotice) -> str:
    return "\n".join([notice.label.text(), notice.label.toolTip(), notice.result_label.text()])


@pytest.fixture
def asked(qtbot: Any, engine: MemoryEngine, runner: Any) -> Iterator[tuple[HeldBackNotice, list[Path]]]:
    bridge = EngineBridge(engine)
    opened: list[Path] = []
    notice = HeldBackNotice(engine, runner, open_file=opened.append)
    qtbot.addWidget(notice)
    bridge.secret_held_back.connect(notice.on_held_back)
    bridge.store_changed.connect(notice.on_store_changed)
    yield notice, opened
    bridge.close()


def test_the_notice_names_file_and_kind_and_redact_then_keep_answer_it(
    qtbot: Any, engine: MemoryEngine, asked: tuple[HeldBackNotice, list[Path]], settle: Callable[..., None],
    runner: Any,
) -> None:
    notice, opened = asked
    tea, deploy = engine.add("User likes tea"), engine.add("Deploy notes")
    _hand_edit(engine, tea.path, f"Tea shop key {KEY}")
    _hand_edit(engine, deploy.path, f"Deploy with {AWS_KEY}")
    engine.apply_external_changes([tea.path])  # what the watcher does
    engine.apply_external_changes([deploy.path])
    qtbot.waitUntil(lambda: notice.isVisible() and "1 more file" in notice.label.text(), timeout=5000)
    seen = [_shown(notice)]
    assert "likely OpenAI API key: “Tea shop key [redacted:openai_key]”" in notice.label.text()
    assert Path(tea.path).name in notice.label.text() and notice.label.toolTip() == tea.path

    notice.open_button.click()
    assert opened == [engine.root / tea.path]

    with qtbot.waitSignal(notice.resolved, timeout=10000) as redacted:
        notice.redact_button.click()
        assert not notice.redact_button.isEnabled() and not notice.keep_button.isEnabled()
        assert notice.result_label.text().startswith("Redacting the likely secret in")
        seen.append(_shown(notice))
    assert KEY not in _committed(engine, tea.path) and "[redacted:openai_key]" in _committed(engine, tea.path)
    assert "Redacted the likely secret" in redacted.args[0]
    assert "likely AWS access key" in notice.label.text() and notice.keep_button.isEnabled()
    assert notice.result_label.isVisible() and notice.result_label.text() == redacted.args[0]
    seen.append(_shown(notice))

    with qtbot.waitSignal(notice.resolved, timeout=10000):
        notice.keep_button.click()
    settle(runner)
    assert AWS_KEY in _committed(engine, deploy.path), "kept as written"
    assert engine.held_back_files() == () and engine._parts.git.dirty_paths() == []
    assert notice.isVisible() and notice.label.text().startswith("Recorded")
    assert not notice.redact_button.isVisible() and notice.later_button.text() == "Close"
    seen.append(_shown(notice))
    assert not any(KEY in text or AWS_KEY in text for text in seen)


def test_an_answer_for_a_file_changed_since_is_refused_and_a_fixed_file_is_no_longer_asked_about(
    qtbot: Any, engine: MemoryEngine, asked: tuple[HeldBackNotice, list[Path]],
) -> None:
    notice, _opened = asked
    tea = engine.add("User likes tea")
    _hand_edit(engine, tea.path, f"Tea shop key {KEY}")
    engine.apply_external_changes([tea.path])
    qtbot.waitUntil(notice.isVisible, timeout=5000)
    _hand_edit(engine, tea.path, f"Tea shop key {KEY} and {AWS_KEY}")  # not seen by a watcher yet
    with qtbot.waitSignal(notice.resolve_failed, timeout=10000) as failed:
        notice.keep_button.click()
    assert "changed since you were asked" in failed.args[0] and KEY not in failed.args[0]
    assert notice.keep_button.isEnabled() and notice.current is not None
    assert KEY not in _committed(engine, tea.path)

    _hand_edit(engine, tea.path, "User likes green tea")  # the user took the keys out
    engine.apply_external_changes([tea.path])
    qtbot.waitUntil(lambda: not notice.isVisible(), timeout=5000)
    assert notice.current is None and "green tea" in _committed(engine, tea.path)


def test_the_window_asks_about_a_file_held_back_while_it_was_closed(
    qtbot: Any, make_config: Callable[..., Any], scripted_llm: Any, tmp_path: Path,
) -> None:
    from PySide6.QtCore import QSettings

    from desktop_mem.ui.main_window import MainWindow
    from desktop_mem.ui.task_runner import TaskRunner

    config = make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model", llm__api_key="test")
    with MemoryEngine(config) as eng:
        tea = eng.add("User likes tea")
        _hand_edit(eng, tea.path, f"Tea shop key {KEY}")
    win = MainWindow(config, TaskRunner(), settings=QSettings(str(tmp_path / "ui.ini"),
                                                              QSettings.Format.IniFormat),
                     confirm=lambda *_: True)
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.store_opened, timeout=30000):
        win.open_store()
    notice = win.held_back_notice
    assert notice is not None and notice.isVisibleTo(win) and not notice.isWindow()
    assert "OpenAI API key" in notice.label.text() and KEY not in _shown(notice)
    with qtbot.waitSignal(notice.resolved, timeout=30000):
        notice.redact_button.click()
    assert win.engine is not None and KEY not in _committed(win.engine, tea.path)
    win.shutdown()
