"""Actions offered on the timeline: each makes a new commit that then shows on the timeline.

Every action first checks that what it acts on is still as the event showed it (same place, same
bytes); if not it raises ConflictError and changes nothing, so the pane can say so and ask. With
`force=True` (the user said "do it anyway") the check is skipped; the actions only move files or
write a new version, so even then no text is lost: the overwritten version stays in git.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from git.exc import GitError
from gitdb.exc import ODBError

from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.history.timeline_query import file_bytes_at
from desktop_mem.engine.models import (
    ConflictError,
    EventType,
    Memory,
    NotFoundError,
    Operation,
    TimelineEvent,
    ValidationError,
    utc_now,
)
from desktop_mem.engine.store import layout
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.markdown_store import content_hash
from desktop_mem.engine.store.transaction import Transaction, clip, noun


def restore_deleted(source: HistorySource, event: TimelineEvent, *, force: bool = False) -> Memory:
    """Undo a DELETE or EVICT: move the tombstone back (or re-create a hard-deleted file)."""
    if event.type not in (EventType.DELETE, EventType.EVICT):
        raise ValidationError(f"only a DELETE or EVICT can be restored, not {event.type}")
    memory_id = _event_id(event)
    with source.writer.transaction(Operation.RESTORE) as tx:
        if event.hard_delete:
            memory = _recreate(source, event, memory_id, tx)
        else:
            current = source.raw.lookup(memory_id)
            if current is None:
                raise NotFoundError(f"memory {memory_id} is no longer in the store; nothing to restore")
            if not current.deleted:
                raise ConflictError(f"memory {memory_id} is not deleted any more (it is at {current.path})")
            if not force:
                _check_unchanged(source, current, event.path, event.commit)
            memory = tx.restore(current)
        tx.subject = f"Restore {noun(memory)}: {clip(memory.text)}"
        tx.conversation = memory.conversation_id
    return memory


def revert_replacement(
    source: HistorySource, event: TimelineEvent, *, force: bool = False
) -> tuple[Memory, Memory]:
    """Undo an UPDATE in one commit: restore the old memory and soft-delete its replacement.

    Returns (the old memory, live again; the replacement, now a tombstone).
    """
    if event.type != EventType.UPDATE:
        raise ValidationError(f"only an UPDATE can be reverted this way, not {event.type}")
    old_id = _event_id(event)
    new_id = event.new_id or event.replaced_by
    if not new_id:
        raise ValidationError(f"the update in {event.commit[:10]} does not name its replacement")
    return undo_update(source, old_id, new_id, event.commit, old_path=event.path, force=force)


def undo_update(
    source: HistorySource, old_id: str, new_id: str, commit: str | None, *, old_path: str | None = None,
    force: bool = False,
) -> tuple[Memory, Memory]:
    """Undo a replacement in one commit: the old memory live again, its replacement a tombstone.

    The one undo of an UPDATE (the timeline's Revert, the tool notice's Undo). Unless `force`,
    ConflictError and nothing changed if either file moved or was edited since `commit` (the
    update's commit; `old_path`: where it left the old memory). Without a commit (git versioning
    off) only the states are checked. Returns (the old memory, live again; the replacement, now a
    tombstone).
    """
    with source.writer.transaction(Operation.REVERT_UPDATE) as tx:
        tomb = source.raw.lookup(old_id)
        new = source.raw.lookup(new_id)
        if tomb is None or not tomb.deleted:
            where = "gone from the store" if tomb is None else f"live again at {tomb.path}"
            raise ConflictError(f"the replaced memory {old_id} is {where}; nothing was changed")
        if new is None or new.deleted:
            where = "gone from the store" if new is None else f"deleted since ({new.path})"
            raise ConflictError(f"the replacement {new_id} is {where}; nothing was changed")
        if not force and commit is not None:
            _check_unchanged(source, tomb, old_path or tomb.path, commit)
            _check_unchanged(source, new, new.path, commit)
        # Both halves or neither: if the second move fails, the transaction puts the first back.
        live_old = tx.restore(tomb)
        tomb_new = tx.soft_delete(new)
        tx.subject = f"Revert update: {clip(new.text)} -> {clip(live_old.text)}"
        tx.conversation = live_old.conversation_id
    return live_old, tomb_new


def replacement_pair(source: HistorySource, memory_ids: Sequence[str]) -> tuple[str, str]:
    """(old id, new id) of an update's two memories, in any order: the old one's `replaced_by`
    names the new one (never told apart by position)."""
    for old_id in memory_ids:
        old = source.raw.lookup(old_id)
        new_id = old.replaced_by if old is not None else None
        if new_id is not None and new_id in memory_ids and new_id != old_id:
            return old_id, new_id
    raise ValidationError(f"no replacement among {', '.join(memory_ids)}: nothing to undo")


def restore_summary_version(
    source: HistorySource,
    event_or_sha: TimelineEvent | str,
    conversation: str,
    *,
    expected_hash: str | None = None,
) -> Memory:
    """Put back the conversation's summary text as of a commit (a new SUMMARY commit).

    `expected_hash` is the content hash of the summary the user was looking at; if the summary
    changed since, ConflictError. Returns the current summary unchanged when the texts already match.
    """
    validate_conversation_id(conversation)
    source.writer.require_writer()
    sha = event_or_sha.commit if isinstance(event_or_sha, TimelineEvent) else event_or_sha
    rel = layout.summary_path(conversation)
    raw = file_bytes_at(source, rel, sha)
    if raw is None:
        raise NotFoundError(f"conversation {conversation!r} had no summary at {sha[:10]}")
    old = source.store.memory_from_bytes(rel, raw)
    with source.writer.transaction(Operation.RESTORE_SUMMARY, conversation=conversation) as tx:
        current = source.raw.summary(conversation)
        if current is None:
            memory = tx.write_summary(conversation, old.text, old.summarized_count or 0)
        else:
            if expected_hash is not None and _disk_hash(source, current.path) != expected_hash:
                raise ConflictError(
                    f"the summary of {conversation!r} changed since it was shown; reload the timeline "
                    "and choose again"
                )
            if old.text == current.text:
                return current
            updates: dict[str, object] = {"updated_at": utc_now()}
            if old.summarized_count is not None:
                # The next summary update then folds in the turns this older text had not seen.
                updates["summarized_count"] = old.summarized_count
            memory = tx.rewrite(current, updates, old.text, expected_hash=current.content_hash)
        tx.subject = f"Restore summary of {conversation} to {sha[:10]}: {clip(memory.text)}"
    return memory


def memory_at(source: HistorySource, memory_id: str, sha: str) -> Memory:
    """A memory as it was at a commit (read-only; its `path` is where it lived then)."""
    try:
        with source.git.locked() as repo:
            repo.commit(sha)
    except (ValueError, GitError, ODBError):
        raise NotFoundError(f"{sha!r} is not a commit of this store") from None
    current = source.raw.lookup(memory_id)
    if current is not None:
        for rel in layout.both_places(current.path, current.conversation_id):
            raw = file_bytes_at(source, rel, sha)
            if raw is not None:
                return source.store.memory_from_bytes(rel, raw)
    # Gone now, or moved under another name: look for it in that commit's tree.
    listing = source.git.repo.git.ls_tree("-r", "--name-only", sha, "--", "entries")
    for rel in listing.splitlines():
        if rel.endswith(".md") and memory_id in PurePosixPath(rel).name:
            raw = file_bytes_at(source, rel, sha)
            memory = source.store.memory_from_bytes(rel, raw) if raw is not None else None
            if memory is not None and memory.id == memory_id:
                return memory
    raise NotFoundError(f"memory {memory_id} did not exist at {sha[:10]}")


# ---------------------------------------------------------------- helpers


def _event_id(event: TimelineEvent) -> str:
    if not event.memory_id:
        raise ValidationError(f"the event in {event.commit[:10]} names no memory")
    return event.memory_id


def _check_unchanged(source: HistorySource, current: Memory, event_path: str, sha: str) -> None:
    """ConflictError unless the file is where the event left it, with the bytes it had then."""
    if current.path != event_path:
        raise ConflictError(
            f"memory {current.id} moved since {sha[:10]} (now {current.path}); nothing was changed"
        )
    then = file_bytes_at(source, event_path, sha)
    if then is None:
        raise ConflictError(f"{event_path} is not in commit {sha[:10]}; nothing was changed")
    if _disk_hash(source, current.path) != content_hash(then):
        raise ConflictError(
            f"memory {current.id} was edited after {sha[:10]}; nothing was changed. Look at its "
            "history, then restore it anyway if that is what you want"
        )


def _disk_hash(source: HistorySource, rel: str) -> str | None:
    try:
        return content_hash(source.store.abspath(rel).read_bytes())
    except OSError:
        return None


def _recreate(source: HistorySource, event: TimelineEvent, memory_id: str, tx: Transaction) -> Memory:
    """Bring back a file removed outright (plain `git rm`), from the commit before the event."""
    rel = event.old_path or event.path
    existing = source.raw.lookup(memory_id)
    if existing is not None:
        raise ConflictError(f"memory {memory_id} exists again (at {existing.path}); nothing was changed")
    path = source.store.abspath(rel)
    if path.exists():
        raise ConflictError(f"another file now sits at {rel}; move it away first. Nothing was changed")
    raw = file_bytes_at(source, rel, f"{event.commit}^")
    if raw is None:
        raise NotFoundError(f"the deleted file is not in the commit before {event.commit[:10]}")
    return tx.write_file(rel, raw)
