"""Forward an MCP tool call (or a CLI write) to the desktop-mem process that holds the store.

The writer (the app or `serve`) notes its private endpoint in the store lock's note
(`.desktop_mem.lock.json`, never a secret). A `desktop-mem mcp` process started by an MCP client
calls the same tool there over streamable HTTP, presenting the original client's `initialize`
info so the commit still names that client. No bearer token is ever sent: only endpoints that
cannot be impersonated are used, and the writer needs no token on them.

Which endpoints are trusted, and how a TCP one is verified: api/holder_endpoint.py.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2  # the HTTP client the mcp SDK's streamable HTTP transport is built on
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Implementation, TextContent

from desktop_mem.api.holder_endpoint import Endpoint, not_verified, transport_to
from desktop_mem.api.loopback import EndpointNotVerified

FORWARD_TIMEOUT_S = 60.0


class WriterUnreachable(Exception):
    """Nothing answered at the advertised endpoint (the writer is starting or just stopped)."""


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
