"""The desktop app's own local endpoint: `serve`'s routes and MCP at `/mcp`.

While the app holds the store, AI tools' `desktop-mem mcp` processes cannot write it themselves;
they forward to this endpoint, found through the lock note (`StoreLock.publish`).
It runs uvicorn in a daemon thread; engine calls happen in uvicorn's worker threads, never on
the GUI thread.

Where the OS has Unix domain sockets the endpoint is one (`private_socket`): a socket in a fresh
0700 folder of this user's, so no other local user can connect to it, bind it first, or take its
place once it closes (a TCP port can be squatted in the moment between a writer closing it and
its lock note going away). The forwarder checks folder and socket belong to it before it sends
anything (mcp_forward.writer_endpoint). Elsewhere: 127.0.0.1 with the bearer token and the
Origin / Host rules of `serve` (security.Guard). Either way the endpoint leaves the lock note
before its listener closes (`PrivateServer.shutdown`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine

log = logging.getLogger(__name__)
UNIX_PREFIX = "unix:"
SOCKET_NAME = "mcp.sock"


def has_unix_sockets() -> bool:
    """True where a private Unix domain socket can serve the endpoint (not on Windows)."""
    return hasattr(socket, "AF_UNIX") and sys.platform != "win32"


def private_socket() -> tuple[socket.socket, str]:
    """A listening Unix domain socket in a fresh folder only this user can enter (0700), and its
    endpoint string `unix:<path>` for the lock note."""
    base = os.environ.get("XDG_RUNTIME_DIR") or None
    if base is None or not os.path.isdir(base):
        base = None
    folder = tempfile.mkdtemp(prefix="desktop-mem-", dir=base)  # mkdtemp: 0700, owned by us
    os.chmod(folder, 0o700)
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
    path = Path(endpoint[len(UNIX_PREFIX):])
    with contextlib.suppress(OSError):
        path.unlink()
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def is_private_connection(scope: Any) -> bool:
    """True for a request that came over one of our private Unix sockets (only this OS user can
    connect to it), from uvicorn's ASGI scope: the server address is the socket's path."""
    server = scope.get("server")
    if not isinstance(server, (tuple, list)) or not server or not isinstance(server[0], str):
        return False
    path = Path(server[0])
    return path.name == SOCKET_NAME and path.parent.name.startswith("desktop-mem-")


def private_server_class() -> type[Any]:
    """uvicorn.Server that leaves the lock note before its listeners close (imports uvicorn)."""
    import uvicorn

    class PrivateServer(uvicorn.Server):  # type: ignore[misc]
        """Withdraws `endpoint` from the store lock's note first thing on shutdown, so no forwarder
        is sent to a listener that is closing (or, on TCP, to whoever binds the port next)."""

        engine: Any = None
        private_endpoint: str | None = None

        async def shutdown(self, sockets: Any = None) -> None:
            if self.engine is not None:
                with contextlib.suppress(Exception):
                    self.engine.lock.withdraw("endpoint")
            try:
                await super().shutdown(sockets=sockets)
            finally:
                remove_private_socket(self.private_endpoint)

    return PrivateServer


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

            if has_unix_sockets():
                sock, self.url = private_socket()
            else:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.bind(("127.0.0.1", self.port))
                sock.listen(64)  # connections wait in the backlog until uvicorn accepts them
                self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            app = create_app(self.engine, self.token)
            server = private_server_class()(uvicorn.Config(app, log_level="warning", lifespan="on"))
            server.engine, server.private_endpoint = self.engine, self.url
            self._server = server
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
    from desktop_mem.api.security import server_token

    # a token by default (the TCP fallback); over the private Unix socket only this user connects
    endpoint = LoopbackEndpoint(engine, port=int(engine.config["server.app_port"]),
                                token=server_token(engine.config))
    _RUNNING[id(engine)] = endpoint
    endpoint.start()
    return endpoint


def stop_app_endpoint(engine: MemoryEngine) -> None:
    """Stop the endpoint started for `engine`, if any (before the engine closes)."""
    endpoint = _RUNNING.pop(id(engine), None)
    if endpoint is not None:
        endpoint.stop()
