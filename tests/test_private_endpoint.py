"""Issue #22: forwarding that cannot be impersonated.

`desktop-mem mcp` forwards writes (with the user's memories, and a token if one is set) to the
process holding the store. Another local user must not be able to receive them: not by binding
the TCP port a closing writer leaves, not by a socket in a folder they can reach, and not in the
moment after SIGTERM while the writer finishes its last work.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from desktop_mem.api.loopback import SOCKET_NAME, UNIX_PREFIX, private_socket, remove_private_socket
from desktop_mem.api.mcp_forward import forward_call, writer_endpoint
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.store.store_lock import read_holder
from tests.mcp_clients import ServeProcess, cli_env, stdio_session

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix domain sockets only")


class Squatter:
    """Another local user's listener on a TCP port: records whatever reaches it."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        self.sock.settimeout(20)
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(2)
            with contextlib.suppress(OSError):
                self.received += conn.recv(65536)

    def close(self) -> None:
        self.sock.close()


def _holder(store: Path) -> MemoryEngine:
    return MemoryEngine(load_config(flags={"store.path": str(store), "watcher.enabled": False}))


def test_a_forwarder_never_sends_to_a_tcp_port_named_in_the_lock_note(tmp_path: Path) -> None:
    squatter = Squatter()
    holder = _holder(tmp_path / "store")
    try:
        holder.lock.publish(endpoint=f"http://127.0.0.1:{squatter.port}")
        assert writer_endpoint(holder.root) is None

        async def scenario() -> Any:
            with anyio.fail_after(90):
                env = {**cli_env(), "DESKTOP_MEM_TOKEN": "tok-3f9a1c"}
                async with stdio_session(holder.root, env=env) as s:
                    return await s.call_tool("add_memories", {"text": "The user's bank is Argenta"})

        result = anyio.run(scenario)
        assert result.is_error  # nobody that can be trusted accepts the write: it is refused
    finally:
        holder.close()
        squatter.close()
    assert b"Argenta" not in squatter.received and b"tok-3f9a1c" not in squatter.received
    assert squatter.received == b""


def test_a_socket_others_can_reach_or_own_is_not_trusted(tmp_path: Path) -> None:
    holder = _holder(tmp_path / "store")
    sock, endpoint = private_socket()
    try:
        folder = Path(endpoint[len(UNIX_PREFIX):]).parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        holder.lock.publish(endpoint=endpoint)
        assert writer_endpoint(holder.root) == endpoint
        os.chmod(folder, 0o755)  # another user could now swap the socket out
        assert writer_endpoint(holder.root) is None
        os.chmod(folder, 0o700)
        if os.getuid() == 0:  # as root the test can play another user's socket
            os.chown(folder, 4242, 4242)
            assert writer_endpoint(holder.root) is None
            os.chown(folder, 0, 0)
        holder.lock.publish(endpoint=UNIX_PREFIX + "/tmp/../tmp/x/" + SOCKET_NAME)
        assert writer_endpoint(holder.root) is None
    finally:
        sock.close()
        remove_private_socket(endpoint)
        holder.close()
    assert not Path(endpoint[len(UNIX_PREFIX):]).parent.exists()


def test_serve_leaves_the_lock_note_before_its_listener_closes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    serve = ServeProcess(store).wait_ready()
    try:
        endpoint = read_holder(store)["endpoint"]
        assert endpoint.startswith(UNIX_PREFIX)
        assert stat.S_IMODE(Path(endpoint[len(UNIX_PREFIX):]).parent.stat().st_mode) == 0o700
        # a request still arriving keeps serve shutting down gracefully (uvicorn waits for it)
        slow = socket.create_connection(("127.0.0.1", serve.port))
        slow.sendall(b"POST /api/memories HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{")
        time.sleep(0.5)
        serve.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # wait until the port no longer accepts
            try:
                socket.create_connection(("127.0.0.1", serve.port), timeout=0.5).close()
            except OSError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("serve never closed its port after SIGTERM")
        assert serve.proc.poll() is None, "serve is still finishing (the window under test)"
        assert "endpoint" not in read_holder(store), "the lock note still names an endpoint"
        slow.close()
        serve.proc.wait(30)
    finally:
        serve.stop()
    assert not Path(endpoint[len(UNIX_PREFIX):]).exists()


def test_a_forwarded_call_with_a_wrong_token_says_why(tmp_path: Path) -> None:
    """Where no private socket is used (TCP, e.g. Windows), a 401 keeps its reason."""
    store = tmp_path / "store"
    serve = ServeProcess(store, token="right-token-7f3e9a").wait_ready()
    try:
        url = f"http://127.0.0.1:{serve.port}"
        right = {"Authorization": "Bearer right-token-7f3e9a"}
        assert httpx.get(f"{url}/health", headers=right).status_code == 200

        async def scenario() -> str:
            try:
                await forward_call(url, "add_memories", {"text": "The user likes tea"}, None, "wrong-token")
            except Exception as exc:  # noqa: BLE001 - the message is what is under test
                return str(exc)
            return "no error"

        message = anyio.run(scenario)
        assert message.startswith("the token does not match"), message
        assert "wrong-token" not in message
    finally:
        serve.stop()


def test_the_private_socket_needs_no_token_and_the_port_still_does(tmp_path: Path) -> None:
    store = tmp_path / "store"
    serve = ServeProcess(store, token="right-token-7f3e9a").wait_ready()
    try:
        endpoint = read_holder(store)["endpoint"]
        path = endpoint[len(UNIX_PREFIX):]
        with httpx.Client(transport=httpx.HTTPTransport(uds=path)) as local:
            assert local.get("http://localhost/api/memories").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{serve.port}/api/memories").status_code == 401
    finally:
        serve.stop()

