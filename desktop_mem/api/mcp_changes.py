"""Memory changes as MCP notifications: `notifications/resources/updated` and `.../list_changed`.

Both protocol eras are served (mcp SDK 2.3.0):
- 2026-07-28 clients open a `subscriptions/listen` stream; the SDK's ListenHandler delivers what
  is published on `ChangeFeed.bus` to each stream whose filter asked for it.
- 2025-era clients (initialize handshake) `resources/subscribe` to URIs; the feed keeps their
  sessions and sends `resources/updated` for those URIs and `resources/list_changed` to all.

What feeds it: in `serve` and the app, the engine's StoreChange events (its own writes, forwarded
MCP writes, outside edits seen by the watcher); in a `desktop-mem mcp` process, a watch on the
store's files (`watch_store`), which sees every change whoever made it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourcesListChanged, ResourceUpdated
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from desktop_mem.engine.api import in_deleted, is_memory_file
from desktop_mem.engine.models import Operation, StoreChange

log = logging.getLogger(__name__)

LIST_URI = "memory://memories"
# Operations that change text in place: the set of memories stays the same.
_SAME_SET = {Operation.EDIT, Operation.REVERT, Operation.SUMMARY, Operation.RESTORE_SUMMARY,
             Operation.CONVERSATION, Operation.PROBLEM}


def memory_uri(memory_id: str) -> str:
    return f"memory://memories/{memory_id}"


def summary_uri(conversation_id: str) -> str:
    return f"memory://conversations/{conversation_id}/summary"


def _summary_conversation(path: str) -> str | None:
    parts = path.split("/")
    if len(parts) == 4 and parts[0] == "entries" and parts[2:] == ["summaries", "summary.md"]:
        return parts[1]
    return None


def uris_of_change(change: StoreChange) -> tuple[set[str], bool]:
    """The resource URIs a StoreChange touched, and whether the set of memories changed."""
    uris = {LIST_URI, *(memory_uri(i) for i in change.memory_ids)}
    uris |= {summary_uri(c) for p in change.paths if (c := _summary_conversation(p))}
    return uris, change.operation not in _SAME_SET


class ChangeFeed:
    """Publishes memory changes to every MCP client of this server, on the server's event loop."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sessions: dict[int, Any] = {}  # handshake-era sessions (ServerSession)
        self._tasks: set[asyncio.Task[None]] = set()  # the loop keeps only weak references
        self._subscribed: dict[int, set[str]] = {}

    def saw(self, session: Any, protocol_version: str | None) -> None:
        """Called for each request (on the loop): remember the loop and 2025-era sessions."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        if protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
            self._sessions.setdefault(id(session), session)

    def subscribe(self, session: Any, uri: str) -> None:
        self._sessions.setdefault(id(session), session)
        self._subscribed.setdefault(id(session), set()).add(uri)

    def unsubscribe(self, session: Any, uri: str) -> None:
        self._subscribed.get(id(session), set()).discard(uri)

    def store_changed(self, change: StoreChange) -> None:
        """An engine listener (any thread): publish the change on the loop."""
        uris, list_changed = uris_of_change(change)
        self.publish_soon(uris, list_changed)

    def publish_soon(self, uris: Iterable[str], list_changed: bool) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # no client has asked anything yet: nobody to tell
        chosen = set(uris)

        def start() -> None:
            task = loop.create_task(self.publish(chosen, list_changed))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        loop.call_soon_threadsafe(start)

    async def publish(self, uris: set[str], list_changed: bool) -> None:
        for uri in sorted(uris):
            await self.bus.publish(ResourceUpdated(uri=uri))
        if list_changed:
            await self.bus.publish(ResourcesListChanged())
        for key, session in list(self._sessions.items()):
            try:
                for uri in sorted(uris & self._subscribed.get(key, set())):
                    await session.send_resource_updated(uri)
                if list_changed:
                    await session.send_resource_list_changed()
            except Exception:  # the client went away: forget its session
                log.debug("dropping an MCP session that no longer takes notifications", exc_info=True)
                self._sessions.pop(key, None)
                self._subscribed.pop(key, None)


async def watch_store(root: Path, snapshot: Any, feed: ChangeFeed, stop: anyio.Event) -> None:
    """Publish every change of the store's memory files, whoever made it (a `desktop-mem mcp`
    process: the app, `serve`, other MCP clients, a text editor, this session itself), until
    `stop` is set. `snapshot()` -> {path: id} of the files as they are now (blocking; run in a
    thread). A failing watch stops notifying; it never takes the session down with it."""
    try:
        await _watch(root, snapshot, feed, stop)
    except Exception:  # e.g. no inotify watches left: tools and resources still work
        log.warning("change notifications stopped: the store cannot be watched", exc_info=True)


async def _watch(root: Path, snapshot: Any, feed: ChangeFeed, stop: anyio.Event) -> None:
    from watchfiles import awatch

    while not root.is_dir():  # a store that does not exist yet: its first write makes it
        await anyio.sleep(1.0)
    before: dict[str, str] = await anyio.to_thread.run_sync(snapshot)

    def memory_files(_change: Any, path: str) -> bool:
        rel = Path(path).relative_to(root).as_posix() if Path(path).is_relative_to(root) else ""
        return is_memory_file(rel)

    # The watch waits in a thread that a cancel cannot interrupt: cancelled alone, it ended only
    # at its 5 s timeout, and a session whose client closed stdin outlived the client's 2 s grace
    # (then its SIGTERM). `stop` is seen within a step.
    async for batch in awatch(root, watch_filter=memory_files, debounce=150, step=50, stop_event=stop):
        after: dict[str, str] = await anyio.to_thread.run_sync(snapshot)
        rels = {Path(p).relative_to(root).as_posix() for _kind, p in batch}
        ids = {i for r in rels if (i := before.get(r) or after.get(r))}
        uris = {LIST_URI, *(memory_uri(i) for i in ids)}
        uris |= {summary_uri(c) for r in rels if (c := _summary_conversation(r))}
        live_before = {i for p, i in before.items() if not in_deleted(p)}
        live_after = {i for p, i in after.items() if not in_deleted(p)}
        before = after
        await feed.publish(uris, live_before != live_after)
