"""The one way to change the store: a write transaction.

    with writer.transaction(Operation.ADD, conversation="global") as tx:
        memory = tx.add("The user lives in Ghent")
        tx.subject = f"Add fact: {memory.text}"

A transaction holds the writer lock (threads) for its whole block, performs the file operations
through the MarkdownStore, keeps the catalog in step, and when the block ends makes one git
commit of exactly the paths it touched (never a file it did not write). Publishing (updating the
indexes, then telling subscribers with one typed StoreChange) is queued under the lock, so in
commit order, and runs after the lock is released (store/publisher.py): the next writer can
commit while this change is indexed. A transaction that touched nothing publishes nothing. If the
block raises, every file it touched is put back as it was (bytes saved before the first change of
each path) and nothing is committed, so a failed operation leaves the store byte-identical.

Git and the indexes are above this layer; they come in as a narrow callable (`Committer`) and
the publisher's index update, so the store imports nothing but the store.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from desktop_mem.engine.models import (
    EngineError,
    Memory,
    Operation,
    ReadOnlyError,
    Role,
    SecretsPolicy,
    StoreChange,
    ValidationError,
)
from desktop_mem.engine.store import layout
from desktop_mem.engine.store.catalog import Catalog
from desktop_mem.engine.store.markdown_store import MarkdownStore, atomic_write
from desktop_mem.engine.store.publisher import Publisher
from desktop_mem.engine.store.secrets_scan import Finding, apply_policy, redact, redact_fields

log = logging.getLogger(__name__)


class CommitFailedError(EngineError):
    """The files were written, but git could not commit them (a full disk, a broken repository):
    the operation is not recorded yet; the next start-up commits what is on disk (issue #22)."""


class Committer(Protocol):
    """Makes one commit of exactly `paths` (store-relative); None when there was nothing to commit."""

    def __call__(self, subject: str, trailers: Mapping[str, str], paths: Sequence[str]) -> str | None: ...




def noun(memory: Memory) -> str:
    """How a commit subject names a memory: fact, user turn, assistant turn, summary."""
    nouns = {"memory": "fact", "user": "user turn", "assistant": "assistant turn"}
    return nouns.get(memory.role, memory.role)


def clip(text: str, n: int = 60) -> str:
    """One line of at most `n` characters, for commit subjects."""
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"


@dataclass
class _Undo:
    """The bytes each touched path had before the transaction (None: it did not exist)."""

    before: dict[str, bytes | None] = field(default_factory=dict)

    def save(self, store: MarkdownStore, rel: str) -> None:
        if rel in self.before:
            return
        try:
            self.before[rel] = store.abspath(rel).read_bytes()
        except FileNotFoundError:
            self.before[rel] = None

    def created(self, rel: str) -> None:
        self.before.setdefault(rel, None)


class _LoadedFirst:
    """The writer's lock (reentrant), taken only once the catalog may be read: a thread holding
    it never waits for a deferred start's load (compose.begin), which takes it to commit."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._lock = threading.RLock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        self._catalog.wait_loaded()
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class StoreWriter:
    """Owns the writer lock and hands out transactions (one at a time, re-entrant per thread)."""

    def __init__(
        self,
        store: MarkdownStore,
        catalog: Catalog,
        *,
        committer: Committer | None,
        publisher: Publisher,
        secrets_policy: Callable[[], str],
        read_only: bool = False,
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.committer = committer
        self.publisher = publisher
        self.secrets_policy = secrets_policy
        self.read_only = read_only
        self.lock = _LoadedFirst(catalog)
        self._depth = threading.local()  # this thread's nesting of transactions
        # Why a memory's file must not be committed as it is now (a hand edit held back for a
        # likely secret the user has not answered for), or None; set by the engine.
        self.hold_reason: Callable[[Memory], str | None] = lambda memory: None

    def require_writer(self) -> None:
        """ReadOnlyError unless this process may write the store."""
        if self.read_only:
            raise ReadOnlyError(
                "this command only reads the store; it was opened read-only because another "
                "process holds the writer lock"
            )

    @contextlib.contextmanager
    def transaction(
        self,
        operation: Operation,
        subject: str = "",
        conversation: str | None = None,
        *,
        trailers: Mapping[str, str] | None = None,
        turn_id: str | None = None,
        publish: bool = True,
    ) -> Iterator[Transaction]:
        """A block of store changes that lands as one commit and one event, or not at all.

        `publish=False` writes files and the catalog only (a chat reply's turn files): a later
        transaction `adopt`s them, so they are indexed and committed with their turn.
        """
        self.require_writer()
        depth = getattr(self._depth, "n", 0)
        self._depth.n = depth + 1
        try:
            with self.lock:
                tx = Transaction(self, operation, subject, conversation, dict(trailers or {}), turn_id)
                try:
                    yield tx
                except BaseException:
                    tx.rollback()
                    raise
                if publish:
                    tx.publish()
        finally:
            self._depth.n = depth
            if depth == 0:  # the lock is free: index and announce what was committed, in order
                self.publisher.drain()  # (an inner commit of a block that then raised included)

    def redact(self, text: str) -> tuple[str, tuple[Finding, ...]]:
        """Text written with nobody to ask (turns, extracted facts, summaries): redact unless `keep`."""
        return apply_policy(text, SecretsPolicy.unattended(self.secrets_policy()))

    def check_not_held(self, memory: Memory) -> None:
        """ValidationError if the memory's file, as it is now, must not be committed (moved,
        stamped) without the user's answer first."""
        reason = self.hold_reason(memory)
        if reason is not None:
            raise ValidationError(reason)

    def check_secrets(self, text: str, choice: str | None) -> str:
        """Text a user wrote: the `security.secrets` policy, or the user's explicit choice.

        Under "ask" with no choice this raises SecretDetectedError before anything is written.
        """
        checked, _found = apply_policy(text, choice or self.secrets_policy())
        return checked


class Transaction:
    """The changes of one operation; see StoreWriter.transaction."""

    def __init__(
        self,
        writer: StoreWriter,
        operation: Operation,
        subject: str,
        conversation: str | None,
        trailers: dict[str, str],
        turn_id: str | None,
    ) -> None:
        self._writer = writer
        self._store = writer.store
        self._catalog = writer.catalog
        self.operation = operation
        self.subject = subject
        self.conversation = conversation
        self.trailers = trailers
        self.turn_id = turn_id
        self._undo = _Undo()
        self._written: dict[str, Memory] = {}  # by id: the last version this transaction wrote
        self._removed: dict[str, Memory] = {}  # by id: versions that left their place
        self._paths: list[str] = []
        self._path_set: set[str] = set()  # `in` on the list made a 100k-file import quadratic
        self.commit: str | None = None
        self.change: StoreChange | None = None

    # ------------------------------------------------------------ operations

    def add(
        self,
        text: str,
        *,
        conversation_id: str,
        role: str = "memory",
        kind: str | None = None,
        source: str | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        memory_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Memory:
        """A new fact or turn file."""
        if memory_id is not None and self._catalog.lookup(memory_id) is not None:
            raise ValidationError(f"a memory with id {memory_id!r} already exists")
        memory = self._store.new_memory(
            text, conversation_id=conversation_id, role=role, kind=kind, source=source,
            created_at=created_at, expires_at=expires_at, memory_id=memory_id,
            extra=redact_fields(extra) if extra else extra,  # e.g. a client's name (issue #22)
        )
        self._undo.created(memory.path)
        return self._wrote(memory)

    def rewrite(
        self,
        memory: Memory,
        updates: Mapping[str, Any],
        text: str | None = None,
        *,
        expected_hash: str | None = None,
    ) -> Memory:
        """New front-matter values and/or text for a memory, in place."""
        if text is None:  # new text was vetted by the caller; the file's own text was not
            self._writer.check_not_held(memory)
        self._undo.save(self._store, memory.path)
        return self._wrote(self._store.rewrite(memory, updates, text, expected_hash=expected_hash))

    def soft_delete(
        self, memory: Memory, *, replaced_by: str | None = None, ended: str | None = None,
        by_turn: str | None = None,
    ) -> Memory:
        """Move under deleted/ with deleted_at (and replaced_by for an UPDATE); returns the tombstone.
        `ended`: when it stopped being true, if the user said so (else now); `by_turn`: the chat
        message that asked for it."""
        self._writer.check_not_held(memory)
        self._undo.save(self._store, memory.path)
        target = self._store.moved_path(memory)
        self._undo.created(target)  # before the move: a stamp that fails after it is undone too
        tomb = self._store.soft_delete(memory, replaced_by=replaced_by, target=target, ended=ended,
                                      by_turn=by_turn)
        self._left(memory)
        return self._wrote(tomb)

    def restore(self, memory: Memory) -> Memory:
        """Move a tombstone back to its live place."""
        self._writer.check_not_held(memory)
        self._undo.save(self._store, memory.path)
        target = self._store.moved_path(memory)
        self._undo.created(target)
        live = self._store.restore(memory, target=target)
        self._left(memory)
        return self._wrote(live)

    def replace(self, memory: Memory, text: str, *, source: str | None, kind: str | None = None,
                extra: Mapping[str, Any] | None = None) -> tuple[Memory, Memory]:
        """UPDATE: a new memory, and the old one tombstoned with `replaced_by`. (tombstone, new)."""
        self._writer.check_not_held(memory)  # before the new memory is written
        new = self.add(text, conversation_id=memory.conversation_id, role=memory.role,
                       kind=(kind or memory.kind) if memory.role == Role.MEMORY else None,
                       source=source, extra=extra)
        # the old fact was true until the new one began (a date the user gave, else now)
        return self.soft_delete(memory, replaced_by=new.id, ended=new.valid_from), new

    def write_summary(self, conversation_id: str, text: str, summarized_count: int) -> Memory:
        """Create or rewrite the conversation's rolling summary."""
        self._undo.save(self._store, layout.summary_path(conversation_id))
        return self._wrote(self._store.write_summary(conversation_id, text, summarized_count))

    def write_file(self, rel: str, raw: bytes) -> Memory:
        """Put a whole memory file back from its bytes (e.g. one removed outright, from git)."""
        memory = self._store.memory_from_bytes(rel, raw)
        self._undo.save(self._store, rel)
        atomic_write(self._store.abspath(rel), raw)
        return self._wrote(memory)

    def write_conversation_meta(self, conversation_id: str, meta: Mapping[str, Any]) -> None:
        """Save a conversation's title and settings (conversation.yaml)."""
        meta = redact_fields(meta)  # a title made from a first message can hold a key (issue #22)
        rel = layout.conversation_file(conversation_id)
        self._undo.save(self._store, rel)
        self._store.write_conversation_meta(conversation_id, meta)
        self._touch(rel)

    def same_fact(self, text: str, conversation_id: str) -> Memory | None:
        """The live fact of `conversation_id` that says exactly `text` (spacing and case aside),
        if any: a write path adds it again never (issue #22: no exact duplicates)."""
        wanted = " ".join(text.split()).casefold()
        for memory in self._catalog.select(conversation_id=conversation_id, role=Role.MEMORY):
            if " ".join(memory.text.split()).casefold() == wanted:
                return memory
        return None

    def adopt(self, *memories: Memory | None) -> None:
        """Include files written by an earlier unpublished transaction (a reply's turn files)."""
        for memory in memories:
            if memory is None:
                continue
            current = self._catalog.lookup(memory.id)
            if current is not None:
                self._written[current.id] = current
                self._touch(current.path)

    def adopt_removal(self, *memories: Memory) -> None:
        """Account for memories whose files went away outside this transaction (an outside edit)."""
        for memory in memories:
            self._removed.setdefault(memory.id, memory)
            self._touch(memory.path)

    def touch(self, paths: Sequence[str]) -> None:
        """Commit these paths too (changes already on disk that this operation accounts for)."""
        for rel in paths:
            self._touch(rel)

    def redact(self, text: str) -> tuple[str, tuple[Finding, ...]]:
        """See StoreWriter.redact."""
        return self._writer.redact(text)

    @property
    def written(self) -> tuple[Memory, ...]:
        """Every memory this transaction wrote, last version of each."""
        return tuple(self._written.values())

    @property
    def paths(self) -> tuple[str, ...]:
        """Every store-relative path this transaction touched."""
        return tuple(self._paths)

    # ------------------------------------------------------------- bookkeeping

    def _touch(self, rel: str) -> None:
        if rel not in self._path_set:
            self._path_set.add(rel)
            self._paths.append(rel)

    def _wrote(self, memory: Memory) -> Memory:
        self._catalog.remember(memory)
        self._written[memory.id] = memory
        self._touch(memory.path)
        return memory

    def _left(self, memory: Memory) -> None:
        self._catalog.forget(memory)
        self._removed.setdefault(memory.id, memory)
        self._touch(memory.path)

    def rollback(self) -> None:
        """Put every touched file back as it was before the transaction; re-read them."""
        for rel, raw in reversed(list(self._undo.before.items())):
            try:
                path = self._store.abspath(rel)
                if raw is None:
                    path.unlink(missing_ok=True)
                else:
                    atomic_write(path, raw)
            except OSError:
                log.exception("could not roll back %s; the next start-up reports it", rel)
        if self._undo.before:
            self._catalog.reload(list(self._undo.before))

    def publish(self) -> StoreChange:
        """Commit exactly the touched paths (caller holds the lock) and queue the change's
        publication: index, then tell subscribers, once the lock is released. Nothing touched:
        no commit, and no change is announced."""
        if self.change is not None:  # published already
            return self.change
        writer = self._writer
        written = list(self._written.values())
        gone = [mid for mid in self._removed
                if mid not in self._written and self._catalog.lookup(mid) is None]
        # what left the store is named too (an outside edit can be a file removed by hand)
        ids = tuple(dict.fromkeys([*(m.id for m in written), *self._removed]))
        failed: CommitFailedError | None = None
        if writer.committer is not None and self._paths:
            trailers = {"Operation": str(self.operation)}
            if ids:
                trailers["Ids"] = ", ".join(ids[:50])
            if self.conversation:
                trailers["Conversation"] = self.conversation
            if self.turn_id:
                trailers["Turn"] = self.turn_id
            trailers.update(self.trailers)
            # the secret gate of the commit message: subject and trailers (titles, client names)
            subject, trailers = redact(self.subject or str(self.operation)), redact_fields(trailers)
            try:
                self.commit = writer.committer(subject, trailers, self._paths)
            except CommitFailedError as exc:  # published below all the same, then reported
                failed = exc
        self.change = StoreChange(self.operation, ids, self.conversation, self.commit,
                                  tuple(m.path for m in written), self.turn_id,
                                  self.trailers.get("Source"), self.trailers.get("Client"),
                                  str(failed) if failed is not None else None)
        if self._paths:
            writer.publisher.enqueue(written, gone, self.change)
        if failed is not None:
            raise failed
        return self.change
