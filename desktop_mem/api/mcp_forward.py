"""Forward an MCP tool call (or a CLI write) to the desktop-mem process that holds the store.

The writer (the app or `serve`) notes its private endpoint in the store lock's note
(`.desktop_mem.lock.json`, never a secret). A `desktop-mem mcp` process started by an MCP client
calls the same tool there over streamable HTTP, presenting the original client's `initialize`
info so the commit still names that client. No bearer token is ever sent: only endpoints that
cannot be impersonated are used, and the writer needs no token on them.

- Where the OS has Unix domain sockets, only a `unix:` endpoint, and only when its folder and
  socket belong to this user and nobody else may enter the folder (0700): then the listener is
  ours, so nothing goes to a process of another local user. A `http://` note is not trusted
  there: a closing writer's port can be bound by anyone (issue #22).
- Elsewhere (or with DESKTOP_MEM_ENDPOINT_TCP=1), a 127.0.0.1 port named with the key note of
  the writer's run secret: every connection starts with the mutual proof of loopback.py, and the
  forwarder sends nothing but a random nonce until the listener has proved it knows the secret.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpcore2  # the connection pool under httpx2: its network backend does the handshake
import httpx2  # the HTTP client the mcp SDK's streamable HTTP transport is built on
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Implementation, TextContent

from desktop_mem.api.loopback import (
    HANDSHAKE_TIMEOUT_S,
    SOCKET_NAME,
    UNIX_PREFIX,
    EndpointNotVerified,
    answer_server,
    has_unix_sockets,
    hello,
    read_run_key,
)
from desktop_mem.api.security import is_loopback
from desktop_mem.engine.api import read_holder

FORWARD_TIMEOUT_S = 60.0


class WriterUnreachable(Exception):
    """Nothing answered at the advertised endpoint (the writer is starting or just stopped)."""


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


async def forward_call(
    endpoint: Endpoint, tool: str, arguments: dict[str, Any], client: Implementation | None
) -> dict[str, Any]:
    """Call `tool` on the writer's /mcp endpoint as `client`; its JSON result, or ToolError."""
    timeout = httpx2.Timeout(FORWARD_TIMEOUT_S)
    try:
        base, transport = transport_to(endpoint)
    except EndpointNotVerified as exc:
        raise ToolError(not_verified(endpoint, exc)) from None
    url = f"{base}/mcp"
    refusals: list[httpx2.Response] = []  # the SDK turns a 401 into "Server returned an error response"

    async def note_refusal(response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            await response.aread()
            refusals.append(response)

    try:
        async with (
            httpx2.AsyncClient(timeout=timeout, transport=transport,
                               event_hooks={"response": [note_refusal]}) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write, client_info=client) as session,
        ):
            await session.initialize()
            result = await session.call_tool(tool, {k: v for k, v in arguments.items() if v is not None})
    except httpx2.ConnectError as exc:
        raise WriterUnreachable(str(exc)) from exc
    except EndpointNotVerified as exc:
        raise ToolError(not_verified(endpoint, exc)) from None
    except ExceptionGroup as group:  # the SDK's task group wraps transport errors
        impostor, _rest = group.split(EndpointNotVerified)
        if impostor is not None:
            raise ToolError(not_verified(endpoint, _first(impostor))) from None
        refused, _rest = group.split(httpx2.ConnectError)
        if refused is not None:
            raise WriterUnreachable(str(refused.exceptions[0])) from group
        if refusals:
            raise ToolError(_refusal(refusals[0], endpoint)) from group
        raise
    except Exception as exc:
        if refusals:
            raise ToolError(_refusal(refusals[0], endpoint)) from exc
        raise
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    if result.is_error:
        raise ToolError(text or f"{tool} failed in the desktop-mem process at {endpoint}")
    if isinstance(result.structured_content, dict):
        return dict(result.structured_content)
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ToolError(f"{tool} at {endpoint} answered {type(value).__name__}, not an object")
    return value


def _first(group: BaseExceptionGroup[Any]) -> Any:
    """The first exception in a (nested) exception group."""
    first: Any = group
    while isinstance(first, BaseExceptionGroup):
        first = first.exceptions[0]
    return first


def _refusal(response: httpx2.Response, endpoint: Endpoint) -> str:
    """Why the writer refused a forwarded call, in words (never just "Error executing tool")."""
    code = response.status_code
    try:
        body = response.text[:200]
    except httpx2.ResponseNotRead:
        body = ""
    if code == 401:
        return (f"the desktop-mem process at {endpoint} asks for a bearer token (401), which a forwarded "
                "call never sends: it does not take this connection for a private one (an older "
                "desktop-mem?); restart the app or `serve`")
    if code == 403:
        return f"the desktop-mem process at {endpoint} refused the call (403): {body}"
    return f"the desktop-mem process at {endpoint} answered HTTP {code}: {body}"
