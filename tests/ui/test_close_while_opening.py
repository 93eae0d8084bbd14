"""The window closed while its store is still opening on the writer (the first second or so: a
user who started it on the wrong store and closes it at once, or a SIGTERM then) closes the engine
that open produces and releases the store lock; nothing else runs on that engine.

The opened engine reaches the window through a queued delivery to the GUI thread, which comes
after the close (a closed window built its panes over it and opened its index) or, once the event
loop has ended, never: the engine stayed open, its lock note stayed behind for the next start to
treat as stale, and a late task once failed with "Signal source has been deleted".

The open is held on the writer until the window's shutdown waits for the writer, so it always
finishes during the shutdown.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.config import load_config
from desktop_mem.engine.store.store_lock import read_holder
from desktop_mem.ui import main_window, store_session
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.store_session import OpenedStore
from desktop_mem.ui.task_runner import TaskRunner
from tests.mcp_clients import ROOT, cli_env

STOPPED = 128 + signal.SIGTERM
HOLD_TIMEOUT = 30  # seconds an open waits for the shutdown before it goes on anyway (a failed test)


class ShutdownWatchingRunner(TaskRunner):
    """The real pools; says when the window's shutdown starts waiting for them, and records what
    the window submits."""

    def __init__(self) -> None:
        super().__init__()
        self.shutting_down = threading.Event()
        self.submitted: list[str] = []

    def _start(self, pool: Any, fn: Callable[..., Any], *rest: Any) -> int:
        self.submitted.append(fn.__name__)
        return super()._start(pool, fn, *rest)

    def wait_for_done(self, msecs: int = 30000) -> bool:
        self.shutting_down.set()
        return super().wait_for_done(msecs)


@pytest.fixture
def held_open(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[OpenedStore], threading.Event]]:
    """The writer's store open, finished only once `release` is set (the real open ran before)."""
    opened: list[OpenedStore] = []
    release = threading.Event()
    real_open = store_session.open_store

    def open_store(config: Any, read_only: bool) -> OpenedStore:
        store = real_open(config, read_only)
        opened.append(store)
        release.wait(HOLD_TIMEOUT)
        return store

    monkeypatch.setattr(store_session, "open_store", open_store)
    yield opened, release
    release.set()
    for store in opened:  # a failed test's engine
        store.engine.close()


@pytest.fixture
def closes(monkeypatch: pytest.MonkeyPatch) -> list[MemoryEngine]:
    """Every engine the window closes, once per close."""
    closed: list[MemoryEngine] = []
    real_close = store_session.close_engine

    def close_engine(engine: MemoryEngine) -> None:
        closed.append(engine)
        real_close(engine)

    for module in (store_session, main_window):  # after an open (close_opened), and the window's own
        monkeypatch.setattr(module, "close_engine", close_engine)
    return closed


def _window(qtbot: Any, config: Any, tmp_path: Path, questions: list[str]) -> MainWindow:
    def confirm(_parent: object, title: str, _text: str) -> bool:
        questions.append(title)
        return True

    settings = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    win = MainWindow(config, ShutdownWatchingRunner(), settings=settings, confirm=confirm)
    qtbot.addWidget(win)
    win.show()
    return win


def _assert_free(config: Any) -> None:
    """No holder named any more, and the next engine opens the store writable."""
    assert read_holder(config.store_path) == {}
    with MemoryEngine.open(config) as engine:
        assert not engine.read_only


@pytest.mark.parametrize("how", ["close-button", "stop-signal"])
def test_closing_while_the_store_opens_closes_the_engine_it_opened(
    qtbot: Any, make_config: Any, tmp_path: Path, held_open: Any, closes: list[MemoryEngine], how: str,
) -> None:
    """The open finishes while the window shuts down: that engine is closed, once, before the
    shutdown returns (the process may end right after it); its late delivery shows nothing, opens
    no index and starts no watcher; the store is free."""
    opened, release = held_open
    config = make_config()
    questions: list[str] = []
    win = _window(qtbot, config, tmp_path, questions)
    runner = win.runner
    assert isinstance(runner, ShutdownWatchingRunner)
    threading.Thread(target=lambda: runner.shutting_down.wait(HOLD_TIMEOUT) and release.set(),
                     daemon=True).start()
    win.open_store()
    qtbot.waitUntil(lambda: len(opened) == 1, timeout=30000)  # the lock is held, the open not done
    assert read_holder(config.store_path) != {}
    if how == "close-button":
        win.close()
    else:
        win.close_without_asking()
    engine = opened[0].engine
    assert closes == [engine]  # closed by the shutdown itself, not by a delivery that may never come
    assert not engine._parts.lock.held
    assert read_holder(config.store_path) == {}
    qtbot.wait(300)  # the open's queued delivery, as when the event loop goes on after the close
    assert closes == [engine]
    assert win.engine is None and win.workspace is None and win.welcome is None
    assert win.stack.currentWidget() is win.loading_label
    assert runner.submitted == ["open", "close_opened"]  # no index open, no watcher, no probe
    assert questions == []
    _assert_free(config)


def test_an_open_that_fails_while_the_window_closes_asks_nothing(
    qtbot: Any, make_config: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store was in use and the window closed meanwhile: no "Store in use, open read-only?"
    question over a closed window (a yes there opened the store again)."""
    config = make_config()
    questions: list[str] = []
    win = _window(qtbot, config, tmp_path, questions)
    runner = win.runner
    assert isinstance(runner, ShutdownWatchingRunner)
    real_open = store_session.open_store

    def open_store(config: Any, read_only: bool) -> OpenedStore:
        runner.shutting_down.wait(HOLD_TIMEOUT)
        return real_open(config, read_only)

    monkeypatch.setattr(store_session, "open_store", open_store)
    with MemoryEngine.open(config):  # another app holds the store
        win.open_store()
        win.close()
        qtbot.wait(300)
    assert questions == []
    assert runner.submitted == ["open", "close_opened"]
    _assert_free(config)


def test_settings_saved_while_the_store_opens_reopen_it_writable(
    qtbot: Any, make_config: Any, scripted_llm: Any, tmp_path: Path, held_open: Any,
    closes: list[MemoryEngine],
) -> None:
    """Settings saved while the store still opens: the store opens again with the new settings,
    writable (the first open's engine kept the lock, so the reopen found the store "in use" and
    offered read-only)."""
    opened, release = held_open
    config = make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model", llm__api_key="test")
    questions: list[str] = []
    win = _window(qtbot, config, tmp_path, questions)
    win.open_store()
    qtbot.waitUntil(lambda: len(opened) == 1, timeout=30000)
    win.open_settings()
    win.settings_dialog.editors["retrieval.top_k"].setValue(7)  # type: ignore[attr-defined]
    with qtbot.waitSignal(win.store_opened, timeout=30000):
        win.settings_dialog.save()
        release.set()
    assert questions == []
    assert win.engine is opened[1].engine and not win.engine.read_only
    assert win.config["retrieval.top_k"] == 7
    assert closes == [opened[0].engine]


# ---------------------------------------------------------------- the real window, SIGTERM

# The window (`desktop-mem --store STORE`) with its store open held on the writer until the
# shutdown waits for it, as in the tests above.
HELD_WINDOW = f"HOLD_TIMEOUT = {HOLD_TIMEOUT}\n" + textwrap.dedent("""
    import sys, threading
    from desktop_mem.ui import store_session, task_runner

    shutting_down = threading.Event()
    real_open, real_wait = store_session.open_store, task_runner.TaskRunner.wait_for_done

    def open_store(config, read_only):
        opened = real_open(config, read_only)
        shutting_down.wait(HOLD_TIMEOUT)
        return opened

    def wait_for_done(self, msecs=30000):
        shutting_down.set()
        return real_wait(self, msecs)

    store_session.open_store = open_store
    task_runner.TaskRunner.wait_for_done = wait_for_done
    from desktop_mem.cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


@pytest.fixture
def window_env(tmp_path: Path) -> dict[str, str]:
    """The window's own temp, runtime and settings folders."""
    env = {}
    for name, variable in (("temp", "TMPDIR"), ("run", "XDG_RUNTIME_DIR"), ("settings", "XDG_CONFIG_HOME")):
        folder = tmp_path / name
        folder.mkdir(mode=0o700)
        env[variable] = str(folder)
    return cli_env(QT_QPA_PLATFORM="offscreen", **env)


@pytest.mark.skipif(sys.platform == "win32", reason="no `kill` that can be handled")
def test_sigterm_while_the_store_opens_exits_143_and_frees_the_store(tmp_path: Path,
                                                                      window_env: dict[str, str]) -> None:
    """`kill` as soon as the window took the store lock, its open not finished: it exits 143 and
    the next start finds the store free (the lock note stayed, naming a dead process)."""
    store, log = tmp_path / "store", tmp_path / "window.log"
    args = [sys.executable, "-c", HELD_WINDOW, "--store", str(store), "--set", "llm.base_url=http://127.0.0.1:9/v1"]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, env=window_env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            while not read_holder(store):
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.01)
            os.kill(proc.pid, signal.SIGTERM)
            assert proc.wait(HOLD_TIMEOUT + 30) == STOPPED, log.read_text(errors="replace")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    output = log.read_text(errors="replace")
    assert "Traceback" not in output and "RuntimeError" not in output, output
    assert read_holder(store) == {}, output
    with MemoryEngine.open(load_config(flags={"store.path": str(store), "watcher.enabled": False})) as engine:
        assert not engine.read_only


@pytest.mark.parametrize("failing", ["last_commit_line", "held_back_files"])
def test_an_open_that_fails_after_taking_the_lock_releases_it(
        make_config: Any, monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    """The writer's open takes the lock, then reads the last commit and the held-back files: a
    failure there reached the window as a failed open, and no one closed the engine it had opened
    (the lock note stayed until the process ended)."""
    from desktop_mem.engine.api import MemoryEngine, read_holder
    from desktop_mem.ui import store_session

    config = make_config()
    MemoryEngine.open(config).close()  # the store exists

    def broken(*_args: Any) -> Any:
        raise RuntimeError("git is gone")

    if failing == "last_commit_line":
        monkeypatch.setattr(store_session, "last_commit_line", broken)
    else:
        monkeypatch.setattr(MemoryEngine, "held_back_files", broken)
    with pytest.raises(RuntimeError, match="git is gone"):
        store_session.open_store(config, False)

    assert not read_holder(config.store_path)
    again = MemoryEngine.open(config)  # writable: nothing holds the store
    assert not again.read_only
    again.close()
