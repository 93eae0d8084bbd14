"""Issue #22: forwarding that cannot be impersonated.

`desktop-mem mcp` and CLI writes forward the user's memories to the process holding the store.
Another local user must not be able to receive them (or the bearer token): not by binding the TCP
port a closing writer leaves, not by a socket in a folder they can reach, not in the moment after
SIGTERM while the writer finishes its last work, and, where there are no Unix sockets (forced
here with DESKTOP_MEM_ENDPOINT_TCP=1), not by listening on the fallback port: the listener must
first prove it knows the run secret, and the secret and the token are never sent.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from desktop_mem.api.holder_endpoint import writer_endpoint
from desktop_mem.api.loopback import (
    FORCE_TCP_ENV,
    HELLO,
    PROOF,
    SOCKET_NAME,
    UNIX_PREFIX,
    private_socket,
    remove_private,
    remove_private_socket,
    run_key_note,
)
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.store.store_lock import read_holder
from tests.mcp_clients import ROOT, ServeProcess, cli_env, git, stdio_session

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
        holder._parts.lock.publish(endpoint=f"http://127.0.0.1:{squatter.port}")
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
        holder._parts.lock.publish(endpoint=endpoint)
        assert str(writer_endpoint(holder.root)) == endpoint
        os.chmod(folder, 0o755)  # another user could now swap the socket out
        assert writer_endpoint(holder.root) is None
        os.chmod(folder, 0o700)
        if os.getuid() == 0:  # as root the test can play another user's socket
            os.chown(folder, 4242, 4242)
            assert writer_endpoint(holder.root) is None
            os.chown(folder, 0, 0)
        holder._parts.lock.publish(endpoint=UNIX_PREFIX + "/tmp/../tmp/x/" + SOCKET_NAME)
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



# ------------------------------------------------------------- the TCP fallback (no Unix sockets)

HELLO_LINE = re.compile(rb"DMEM-HELLO/1 [0-9a-f]{64}\n")


class ProvingSquatter:
    """Another local user's listener on the fallback port, playing the writer as well as it can
    without the run secret: it answers every hello with a well-formed proof it had to make up,
    and records everything it receives."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        self.sock.settimeout(60)
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        got = b""
        with conn:
            conn.settimeout(3)
            with contextlib.suppress(OSError):
                while b"\n" not in got:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    got += chunk
                forged = PROOF + secrets.token_hex(32).encode() + b" " + secrets.token_hex(32).encode()
                conn.sendall(forged + b"\n")
                while chunk := conn.recv(65536):  # whatever comes after its "proof"
                    got += chunk
        self.received.append(got)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def tcp_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forwarding as on a system without Unix domain sockets (Windows)."""
    monkeypatch.setenv(FORCE_TCP_ENV, "1")


def _key_of(store: Path) -> tuple[str, bytes]:
    path = read_holder(store)["endpoint_key"]
    return path, bytes.fromhex(Path(path).read_text())


@pytest.mark.usefixtures("tcp_fallback")
def test_a_squatter_on_the_fallback_port_receives_nothing_secret(tmp_path: Path) -> None:
    squatter = ProvingSquatter()
    holder = _holder(tmp_path / "store")
    key, note = run_key_note()
    try:
        holder._parts.lock.publish(endpoint=f"http://127.0.0.1:{squatter.port}", endpoint_key=note)
        token = "tok-3f9a1c5e7d"

        async def scenario() -> Any:
            with anyio.fail_after(90):
                env = {**cli_env(), "DESKTOP_MEM_TOKEN": token}
                async with stdio_session(holder.root, env=env) as s:
                    return await s.call_tool("add_memories", {"text": "The user's bank is Argenta"})

        result = anyio.run(scenario)
        assert result.is_error
        assert "is not the desktop-mem process that holds the store" in result.content[0].text
        assert "nothing was sent" in result.content[0].text
        cli = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(holder.root), "add",
                              "The user's PIN hint is Argenta"], capture_output=True, text=True,
                             env=cli_env(DESKTOP_MEM_TOKEN=token), cwd=ROOT, timeout=120)
        assert cli.returncode == 1 and "Traceback" not in cli.stderr, cli.stderr
        [line] = cli.stderr.strip().splitlines()
        assert "is not the desktop-mem process" in line
    finally:
        holder.close()
        squatter.close()
        remove_private(note)
    assert len(squatter.received) >= 2  # the MCP forwarder and the CLI both tried it
    for got in squatter.received:  # a random nonce, then nothing: no proof, no HTTP, no memory
        assert HELLO_LINE.fullmatch(got), got
        assert b"Argenta" not in got and token.encode() not in got and key.hex().encode() not in got
    assert git(tmp_path / "store", "log", "--all", "--format=%s").count("Argenta") == 0


@pytest.mark.usefixtures("tcp_fallback")
def test_the_fallback_forwards_after_the_mutual_proof_and_refuses_anyone_without_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    serve = ServeProcess(store, token="right-token-7f3e9a").wait_ready()
    try:
        holder = read_holder(store)
        endpoint = holder["endpoint"]
        assert endpoint.startswith("http://127.0.0.1:") and f":{serve.port}" not in endpoint
        note, key = _key_of(store)
        assert len(key) == 32 and key.hex() not in (store / ".desktop_mem.lock.json").read_text()
        assert stat.S_IMODE(os.stat(note).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(Path(note).parent).st_mode) == 0o700
        port = int(endpoint.rsplit(":", 1)[1])

        # the forwarder proves itself and the write lands, without a token
        async def scenario() -> Any:
            with anyio.fail_after(90):
                async with stdio_session(store, env=cli_env(**{FORCE_TCP_ENV: "1"})) as s:
                    return await s.call_tool("add_memories", {"text": "The user keeps bees"})

        result = anyio.run(scenario)
        assert not result.is_error, result.content
        assert [m["text"] for m in httpx.get(f"{serve.url}/api/memories", headers=serve.headers).json()[
            "data"]] == ["The user keeps bees"]

        # HTTP straight to the private port, even with the right token: not one byte back
        with socket.create_connection(("127.0.0.1", port), timeout=15) as raw:
            raw.sendall(b"GET /api/memories HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        b"Authorization: Bearer right-token-7f3e9a\r\n\r\n")
            assert raw.recv(65536) == b""  # closed: it never spoke HTTP
        # a caller that cannot prove the secret gets the server's proof line and nothing more
        with socket.create_connection(("127.0.0.1", port), timeout=15) as raw:
            raw.sendall(HELLO + secrets.token_hex(32).encode() + b"\n")
            answer = b""
            while b"\n" not in answer:
                answer += raw.recv(65536)
            assert answer.startswith(PROOF) and answer.endswith(b"\n")
            raw.sendall(PROOF + secrets.token_hex(32).encode() + b"\nGET /api/memories HTTP/1.1\r\n"
                        b"Host: 127.0.0.1\r\n\r\n")
            assert raw.recv(65536) == b""
        # garbage, or a line that never ends: closed, and serve goes on serving
        for junk in (b"\x00\xff" * 20 + b"\n", b"DMEM-HELLO/1 " + b"a" * 5000):
            with (socket.create_connection(("127.0.0.1", port), timeout=15) as raw,
                  contextlib.suppress(ConnectionResetError, BrokenPipeError)):
                raw.sendall(junk)
                assert raw.recv(65536) == b""
        # the public port is unchanged: HTTP with the bearer token, no handshake
        assert httpx.get(f"{serve.url}/api/memories").status_code == 401
    finally:
        serve.stop()
    assert not Path(note).exists() and not Path(note).parent.exists()  # the note went with the run


@pytest.mark.usefixtures("tcp_fallback")
def test_a_key_note_others_could_read_or_swap_is_not_trusted(tmp_path: Path) -> None:
    holder = _holder(tmp_path / "store")
    _key, note = run_key_note()
    try:
        holder._parts.lock.publish(endpoint="http://127.0.0.1:9", endpoint_key=note)
        assert writer_endpoint(holder.root) is not None
        os.chmod(note, 0o644)
        assert writer_endpoint(holder.root) is None
        os.chmod(note, 0o600)
        os.chmod(Path(note).parent, 0o755)
        assert writer_endpoint(holder.root) is None
        os.chmod(Path(note).parent, 0o700)
        link = tmp_path / "run.key"
        link.symlink_to(note)
        holder._parts.lock.publish(endpoint_key=str(link))
        assert writer_endpoint(holder.root) is None
        holder._parts.lock.publish(endpoint_key=note, endpoint="http://203.0.113.5:80")  # not this machine
        assert writer_endpoint(holder.root) is None
    finally:
        holder.close()
        remove_private(note)


@pytest.mark.usefixtures("tcp_fallback")
def test_the_apps_endpoint_takes_forwarded_writes_over_the_fallback_and_takes_its_note_away(
    tmp_path: Path,
) -> None:
    from desktop_mem.api.app_endpoint import start_app_endpoint, stop_app_endpoint

    holder = _holder(tmp_path / "store")
    try:
        endpoint = start_app_endpoint(holder)
        assert endpoint is not None and endpoint.ready.wait(60) and endpoint.url is not None
        assert endpoint.url.startswith("http://127.0.0.1:")
        note = read_holder(holder.root)["endpoint_key"]
        assert Path(note).is_file()

        async def scenario() -> Any:
            with anyio.fail_after(90):
                async with stdio_session(holder.root, env=cli_env(**{FORCE_TCP_ENV: "1"})) as s:
                    return await s.call_tool("add_memories", {"text": "The user rows on Sundays"})

        result = anyio.run(scenario)
        assert not result.is_error, result.content
        assert [m.text for m in holder.list_memories()] == ["The user rows on Sundays"]
        stop_app_endpoint(holder)
        assert "endpoint" not in read_holder(holder.root) and "endpoint_key" not in read_holder(holder.root)
        assert not Path(note).exists()
    finally:
        stop_app_endpoint(holder)
        holder.close()
