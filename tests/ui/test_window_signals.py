"""SIGTERM and SIGHUP (`kill`, a logout, a system shutdown, the terminal it was started from
closed) close the desktop window as its close button does: the engine closes, the store lock is
released, the endpoint's socket folder goes and a chat turn's queued write path finishes; exit
status 143, as `serve`, `mcp` and `chat`. Their default action ended the window on the spot and
left all of that behind for the next start to recover.

The real window (`desktop-mem` with no command) in its own process on the offscreen platform,
a real store, the scripted LLM in this process. Each window has its own TMPDIR, XDG_RUNTIME_DIR
(where the endpoint's socket folder goes) and XDG_CONFIG_HOME (its QSettings), all the test's.
The first test runs in this process: a handler's Python code needs the interpreter, which an
idle Qt event loop (C++) does not give it; in the window something in Python runs now and then
anyway, so only an event loop with nothing else to do shows that the signal itself wakes it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from desktop_mem.api.loopback import UNIX_PREFIX
from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.config import load_config
from desktop_mem.engine.store.store_lock import read_holder
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat
from tests.mcp_clients import ROOT, cli_env, git
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no SIGHUP, no `kill` that can be handled")

STOPPED = 128 + signal.SIGTERM


class WindowProcess:
    """`desktop-mem --store STORE` (the window) in a process of its own, talking to `llm`."""

    def __init__(self, store: Path, llm: ScriptedLLM, log: Path, sigint: Any = signal.SIG_DFL) -> None:
        """`sigint` is the SIGINT disposition the window inherits: SIG_DFL from a terminal, SIG_IGN
        when started in the background by a shell without job control (`nohup desktop-mem &`).
        Set explicitly, so the test is the same wherever the suite itself runs."""
        self.store = store
        self.log = log
        self._log = log.open("wb")
        settings = {"llm.base_url": llm.base_url, "llm.api_key": "test", "llm.model": "test-model",
                    "llm.timeout": "60"}
        args = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store)]
        for name, value in settings.items():
            args += ["--set", f"{name}={value}"]
        self.proc = subprocess.Popen(args, env=cli_env(QT_QPA_PLATFORM="offscreen"), cwd=ROOT,
                                     stdout=self._log, stderr=subprocess.STDOUT,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))

    def wait_serving(self, timeout: float = 120) -> str:
        """The endpoint it published once its store and index are open (the window is idle)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the window exited: {self.output()}")
            endpoint = read_holder(self.store).get("endpoint")
            if isinstance(endpoint, str):
                return endpoint
            time.sleep(0.1)
        raise AssertionError(f"the window never published its endpoint: {self.output()}")

    def output(self) -> str:
        self._log.flush()
        return self.log.read_text(errors="replace")[-3000:]

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._log.close()


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The window's temp, runtime and settings folders (cli_env passes this environment on)."""
    made = {name: tmp_path / name for name in ("temp", "run", "settings")}
    for name, folder in made.items():
        folder.mkdir(mode=0o700)
        monkeypatch.setenv({"temp": "TMPDIR", "run": "XDG_RUNTIME_DIR", "settings": "XDG_CONFIG_HOME"}[name],
                           str(folder))
    return made


@pytest.fixture
def window(request: pytest.FixtureRequest, tmp_path: Path, scripted_llm: ScriptedLLM,
           folders: dict[str, Path]) -> Iterator[WindowProcess]:
    scripted_llm.script(is_chat, "Nice!")
    sigint = getattr(request, "param", signal.SIG_DFL)
    started = WindowProcess(tmp_path / "store", scripted_llm, tmp_path / "window.log", sigint)
    try:
        yield started
    finally:
        started.end()


@pytest.fixture(params=[signal.default_int_handler, signal.SIG_IGN], ids=["foreground", "background"])
def inherited_sigint(request: pytest.FixtureRequest) -> Iterator[Any]:
    """SIGINT's handler before the window sets its own: Python's default from a terminal, ignored
    under `nohup ... &` (a shell without job control). Set here, whatever the suite inherited, and
    put back after, so the test asks the same wherever it runs."""
    outer = signal.signal(signal.SIGINT, request.param)
    try:
        yield request.param
    finally:
        signal.signal(signal.SIGINT, outer)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_stop_signal_wakes_an_idle_event_loop_and_closes_once(
    qapp: Any, signum: signal.Signals, inherited_sigint: Any,
) -> None:
    """Two stop signals while the event loop waits, with no Python code of its own to run: the
    close runs at once, on the GUI thread, once, and the loop ends with 143 (130 for Ctrl+C, even
    when SIGINT was ignored before, as under `nohup ... &`; without the wakeup the handler waited
    for the 5 s safety net to end the loop, and the close never ran; Ctrl+C raised
    KeyboardInterrupt in a slot and the loop went on). SIGINT's handler is put back after."""
    from PySide6.QtCore import QTimer

    from desktop_mem.ui.stop_signal_wakeup import close_on_stop_signals

    closes: list[tuple[float, threading.Thread]] = []
    safety_net = QTimer()  # a C++ slot: ends the loop without running any Python
    safety_net.setSingleShot(True)
    safety_net.timeout.connect(qapp.quit)

    def send_twice() -> None:
        os.kill(os.getpid(), signum)
        os.kill(os.getpid(), signum)

    def close() -> None:
        closes.append((time.monotonic(), threading.current_thread()))

    with close_on_stop_signals(close) as received:
        sender = threading.Timer(0.3, send_twice)  # sent only while the handlers are set
        safety_net.start(5000)
        sender.start()
        started = time.monotonic()
        try:
            status = qapp.exec()
        finally:
            sender.cancel()
            sender.join()
            safety_net.stop()
    expected = signal.SIGINT if signum == signal.SIGINT else signal.SIGTERM
    assert status == 128 + expected
    assert received == [expected]  # SIGHUP is handled as SIGTERM, as in serve, mcp and chat
    assert signal.getsignal(signal.SIGINT) is inherited_sigint  # put back after
    assert [thread for _, thread in closes] == [threading.main_thread()]
    assert closes[0][0] - started < 2


@pytest.mark.parametrize("meanwhile", [False, True], ids=["unsaved-edits", "while-asking"])
def test_a_stop_signal_closes_without_asking_about_unsaved_edits(
    qtbot: Any, make_config: Any, scripted_llm: ScriptedLLM, tmp_path: Path, meanwhile: bool,
) -> None:
    """Nobody may be there to answer "Quit?" at a logout: a stop signal closes the window with
    unsaved edits in the editor unasked, and one that comes while the user is being asked (they
    pressed the close button) closes it whatever they answer; the store is released either way."""
    from PySide6.QtCore import QSettings

    from desktop_mem.ui.main_window import MainWindow
    from desktop_mem.ui.task_runner import TaskRunner

    config = make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model", llm__api_key="test")
    with MemoryEngine.open(config) as engine:
        memory = engine.add("The user likes tea")
    questions: list[str] = []

    def confirm(_parent: object, title: str, _text: str) -> bool:
        questions.append(title)
        if meanwhile:
            win.close_without_asking()  # what the stop signal's handler queues, run by the dialog's loop
        return False  # "keep editing"

    settings = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    win = MainWindow(config, TaskRunner(), settings=settings, confirm=confirm)
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.store_opened, timeout=30000):
        win.open_store()
    assert win.workspace is not None
    win.workspace.editor.open_memory(memory)
    win.workspace.editor.body_edit.setPlainText("The user likes green tea")
    assert win.workspace.editor.is_dirty()
    if meanwhile:
        win.close()  # the close button
    else:
        win.close_without_asking()
    assert questions == (["Quit?"] if meanwhile else [])
    assert not win.isVisible() and win.engine is None
    assert read_holder(config.store_path) == {}


def _next_engine(store: Path) -> MemoryEngine:
    """The next process's engine over `store` (read-only if somebody still held it)."""
    return MemoryEngine.open(load_config(flags={"store.path": str(store), "watcher.enabled": False}))


def _assert_released(store: Path) -> None:
    """Nothing names a holder any more, and the next engine opens the store writable."""
    assert read_holder(store) == {}
    with _next_engine(store) as engine:
        assert not engine.read_only


@pytest.mark.parametrize(("signum", "window"), [
    (signal.SIGTERM, signal.SIG_DFL), (signal.SIGHUP, signal.SIG_DFL), (signal.SIGINT, signal.SIG_DFL),
    (signal.SIGINT, signal.SIG_IGN),
], ids=["SIGTERM", "SIGHUP", "SIGINT", "SIGINT-started-in-background"], indirect=["window"])
def test_a_stop_signal_closes_the_window_and_frees_the_store(
    window: WindowProcess, folders: dict[str, Path], signum: signal.Signals,
) -> None:
    """`kill` (or a closed terminal, a logout, Ctrl+C in it) while the window is open and idle: it
    closes as its close button does, within seconds, status 143 (130 for Ctrl+C); the store is
    free for the next process and the endpoint's 0700 socket folder is gone (it stayed behind,
    with the lock's note; Ctrl+C printed a KeyboardInterrupt and left the window open). A window
    started in the background with SIGINT ignored (`nohup desktop-mem &`) still closes on an
    explicit `kill -INT`: it sets its own handler whatever it inherited."""
    endpoint = window.wait_serving()
    socket_folder = Path(endpoint[len(UNIX_PREFIX):]).parent
    assert socket_folder.parent == folders["run"] and socket_folder.is_dir()
    window.proc.send_signal(signum)
    assert window.proc.wait(30) == (130 if signum == signal.SIGINT else STOPPED), window.output()
    assert "KeyboardInterrupt" not in window.output()
    assert not socket_folder.exists()
    assert [p.name for f in (folders["run"], folders["temp"]) for p in f.glob("desktop-mem-*")] == []
    _assert_released(window.store)


def test_sigterm_during_a_turns_write_path_waits_for_it_and_a_second_one_does_not_cut_it_short(
    window: WindowProcess, scripted_llm: ScriptedLLM,
) -> None:
    """A chat turn answered through the window's endpoint, its facts still being extracted (the
    write path runs after the reply): SIGTERM, then SIGTERM again. The window waits for the write
    path, stores and commits the fact, then exits 143 (the fact used to be lost)."""
    extracting, release = threading.Event(), threading.Event()

    def facts(_body: dict[str, Any]) -> str:
        extracting.set()
        release.wait(60)
        return '["The user lives in Leuven"]'

    scripted_llm.script(FACTS, facts)
    scripted_llm.script(RECONCILE, '[{"event": "ADD", "text": "The user lives in Leuven"}]')
    scripted_llm.script(SUMMARY, "The user lives in Leuven.")
    endpoint = window.wait_serving()
    try:
        transport = httpx.HTTPTransport(uds=endpoint[len(UNIX_PREFIX):])
        with httpx.Client(transport=transport, timeout=60) as local:
            turn = {"model": "test-model", "memory_id": "home",
                    "messages": [{"role": "user", "content": "I moved to Leuven."}]}
            reply = local.post("http://localhost/v1/chat/completions", json=turn)
        assert reply.status_code == 200, reply.text
        assert reply.json()["choices"][0]["message"]["content"] == "Nice!"
        assert extracting.wait(30), "the write path never asked for the turn's facts"
        window.proc.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):  # closing, waiting for the write path
            window.proc.wait(1.5)
        window.proc.send_signal(signal.SIGTERM)  # ignored while closing
        with pytest.raises(subprocess.TimeoutExpired):
            window.proc.wait(0.5)
    finally:
        release.set()
    assert window.proc.wait(60) == STOPPED, window.output()
    _assert_released(window.store)
    with _next_engine(window.store) as engine:
        assert [m.text for m in engine.list_memories(role="memory")] == ["The user lives in Leuven"]
    assert git(window.store, "status", "--porcelain") == ""  # stored and committed
