"""Where MCP tool calls run: on this process's open engine, or in a `desktop-mem mcp` session.

- `EngineBackend`: `serve` and the app (`/mcp`): every call on the one open engine.
- `StdioBackend`: a `desktop-mem mcp` process an MCP client spawned. One warm engine serves the
  whole session (issue 23): reads run on a read-only engine kept open and refreshed per call
  (only changed files are parsed again); writes and searches run where the store's writer is:
  forwarded to the process holding the lock (mcp_forward.py), or, when nobody holds it, here on a
  warm writer engine that takes the lock for the one call and gives it back at once, so the app
  or `serve` can open the store between calls (docs/architecture.md, one writer).

The warm writer is reused only while nobody else wrote: after each call it records the store's
HEAD commit and the mtimes of the derived files, and when it next takes the lock it compares
them (and asks git whether files changed by hand). Anything different, and it is closed and
opened again, as a new engine would be. Its search index is closed whenever the lock is given
back: two processes must never have the same chromadb folder open at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Implementation

from desktop_mem.engine.api import MemoryEngine, describe_holder, read_holder
from desktop_mem.engine.config import Config
from desktop_mem.engine.models import EngineError, StoreChange, StoreLockedError

T = TypeVar("T")
EngineCall = Callable[[MemoryEngine], T]  # a tool's work on an engine; what it returns, the tool answers
ChangeListener = Callable[[StoreChange], None]
LOCK_WAIT_S = 15.0  # how long a call waits for a writer that advertises no endpoint (a CLI command)
DERIVED = ("memory_index.json.sqlite3", "keyword_index.sqlite3", "chroma/chroma.sqlite3")
READS_AT_WRITER = frozenset({"search_memory", "search"})  # run at the writer to search its fresh index


class Backend(Protocol):
    """Where tool calls run: `read` needs only the files; `at_writer` needs the store's writer."""

    async def read(self, call: EngineCall[T]) -> T: ...

    async def at_writer(self, tool: str, arguments: dict[str, Any], client: Implementation | None,
                        call: EngineCall[T]) -> T: ...


class EngineBackend:
    """Calls on this process's open engine (serve, the app), in worker threads."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    async def read(self, call: EngineCall[T]) -> T:
        return await _run(call, self.engine)

    async def at_writer(self, tool: str, arguments: dict[str, Any], client: Implementation | None,
                        call: EngineCall[T]) -> T:
        return await _run(call, self.engine)

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """Every change of the store (this engine's writes, forwarded writes, outside edits)."""
        return self.engine.subscribe(listener)


async def _run(call: EngineCall[T], engine: MemoryEngine) -> T:
    try:
        return await anyio.to_thread.run_sync(call, engine)
    except EngineError as exc:
        raise ToolError(str(exc)) from exc


class StdioBackend:
    """Calls from a `desktop-mem mcp` process, which never keeps the writer lock between calls."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.root = config.store_path.expanduser().resolve()
        self._lock = threading.Lock()  # one call at a time on the session's engines
        self._reader: MemoryEngine | None = None
        self._warm_writer: MemoryEngine | None = None
        self._stamp: tuple[Any, ...] | None = None
        self._listeners: list[ChangeListener] = []
        self.engines_opened = 0  # how many engines this session built (a warm session: few)

    # ------------------------------------------------------------------ reads

    async def read(self, call: EngineCall[T]) -> T:
        return await anyio.to_thread.run_sync(self._read_sync, call)

    def _read_sync(self, call: EngineCall[T]) -> T:
        with self._lock:
            try:
                return call(self._fresh_reader())
            except EngineError as exc:
                raise ToolError(str(exc)) from exc

    def _fresh_reader(self) -> MemoryEngine:
        """The session's read-only engine, brought up to date with the files (changed ones only)."""
        if self._reader is None:
            self._reader = MemoryEngine.open(self.config, read_only=True)
            self.engines_opened += 1
        else:
            self._reader.refresh()
        return self._reader

    def snapshot(self) -> dict[str, str]:
        """{path: id} of every memory file as the files are now (for change notifications)."""
        with self._lock:
            try:
                reader = self._fresh_reader()
            except EngineError:
                return {}
            return {m.path: m.id for m in reader._parts.raw.list_memories(include_deleted=True)}

    # ----------------------------------------------------------------- writes

    async def at_writer(self, tool: str, arguments: dict[str, Any], client: Implementation | None,
                        call: EngineCall[T]) -> T:
        from desktop_mem.api.holder_endpoint import writer_endpoint
        from desktop_mem.api.mcp_forward import WriterUnreachable, forward_call

        if tool in READS_AT_WRITER and not os.access(self.root, os.W_OK):
            # a read-only store (a mounted backup): nobody can write it, so a search needs no
            # writer; it runs on the reader (its index from a scratch copy, issue #22)
            return await self.read(call)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            ran = await anyio.to_thread.run_sync(self._write_sync, call)
            if ran is not None:
                return ran[0]
            endpoint = writer_endpoint(self.root)
            if endpoint is not None:
                try:  # a private endpoint: no token is sent (mcp_forward.py)
                    # the same tool's answer at the writer: a JSON object (forward_call checks),
                    # checked against the tool's outputSchema, where it has one, by the SDK's client
                    return cast(T, await forward_call(endpoint, tool, arguments, client))
                except WriterUnreachable:  # the writer is starting or stopping: ask again
                    if time.monotonic() > deadline:
                        raise ToolError(f"the desktop-mem process at {endpoint} does not answer") from None
            elif time.monotonic() > deadline:
                holder = describe_holder(read_holder(self.root))
                raise ToolError(
                    f"The store {self.root} is open for writing by {holder}, which does not accept "
                    "forwarded writes; close it, or open the store in the "
                    "desktop-mem app or `desktop-mem serve` instead.")
            await anyio.sleep(0.2)

    def _write_sync(self, call: EngineCall[T]) -> tuple[T] | None:
        """Run `call` as the writer if the lock is free: (its result,); None if the lock is held."""
        with self._lock:
            try:
                engine = self._take_writer()
            except EngineError as exc:
                raise ToolError(str(exc)) from exc
            if engine is None:
                return None
            try:
                return (call(engine),)
            except EngineError as exc:
                raise ToolError(str(exc)) from exc
            finally:
                self._park(engine)

    def _take_writer(self) -> MemoryEngine | None:
        """The warm writer holding the store lock, or None when another process holds it."""
        engine = self._warm_writer
        if engine is not None:
            try:
                engine.acquire_lock()
            except StoreLockedError:
                return None
            if self._stamp is not None and self._stamp == self._stamp_of(engine, dirty=True):
                return engine
            self._close_writer()  # somebody wrote since: its catalog may be stale
        try:
            engine = MemoryEngine.open(self.config)
        except StoreLockedError:
            return None
        self.engines_opened += 1
        for listener in self._listeners:
            engine.subscribe(listener)
        self._warm_writer = engine
        return engine

    def _park(self, engine: MemoryEngine) -> None:
        """Give the lock back, after writing what is pending and closing the index."""
        try:
            engine.close_index()
            engine.save_derived()
            self._stamp = self._stamp_of(engine, dirty=False) if self.config["store.git_versioning"] else None
        except Exception:  # never keep a writer we cannot vouch for
            self._stamp = None
            raise
        finally:
            engine.release_lock()

    def _stamp_of(self, engine: MemoryEngine, *, dirty: bool) -> tuple[Any, ...] | None:
        """What changes when anybody else writes: HEAD, the derived files, and (when checking)
        files edited by hand that no commit holds yet (a new engine would commit those)."""
        if dirty and engine.dirty_paths():
            return None
        stats: list[tuple[int, int] | None] = []  # None: that file is missing (no index yet)
        for name in DERIVED:
            try:
                st = os.stat(self.root / name)
                stats.append((st.st_mtime_ns, st.st_size))
            except OSError:
                stats.append(None)
        return (engine.head(), *stats)

    def _close_writer(self) -> None:
        engine, self._warm_writer, self._stamp = self._warm_writer, None, None
        if engine is not None:
            engine.close()

    # ------------------------------------------------------------ lifecycle

    def subscribe(self, listener: ChangeListener) -> Callable[[], None]:
        """This session's own writes (changes by other processes come from the watch in
        mcp_changes.py)."""
        self._listeners.append(listener)
        if self._warm_writer is not None:
            self._warm_writer.subscribe(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def close(self) -> None:
        """Close the session's engines (the warm writer takes the lock to close, if it is free)."""
        with self._lock:
            reader, self._reader = self._reader, None
            if reader is not None:
                reader.close()
            if self._warm_writer is not None:
                # (held elsewhere: its manifest was flushed when parked, closing writes nothing)
                with contextlib.suppress(StoreLockedError):
                    self._warm_writer._parts.lock.acquire()
                self._close_writer()
