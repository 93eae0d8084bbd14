"""A process asked to stop cleans up after itself: `desktop-mem mcp` on a read-only store searches
a scratch copy of the index in the temp dir (hundreds of MB at 100k memories), and that copy goes
when the MCP client ends the session, whether by closing stdin (the SDK's stdio client, which
sends SIGTERM 2 s later) or by a stop signal while the session is open. `serve` and `chat` end
through their clean-up on SIGTERM and SIGHUP too (the store lock is released).

Real processes, a real store, the MCP SDK's own stdio client. Every child's TMPDIR is a folder of
the test's, so leftovers are looked for there and the machine's /tmp is never touched. The store
is made read-only as tests/test_read_only_store.py does (skipped where that cannot be done).
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from desktop_mem.engine.store.store_lock import read_holder
from tests.mcp_clients import ROOT, ServeProcess, cli_env
from tests.test_read_only_store import bees_store

SCRATCH = "desktop-mem-index-*"

# Runs in the mount namespace where the store is read-only: one session that searches, then is
# ended by the client (argv[3] == "client") or by a signal to the server (its number). Prints
# what the test checks: the scratch folders seen during the session, whether the SDK had to
# signal the server after closing stdin, and the server's exit status.
SESSION = '''
import json, os, signal, sys, time
from pathlib import Path
import anyio
import mcp.client.stdio as sdk
from tests.mcp_clients import cli_env, stdio_session

store, temp, end = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
seen = {"signalled": False, "status": None}
terminate, stop = sdk._terminate_process_tree, sdk._stop_server_process

async def spy_terminate(process):
    seen["signalled"] = True
    await terminate(process)

async def spy_stop(process):
    await stop(process)
    seen["status"] = process.returncode

sdk._terminate_process_tree, sdk._stop_server_process = spy_terminate, spy_stop

async def main():
    async with stdio_session(store) as s:  # TMPDIR=temp, as in this process
        found = await s.call_tool("search_memory", {"query": "bees"})
        assert not found.is_error and "keeps bees" in found.content[0].text, found
        during = sorted(p.name for p in temp.glob("desktop-mem-index-*"))
        if end != "client":
            [folder] = temp.glob("desktop-mem-index-*")
            pid = json.loads((folder / "owner").read_text())["pid"]  # the server's own note
            os.kill(pid, int(end))  # stdin stays open meanwhile
            deadline = time.monotonic() + 30
            while folder.exists() and time.monotonic() < deadline:
                await anyio.sleep(0.05)
    print(json.dumps({"during": during, **seen}))

anyio.run(main)
'''


@pytest.fixture(autouse=True)
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The children's temp dir (cli_env passes this process's environment on)."""
    folder = tmp_path / "temp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.fixture
def read_only_store(tmp_path: Path) -> Path:
    """A store with one memory, searched once (it has an index to copy), never locked."""
    store = bees_store(tmp_path)
    subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "search", "bees"],
                   check=True, capture_output=True, env=cli_env(), cwd=ROOT)
    (store / ".desktop_mem.lock").unlink(missing_ok=True)
    assert (store / "chroma").is_dir()
    return store


def _session(store: Path, temp: Path, end: str) -> dict[str, object]:
    """SESSION with `store` mounted read-only; its printed summary."""
    script = store.parent / "session.py"
    script.write_text(SESSION)
    s = shlex.quote(str(store))
    run = " ".join(shlex.quote(a) for a in (sys.executable, str(script), str(store), str(temp), end))
    mount = f"mount --bind {s} {s} && mount -o remount,bind,ro {s}"
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"{mount} && {run}"], capture_output=True, text=True,
                          env=cli_env(), cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(summary, dict)
    return summary


def test_a_session_the_client_ends_exits_by_itself_and_leaves_no_scratch_index(
    read_only_store: Path, temp: Path,
) -> None:
    """The client closes stdin: the server exits on its own within the SDK's 2 s grace (it used
    to take ~5 s, waiting for the store watch's timeout, so the SIGTERM that followed killed it
    before atexit could remove the copy) and exits 0, its scratch index removed."""
    summary = _session(read_only_store, temp, "client")
    assert len(summary["during"]) == 1, summary  # the search ran on a scratch copy
    assert list(temp.glob(SCRATCH)) == []
    assert summary["signalled"] is False, summary
    assert summary["status"] == 0, summary


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_session_stopped_by_a_signal_while_its_stdin_is_open_leaves_no_scratch_index(
    read_only_store: Path, temp: Path, signum: signal.Signals,
) -> None:
    """`kill` (or a closed terminal) while the client still holds stdin open: the session stops,
    its engines close and atexit removes the copy (the default action killed it on the spot;
    a plain SystemExit would have hung on the thread still reading stdin). Exit status 143."""
    summary = _session(read_only_store, temp, str(int(signum)))
    assert len(summary["during"]) == 1, summary
    assert list(temp.glob(SCRATCH)) == []
    assert summary["status"] == 128 + signal.SIGTERM, summary


def test_serve_stopped_by_sighup_finishes_and_releases_the_store(tmp_path: Path, temp: Path) -> None:
    """SIGHUP (the terminal `serve` ran in was closed) is handled as SIGTERM: uvicorn's graceful
    stop, then the engine's close; the store lock is released (it used to stay behind)."""
    store = tmp_path / "store"
    serve = ServeProcess(store, extra_args=("--set", "watcher.enabled=false")).wait_ready()
    try:
        assert read_holder(store) != {}
        serve.proc.send_signal(signal.SIGHUP)
        assert serve.proc.wait(60) == 128 + signal.SIGTERM
    finally:
        serve.stop()
    assert read_holder(store) == {}
    assert list(temp.glob("desktop-mem-*")) == []  # its private socket's folder went too


def test_chat_stopped_by_sigterm_at_its_prompt_releases_the_store(tmp_path: Path, temp: Path) -> None:
    """`desktop-mem chat` waiting for the next message (stdin open) and then `kill`ed: it leaves
    through its clean-up, status 143, and the store is free for the next process."""
    store = tmp_path / "store"
    chat = subprocess.Popen([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "chat"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=cli_env(), cwd=ROOT, text=True)
    try:
        assert chat.stdout is not None
        line = chat.stdout.readline()  # the prompt's first line: the store and index are open
        assert "type /quit" in line, line + (chat.stderr.read() if chat.stderr else "")
        assert read_holder(store) != {}
        time.sleep(0.2)  # reading stdin by now
        chat.send_signal(signal.SIGTERM)
        assert chat.wait(60) == 128 + signal.SIGTERM
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait(10)
    assert read_holder(store) == {}


# Runs in the mount namespace: an engine over the read-only store searches (its scratch copy is
# made), closes, and the process lives on, as the window does when it goes to another store.
CLOSE_AND_LIVE_ON = """
import json, sys
from pathlib import Path
from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.config import load_config
store, temp = Path(sys.argv[1]), Path(sys.argv[2])
config = load_config(flags={"store.path": str(store), "watcher.enabled": False})
engine = MemoryEngine.open(config, read_only=True)
found = [r.memory.text for r in engine.search("bees")]
during = sorted(p.name for p in temp.glob("desktop-mem-index-*"))
engine.close()
after = sorted(p.name for p in temp.glob("desktop-mem-index-*"))
print(json.dumps({"found": found, "during": during, "after": after}))
"""


def test_a_read_only_engine_removes_its_scratch_index_when_it_closes(
    read_only_store: Path, temp: Path
) -> None:
    """The copy went only at the process's exit: a window that opened a mounted backup and went
    on to another store kept hundreds of MB (at 100k memories) in the temp dir until it quit."""
    script = read_only_store.parent / "close_and_live_on.py"
    script.write_text(CLOSE_AND_LIVE_ON)
    s = shlex.quote(str(read_only_store))
    run = " ".join(shlex.quote(a) for a in (sys.executable, str(script), str(read_only_store), str(temp)))
    mount = f"mount --bind {s} {s} && mount -o remount,bind,ro {s}"
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"{mount} && {run}"], capture_output=True,
                          text=True, env=cli_env(), cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["found"] == ["The user keeps bees in the garden"]
    assert len(summary["during"]) == 1 and summary["after"] == []
