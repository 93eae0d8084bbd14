"""Private local endpoints: what `serve` and the app's endpoint (api/app_endpoint.py) listen on,
and what forwarders (api/mcp_forward.py, cli/forward.py) check before they send anything.

Where the OS has Unix domain sockets the endpoint is one (`private_socket`): a socket in a fresh
0700 folder of this user's, so no other local user can connect to it, bind it first, or take its
place once it closes (a TCP port can be squatted in the moment between a writer closing it and
its lock note going away). The forwarder checks folder and socket belong to it before it sends
anything (mcp_forward.writer_endpoint).

Elsewhere (Windows, or DESKTOP_MEM_ENDPOINT_TCP=1) it is a 127.0.0.1 port whose every connection
starts with a mutual proof of a per-run secret (`run_key_note`: 32 random bytes in a 0600 file
in a fresh 0700 folder; the lock note names the file, never the secret, which is never sent):

    forwarder -> server   DMEM-HELLO/1 <nonce_f>
    server -> forwarder   DMEM-PROOF/1 <nonce_s> <HMAC-SHA256(secret, "server|nonce_f|nonce_s")>
    forwarder -> server   DMEM-PROOF/1 <HMAC-SHA256(secret, "client|nonce_s|nonce_f")>

The forwarder sends nothing but a random nonce until the server has proved it knows the secret
(a squatter on the port learns nothing), and the server speaks no HTTP until the forwarder has
proved it (another local user cannot call it). A verified connection needs no bearer token, so
the reusable token never crosses the fallback. Either way the endpoint leaves the lock note
before its listener closes (`PrivateServer.shutdown`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import os
import secrets
import socket
import stat
import sys
from pathlib import Path
from typing import Any

from desktop_mem.engine.config import Config, save_config
from desktop_mem.engine.runtime_folders import make_runtime_folder, remove_runtime_folder

UNIX_PREFIX = "unix:"
SOCKET_NAME = "mcp.sock"
KEY_NAME = "run.key"
PRIVATE_PREFIX = "desktop-mem-"  # the folder holding the socket or key note
FORCE_TCP_ENV = "DESKTOP_MEM_ENDPOINT_TCP"  # "1": the TCP fallback even where Unix sockets exist
HELLO = b"DMEM-HELLO/1 "
PROOF = b"DMEM-PROOF/1 "
HANDSHAKE_TIMEOUT_S = 10.0
_MAX_LINE = 300
VERIFIED = "desktop_mem.verified"  # ASGI scope key: this request came over a verified connection


log = logging.getLogger(__name__)


class EndpointNotVerified(Exception):
    """The listener at a TCP endpoint did not prove it knows the run secret: nothing was sent."""


def server_token(config: Config) -> str:
    """The bearer token `serve` and the app's endpoint require by default: `server.token`, or
    one generated now and kept in the settings file (0600), where Settings shows it (#22).
    Here, not in api/security.py: the app's endpoint asks for it before it loads any server."""
    token = str(config["server.token"]).strip()
    if token:
        return token
    token = secrets.token_urlsafe(24)
    if config.file is not None:
        try:
            save_config(config.file, {"server.token": token})
        except OSError as exc:  # still private for this run; the next one generates another
            log.warning("could not keep the generated server token in %s: %s", config.file, exc)
    return token


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def has_unix_sockets() -> bool:
    """True where a private Unix domain socket serves the endpoint (not on Windows, and not when
    DESKTOP_MEM_ENDPOINT_TCP=1 asks for the TCP fallback, e.g. to test it)."""
    return hasattr(socket, "AF_UNIX") and sys.platform != "win32" and os.environ.get(FORCE_TCP_ENV) != "1"


def _private_folder() -> str:
    """A fresh folder only this user can enter (0700; in XDG_RUNTIME_DIR where there is one),
    marked as this process's: the next one made removes it if this process is killed."""
    base = os.environ.get("XDG_RUNTIME_DIR") or None
    if base is None or not os.path.isdir(base):
        base = None
    folder = make_runtime_folder(PRIVATE_PREFIX, base)  # mkdtemp: 0700, owned by us
    os.chmod(folder, 0o700)
    return str(folder)


def run_key_note() -> tuple[bytes, str]:
    """A new per-run secret for the TCP fallback's handshake, and the 0600 file holding it (in a
    fresh 0700 folder); the lock note names the file. Remove with `remove_private(path)`."""
    key = secrets.token_bytes(32)
    path = os.path.join(_private_folder(), KEY_NAME)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key.hex())
    return key, path


def read_run_key(path: object) -> bytes | None:
    """The secret in a key note made by `run_key_note`, or None unless it is a regular file of
    this user's that nobody else may read, in a folder of this user's nobody else may enter."""
    if not isinstance(path, str) or not os.path.isabs(path) or os.path.basename(path) != KEY_NAME:
        return None
    try:
        folder = os.lstat(os.path.dirname(path))
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "r", encoding="ascii", errors="replace") as handle:
        note = os.fstat(handle.fileno())
        text = handle.read(_MAX_LINE).strip()
    if not stat.S_ISREG(note.st_mode) or not stat.S_ISDIR(folder.st_mode):
        return None
    if hasattr(os, "getuid"):  # POSIX; on Windows the folder is in the user's own profile
        uid = os.getuid()
        if note.st_uid != uid or folder.st_uid != uid or note.st_mode & 0o077 or folder.st_mode & 0o077:
            return None
    try:
        key = bytes.fromhex(text)
    except ValueError:
        return None
    return key if len(key) >= 32 else None


def _mac(key: bytes, role: bytes, first: bytes, second: bytes) -> bytes:
    return hmac.new(key, role + b"|" + first + b"|" + second, hashlib.sha256).digest()


def _parse(prefix: bytes, line: bytes, parts: int) -> list[bytes] | None:
    """The hex fields of a handshake line (`parts` of 32 bytes each), or None."""
    if not line.startswith(prefix):
        return None
    fields = line[len(prefix):].strip().split(b" ")
    try:
        values = [bytes.fromhex(f.decode("ascii")) for f in fields]
    except (UnicodeDecodeError, ValueError):
        return None
    return values if len(values) == parts and all(len(v) == 32 for v in values) else None


def hello() -> tuple[bytes, bytes]:
    """The forwarder's first line and its nonce."""
    nonce = secrets.token_bytes(32)
    return HELLO + nonce.hex().encode() + b"\n", nonce


def answer_server(key: bytes, nonce_f: bytes, line: bytes) -> bytes:
    """The forwarder's proof for the server's line, or EndpointNotVerified when the server did
    not prove it knows `key` (then nothing more may be sent to it)."""
    fields = _parse(PROOF, line, 2)
    if fields is None or not hmac.compare_digest(fields[1], _mac(key, b"server", nonce_f, fields[0])):
        raise EndpointNotVerified("it did not prove it knows this run's secret")
    return PROOF + _mac(key, b"client", fields[0], nonce_f).hex().encode() + b"\n"


def handshake_protocol(key: bytes, port: int) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, behind the handshake on connections to 127.0.0.1:`port` (other
    listeners of the same server, e.g. `serve`'s public port, speak HTTP at once)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class HandshakeProtocol(asyncio.Protocol):
        def __init__(self, **args: object) -> None:
            self._args = args
            self._inner: Any = None
            self._transport: Any = None
            self._buffer = b""
            self._nonces: tuple[bytes, bytes] | None = None
            self._timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            name = transport.get_extra_info("sockname")
            if not (isinstance(name, tuple) and len(name) >= 2 and name[1] == port):
                self._start(transport, b"", verified=False)
                return
            self._transport = transport
            self._timer = asyncio.get_running_loop().call_later(HANDSHAKE_TIMEOUT_S, transport.close)

        def data_received(self, data: bytes) -> None:
            if self._inner is not None:
                self._inner.data_received(data)
                return
            self._buffer += data
            while self._inner is None and b"\n" in self._buffer:
                line, _, self._buffer = self._buffer.partition(b"\n")
                if not self._step(line):
                    self._transport.close()  # says nothing more: the caller proved nothing
                    return
            if self._inner is None and len(self._buffer) > _MAX_LINE:
                self._transport.close()

        def _step(self, line: bytes) -> bool:
            if self._nonces is None:
                fields = _parse(HELLO, line, 1)
                if fields is None:
                    return False
                nonce_s = secrets.token_bytes(32)
                self._nonces = (fields[0], nonce_s)
                proof = _mac(key, b"server", fields[0], nonce_s)
                self._transport.write(PROOF + nonce_s.hex().encode() + b" " + proof.hex().encode() + b"\n")
                return True
            nonce_f, nonce_s = self._nonces
            fields = _parse(PROOF, line, 1)
            if fields is None or not hmac.compare_digest(fields[0], _mac(key, b"client", nonce_s, nonce_f)):
                return False
            if self._timer is not None:
                self._timer.cancel()
            rest, self._buffer = self._buffer, b""
            self._start(self._transport, rest, verified=True)
            return True

        def _start(self, transport: Any, rest: bytes, *, verified: bool) -> None:
            inner = AutoHTTPProtocol(**self._args)
            if verified:
                inner.app = _mark_verified(inner.app)  # type: ignore[attr-defined]
            self._inner = inner
            inner.connection_made(transport)
            if rest:
                inner.data_received(rest)

        def connection_lost(self, exc: Exception | None) -> None:
            if self._timer is not None:
                self._timer.cancel()
            if self._inner is not None:
                self._inner.connection_lost(exc)

        def eof_received(self) -> bool | None:
            return self._inner.eof_received() if self._inner is not None else None

        def pause_writing(self) -> None:
            if self._inner is not None:
                self._inner.pause_writing()

        def resume_writing(self) -> None:
            if self._inner is not None:
                self._inner.resume_writing()

    return HandshakeProtocol


def _mark_verified(app: Any) -> Any:
    async def verified(scope: Any, receive: Any, send: Any) -> None:
        await app({**scope, VERIFIED: True}, receive, send)

    return verified


def verified_listener(port: int = 0) -> tuple[socket.socket, bytes, str, str]:
    """The TCP fallback: a listening 127.0.0.1 socket (`port`, 0: any free one), the run secret,
    its key note's path, and the endpoint URL for the lock note."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(64)  # connections wait in the backlog until uvicorn accepts them
        key, note = run_key_note()
    except OSError:
        sock.close()
        raise
    return sock, key, note, f"http://127.0.0.1:{sock.getsockname()[1]}"


def private_socket() -> tuple[socket.socket, str]:
    """A listening Unix domain socket in a fresh folder only this user can enter (0700), and its
    endpoint string `unix:<path>` for the lock note."""
    folder = _private_folder()
    path = os.path.join(folder, SOCKET_NAME)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(path)
        os.chmod(path, 0o600)
        sock.listen(64)
    except OSError:
        sock.close()
        remove_private_socket(UNIX_PREFIX + path)
        raise
    return sock, UNIX_PREFIX + path


def remove_private_socket(endpoint: str | None) -> None:
    """Remove a socket made by `private_socket` and its folder (idempotent)."""
    if not endpoint or not endpoint.startswith(UNIX_PREFIX):
        return
    remove_private(endpoint[len(UNIX_PREFIX):])


def remove_private(path: str | None) -> None:
    """Remove a socket or key note in a folder made by `_private_folder`, and the folder."""
    if not path:
        return
    with contextlib.suppress(OSError):
        Path(path).unlink()
    remove_runtime_folder(Path(path).parent)


def is_private_connection(scope: Any) -> bool:
    """True for a request that came over one of our private Unix sockets (only this OS user can
    connect to it), from uvicorn's ASGI scope: the server address is the socket's path; or over
    a TCP connection whose caller proved it knows the run secret (`handshake_protocol`)."""
    if scope.get(VERIFIED) is True:
        return True
    server = scope.get("server")
    if not isinstance(server, (tuple, list)) or not server or not isinstance(server[0], str):
        return False
    path = Path(server[0])
    return path.name == SOCKET_NAME and path.parent.name.startswith(PRIVATE_PREFIX)


def private_server_class() -> type[Any]:
    """uvicorn.Server that leaves the lock note before its listeners close (imports uvicorn)."""
    import uvicorn

    class PrivateServer(uvicorn.Server):
        """Withdraws `endpoint` from the store lock's note first thing on shutdown, so no forwarder
        is sent to a listener that is closing (or, on TCP, to whoever binds the port next)."""

        engine: Any = None
        private_endpoint: str | None = None
        key_note: str | None = None

        async def shutdown(self, sockets: Any = None) -> None:
            if self.engine is not None:
                with contextlib.suppress(Exception):
                    self.engine.withdraw_endpoint()
            remove_private(self.key_note)  # a forwarder can no longer verify anyone there
            try:
                await super().shutdown(sockets=sockets)
            finally:
                remove_private_socket(self.private_endpoint)

    return PrivateServer
