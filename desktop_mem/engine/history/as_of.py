"""What the store held as true at a moment: as-of listing and search.

A fact was live at T when its validity covers T (valid_from <= T < valid_to; see
store/validity.py), whether its file is live today or a tombstone under deleted/. Turns and
summaries were live from when they were written until they were deleted. Text comes from the
history, not today's file: a memory edited after T shows the text of the last commit at or before
T, and a file removed outright since T (only a hand edit does that) is read back from git.
Validity itself is taken as known today (a date the user corrected later counts).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from desktop_mem.engine.history.git_history import GitHistoryError
from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.index.retrieval import SearchFilters, SearchResult
from desktop_mem.engine.models import Memory, Role, ValidationError
from desktop_mem.engine.store import front_matter, layout, validity

log = logging.getLogger(__name__)

SEARCH_POOL = 60  # candidates a search as of T looks through (many may not have been live then)


def was_live(memory: Memory, moment: datetime) -> bool:
    """True when the memory was in force at `moment`."""
    if memory.role == Role.MEMORY:
        return validity.live_at(memory, moment)
    if memory.created_at > moment:
        return False
    if not memory.deleted:
        return True
    ended = memory.deleted_at or memory.updated_at
    return ended is not None and moment < ended


def memories_as_of(
    source: HistorySource,
    moment: datetime,
    *,
    conversation_id: str | None = None,
    role: str | None = None,
    kind: str | None = None,
    include_summaries: bool = True,
    include_deleted: bool = True,
) -> list[Memory]:
    """Every memory live at `moment` (filters as `list_memories`), oldest first, with the text
    it had then. Tombstones are always looked at (each was live until it was deleted):
    `include_deleted` is taken so a listing query's filters pass as they are."""
    known = source.list_memories(conversation_id=conversation_id, role=role, kind=kind, include_deleted=True,
                                 include_summaries=include_summaries)
    history = _History(source, moment)
    found = [history.as_then(m) for m in known if was_live(m, moment)]
    found += [m for m in history.removed_since(source) if was_live(m, moment)
              and _matches(m, conversation_id, role, kind, include_summaries)]
    found.sort(key=lambda m: (m.created_at, m.path))
    return found


def search_as_of(
    source: HistorySource,
    search: Callable[..., list[SearchResult]],
    query: str,
    moment: datetime,
    *,
    conversation_id: str | None = None,
    top_k: int = 5,
    roles: Sequence[str] | None = None,
) -> list[SearchResult]:
    """The read path over what was live at `moment`: today's index (tombstones included) looks
    through a wider pool, then only what was live then is kept, with its text as it was."""
    if not query.strip():
        return []
    filters = SearchFilters(conversation_id=conversation_id, roles=tuple(roles) if roles else None,
                            include_deleted=True)
    pool = search(query, filters=filters, top_k=max(SEARCH_POOL, top_k * 4), use_mmr=False)
    history = _History(source, moment)
    kept = [replace(r, memory=history.as_then(r.memory)) for r in pool if was_live(r.memory, moment)]
    return kept[:top_k]


class _History:
    """The last commit at or before the moment, and file texts as of it (when git is on)."""

    def __init__(self, source: HistorySource, moment: datetime) -> None:
        self.moment = moment
        self.git = source.git
        self.commit: str | None = None
        if source.config["store.git_versioning"] and self.git.exists():
            try:
                self.commit = self.git.commit_before(moment)
            except GitHistoryError as exc:
                log.warning("as-of read without history: %s", exc)

    def as_then(self, memory: Memory) -> Memory:
        """`memory` with the text its file had at the moment, if it was edited since."""
        changed = memory.updated_at is not None and memory.updated_at > self.moment
        if self.commit is None or not changed:
            return memory
        for place in layout.both_places(memory.path, memory.conversation_id):
            try:
                raw = self.git.show_file(place, self.commit)
            except GitHistoryError:
                continue
            try:
                body = front_matter.parse(front_matter.decode(raw)).body
            except front_matter.FrontMatterError:
                return memory
            return replace(memory, text=body) if body.strip() else memory
        return memory

    def removed_since(self, source: HistorySource) -> list[Memory]:
        """Memories whose file existed at the moment (as committed) and is in neither of its
        places today: removed outright by hand."""
        if self.commit is None:
            return []
        try:
            files = self.git.files_at(self.commit, layout.ENTRIES)
        except GitHistoryError as exc:
            log.warning("as-of read without removed files: %s", exc)
            return []
        today = {m.path for m in source.raw.list_memories(include_deleted=True)}
        today |= {p.path for p in _problems(source)}
        gone: list[Memory] = []
        for path, blob in files:
            if not layout.is_memory_file(path) or path in today:
                continue
            conversation = path.split("/")[1] if path.count("/") >= 2 else ""
            if any(p in today for p in _places(path, conversation)):
                continue
            raw = self.git.blob(blob)
            if raw is None:
                continue
            try:
                gone.append(source.store.memory_from_bytes(path, raw))
            except (front_matter.FrontMatterError, ValidationError):
                continue
        return gone


def _places(path: str, conversation: str) -> tuple[str, ...]:
    try:
        return tuple(layout.both_places(path, conversation))
    except (ValueError, ValidationError):
        return (path,)


def _problems(source: HistorySource) -> list[Any]:
    problems = getattr(source, "problems", None)
    return list(problems()) if callable(problems) else []


def _matches(m: Memory, conversation_id: str | None, role: str | None, kind: str | None,
             include_summaries: bool) -> bool:
    if conversation_id is not None and m.conversation_id != conversation_id:
        return False
    if role is not None and m.role != role:
        return False
    if kind is not None and m.kind != kind:
        return False
    return include_summaries or m.role != Role.SUMMARY
