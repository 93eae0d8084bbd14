"""The endpoint of the desktop-mem process that holds the store, and how to reach only it.

The writer (the app or `serve`) notes its private endpoint in the store lock's note
(`.desktop_mem.lock.json`, never a secret). `desktop-mem mcp` (api/mcp_forward.py) and the CLI
(cli/forward.py) send their calls there. No bearer token is ever sent: only endpoints that cannot
be impersonated are used, and the writer needs no token on them.

- Where the OS has Unix domain sockets, only a `unix:` endpoint, and only when its folder and
  socket belong to this user and nobody else may enter the folder (0700): then the listener is
  ours, so nothing goes to a process of another local user. A `http://` note is not trusted
  there: a closing writer's port can be bound by anyone (issue #22).
- Elsewhere (or with DESKTOP_MEM_ENDPOINT_TCP=1), a 127.0.0.1 port named with the key note of
  the writer's run secret: every connection starts with the mutual proof of loopback.py, and the
  forwarder sends nothing but a random nonce until the listener has proved it knows the secret.

Standard library, httpx2 and httpcore2 only (no mcp SDK, no FastAPI): a CLI command that asks
the holder starts in a fraction of a second.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpcore2  # the connection pool under httpx2: its network backend does the handshake
import httpx2

from desktop_mem.api.loopback import (
    HANDSHAKE_TIMEOUT_S,
    SOCKET_NAME,
    UNIX_PREFIX,
    EndpointNotVerified,
    answer_server,
    has_unix_sockets,
    hello,
    is_loopback,
    read_run_key,
)
from desktop_mem.engine.api import read_holder


@dataclass(frozen=True)
class Endpoint:
    """Where the store's writer listens: `unix:<path>`, or `http://127.0.0.1:<port>` with the
    run secret (`key`) that connections there must prove."""

    url: str
    key: bytes | None = None

    def __str__(self) -> str:
        return self.url


def writer_endpoint(root: Path) -> Endpoint | None:
    """The private endpoint the current lock holder advertises, if it is a usable one."""
    holder = read_holder(root)
    endpoint = holder.get("endpoint")
    if not isinstance(endpoint, str):
        return None
    if has_unix_sockets():
        usable = endpoint.startswith(UNIX_PREFIX) and _ours(endpoint[len(UNIX_PREFIX):])
        return Endpoint(endpoint) if usable else None
    parts = urlsplit(endpoint)
    # Only ever talk to this machine, whatever a (hand-edited) lock note says, and only with the
    # run secret the writer left for this user.
    if parts.scheme != "http" or not parts.hostname or not is_loopback(parts.hostname):
        return None
    key = read_run_key(holder.get("endpoint_key"))
    return Endpoint(endpoint.rstrip("/"), key) if key is not None else None


def _ours(path: str) -> bool:
    """True when `path` is a socket of this user's in a folder nobody else can enter or change."""
    if not os.path.isabs(path) or os.path.basename(path) != SOCKET_NAME:
        return False
    try:
        folder = os.lstat(os.path.dirname(path))
        sock = os.lstat(path)
    except OSError:
        return False
    uid = os.getuid()
    return (stat.S_ISDIR(folder.st_mode) and folder.st_uid == uid and not folder.st_mode & 0o077
            and stat.S_ISSOCK(sock.st_mode) and sock.st_uid == uid)


class _VerifyingBackend(httpcore2.AsyncNetworkBackend):
    """TCP connections that start with the run secret's mutual proof (loopback.py)."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Any = None) -> Any:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        try:
            first, nonce = hello()  # random: all a squatter on the port ever gets
            await stream.write(first, timeout=HANDSHAKE_TIMEOUT_S)
            line = b""
            with anyio.fail_after(HANDSHAKE_TIMEOUT_S):
                while b"\n" not in line and len(line) < 300:
                    chunk = await stream.read(300, timeout=HANDSHAKE_TIMEOUT_S)
                    if not chunk:
                        break
                    line += chunk
            proof = answer_server(self._key, nonce, line.partition(b"\n")[0])
            await stream.write(proof, timeout=HANDSHAKE_TIMEOUT_S)
        except (TimeoutError, httpcore2.ReadTimeout, httpcore2.ReadError, httpcore2.WriteError) as exc:
            await stream.aclose()
            raise EndpointNotVerified(f"it did not complete the handshake ({type(exc).__name__})") from exc
        except BaseException:
            await stream.aclose()
            raise
        return stream

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def transport_to(endpoint: Endpoint) -> tuple[str, httpx2.AsyncHTTPTransport]:
    """The base URL and the HTTP transport that reach `endpoint` (and nothing else)."""
    if endpoint.url.startswith(UNIX_PREFIX):  # checked by writer_endpoint: our own private socket
        return "http://localhost", httpx2.AsyncHTTPTransport(uds=endpoint.url[len(UNIX_PREFIX):])
    if endpoint.key is None:
        raise EndpointNotVerified("no run secret to verify it with")
    transport = httpx2.AsyncHTTPTransport()
    # httpx2 takes no network backend: its pool is rebuilt with one that does the handshake
    transport._pool = httpcore2.AsyncConnectionPool(network_backend=_VerifyingBackend(endpoint.key))
    return endpoint.url, transport


def not_verified(endpoint: Endpoint, exc: EndpointNotVerified) -> str:
    """The refusal when the listener at `endpoint` is not the store's writer."""
    return (f"the process listening at {endpoint} is not the desktop-mem process that holds the store "
            f"({exc}); nothing was sent to it. Close and reopen the app (or restart `serve`) if it "
            "is running")
