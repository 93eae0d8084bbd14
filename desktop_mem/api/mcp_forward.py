"""Forward an MCP tool call to the desktop-mem process that holds the store (one writer).

The writer (the app or `serve`) notes its loopback endpoint in the store lock's note
(`.desktop_mem.lock.json`, never a secret). A `desktop-mem mcp` process started by an MCP client
calls the same tool there over streamable HTTP, presenting the original client's `initialize`
info so the commit still names that client. The bearer token, if any, comes from this process's
own settings (server.token / DESKTOP_MEM_TOKEN), never from the lock file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx2  # the HTTP client the mcp SDK's streamable HTTP transport is built on
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Implementation, TextContent

from desktop_mem.api.security import is_loopback
from desktop_mem.engine.store.store_lock import read_holder

FORWARD_TIMEOUT_S = 60.0


class WriterUnreachable(Exception):
    """Nothing answered at the advertised endpoint (the writer is starting or just stopped)."""


def writer_endpoint(root: Path) -> str | None:
    """The loopback endpoint the current lock holder advertises, if it is a usable one."""
    endpoint = read_holder(root).get("endpoint")
    if not isinstance(endpoint, str):
        return None
    parts = urlsplit(endpoint)
    # Only ever send memories to this machine, whatever a (hand-edited) lock note says.
    if parts.scheme != "http" or not parts.hostname or not is_loopback(parts.hostname):
        return None
    return endpoint.rstrip("/")


async def forward_call(
    endpoint: str, tool: str, arguments: dict[str, Any], client: Implementation | None, token: str | None
) -> dict[str, Any]:
    """Call `tool` on the writer's /mcp endpoint as `client`; its JSON result, or ToolError."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(FORWARD_TIMEOUT_S)
    try:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
            streamable_http_client(f"{endpoint}/mcp", http_client=http) as (read, write),
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
