"""Give the facts of a store made before validity existed their `valid_from` / `valid_to`.

Derived, never guessed beyond what the store knows: `valid_from` is a date the fact states
("since March 2024"), else when it was said (`created_at`); a tombstone's `valid_to` is when it
was deleted (`deleted_at`), else the commit that moved it into deleted/, else when its
replacement (`replaced_by`) began. All of it lands in one commit; running it again finds nothing
to do and commits nothing. A file held back for a likely secret is left for later.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from desktop_mem.engine.history.git_history import GitHistoryError
from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.models import Memory, Operation, Role, ValidationError
from desktop_mem.engine.store import layout, validity

log = logging.getLogger(__name__)

SUBJECT = "Record when each fact was true (valid_from / valid_to)"
# In .git: per clone, never synced, so a store made by this version is never migrated, and an
# older store is migrated once (idempotent: a second run would find nothing to write anyway).
MARKER = Path("desktop_mem") / "validity-migrated"


def needs_migration(source: HistorySource) -> bool:
    """True for a versioned store made before validity whose migration has not run here."""
    if not source.config["store.git_versioning"] or not source.git.exists():
        return False
    return not (source.root / ".git" / MARKER).exists()


def mark_done(root: Path) -> None:
    """Record in .git that this clone's facts have their validity (a new store: from the start)."""
    marker = root / ".git" / MARKER
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("valid_from / valid_to recorded\n", encoding="utf-8")


class _MovesIntoDeleted:
    """When each file in a deleted/ folder got there, read from git once, on first need."""

    def __init__(self, source: HistorySource) -> None:
        self._source = source
        self._added: dict[str, datetime] | None = None

    def at(self, path: str) -> datetime | None:
        if not layout.in_deleted(path):
            return None
        if self._added is None:
            try:
                self._added = self._source.git.last_added(layout.ENTRIES)
            except GitHistoryError:
                self._added = {}
        return self._added.get(path)


def missing_validity(source: HistorySource, memory: Memory,
                     moves: _MovesIntoDeleted | None = None) -> dict[str, Any]:
    """The front-matter values a fact lacks, derived from its file, its chain and git."""
    if memory.role != Role.MEMORY:
        return {}
    updates: dict[str, Any] = {}
    if not memory.valid_from:
        since = validity.stated_start(memory.text, memory.created_at) or validity.stamp(memory.created_at)
        updates[validity.VALID_FROM] = validity.for_file(since)
    if memory.deleted and not memory.valid_to:
        ended = _ended(source, memory, moves or _MovesIntoDeleted(source))
        begun = validity.start(memory.valid_from) if memory.valid_from else memory.created_at
        if ended < begun:  # a stated start after the deletion: the stated start was wrong for it
            updates.pop(validity.VALID_FROM, None)
            updates[validity.VALID_FROM] = validity.for_file(validity.stamp(memory.created_at))
            ended = max(ended, memory.created_at)
        updates[validity.VALID_TO] = validity.for_file(validity.stamp(ended))
    return updates


def _ended(source: HistorySource, memory: Memory, moves: _MovesIntoDeleted) -> datetime:
    if memory.deleted_at is not None:
        return memory.deleted_at
    moved = moves.at(memory.path)  # the commit that moved it into deleted/
    if moved is not None:
        return moved
    if memory.replaced_by:
        successor = source.lookup(memory.replaced_by)
        if successor is not None:
            return validity.valid_from(successor)
    return memory.updated_at or memory.created_at


def migrate_validity(source: HistorySource) -> str | None:
    """Write the missing validity of every fact in one commit; the commit's sha, or None when
    nothing was missing. Marks the clone as migrated either way."""
    held = {h.memory_id for h in source.held_back_files()}
    pending: list[tuple[Memory, dict[str, Any]]] = []
    moves = _MovesIntoDeleted(source)
    for memory in source.raw.list_memories(role="memory", include_deleted=True):
        if memory.id in held:
            continue
        updates = missing_validity(source, memory, moves)
        if updates:
            pending.append((memory, updates))
    commit = None
    if pending:
        with source.writer.transaction(Operation.MIGRATE, SUBJECT,
                                       trailers={"Migration": "validity"}) as tx:
            for memory, updates in pending:
                try:
                    tx.rewrite(memory, updates)
                except ValidationError as exc:  # e.g. a held-back file: left for later
                    log.warning("validity not recorded for %s: %s", memory.path, exc)
            tx.subject = f"{SUBJECT} for {len(pending)} facts"
        commit = tx.commit
    mark_done(source.root)
    return commit
