"""Actions offered on the timeline: each makes a new commit that then shows on the timeline.

Every action first checks that what it acts on is still as the event showed it (same place, same
bytes); if not it raises ConflictError and changes nothing, so the pane can say so and ask. With
`force=True` (the user said "do it anyway") the check is skipped; the actions only move files or
write a new version, so even then no text is lost: the overwritten version stays in git.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from git.exc import GitError
from gitdb.exc import ODBError

from desktop_mem.engine.history.timeline_query import file_bytes_at
from desktop_mem.engine.models import (
    ConflictError,
    EventType,
    Memory,
    NotFoundError,
    TimelineEvent,
    ValidationError,
    utc_now,
)
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.markdown_store import atomic_write, content_hash

if TYPE_CHECKING:
    from desktop_mem.engine.facade import MemoryEngine

SUMMARY_FILE = "summaries/summary.md"


def restore_deleted(engine: MemoryEngine, event: TimelineEvent, *, force: bool = False) -> Memory:
    """Undo a DELETE or EVICT: move the tombstone back (or re-create a hard-deleted file)."""
    if event.type not in (EventType.DELETE, EventType.EVICT):
        raise ValidationError(f"only a DELETE or EVICT can be restored, not {event.type}")
    engine._require_writer()
    memory_id = _event_id(event)
    with engine._write_lock:
        if event.hard_delete:
            return _recreate(engine, event, memory_id)
        current = engine.lookup(memory_id)
        if current is None:
            raise NotFoundError(f"memory {memory_id} is no longer in the store; nothing to restore")
        if not current.deleted:
            raise ConflictError(f"memory {memory_id} is not deleted any more (it is at {current.path})")
        if not force:
            _check_unchanged(engine, current, event.path, event.commit)
        return engine.restore(memory_id)


def revert_replacement(
    engine: MemoryEngine, event: TimelineEvent, *, force: bool = False
) -> tuple[Memory, Memory]:
    """Undo an UPDATE in one commit: restore the old memory and soft-delete its replacement.

    Returns (the old memory, live again; the replacement, now a tombstone).
    """
    if event.type != EventType.UPDATE:
        raise ValidationError(f"only an UPDATE can be reverted this way, not {event.type}")
    engine._require_writer()
    old_id = _event_id(event)
    new_id = event.new_id or event.replaced_by
    if not new_id:
        raise ValidationError(f"the update in {event.commit[:10]} does not name its replacement")
    with engine._write_lock:
        tomb = engine.lookup(old_id)
        new = engine.lookup(new_id)
        if tomb is None or not tomb.deleted:
            where = "gone from the store" if tomb is None else f"live again at {tomb.path}"
            raise ConflictError(f"the replaced memory {old_id} is {where}; nothing was changed")
        if new is None or new.deleted:
            where = "gone from the store" if new is None else f"deleted since ({new.path})"
            raise ConflictError(f"the replacement {new_id} is {where}; nothing was changed")
        if not force:
            _check_unchanged(engine, tomb, event.path, event.commit)
            _check_unchanged(engine, new, new.path, event.commit)
        live_old = engine.store.restore(tomb)
        engine._forget(tomb)
        engine._remember(live_old)
        try:
            tomb_new = engine.store.soft_delete(new)
        except Exception:
            # The first half is on disk: commit it as a plain restore so files and git agree.
            engine._after_write([live_old], [tomb], "restore", f"Restore fact: {_clip(live_old.text)}",
                                live_old.conversation_id)
            raise
        engine._forget(new)
        engine._remember(tomb_new)
        engine._after_write(
            [live_old, tomb_new], [tomb, new], "revert-update",
            f"Revert update: {_clip(new.text)} -> {_clip(live_old.text)}", live_old.conversation_id,
        )
    return live_old, tomb_new


def restore_summary_version(
    engine: MemoryEngine,
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
    engine._require_writer()
    sha = event_or_sha.commit if isinstance(event_or_sha, TimelineEvent) else event_or_sha
    rel = f"entries/{conversation}/{SUMMARY_FILE}"
    raw = file_bytes_at(engine, rel, sha)
    if raw is None:
        raise NotFoundError(f"conversation {conversation!r} had no summary at {sha[:10]}")
    old = engine.store.memory_from_bytes(rel, raw)
    with engine._write_lock:
        current = engine.summary(conversation)
        if current is None:
            memory = engine.store.write_summary(conversation, old.text, old.summarized_count or 0)
        else:
            if expected_hash is not None and _disk_hash(engine, current.path) != expected_hash:
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
            memory = engine.store.rewrite(current, updates, old.text, expected_hash=current.content_hash)
        engine._remember(memory)
        engine._after_write([memory], [], "restore-summary",
                            f"Restore summary of {conversation} to {sha[:10]}: {_clip(memory.text)}",
                            conversation)
    return memory


def memory_at(engine: MemoryEngine, memory_id: str, sha: str) -> Memory:
    """A memory as it was at a commit (read-only; its `path` is where it lived then)."""
    try:
        with engine.git.locked() as repo:
            repo.commit(sha)
    except (ValueError, GitError, ODBError):
        raise NotFoundError(f"{sha!r} is not a commit of this store") from None
    current = engine.lookup(memory_id)
    if current is not None:
        for rel in _candidate_paths(current):
            raw = file_bytes_at(engine, rel, sha)
            if raw is not None:
                return engine.store.memory_from_bytes(rel, raw)
    # Gone now, or moved under another name: look for it in that commit's tree.
    listing = engine.git.repo.git.ls_tree("-r", "--name-only", sha, "--", "entries")
    for rel in listing.splitlines():
        if rel.endswith(".md") and memory_id in PurePosixPath(rel).name:
            raw = file_bytes_at(engine, rel, sha)
            memory = engine.store.memory_from_bytes(rel, raw) if raw is not None else None
            if memory is not None and memory.id == memory_id:
                return memory
    raise NotFoundError(f"memory {memory_id} did not exist at {sha[:10]}")


# ---------------------------------------------------------------- helpers


def _event_id(event: TimelineEvent) -> str:
    if not event.memory_id:
        raise ValidationError(f"the event in {event.commit[:10]} names no memory")
    return event.memory_id


def _check_unchanged(engine: MemoryEngine, current: Memory, event_path: str, sha: str) -> None:
    """ConflictError unless the file is where the event left it, with the bytes it had then."""
    if current.path != event_path:
        raise ConflictError(
            f"memory {current.id} moved since {sha[:10]} (now {current.path}); nothing was changed"
        )
    then = file_bytes_at(engine, event_path, sha)
    if then is None:
        raise ConflictError(f"{event_path} is not in commit {sha[:10]}; nothing was changed")
    if _disk_hash(engine, current.path) != content_hash(then):
        raise ConflictError(
            f"memory {current.id} was edited after {sha[:10]}; nothing was changed. Look at its "
            "history, then restore it anyway if that is what you want"
        )


def _disk_hash(engine: MemoryEngine, rel: str) -> str | None:
    try:
        return content_hash(engine.store.abspath(rel).read_bytes())
    except OSError:
        return None


def _recreate(engine: MemoryEngine, event: TimelineEvent, memory_id: str) -> Memory:
    """Bring back a file removed outright (plain `git rm`), from the commit before the event."""
    rel = event.old_path or event.path
    existing = engine.lookup(memory_id)
    if existing is not None:
        raise ConflictError(f"memory {memory_id} exists again (at {existing.path}); nothing was changed")
    path = engine.store.abspath(rel)
    if path.exists():
        raise ConflictError(f"another file now sits at {rel}; move it away first. Nothing was changed")
    raw = file_bytes_at(engine, rel, f"{event.commit}^")
    if raw is None:
        raise NotFoundError(f"the deleted file is not in the commit before {event.commit[:10]}")
    memory = engine.store.memory_from_bytes(rel, raw)
    atomic_write(path, raw)
    engine._remember(memory)
    engine._after_write([memory], [], "restore", f"Restore fact: {_clip(memory.text)}",
                        memory.conversation_id)
    return memory


def _candidate_paths(memory: Memory) -> list[str]:
    """Its path now and its live/deleted counterpart (restore and soft delete move files)."""
    conv = f"entries/{memory.conversation_id}/"
    inner = memory.path[len(conv):]
    other = inner[len("deleted/"):] if inner.startswith("deleted/") else f"deleted/{inner}"
    return [memory.path, conv + other]


def _clip(text: str, n: int = 60) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"
