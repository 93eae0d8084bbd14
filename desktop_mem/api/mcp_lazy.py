"""`/mcp` of `serve` and of the app's endpoint, built when an MCP client first asks for it.

The MCP SDK and the server built on it (mcp_server.py) hold ~27 MB of a process that may never
see an MCP client (a window whose user has no AI tool set up, a `serve` used for its OpenAI
endpoint): at 100,000 memories that was the difference between the 600 MB target and not
(issue #25). So the route is in place from the start, and its first request imports and starts
the MCP server; the requests that arrive meanwhile wait for it.

The SDK's session manager runs in an anyio task group, which must be entered and left by one
task: a keeper task of the app's lifespan does both, so the server stops with the app whichever
request started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

if TYPE_CHECKING:
    from desktop_mem.api.security import ErrorBody
    from desktop_mem.engine.api import MemoryEngine

log = logging.getLogger(__name__)
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class LazyMCP:
    """An ASGI app for `/mcp` that starts the MCP server on its first request."""

    def __init__(self, engine: MemoryEngine, error_body: ErrorBody) -> None:
        """`error_body`: the server's error JSON (rest.py's), for the requests it cannot serve."""
        self._engine = engine
        self._error_body = error_body
        self._app: Callable[[Scope, Receive, Send], Awaitable[None]] | None = None
        self._error: BaseException | None = None
        self._wanted: asyncio.Event | None = None
        self._ready: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None

    @property
    def started(self) -> bool:
        """True once a request made the MCP server start (or try to)."""
        return self._wanted is not None and self._wanted.is_set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The app's lifespan: the keeper task waits for a first request; stops the server after."""
        self._wanted, self._ready, self._stop = asyncio.Event(), asyncio.Event(), asyncio.Event()
        keeper = asyncio.create_task(self._keep(), name="mcp-keeper")
        try:
            yield
        finally:
            self._stop.set()
            self._wanted.set()  # a keeper still waiting for a first request ends at once
            with contextlib.suppress(Exception):
                await keeper

    async def _keep(self) -> None:
        assert self._wanted is not None and self._ready is not None and self._stop is not None
        await self._wanted.wait()
        if self._stop.is_set():
            return
        try:
            from starlette.concurrency import run_in_threadpool
            from starlette.routing import Router

            # the import takes a few hundred ms: off the event loop, which keeps serving
            build = await run_in_threadpool(_import_builder)
            routes, lifespan = build(self._engine)
            async with lifespan():
                self._app = Router(routes=routes)
                self._ready.set()
                await self._stop.wait()
        except Exception as exc:  # noqa: BLE001 - told to every MCP request, logged once
            log.exception("the MCP server could not start")
            self._error = exc
        finally:
            self._app = None
            self._ready.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._wanted is None or self._ready is None:
            await self._refuse(scope, receive, send, "the MCP server runs only while the HTTP server does")
            return
        self._wanted.set()
        await self._ready.wait()
        app = self._app
        if app is None:
            why = "the server is stopping"
            if self._error is not None:
                why = f"the MCP server could not start: {self._error}"
            await self._refuse(scope, receive, send, why)
            return
        await app(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, why: str) -> None:
        body = self._error_body(503, why, None, "server_error")
        await JSONResponse(body, status_code=503)(scope, receive, send)


def _import_builder() -> Callable[[MemoryEngine], tuple[list[Any], Callable[[], Any]]]:
    from desktop_mem.api.mcp_server import mcp_http_app

    return mcp_http_app
