"""Forward an MCP tool call to the desktop-mem process that holds the store (one writer).

The writer (the app or `serve`) notes its loopback endpoint in the store lock's note
(`.desktop_mem.lock.json`, never a secret). A `desktop-mem mcp` process started by an MCP client
calls the same tool there over streamable HTTP, presenting the original client's `initialize`
info so the commit still names that client. The bearer token, if any, comes from this process's
own settings (server.token / DESKTOP_MEM_TOKEN), never from the lock file.

Where the OS has Unix domain sockets, only a `unix:` endpoint is used, and only when its folder
and socket belong to this user and nobody else may enter the folder (0700): then the listener is
ours, so nothing (token or memory) goes to a process of another local user. A `http://` note is
not trusted there: a closing writer's port can be bound by anyone (issue #22).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2  # the HTTP client the mcp SDK's streamable HTTP transport is built on
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Implementation, TextContent

from desktop_mem.api.loopback import SOCKET_NAME, UNIX_PREFIX, has_unix_sockets
from desktop_mem.api.security import is_loopback
from desktop_mem.engine.api import read_holder

FORWARD_TIMEOUT_S = 60.0


class WriterUnreachable(Exception):
    """Nothing answered at the advertised endpoint (the writer is starting or just stopped)."""


def writer_endpoint(root: Path) -> str | None:
    """The loopback endpoint the current lock holder advertises, if it is a usable one."""
    endpoint = read_holder(root).get("endpoint")
    if not isinstance(endpoint, str):
        return None
    if has_unix_sockets():
        return endpoint if endpoint.startswith(UNIX_PREFIX) and _ours(endpoint[len(UNIX_PREFIX):]) else None
    parts = urlsplit(endpoint)
    # Only ever send memories to this machine, whatever a (hand-edited) lock note says.
    if parts.scheme != "http" or not parts.hostname or not is_loopback(parts.hostname):
        return None
    return endpoint.rstrip("/")


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


async def forward_call(
    endpoint: str, tool: str, arguments: dict[str, Any], client: Implementation | None, token: str | None
) -> dict[str, Any]:
    """Call `tool` on the writer's /mcp endpoint as `client`; its JSON result, or ToolError."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(FORWARD_TIMEOUT_S)
    url, transport = f"{endpoint}/mcp", None
    if endpoint.startswith(UNIX_PREFIX):  # checked by writer_endpoint: our own private socket
        url, transport = "http://localhost/mcp", httpx2.AsyncHTTPTransport(uds=endpoint[len(UNIX_PREFIX):])
    refusals: list[httpx2.Response] = []  # the SDK turns a 401 into "Server returned an error response"

    async def note_refusal(response: httpx2.Response) -> None:
        if response.status_code in (401, 403):
            await response.aread()
            refusals.append(response)

    try:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout, transport=transport,
                               event_hooks={"response": [note_refusal]}) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write, client_info=client) as session,
        ):
            await session.initialize()
            result = await session.call_tool(tool, {k: v for k, v in arguments.items() if v is not None})
    except httpx2.ConnectError as exc:
        raise WriterUnreachable(str(exc)) from exc
    except ExceptionGroup as group:  # the SDK's task group wraps transport errors
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


def _refusal(response: httpx2.Response, endpoint: str) -> str:
    """Why the writer refused a forwarded call, in words (never just "Error executing tool")."""
    code = response.status_code
    try:
        body = response.text[:200]
    except httpx2.ResponseNotRead:
        body = ""
    if code == 401:
        return (f"the token does not match; the desktop-mem process at {endpoint} requires the bearer "
                "token it shows (serve prints it; the app shows it in Settings): set the same "
                "server.token / DESKTOP_MEM_TOKEN for this MCP server")
    if code == 403:
        return f"the desktop-mem process at {endpoint} refused the call (403): {body}"
    return f"the desktop-mem process at {endpoint} answered HTTP {code}: {body}"
