"""The plain writes of one memory: add, edit, delete, restore, replace; each one transaction,
one commit, with who asked for it in the commit trailers (`source`, `client`).

A write of an existing memory starts from its file as it is on disk, never from the catalog's
copy alone (issue #34): an outside editor may have saved it a moment before (temp file + rename)
before the watcher saw it. Such a change is first recorded as its own "Edit outside the app"
commit; then a caller that named the content it based its write on (`expected_hash`) and sees
other content gets ConflictError naming what changed, and one that named none has its write
applied on top. A file removed meanwhile: its removal is committed and ConflictError says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    ConflictError,
    Memory,
    Operation,
    Role,
    StoreChange,
    ValidationError,
    utc_now,
)
from desktop_mem.engine.store.markdown_store import content_hash
from desktop_mem.engine.store.ports import MemoryView, Writer
from desktop_mem.engine.store.secrets_scan import SecretDetectedError, redact
from desktop_mem.engine.store.transaction import clip, noun

# Record files changed outside the app (OutsideEdits.apply): one commit of exactly those paths.
FollowOutside = Callable[[Sequence[str]], "StoreChange | None"]
# The front-matter fields a "what changed" message names.
_FIELDS = ("kind", "source", "expires_at", "valid_from", "valid_to", "replaced_by", "summarized_count")


def clean_client_name(client: str | None) -> str | None:
    """A client's self-reported name as one short printable line (it is untrusted input)."""
    if not client:
        return None
    one = " ".join("".join(ch if ch.isprintable() else " " for ch in client).split())
    return one[:80] or None


def provenance_trailers(source: str | None, client: str | None) -> dict[str, str]:
    """`Source` / `Client` commit trailers: who asked for a write (the timeline shows them)."""
    trailers: dict[str, str] = {}
    if source:
        trailers["Source"] = source
    name = clean_client_name(client)
    if name:
        trailers["Client"] = name
    return trailers


def client_meta(client: str | None) -> dict[str, str] | None:
    """The front matter that names the client that asked for a write, if any."""
    name = clean_client_name(client)
    return {"client": name} if name else None


class MemoryWrites:
    """Writes of single memories through the writer; `raw` finds what they change."""

    def __init__(self, writer: Writer, raw: MemoryView, follow_outside: FollowOutside | None = None) -> None:
        self._writer = writer
        self._raw = raw
        self._follow = follow_outside

    def as_on_disk(self, memory_id: str, expected_hash: str | None = None) -> Memory:
        """The memory as its file is now (call it inside the write's transaction).

        A change made outside the app that the catalog has not seen yet is committed first, as
        its own "Edit outside the app". ConflictError if the file went away meanwhile (its removal
        is committed) or, with `expected_hash` (the content the caller based its write on), if the
        file holds other content now; the message names what changed."""
        current = self._raw.get(memory_id)
        on_disk = self._disk_hash(current)
        fresh: Memory | None = current
        commit = None
        if on_disk != current.content_hash and self._follow is not None:
            change = self._follow([current.path])
            commit = change.commit if change is not None else None
            fresh = self._raw.lookup(current.id)
            if fresh is not None and fresh.path != current.path:
                fresh = None
        recorded = f" (recorded as commit {commit[:10]})" if commit else ""
        if on_disk is None or fresh is None:
            what = ("deleted outside the app" if on_disk is None
                    else "changed outside the app and no longer reads as a memory (`desktop-mem doctor`)")
            raise ConflictError(f"memory {current.id} was {what} while this change was on its way"
                                f"{recorded}; nothing was changed")
        if on_disk != current.content_hash:  # a hand edit that just arrived and waits for an answer
            try:  # about a likely secret: it is not in git yet, so nothing may overwrite it
                self._writer.check_not_held(fresh)
            except ValidationError as exc:
                raise ConflictError(f"memory {fresh.id} was just edited outside the app: {exc}; "
                                    "nothing was changed") from None
        if expected_hash is not None and fresh.content_hash != expected_hash:
            base = current if current.content_hash == expected_hash else None
            raise ConflictError(f"memory {fresh.id} changed since it was read: {_what_changed(base, fresh)}"
                                f"{recorded}; your change was not applied: reload it and try again")
        return fresh

    def _disk_hash(self, memory: Memory) -> str | None:
        try:
            return content_hash(self._writer.store.abspath(memory.path).read_bytes())
        except FileNotFoundError:
            return None

    def add(
        self,
        text: str,
        *,
        conversation_id: str = GLOBAL_CONVERSATION,
        kind: str = "fact",
        role: str = "memory",
        source: str = "manual",
        expires_at: datetime | None = None,
        created_at: datetime | None = None,
        memory_id: str | None = None,
        secrets: str | None = None,
        client: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Memory:
        """A new memory file, committed (see MemoryEngine.add). `meta`: more front matter (e.g. a
        file's place in the Claude memory tool's view); such a memory is never taken for a repeat."""
        writer = self._writer
        writer.require_writer()
        text = writer.check_secrets(text, secrets)
        with writer.transaction(Operation.ADD, conversation=conversation_id,
                                trailers=provenance_trailers(source, client) if client else None) as tx:
            if (role == Role.MEMORY and memory_id is None and not meta
                    and (same := tx.same_fact(text, conversation_id))):
                return same  # a retry or a repeat: the fact is stored once (issue #22)
            memory = tx.add(text, conversation_id=conversation_id, role=role,
                            kind=kind if role == Role.MEMORY else None, source=source, expires_at=expires_at,
                            created_at=created_at, memory_id=memory_id,
                            extra={**(meta or {}), **(client_meta(client) or {})} or None)
            tx.subject = f"Add {noun(memory)}: {clip(text)}"
        return memory

    def add_many(
        self,
        texts: Sequence[str],
        *,
        conversation_id: str = GLOBAL_CONVERSATION,
        kinds: Sequence[str] | None = None,
        source: str = "manual",
        secrets: str | None = None,
        client: str | None = None,
    ) -> list[Memory]:
        """Several facts as ONE commit, or nothing at all (issue #22): every text passes the
        secrets policy before anything is written, and a file that cannot be written (e.g. over
        the size limit) puts back the ones before it. The error names the item and says that
        nothing was saved. A text already stored (or given twice) is stored once."""
        writer = self._writer
        writer.require_writer()
        n = len(texts)
        checked: list[str] = []
        for i, text in enumerate(texts, 1):
            try:
                checked.append(writer.check_secrets(text, secrets))  # "ask": SecretDetectedError
            except SecretDetectedError as exc:  # which item, and that nothing was saved
                raise SecretDetectedError(exc.findings, f"item {i} of {n} (nothing was saved)") from None
            except ValidationError as exc:
                raise ValidationError(f"nothing was saved: item {i} of {n}: {exc}") from None
        memories: list[Memory] = []
        where = 0
        try:
            with writer.transaction(Operation.ADD, conversation=conversation_id,
                                    trailers=provenance_trailers(source, client) if client else None) as tx:
                for i, text in enumerate(checked):
                    same = tx.same_fact(text, conversation_id)
                    if same is not None:
                        memories.append(same)
                        continue
                    where = i + 1
                    memories.append(tx.add(text, conversation_id=conversation_id, role=Role.MEMORY,
                                           kind=kinds[i] if kinds else "fact", source=source,
                                           extra=client_meta(client)))
                fresh = [m for m in memories if m.path in tx.paths]
                tx.subject = (f"Add {len(fresh)} facts: {clip(fresh[0].text)}" if len(fresh) > 1
                              else f"Add fact: {clip(fresh[0].text)}" if fresh else "Add facts")
        except ValidationError as exc:
            raise ValidationError(f"nothing was saved: item {where} of {n}: {exc}") from None
        return memories

    def edit(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        meta: Mapping[str, Any] | None = None,
        expected_hash: str | None = None,
        secrets: str | None = None,
        source: str | None = None,
        client: str | None = None,
    ) -> Memory:
        """New text and/or front matter, committed; the same text and no change: nothing happens."""
        writer = self._writer
        writer.require_writer()
        if text is not None:
            text = writer.check_secrets(text, secrets)
        updates = dict(meta or {})
        for locked in ("id", "conversation_id", "deleted_at"):
            if locked in updates:
                raise ValidationError(f"{locked} cannot be edited; it follows from the file's place")
        with writer.transaction(Operation.EDIT, trailers=provenance_trailers(source, client)) as tx:
            current = self.as_on_disk(memory_id, expected_hash)
            if text is not None and text.strip() == current.text and not updates:
                return current
            updates["updated_at"] = utc_now()
            memory = tx.rewrite(current, updates, text, expected_hash=current.content_hash)
            tx.subject = f"Edit {noun(memory)}: {clip(memory.text)}"
            tx.conversation = memory.conversation_id
        return memory

    def delete(
        self, memory_id: str, *, operation: Operation = Operation.DELETE, source: str | None = None,
        client: str | None = None, expected_hash: str | None = None,
    ) -> Memory:
        """Soft-delete: move under deleted/, stamp deleted_at, commit."""
        with self._writer.transaction(operation, trailers=provenance_trailers(source, client)) as tx:
            current = self.as_on_disk(memory_id, expected_hash)
            tomb = tx.soft_delete(current)
            verb = "Evict" if operation == Operation.EVICT else "Delete"
            tx.subject = f"{verb} {noun(current)}: {clip(current.text)}"
            tx.conversation = current.conversation_id
        return tomb

    def delete_many(self, memory_ids: Sequence[str], *, source: str | None = None,
                    client: str | None = None) -> list[Memory]:
        """Soft-delete several memories as ONE commit (e.g. a folder of the memory tool's view)."""
        if not memory_ids:
            raise ValidationError("nothing to delete")
        with self._writer.transaction(Operation.DELETE, trailers=provenance_trailers(source, client)) as tx:
            current = [self._raw.get(memory_id) for memory_id in memory_ids]
            tombs = [tx.soft_delete(m) for m in current]
            tx.subject = (f"Delete {len(current)} memories: {clip(current[0].text)}" if len(current) > 1
                          else f"Delete {noun(current[0])}: {clip(current[0].text)}")
            tx.conversation = current[0].conversation_id
        return tombs

    def retag_many(self, changes: Mapping[str, Mapping[str, Any]], *, source: str | None = None,
                   client: str | None = None) -> list[Memory]:
        """New front-matter values for several memories, texts unchanged, as ONE commit (e.g. a
        folder of the memory tool's view renamed)."""
        if not changes:
            raise ValidationError("nothing to change")
        for updates in changes.values():
            for locked in ("id", "conversation_id", "deleted_at"):
                if locked in updates:
                    raise ValidationError(f"{locked} cannot be edited; it follows from the file's place")
        with self._writer.transaction(Operation.EDIT, trailers=provenance_trailers(source, client)) as tx:
            done = [tx.rewrite(self._raw.get(memory_id), {**updates, "updated_at": utc_now()})
                    for memory_id, updates in changes.items()]
            tx.subject = (f"Edit {len(done)} memories: {clip(done[0].text)}" if len(done) > 1
                          else f"Edit {noun(done[0])}: {clip(done[0].text)}")
            tx.conversation = done[0].conversation_id
        return done

    def restore(self, memory_id: str, *, source: str | None = None, client: str | None = None,
                expected_hash: str | None = None) -> Memory:
        """Move a soft-deleted memory back and commit."""
        with self._writer.transaction(Operation.RESTORE, trailers=provenance_trailers(source, client)) as tx:
            current = self.as_on_disk(memory_id, expected_hash)
            live = tx.restore(current)
            tx.subject = f"Restore {noun(live)}: {clip(live.text)}"
            tx.conversation = live.conversation_id
        return live

    def replace(
        self, memory_id: str, new_text: str, *, source: str = "manual", secrets: str | None = None,
        client: str | None = None, expected_hash: str | None = None,
    ) -> tuple[Memory, Memory]:
        """UPDATE: tombstone the old memory with replaced_by, add the new one, one commit."""
        writer = self._writer
        writer.require_writer()
        new_text = writer.check_secrets(new_text, secrets)
        trailers = provenance_trailers(source, client) if client else None
        with writer.transaction(Operation.UPDATE, trailers=trailers) as tx:
            current = self.as_on_disk(memory_id, expected_hash)
            tomb, new = tx.replace(current, new_text, source=source, extra=client_meta(client))
            tx.subject = f"Update {noun(current)}: {clip(current.text)} -> {clip(new.text)}"
            tx.conversation = current.conversation_id
        return tomb, new


def _what_changed(before: Memory | None, now: Memory) -> str:
    """One line naming what differs (text previews with likely secrets redacted)."""
    now_text = clip(redact(now.text))
    if before is None:
        return f"it now reads “{now_text}”"
    parts = [f"its text (now “{now_text}”)"] if before.text != now.text else []
    fields = [f for f in _FIELDS if getattr(before, f) != getattr(now, f)]
    fields += sorted(k for k in {*before.extra, *now.extra} if before.extra.get(k) != now.extra.get(k))
    if fields:
        parts.append("its front matter (" + ", ".join(fields[:6]) + ")")
    return " and ".join(parts) or "its file's bytes (spacing or layout)"
