"""Issue #25: the window's loopback endpoint costs nothing until something calls it.

The app publishes its private endpoint (for AI tools' `desktop-mem mcp` and CLI writes) in the
lock note as soon as the user pauses, but the server behind it - uvicorn, FastAPI and the routes,
~13-23 MB of a window at any store size - loads only when the first caller connects. That caller
is answered as before; an endpoint nobody called leaves no note and no socket behind.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.store.store_lock import read_holder
from tests.mcp_clients import ROOT, cli_env

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix domain sockets only")

SERVER_MODULES = ("uvicorn", "fastapi", "desktop_mem.api.rest")

# The app's side, in a process of its own (this test process has imported FastAPI already): it
# reports which server modules are loaded once the endpoint is published, then again on request.
HOLDER = f"""
import json, sys
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.api.app_endpoint import start_app_endpoint, stop_app_endpoint

def report():
    loaded = [m for m in {SERVER_MODULES!r} if m in sys.modules]
    print(json.dumps({{"loaded": loaded, "serving": endpoint.serving, "url": endpoint.url}}), flush=True)

engine = MemoryEngine(load_config(flags={{"store.path": sys.argv[1], "watcher.enabled": False}}))
endpoint = start_app_endpoint(engine)
endpoint.ready.wait(60)
report()
sys.stdin.readline()
report()
stop_app_endpoint(engine)
engine.close()
"""


def _report(holder: subprocess.Popen[str]) -> dict[str, object]:
    assert holder.stdout is not None
    line = holder.stdout.readline()
    assert line, "the holder process ended without reporting"
    report: dict[str, object] = json.loads(line)
    return report


def test_the_server_behind_the_apps_endpoint_loads_when_the_first_caller_connects(tmp_path: Path) -> None:
    store = tmp_path / "store"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)], cwd=ROOT, env=cli_env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        published = _report(holder)
        assert str(published["url"]).startswith("unix:")
        assert read_holder(store)["endpoint"] == published["url"]
        assert published["loaded"] == [] and published["serving"] is False  # nobody called yet

        # A CLI write while the "app" holds the store: forwarded to it, answered as before.
        add = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "add",
                              "The user rows on Sundays"], cwd=ROOT, env=cli_env(), capture_output=True,
                             text=True, timeout=120)
        assert add.returncode == 0, add.stderr
        assert "The user rows on Sundays" in add.stdout

        assert holder.stdin is not None
        holder.stdin.write("again\n")
        holder.stdin.flush()
        called = _report(holder)
        assert called["serving"] is True and set(called["loaded"]) == set(SERVER_MODULES)  # type: ignore[arg-type]
        assert holder.wait(60) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    reopened = MemoryEngine(load_config(flags={"store.path": str(store), "watcher.enabled": False}))
    try:
        assert [m.text for m in reopened.list_memories()] == ["The user rows on Sundays"]
    finally:
        reopened.close()


def test_an_endpoint_nobody_called_takes_its_note_and_socket_away_when_the_app_closes(tmp_path: Path) -> None:
    from desktop_mem.api.app_endpoint import start_app_endpoint, stop_app_endpoint

    config = load_config(flags={"store.path": str(tmp_path / "store"), "watcher.enabled": False})
    holder = MemoryEngine(config)
    try:
        endpoint = start_app_endpoint(holder)
        assert endpoint is not None and endpoint.ready.wait(60) and endpoint.url is not None
        socket_path = Path(endpoint.url.removeprefix("unix:"))
        assert socket_path.exists() and read_holder(holder.root)["endpoint"] == endpoint.url
        thread = endpoint._thread
        stop_app_endpoint(holder)
        assert thread is not None and not thread.is_alive()  # woken at once, not left waiting
        assert not endpoint.serving
        assert "endpoint" not in read_holder(holder.root)
        assert not socket_path.exists() and not socket_path.parent.exists()
    finally:
        stop_app_endpoint(holder)
        holder.close()
