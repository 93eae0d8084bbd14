"""`engine.timeline`: the Timeline's reads and one-click actions, as a front end reaches them.

Built by engine/compose.py over the one view history works on (ports.py HistorySource): pages of
classified commits, a file before and after an event, a memory as it was, its lineage, and the
actions that put something back (each one new commit; ConflictError if it changed since, unless
forced).
"""

from __future__ import annotations

from desktop_mem.engine.history import lineage as lineage_chain
from desktop_mem.engine.history import timeline_actions, timeline_query
from desktop_mem.engine.history.lineage import Lineage
from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.history.timeline_query import TimelineCursor, TimelinePage, TimelineQuery
from desktop_mem.engine.models import Memory, TimelineEvent


class Timeline:
    """Read the store's history page by page, and put back what a commit changed."""

    def __init__(self, source: HistorySource) -> None:
        self._source = source

    def page(self, query: TimelineQuery | None = None, cursor: TimelineCursor | None = None,
             page_size: int = 50) -> TimelinePage:
        """One page of the (filtered) timeline, newest first, starting at `cursor`."""
        return timeline_query.timeline_page(self._source, query, cursor, page_size)

    def event_bytes(self, event: TimelineEvent) -> tuple[bytes | None, bytes | None]:
        """The file before and after an event (None for a side that did not exist)."""
        return timeline_query.event_bytes(self._source, event)

    def memory_at(self, memory_id: str, sha: str) -> Memory:
        """A memory as it was at a commit (read-only; its `path` is where it lived then)."""
        return timeline_actions.memory_at(self._source, memory_id, sha)

    def lineage(self, memory_id: str) -> Lineage:
        """The chain of `replaced_by` through `memory_id`, each step with its commits."""
        return lineage_chain.lineage(self._source, memory_id)

    def restore_deleted(self, event: TimelineEvent, *, force: bool = False) -> Memory:
        """Undo a DELETE or EVICT (one commit)."""
        return timeline_actions.restore_deleted(self._source, event, force=force)

    def revert_replacement(self, event: TimelineEvent, *, force: bool = False) -> tuple[Memory, Memory]:
        """Undo an UPDATE: the old memory back, its replacement soft-deleted (one commit)."""
        return timeline_actions.revert_replacement(self._source, event, force=force)

    def restore_summary_version(self, event_or_sha: TimelineEvent | str, conversation: str, *,
                                expected_hash: str | None = None) -> Memory:
        """Put back a conversation's summary as of a commit (one commit)."""
        return timeline_actions.restore_summary_version(self._source, event_or_sha, conversation,
                                                        expected_hash=expected_hash)
