"""The plain writes of one memory: add, edit, delete, restore, replace; each one transaction,
one commit, with who asked for it in the commit trailers (`source`, `client`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from desktop_mem.engine.models import GLOBAL_CONVERSATION, Memory, Operation, Role, ValidationError, utc_now
from desktop_mem.engine.store.ports import MemoryView, Writer
from desktop_mem.engine.store.secrets_scan import SecretDetectedError
from desktop_mem.engine.store.transaction import clip, noun


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

    def __init__(self, writer: Writer, raw: MemoryView) -> None:
        self._writer = writer
        self._raw = raw

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
            current = self._raw.get(memory_id)
            if text is not None and text.strip() == current.text and not updates:
                return current
            updates["updated_at"] = utc_now()
            memory = tx.rewrite(current, updates, text, expected_hash=expected_hash)
            tx.subject = f"Edit {noun(memory)}: {clip(memory.text)}"
            tx.conversation = memory.conversation_id
        return memory

    def delete(
        self, memory_id: str, *, operation: Operation = Operation.DELETE, source: str | None = None,
        client: str | None = None,
    ) -> Memory:
        """Soft-delete: move under deleted/, stamp deleted_at, commit."""
        with self._writer.transaction(operation, trailers=provenance_trailers(source, client)) as tx:
            current = self._raw.get(memory_id)
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

    def restore(self, memory_id: str, *, source: str | None = None, client: str | None = None) -> Memory:
        """Move a soft-deleted memory back and commit."""
        with self._writer.transaction(Operation.RESTORE, trailers=provenance_trailers(source, client)) as tx:
            current = self._raw.get(memory_id)
            live = tx.restore(current)
            tx.subject = f"Restore {noun(live)}: {clip(live.text)}"
            tx.conversation = live.conversation_id
        return live

    def replace(
        self, memory_id: str, new_text: str, *, source: str = "manual", secrets: str | None = None,
        client: str | None = None,
    ) -> tuple[Memory, Memory]:
        """UPDATE: tombstone the old memory with replaced_by, add the new one, one commit."""
        writer = self._writer
        writer.require_writer()
        new_text = writer.check_secrets(new_text, secrets)
        trailers = provenance_trailers(source, client) if client else None
        with writer.transaction(Operation.UPDATE, trailers=trailers) as tx:
            current = self._raw.get(memory_id)
            tomb, new = tx.replace(current, new_text, source=source, extra=client_meta(client))
            tx.subject = f"Update {noun(current)}: {clip(current.text)} -> {clip(new.text)}"
            tx.conversation = current.conversation_id
        return tomb, new
