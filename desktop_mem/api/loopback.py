"""The desktop app's own HTTP endpoint on 127.0.0.1: `serve`'s routes and MCP at `/mcp`.

While the app holds the store, AI tools' `desktop-mem mcp` processes cannot write it themselves;
they forward to this endpoint, found through the lock note (`StoreLock.publish`).
It runs uvicorn in a daemon thread; engine calls happen in uvicorn's worker threads, never on
the GUI thread. Loopback only; the bearer token (if `server.token` is set) and the Origin / Host
rules are those of `serve` (server_security.Guard).
"""

from __future__ import annotations

import logging
import socket
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_mem.engine.facade import MemoryEngine

log = logging.getLogger(__name__)


class LoopbackEndpoint:
    """`start()` serves in the background; `stop()` ends it (idempotent)."""

    def __init__(self, engine: MemoryEngine, *, port: int = 0, token: str | None = None) -> None:
        self.engine = engine
        self.port = port
        self.token = token or None
        self.url: str | None = None
        self.ready = threading.Event()  # set once listening (or failed: `url` stays None)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind 127.0.0.1:<port> and serve in a daemon thread (imports happen there, too)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="loopback-endpoint", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to finish and wait for it (open MCP sessions are closed)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        try:
            import uvicorn

            from desktop_mem.api.rest import create_app

            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", self.port))
            sock.listen(64)  # connections wait in the backlog until uvicorn accepts them
            app = create_app(self.engine, self.token)
            self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
            self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            self.engine.lock.publish(endpoint=self.url)
        except Exception:  # the app works without it; MCP tools then cannot write while it is open
            log.exception("could not start the app's loopback endpoint")
            self.ready.set()
            return
        self.ready.set()
        self._server.run(sockets=[sock])


_RUNNING: dict[int, LoopbackEndpoint] = {}  # by id(engine): one endpoint per open store


def start_app_endpoint(engine: MemoryEngine) -> LoopbackEndpoint | None:
    """Start the app's endpoint for a writing engine (None if read-only or `server.app_endpoint` off)."""
    if engine.read_only or not engine.config["server.app_endpoint"] or id(engine) in _RUNNING:
        return _RUNNING.get(id(engine))
    endpoint = LoopbackEndpoint(engine, port=int(engine.config["server.app_port"]),
                                token=str(engine.config["server.token"]) or None)
    _RUNNING[id(engine)] = endpoint
    endpoint.start()
    return endpoint


def stop_app_endpoint(engine: MemoryEngine) -> None:
    """Stop the endpoint started for `engine`, if any (before the engine closes)."""
    endpoint = _RUNNING.pop(id(engine), None)
    if endpoint is not None:
        endpoint.stop()
