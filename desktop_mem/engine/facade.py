"""MemoryEngine: the one door to the engine for the CLI, the HTTP server and the UI.

Every mutation runs under one writer lock (threads) and one store lock (processes) and is:
atomic file write -> catalog + index update -> one git commit. Reads never take the writer lock.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from desktop_mem.engine.chat import scope_migration
from desktop_mem.engine.chat.chat_types import ChatReply, MemoryUsed, WriteOutcome
from desktop_mem.engine.chat.decisions import Applied, Planned, apply_as_one_commit
from desktop_mem.engine.config import Config, load_config
from desktop_mem.engine.history import validity_migration
from desktop_mem.engine.history.git_history import GitHistory, GitHistoryError
from desktop_mem.engine.history.timeline import classify
from desktop_mem.engine.index.index_sync import IndexSync, Progress, SyncReport
from desktop_mem.engine.index.read_path import SearchIndex
from desktop_mem.engine.index.retrieval import RetrievalOverrides, Retriever, SearchFilters, SearchResult
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    CommitInfo,
    HeldBackChoice,
    Memory,
    NotFoundError,
    Operation,
    Problem,
    SecretHeldBack,
    StoreChange,
    ValidationError,
    utc_now,
)
from desktop_mem.engine.store import layout, secrets_scan
from desktop_mem.engine.store.catalog import Catalog
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.held_back import KEPT_SECRETS_NAME, HeldBackFiles, KeptSecrets, safe_preview
from desktop_mem.engine.store.manifest import MANIFEST_NAME, Manifest
from desktop_mem.engine.store.markdown_store import MarkdownStore
from desktop_mem.engine.store.reads import MemoryReads
from desktop_mem.engine.store.store_lock import StoreLock
from desktop_mem.engine.store.transaction import StoreWriter, Transaction, clip, noun

if TYPE_CHECKING:
    from desktop_mem.engine.chat.service import ChatService
    from desktop_mem.engine.doctor import DoctorReport

log = logging.getLogger(__name__)


Listener = Callable[[StoreChange], None]
HeldBackListener = Callable[[SecretHeldBack], None]


class MemoryEngine:
    """Open a store (creating it if needed) and read or change its memories."""

    def __init__(self, config: Config | None = None, *, read_only: bool = False) -> None:
        self.config = config or load_config()
        self.root = self.config.store_path.expanduser().resolve()
        self.read_only = read_only
        self.store = MarkdownStore(self.root, max_file_bytes=self.config["store.max_file_bytes"])
        self.git = GitHistory(self.root)
        self.lock = StoreLock(self.root)
        self._listeners: list[Listener] = []
        self._closed = False
        self.manifest = Manifest(self.root / MANIFEST_NAME)
        self.catalog = Catalog(self.store, self.manifest)
        self.writer = StoreWriter(
            self.store, self.catalog,
            committer=self._commit_paths if self.config["store.git_versioning"] else None,
            index_update=self._index_changed, emit=self._emit,
            secrets_policy=lambda: self.config["security.secrets"], read_only=read_only,
        )
        self._held_listeners: list[HeldBackListener] = []
        self._held = HeldBackFiles(self.writer, self.catalog, KeptSecrets(self.root / KEPT_SECRETS_NAME),
                                   dirty_paths=self._uncommitted, announce=self._announce_held_back,
                                   read_only=read_only)
        self.writer.hold_reason = self._held.hold_reason
        # Reads are safe by default (held-back hand edits left out); the raw view is asked for by name.
        self.raw = MemoryReads(self.catalog)
        self._shared = MemoryReads(self.catalog, self._held)
        self._search = SearchIndex(self.root, self.config, self.manifest, self.catalog, read_only=read_only,
                                   lookup=self.lookup, indexable=self._indexable)
        self._chat: ChatService | None = None
        self._outcome_listeners: list[Callable[[WriteOutcome], None]] = []
        if not read_only:
            self.root.mkdir(parents=True, exist_ok=True)
            self.lock.acquire()
            try:
                if self.config["store.git_versioning"]:
                    fresh = not self.git.exists() and not (self.root / layout.ENTRIES).exists()
                    self.git.init()
                    if fresh:  # a new store's facts get their validity as they are written
                        validity_migration.mark_done(self.root)
                self._remove_stale_git_lock()
            except Exception:
                self.lock.release()
                raise
        elif not self.root.exists():
            raise ValidationError(f"the store {self.root} does not exist yet")
        # `git status` (lock-free) runs while the catalog loads: two cores, not one after the other.
        versioned = not read_only and self.config["store.git_versioning"]
        dirty = self.git.dirty_paths_later(".gitignore") if versioned else None
        temp_files: list[str] = []
        self.refresh(temp_files=None if read_only else temp_files)
        self._remove_temp_files(temp_files)
        if dirty is not None:
            self.commit_all("Record changes made while desktop-mem was closed", Operation.SYNC, dirty=dirty())
        if not read_only and validity_migration.needs_migration(self):
            validity_migration.migrate_validity(self)  # a store made before validity: one commit
        if not read_only and scope_migration.needs_migration(self.root):
            self.migrate_user_scope()  # migration 2, after validity: the user's facts, one commit

    def migrate_user_scope(self) -> str | None:
        """Facts about the user learned in a chat move to the user scope (chat/scope_migration.py)."""
        with self.writer.lock:
            sha, _moved = scope_migration.migrate_scopes(
                self.root, self.raw.list_memories(role="memory"),
                commit=self._commit_paths if self.config["store.git_versioning"] else None,
                reload=self.refresh, held=frozenset(h.memory_id for h in self.held_back_files()))
        return sha

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Release the store lock and git helpers (idempotent)."""
        self.stop_watcher()
        if self._closed:
            return
        self._closed = True
        if self._chat is not None:
            self._chat.close()
        if not self.read_only:
            self.manifest.flush()
        self._search.close()
        self.git.close()
        self.lock.release()

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start_watcher(self) -> bool:
        """Apply edits made outside the app as they happen, if `watcher.enabled` (True if running)."""
        from desktop_mem.engine.watcher import StoreWatcher

        if self.read_only or self._closed or not self.config["watcher.enabled"]:
            return False
        watcher: StoreWatcher | None = getattr(self, "_watcher", None)
        if watcher is None:
            watcher = StoreWatcher(self.root, self.apply_external_changes, self._known_paths,
                                   self.config["watcher.debounce_ms"])
            self._watcher: StoreWatcher | None = watcher
        watcher.start()
        return True

    def stop_watcher(self) -> None:
        """Stop the file watcher, if one runs (idempotent)."""
        watcher = getattr(self, "_watcher", None)
        self._watcher = None
        if watcher is not None:
            watcher.stop()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` after every change; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, change: StoreChange) -> None:
        self._held.released_by(change)  # a held-back file committed any way is no longer held
        _notify(self._listeners, change)

    def subscribe_held_back(self, listener: HeldBackListener) -> Callable[[], None]:
        """Call `listener` (from the thread that found it) when a hand-edited file is held back
        for a likely secret; returns a function that unsubscribes. Files held back before
        subscribing (found at start-up) are in `held_back_files()`."""
        self._held_listeners.append(listener)
        return lambda: self._held_listeners.remove(listener) if listener in self._held_listeners else None

    def _announce_held_back(self, held: SecretHeldBack) -> None:
        _notify(self._held_listeners, held)

    @staticmethod
    def _remove_temp_files(paths: Iterable[str]) -> None:
        """Remove what a killed writer can leave: our own temp files (found by the catalog's walk).

        Safe at start-up because we hold the store lock and write nothing yet: no other
        desktop-mem is writing here. Temp files are never the truth (the rename that would
        publish them did not happen).
        """
        for tmp in paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _remove_stale_git_lock(self) -> None:
        """A killed git command's index lock (we hold the store lock: no git of ours runs)."""
        index_lock = self.root / ".git" / "index.lock"
        if index_lock.exists():
            log.warning("removing a stale %s left by an interrupted git command", index_lock)
            index_lock.unlink(missing_ok=True)

    # -------------------------------------------------------------- catalog

    def refresh(self, temp_files: list[str] | None = None) -> None:
        """Re-read the store (start-up, or after a burst of outside changes).

        Files whose size and mtime match memory_index.json are not parsed again. Temp files of
        interrupted writes seen on the way are added to `temp_files`, if given.
        """
        self.catalog.load(temp_files)
        if not self.read_only:
            self.manifest.flush()  # only when files were parsed or went away
        elif self.config["store.git_versioning"] and self.git.exists():
            # A reader cannot commit nor redact, but must not give out what its writer holds back:
            # it decides which files those are as the writer does, from git and kept_secrets.json.
            self._held_back()

    def _known_paths(self) -> set[str]:
        known = {m.path for m in self.raw.list_memories(include_deleted=True)}
        return known | {p.path for p in self.problems()}

    def apply_external_changes(self, paths: Iterable[str]) -> StoreChange | None:
        """Files changed outside the app (the watcher, or a sync): re-read, index, one commit of
        exactly those files.

        The engine's own writes come back here too; they are recognised by their content hash
        (already in the catalog) and ignored. Files that fail to parse become problems, are left
        untouched, kept out of the index and out of the commit.
        """
        # a link (to a file or a folder) is taken too, to be reported as a problem, never read
        rels = sorted({p for p in paths if layout.is_memory_file(p) or (self.root / p).is_symlink()})
        if not rels:
            return None
        if self.read_only:
            return self._follow(rels, None)
        with self.writer.transaction(Operation.EXTERNAL_EDIT, publish=False) as tx:
            return self._follow(rels, tx)

    def _follow(self, rels: list[str], tx: Transaction | None) -> StoreChange | None:
        before = {rel: self.catalog.at_path(rel) for rel in rels}
        results = self.catalog.reload(rels)
        changed = [r for r in results if isinstance(r, Memory) and _differs(before.get(r.path), r)]
        if tx is not None:  # hand edits pass the secret check before anything is committed
            changed = self._screen_secrets(changed, tx)
        removed = [m for rel, m in before.items() if m is not None and self.catalog.at_path(rel) is None]
        problems = tuple(r.path for r in results if isinstance(r, Problem))
        if not changed and not removed:
            if not problems:
                return None
            change = StoreChange(Operation.PROBLEM, (), None, None, problems)
            self._emit(change)
            return change
        ids = tuple(dict.fromkeys(m.id for m in [*changed, *removed]))
        convs = {m.conversation_id for m in [*changed, *removed]}
        conversation = convs.pop() if len(convs) == 1 else None
        if tx is None:
            self._index_changed(changed, [m.id for m in removed if self.catalog.lookup(m.id) is None])
            change = StoreChange(Operation.EXTERNAL_EDIT, ids, conversation, None,
                                 tuple(m.path for m in changed) + problems)
            self._emit(change)
            return change
        first = (changed or removed)[0]
        more = f" (+{len(ids) - 1} more)" if len(ids) > 1 else ""
        tx.subject = f"Edit outside the app: {safe_preview(first.text)}{more}"
        tx.conversation = conversation
        tx.adopt(*changed)
        tx.adopt_removal(*removed)
        return tx.publish()

    def _screen_secrets(self, memories: list[Memory], tx: Transaction) -> list[Memory]:
        """The memories to commit: under `security.secrets` = redact a likely secret is redacted in
        the file first; under ask the file is held back (left as the user wrote it, uncommitted,
        out of the index, announced to `subscribe_held_back`) until they choose, unless they kept
        that same secret before; under keep it is committed as it is."""
        policy = str(self.config["security.secrets"])
        if policy == "keep":
            return memories
        kept: list[Memory] = []
        for memory in memories:
            findings = secrets_scan.scan(memory.text)
            if not findings:
                kept.append(memory)
            elif policy == "redact":
                kept.append(tx.rewrite(memory, {}, secrets_scan.redact(memory.text, findings)))
            elif unasked := self._held.unasked(memory):
                self._held.hold(memory, unasked)
                self._index_changed([], [memory.id])  # its older text leaves the index too
            else:
                kept.append(memory)
        return kept

    def _uncommitted(self) -> list[str]:
        """Files git has not committed. A reader whose git cannot tell (a broken repository, which
        `doctor` must still report) takes every file as uncommitted: unkept secrets stay hidden."""
        try:
            return self.git.dirty_paths()
        except GitHistoryError as exc:
            if not self.read_only:
                raise
            log.warning("%s; every memory with a likely secret is treated as held back", exc)
            return [m.path for m in self.raw.list_memories(include_deleted=True)]

    def _held_back(self, dirty: Sequence[str] | None = None) -> set[str]:
        """Uncommitted memory files (`dirty`, else as git tells) with a likely secret, after the
        policy ran on them (on a read-only engine: as the writer would run it, in memory only)."""
        suspects = self._held.suspects(dirty)
        if self.config["security.secrets"] == "ask":
            return self._held.hold_unasked(suspects)
        self._held.keep_only(())
        if not suspects or self.config["security.secrets"] == "keep":
            return set()
        if self.read_only:  # the writer redacts these files as soon as it sees them: show them so
            for memory in suspects:
                self.catalog.show_as(replace(memory, text=secrets_scan.redact(memory.text)))
            return set()
        subject = "Redact likely secrets in hand-edited memories"
        with self.writer.transaction(Operation.EXTERNAL_EDIT, subject) as tx:
            for memory in suspects:
                tx.rewrite(memory, {}, secrets_scan.redact(memory.text))
        return set()

    # ---------------------------------------------------------------- reads

    def get(self, memory_id: str) -> Memory:
        """The memory with this id or unique prefix (live or deleted); NotFoundError if none, and
        HeldBackError (naming its file and how to answer) for a held-back hand edit. The editor
        asks `engine.raw.get` for the file as it is."""
        return self._shared.get(memory_id)

    def list_memories(
        self,
        *,
        conversation_id: str | None = None,
        role: str | None = None,
        kind: str | None = None,
        include_deleted: bool = False,
        only_deleted: bool = False,
        include_summaries: bool = True,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Memory]:
        """Memories matching the filters, oldest first; held-back hand edits left out
        (`engine.raw.list_memories` lists them)."""
        return self._shared.list_memories(
            conversation_id=conversation_id, role=role, kind=kind, include_deleted=include_deleted,
            only_deleted=only_deleted, include_summaries=include_summaries, since=since, until=until,
        )

    def is_empty(self) -> bool:
        """True for a new store: no memory (live or deleted) and no conversation."""
        return not len(self.catalog) and not self.store.conversations()

    def problems(self) -> list[Problem]:
        """Files that could not be read, with their reasons."""
        return self.catalog.problems()

    def conversations(self) -> list[str]:
        """Conversation ids in the store (global first); fully deleted ones are left out."""
        live = self.catalog.live_conversations()
        found = live | {c for c in self.store.conversations()
                        if c in live or not self.store.conversation_meta(c).get("deleted")}
        return sorted(found, key=lambda c: (c != GLOBAL_CONVERSATION, c))

    def summary(self, conversation_id: str) -> Memory | None:
        """The conversation's rolling summary, if any; held back, with its likely secrets redacted."""
        return self._shared.summary(conversation_id)

    # --------------------------------------------------------------- writes

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
    ) -> Memory:
        """Write a new memory file and commit it (`memory_id`/`created_at` for imports).

        A likely secret in `text` raises SecretDetectedError under the `security.secrets` policy
        "ask" unless `secrets` is "keep" or "redact" (the user's choice). `client` names the tool
        that asked for the write (an MCP client): kept in front matter and in the commit trailers.
        """
        self.writer.require_writer()
        text = self.writer.check_secrets(text, secrets)
        with self.writer.transaction(Operation.ADD, conversation=conversation_id,
                                     trailers=provenance_trailers(source, client) if client else None) as tx:
            memory = tx.add(text, conversation_id=conversation_id, role=role,
                            kind=kind if role == "memory" else None, source=source, expires_at=expires_at,
                            created_at=created_at, memory_id=memory_id, extra=_client_meta(client))
            tx.subject = f"Add {noun(memory)}: {clip(text)}"
        return memory

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
        """Change a memory's text and/or front matter (unknown keys kept) and commit.

        A likely secret in a new `text` is handled as in `add` (`secrets`: "keep" or "redact").
        """
        self.writer.require_writer()
        if text is not None:
            text = self.writer.check_secrets(text, secrets)
        updates = dict(meta or {})
        for locked in ("id", "conversation_id", "deleted_at"):
            if locked in updates:
                raise ValidationError(f"{locked} cannot be edited; it follows from the file's place")
        with self.writer.transaction(Operation.EDIT, trailers=provenance_trailers(source, client)) as tx:
            current = self.raw.get(memory_id)
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
        """Soft-delete: move under deleted/, stamp deleted_at, commit (`source`/`client`: trailers)."""
        with self.writer.transaction(operation, trailers=provenance_trailers(source, client)) as tx:
            current = self.raw.get(memory_id)
            tomb = tx.soft_delete(current)
            verb = "Evict" if operation == Operation.EVICT else "Delete"
            tx.subject = f"{verb} {noun(current)}: {clip(current.text)}"
            tx.conversation = current.conversation_id
        return tomb

    def restore(self, memory_id: str, *, source: str | None = None, client: str | None = None) -> Memory:
        """Move a soft-deleted memory back and commit (`source`/`client`: trailers)."""
        with self.writer.transaction(Operation.RESTORE, trailers=provenance_trailers(source, client)) as tx:
            current = self.raw.get(memory_id)
            live = tx.restore(current)
            tx.subject = f"Restore {noun(live)}: {clip(live.text)}"
            tx.conversation = live.conversation_id
        return live

    def replace(
        self, memory_id: str, new_text: str, *, source: str = "manual", secrets: str | None = None,
        client: str | None = None,
    ) -> tuple[Memory, Memory]:
        """UPDATE: tombstone the old memory with replaced_by, add the new one, one commit."""
        self.writer.require_writer()
        new_text = self.writer.check_secrets(new_text, secrets)
        trailers = provenance_trailers(source, client) if client else None
        with self.writer.transaction(Operation.UPDATE, trailers=trailers) as tx:
            current = self.raw.get(memory_id)
            tomb, new = tx.replace(current, new_text, source=source, extra=_client_meta(client))
            tx.subject = f"Update {noun(current)}: {clip(current.text)} -> {clip(new.text)}"
            tx.conversation = current.conversation_id
        return tomb, new

    def apply_decisions(self, conversation_id: str, decisions: Sequence[Planned], *, source: str | None,
                        client: str | None = None, secrets: str | None = None) -> Applied:
        """Reconciled facts (ADD / UPDATE / DELETE / NONE) as ONE commit (chat/decisions.py)."""
        return apply_as_one_commit(self, conversation_id, decisions, secrets=secrets,
                                   trailers=provenance_trailers(source, client), extra=_client_meta(client))

    def undo_update(
        self, memory_ids: Sequence[str], commit: str | None, *, force: bool = False
    ) -> tuple[Memory, Memory]:
        """Undo the update that made `commit` (its two ids, in any order) in one commit; unless
        `force`, ConflictError if either memory changed since. Returns (old, live; new, tombstone)."""
        from desktop_mem.engine.history.timeline_actions import replacement_pair, undo_update

        return undo_update(self, *replacement_pair(self, memory_ids), commit, force=force)

    def restore_version(self, memory_id: str, revision: str, *, expected_hash: str | None = None) -> Memory:
        """Put back the text a memory had at `revision` (a new commit; nothing is lost)."""
        with self.writer.transaction(Operation.REVERT) as tx:
            current = self.raw.get(memory_id)
            old = self.store.memory_from_bytes(current.path, self.file_at(current, revision))
            if old.text == current.text:
                return current
            memory = tx.rewrite(current, {"updated_at": utc_now()}, old.text, expected_hash=expected_hash)
            tx.subject = f"Revert {noun(memory)} to {revision[:10]}: {clip(memory.text)}"
            tx.conversation = memory.conversation_id
        return memory

    def file_at(self, memory: Memory, revision: str) -> bytes:
        """The bytes of a memory's file at a revision, wherever it lived then (live or deleted/)."""
        for candidate in layout.both_places(memory.path, memory.conversation_id):
            try:
                return self.git.show_file(candidate, revision)
            except GitHistoryError:
                continue
        raise NotFoundError(f"memory {memory.id} did not exist at {revision[:10]}")

    def _index_changed(self, changed: Sequence[Memory], gone: Sequence[str]) -> None:
        self._search.changed(changed, gone)

    # ---------------------------------------------------------------- index

    def open_index(self, progress: Progress | None = None) -> SyncReport:
        """Open the embedder and indexes and bring them in step with the files."""
        return self._search.open(progress)

    def close_index(self) -> None:
        """Close the search index (chromadb's folder is free for another process); the next
        search opens it again and catches up (a `desktop-mem mcp` session between calls)."""
        self._search.close()

    @property
    def index(self) -> IndexSync:
        """The open index (opened and synced on first use)."""
        return self._search.index

    @property
    def retriever(self) -> Retriever:
        """The read path over the open index."""
        return self._search.retriever

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Drop the derived indexes and rebuild them from the Markdown files."""
        self.writer.require_writer()
        with self.writer.lock:
            self.refresh()
        return self._search.rebuild(progress)

    def search(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        top_k: int | None = None,
        filters: SearchFilters | None = None,
        use_mmr: bool = True,
        overrides: RetrievalOverrides | None = None,
        rerank: bool = False,
    ) -> list[SearchResult]:
        """The read path: best memories for `query` with their score breakdowns (`overrides`:
        top_k, recency_weight, score_threshold for this search; `rerank`: the cross-encoder
        scores the best candidates if `retrieval.rerank` is on)."""
        return self._search.search(query, conversation_id=conversation_id, top_k=top_k, filters=filters,
                                   use_mmr=use_mmr, overrides=overrides, rerank=rerank)

    def list_as_of(self, moment: datetime, **filters: Any) -> list[Memory]:
        """What was live at `moment` (validity + git history; history/as_of.py)."""
        from desktop_mem.engine.history.as_of import memories_as_of

        return memories_as_of(self, moment, **filters)

    def search_as_of(self, query: str, moment: datetime, **options: Any) -> list[SearchResult]:
        """The read path over what was live at `moment` (history/as_of.py)."""
        from desktop_mem.engine.history.as_of import search_as_of

        return search_as_of(self, self.search, query, moment, **options)

    def match_similarity(self) -> float:
        """From which dense similarity a search result counts as close in meaning (per model)."""
        from desktop_mem.engine.index.index_factory import match_similarity

        return match_similarity(self.config)

    def lookup(self, memory_id: str) -> Memory | None:
        """The memory with exactly this id, or None (also for a held-back one: the read path never
        injects it into a prompt)."""
        return self._shared.lookup(memory_id)

    def commit_all(
        self, subject: str, operation: Operation, trailers: Mapping[str, str] | None = None, *,
        dirty: Sequence[str] | None = None,
    ) -> str | None:
        """Commit everything under entries/ that differs from HEAD: what changed while the app was
        closed, or before a sync. Every other commit holds exactly its operation's files.
        `dirty`: start-up's `git status` of entries/ and .gitignore, read while the catalog loaded."""
        if self.read_only or not self.config["store.git_versioning"]:
            return None
        with self.writer.lock:
            # One lock-free `git status` first: when nothing differs (every start-up but one after
            # edits made while closed) no `git add` refreshes the index over every file of the store.
            if dirty is None:
                dirty = self.git.dirty_paths(".gitignore")
            held = self._held_back(dirty)
            if not dirty:
                return None
            paths = None if not held else [*(p for p in dirty if p not in held and p != ".gitignore"),
                                           ".gitignore"]
            try:
                trailers = {"Operation": str(operation), **(trailers or {})}
                return self.git.commit(subject, trailers, paths=paths)
            except GitHistoryError as exc:
                log.error("could not commit %r: %s", subject, exc)
                return None

    def _commit_paths(self, subject: str, trailers: Mapping[str, str], paths: Sequence[str]) -> str | None:
        """The writer's committer: one commit of exactly `paths`; a git failure is logged, never
        loses the file write (the next start-up records it)."""
        try:
            # A new store's .gitignore (written by init) goes with its first commit.
            return self.git.commit(subject, trailers, paths=[*paths, ".gitignore"])
        except GitHistoryError as exc:
            log.error("could not commit %r: %s", subject, exc)
            return None

    # ----------------------------------------------------------------- chat

    @property
    def chat_service(self) -> ChatService:
        """The chat pipeline (created on first use)."""
        if self._chat is None:
            from desktop_mem.engine.chat.ports import ChatPorts
            from desktop_mem.engine.chat.service import ChatService

            self._chat = ChatService(ChatPorts(
                self.config, self._shared, self.raw, self.writer, self._search.search, self.held_back_ids,
                self.conversation_strategy), self._outcome_listeners)
        return self._chat

    def chat(
        self,
        conversation_id: str,
        message: str,
        *,
        strategy: str | None = None,
        on_token: Callable[[str], None] | None = None,
        on_used: Callable[[MemoryUsed], None] | None = None,
        cancel: threading.Event | None = None,
        history: Sequence[Mapping[str, Any]] | None = None,
        retrieval: RetrievalOverrides | None = None,
        retry: bool = False,
    ) -> ChatReply:
        """One chat turn; returns when the reply is complete. The write path runs afterwards.

        `retrieval` overrides the read path's knobs for this turn (agent-cli's `memory_top_k`,
        `memory_recency_weight`, `memory_score_threshold`). `retry`: the message is sent again
        after its reply failed; its stored user turn is reused, not written twice.
        """
        validate_conversation_id(conversation_id)
        return self.chat_service.chat(
            conversation_id, message, strategy=strategy, on_token=on_token, on_used=on_used, cancel=cancel,
            history=[dict(m) for m in history] if history is not None else None, retrieval=retrieval,
            retry=retry,
        )

    def subscribe_outcomes(self, listener: Callable[[WriteOutcome], None]) -> Callable[[], None]:
        """Be told (from a background thread) when a turn's write path finished.

        Does not create the chat service: subscribing is cheap and safe on the GUI thread.
        """
        listeners = self._outcome_listeners
        listeners.append(listener)
        return lambda: listeners.remove(listener) if listener in listeners else None

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until background write paths finished (tests, CLI exit)."""
        return self._chat.wait_idle(timeout) if self._chat is not None else True

    def messages(self, conversation_id: str) -> list[dict[str, Any]]:
        """The conversation's stored turns as chat messages, oldest first; a held-back hand-edited
        turn with its likely secrets redacted (as the model is shown it)."""
        return [{"role": m.role, "content": m.text, "id": m.id, "created_at": m.created_at.isoformat()}
                for m in self.transcript(conversation_id)]

    def transcript(self, conversation_id: str) -> list[Memory]:
        """The conversation's live turns, oldest first; a held-back hand-edited turn in its place
        with its likely secrets redacted (as the model is shown it)."""
        validate_conversation_id(conversation_id)
        return self._shared.transcript(conversation_id)

    @property
    def memory_llm(self) -> Any:
        """The summary/memory model (imports extract facts with it)."""
        return self.chat_service.memory_llm

    def llm_check(self) -> str:
        """Probe the chat endpoint; raises LLMError with a message a user can act on."""
        return self.chat_service.llm.check()

    # -------------------------------------------------------- conversations

    def conversation_title(self, conversation_id: str) -> str:
        """The conversation's title (its id when none was set)."""
        return str(self.store.conversation_meta(conversation_id).get("title") or conversation_id)

    def conversation_strategy(self, conversation_id: str) -> str | None:
        """The context strategy saved for this conversation, if any."""
        value = self.store.conversation_meta(conversation_id).get("strategy")
        return str(value) if value else None

    def _update_conversation(self, conversation_id: str, subject: str, **changes: Any) -> None:
        with self.writer.transaction(Operation.CONVERSATION, subject, conversation_id) as tx:
            meta = self.store.conversation_meta(conversation_id)
            meta.update({k: v for k, v in changes.items()})
            meta = {k: v for k, v in meta.items() if v is not None}
            tx.write_conversation_meta(conversation_id, meta)

    def new_conversation(self, title: str) -> str:
        """Create a conversation (a folder with its title) and return its id."""
        from desktop_mem.engine.store.conversation_ids import slugify_conversation_id

        base = slugify_conversation_id(title)
        conv, n = base, 2
        existing = set(self.conversations())
        while conv in existing:
            conv = f"{base[:60]}-{n}"
            n += 1
        self._update_conversation(conv, f"New conversation: {title}", title=title.strip() or conv)
        return conv

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        """Change a conversation's title (its id, and so its folder, stays)."""
        self._update_conversation(conversation_id, f"Rename conversation {conversation_id}: {title}",
                                  title=title.strip())

    def delete_conversation(self, conversation_id: str) -> list[Memory]:
        """Soft-delete every memory of a conversation in one commit (restorable)."""
        validate_conversation_id(conversation_id)
        with self.writer.transaction(Operation.DELETE, conversation=conversation_id) as tx:
            tombs = [tx.soft_delete(m) for m in self.raw.list_memories(conversation_id=conversation_id)]
            meta = self.store.conversation_meta(conversation_id)
            meta["deleted"] = True
            tx.write_conversation_meta(conversation_id, meta)
            tx.subject = f"Delete conversation {conversation_id} ({len(tombs)} memories)"
        return tombs

    # -------------------------------------------------------------- history

    def history(self, limit: int = 50, offset: int = 0) -> list[CommitInfo]:
        """Commits newest first, each with its classified events."""
        return [classify(c, self.git.blob) for c in self.git.log(limit=limit, offset=offset)]

    def diff(self, sha: str) -> str:
        """The patch of one commit."""
        return self.git.diff(sha)

    def memory_history(self, memory_id: str, limit: int = 100) -> list[CommitInfo]:
        """Commits that touched this memory's file in its two places (live and deleted/).

        Not `git log --follow`: its rename guess can pair a new fact with the similar one it
        replaced and walk on into that other memory's history.
        """
        memory = self.raw.get(memory_id)  # commits only: a held-back edit is never committed
        places = layout.both_places(memory.path, memory.conversation_id)
        return [classify(c, self.git.blob) for c in self.git.log(limit=limit, paths=places)]

    # ------------------------------------------------------ held-back secrets

    def held_back_files(self) -> tuple[SecretHeldBack, ...]:
        """Hand-edited files held back now for a likely secret (kinds only, never the secret)."""
        return self._held.files

    def resolve_held_back(
        self, path: str, choice: HeldBackChoice | str, *, expected_hash: str | None = None
    ) -> StoreChange:
        """Answer for a held-back file (store-relative or absolute path): redact its likely
        secrets, or keep it as written (not asked again for the same secret); then commit and index
        it as an edit outside the app. Refuses a path outside the store, a file not held back, and
        (with `expected_hash`) a file changed since the question."""
        self.writer.require_writer()
        return self._held.resolve(path, HeldBackChoice(choice), expected_hash=expected_hash)

    def held_back_ids(self) -> frozenset[str]:
        """Ids of the held-back memories: the read path, prompts and the write path leave them out."""
        return self._held.ids

    def held_back_left_out(self, **filters: Any) -> int:
        """How many held-back hand edits `list_memories(**filters)` leaves out (a count, never text)."""
        return len(self.raw.list_memories(**filters)) - len(self.list_memories(**filters))

    def _indexable(self) -> list[Memory]:
        """Every memory the index should hold: all but the held-back ones."""
        return self.list_memories(include_deleted=True, include_summaries=True)

    # --------------------------------------------------------------- doctor

    def doctor(self) -> DoctorReport:
        """Problems, lock holder, git health and uncommitted changes."""
        from desktop_mem.engine.doctor import examine

        return examine(self)

    def index_status(self) -> str:
        """One line about the search index."""
        return self._search.status()


def _notify(listeners: Sequence[Callable[[Any], None]], event: object) -> None:
    for listener in list(listeners):
        try:
            listener(event)
        except Exception:  # a broken subscriber must not break a write or the watcher
            log.exception("engine listener failed")


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


def _client_meta(client: str | None) -> dict[str, str] | None:
    name = clean_client_name(client)
    return {"client": name} if name else None


def _differs(before: Memory | None, after: Memory) -> bool:
    return before is None or before.content_hash != after.content_hash
