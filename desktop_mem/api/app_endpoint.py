"""The desktop app's own local endpoint: `serve`'s routes and MCP at `/mcp`.

While the app holds the store, AI tools' `desktop-mem mcp` processes and CLI writes cannot write
it themselves; they forward to this endpoint, found through the lock note (`StoreLock.publish`).
It runs uvicorn in a daemon thread; engine calls happen in uvicorn's worker threads, never on
the GUI thread. It listens the way api/loopback.py says: a private Unix socket, or a loopback
port behind the run secret's handshake.

The listener is bound and published at once, but the server behind it (uvicorn, FastAPI, the
routes; ~13-23 MB of a window that most users never connect anything to) is imported when the
first caller connects: that caller waits in the listen backlog meanwhile (~0.5 s), well within a
forwarder's handshake and request timeouts (issue #25).
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
from typing import TYPE_CHECKING, Any

from desktop_mem.api.loopback import (
    handshake_protocol,
    has_unix_sockets,
    private_server_class,
    private_socket,
    remove_private,
    remove_private_socket,
    server_token,
    verified_listener,
)

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine

log = logging.getLogger(__name__)


class LoopbackEndpoint:
    """`start()` serves in the background; `stop()` ends it (idempotent)."""

    def __init__(self, engine: MemoryEngine, *, port: int = 0, token: str | None = None) -> None:
        self.engine = engine
        self.port = port
        self.token = token or None
        self.url: str | None = None
        self.key_note: str | None = None
        self.ready = threading.Event()  # set once listening (or failed: `url` stays None)
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._wake_lock = threading.Lock()
        self._wake: tuple[socket.socket, socket.socket] | None = None  # stop() wakes the wait

    def start(self) -> None:
        """Bind the listener and serve in a daemon thread (imports happen there, at the first caller)."""
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name="loopback-endpoint", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to finish and wait for it (open MCP sessions are closed); an endpoint nobody
        connected to yet withdraws its note and listener."""
        self._stopping.set()
        with self._wake_lock:
            if self._wake is not None:
                with contextlib.suppress(OSError):
                    self._wake[1].send(b"x")
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    @property
    def serving(self) -> bool:
        """True once a caller has connected and the server behind the listener is loaded."""
        return self._server is not None

    def _run(self) -> None:
        key: bytes | None = None
        try:
            note: dict[str, str] = {}
            if has_unix_sockets():
                sock, self.url = private_socket()
            else:  # 127.0.0.1 behind the run secret's handshake
                sock, key, self.key_note, self.url = verified_listener(self.port)
                note["endpoint_key"] = self.key_note
            self.engine.publish_endpoint(self.url, **note)
        except Exception:  # the app works without it; MCP tools then cannot write while it is open
            log.exception("could not start the app's loopback endpoint")
            remove_private(self.key_note)
            self.ready.set()
            return
        self.ready.set()
        if not self._first_caller(sock):
            self._withdraw(sock)  # closed before anybody connected
            return
        try:
            import uvicorn

            from desktop_mem.api.rest import create_app

            app = create_app(self.engine, self.token)
            http: dict[str, Any] = {}
            if key is not None:
                http["http"] = handshake_protocol(key, sock.getsockname()[1])
            settings = uvicorn.Config(app, log_level="warning", lifespan="on", **http)
            server = private_server_class()(settings)
            server.engine, server.private_endpoint, server.key_note = self.engine, self.url, self.key_note
        except Exception:
            log.exception("could not start the app's loopback endpoint")
            self._withdraw(sock)
            return
        self._server = server
        if self._stopping.is_set():  # stop() came while the server loaded: it did not see it
            self._withdraw(sock)
            return
        server.run(sockets=[sock])

    def _first_caller(self, sock: socket.socket) -> bool:
        """Wait, without polling, until a caller connects (True) or stop() is called (False)."""
        with self._wake_lock:
            if self._stopping.is_set():
                return False
            self._wake = socket.socketpair()
        try:
            readable, _, _ = select.select([sock, self._wake[0]], [], [])
            return sock in readable and not self._stopping.is_set()
        except (OSError, ValueError):
            return False
        finally:
            with self._wake_lock:
                for end in self._wake:
                    end.close()
                self._wake = None

    def _withdraw(self, sock: socket.socket) -> None:
        """Take the endpoint out of the lock note, then close and remove the listener."""
        with contextlib.suppress(Exception):
            self.engine.withdraw_endpoint()
        remove_private(self.key_note)
        sock.close()
        remove_private_socket(self.url)


_RUNNING: dict[int, LoopbackEndpoint] = {}  # by id(engine): one endpoint per open store


def start_app_endpoint(engine: MemoryEngine) -> LoopbackEndpoint | None:
    """Start the app's endpoint for a writing engine (None if read-only or `server.app_endpoint` off)."""
    if engine.read_only or not engine.config["server.app_endpoint"] or id(engine) in _RUNNING:
        return _RUNNING.get(id(engine))
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
