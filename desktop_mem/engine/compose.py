"""The composition root: builds one store's parts once and hands each the narrow collaborators
it uses. The only module that knows them all; engine/api.py's MemoryEngine delegates to them.

    parts = compose.build(config, read_only=False)   # objects only: no file, lock or git touched
    compose.start(parts)                             # the store lock, git, the catalog, migrations

`Parts` is also the store view that history/, transfer/ and doctor take, each through its own
protocol naming only what it uses (history/ports.py HistorySource, transfer/ports.py
TransferSource and ExportSource, doctor.py DoctorSource): they get the parts, never the facade.
The chat path gets a value of its own: chat/ports.py's ChatPorts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from desktop_mem.engine.chat.chat_types import WriteOutcome
from desktop_mem.engine.config import Config
from desktop_mem.engine.history import commit_summaries
from desktop_mem.engine.history.git_history import GitHistory
from desktop_mem.engine.history.recorder import HistoryRecorder
from desktop_mem.engine.history.timeline_facade import Timeline
from desktop_mem.engine.index.read_path import SearchIndex
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    ListFilters,
    Memory,
    Operation,
    Problem,
    SecretHeldBack,
    StoreChange,
    ValidationError,
)
from desktop_mem.engine.store import first_page, layout, secrets_scan
from desktop_mem.engine.store.catalog import Catalog
from desktop_mem.engine.store.conversations import Conversations
from desktop_mem.engine.store.held_back import KEPT_SECRETS_NAME, HeldBackFiles, KeptSecrets
from desktop_mem.engine.store.manifest import MANIFEST_NAME, Manifest
from desktop_mem.engine.store.markdown_store import MarkdownStore
from desktop_mem.engine.store.memory_writes import MemoryWrites
from desktop_mem.engine.store.outside_edits import OutsideEdits, remove_temp_files
from desktop_mem.engine.store.problem_files import ProblemFiles
from desktop_mem.engine.store.projects import PREFIX
from desktop_mem.engine.store.publisher import Publisher, notify
from desktop_mem.engine.store.reads import MemoryReads
from desktop_mem.engine.store.store_lock import StoreLock
from desktop_mem.engine.store.transaction import StoreWriter
from desktop_mem.engine.transfer.transfer_facade import Transfer

if TYPE_CHECKING:
    from desktop_mem.engine.chat.fact_types import ChatModel
    from desktop_mem.engine.chat.service import ChatService
    from desktop_mem.engine.index.index_sync import Progress, SyncReport
    from desktop_mem.engine.watcher import StoreWatcher

log = logging.getLogger(__name__)
HeldBackListener = Callable[[SecretHeldBack], None]
OutcomeListener = Callable[[WriteOutcome], None]


class Parts:
    """One store's parts, wired. Built by `build`; started by `start`; closed by `close`."""

    def __init__(self, config: Config, *, read_only: bool) -> None:
        self.config = config
        self.root: Path = config.store_path.expanduser().resolve()
        self.read_only = read_only
        versioned = bool(config["store.git_versioning"])
        self.store = MarkdownStore(self.root, max_file_bytes=config["store.max_file_bytes"])
        self.git = GitHistory(self.root, after_commit=commit_summaries.remember_if_bulk)
        self.lock = StoreLock(self.root)
        self.manifest = Manifest(self.root / MANIFEST_NAME)
        self.catalog = Catalog(self.store, self.manifest)
        self.held_listeners: list[HeldBackListener] = []
        self.outcome_listeners: list[OutcomeListener] = []
        self.publisher = Publisher(before_notify=self._released_by)
        self.writer = StoreWriter(self.store, self.catalog, committer=None, publisher=self.publisher,
                                  secrets_policy=lambda: str(config["security.secrets"]), read_only=read_only)
        # Reads are safe by default (held-back hand edits left out); the raw view is asked for by name.
        self.raw = MemoryReads(self.catalog)
        self.recorder = HistoryRecorder(self.git, self.writer, self.store, self.raw, versioned=versioned,
                                        read_only=read_only)
        if versioned:
            self.writer.committer = self.recorder.commit_paths
        self.held = HeldBackFiles(
            self.writer, self.catalog, KeptSecrets(self.root / KEPT_SECRETS_NAME),
            dirty_paths=lambda: self.recorder.uncommitted(self._every_path),
            announce=lambda held: notify(self.held_listeners, held), read_only=read_only)
        self.writer.hold_reason = self.held.hold_reason
        self.shared = MemoryReads(self.catalog, self.held)
        self.search_index = SearchIndex(self.root, config, self.manifest, self.catalog, read_only=read_only,
                                        lookup=self.shared.lookup, indexable=self._indexable,
                                        project_of=self._project_of)
        self.publisher.index_update = self.search_index.changed
        self.outside = OutsideEdits(
            self.root, self.catalog, self.manifest, self.writer, self.held, self.publisher,
            secrets_policy=lambda: str(config["security.secrets"]),
            versioned=lambda: versioned and self.git.exists(), read_only=read_only)
        # what a sweep commit leaves out: hand edits held back for a secret, and the files doctor
        # reports as problems (unreadable: committed once they are fixed) (issue #22)
        self.recorder.held_back = lambda dirty: self.outside.held_back(dirty) | {
            p.path for p in self.catalog.problems() if dirty is None or p.path in dirty} | {
            p for p in (dirty or ()) if (m := self.catalog.at_path(p)) is not None
            and secrets_scan.in_names(m)}  # a key in a file name or front matter: never committed
        self.writes = MemoryWrites(self.writer, self.raw, self.outside.apply)
        self.conversations = Conversations(self.store, self.catalog, self.writer, self.raw)
        self.problem_files = ProblemFiles(self.store, self.writer, self.catalog.problems, self.outside.apply)
        self.transfer = Transfer(self, self)  # engine.transfer: imports, exports, sync
        self.timeline = Timeline(self)  # engine.timeline: the history's pages and actions
        self._chat: ChatService | None = None
        self._watcher: StoreWatcher | None = None
        from desktop_mem.engine.chat.write_progress import WriteProgressHub

        self.write_progress = WriteProgressHub()  # "Updating memory…" events and Cancel

    # ------------------------------------------------- lifecycle, listeners, whole-store checks

    def start_watcher(self) -> bool:
        """Apply outside edits as they happen, if `watcher.enabled` (True if it runs)."""
        from desktop_mem.engine.watcher import StoreWatcher

        if self.read_only or not self.config["watcher.enabled"]:
            return False
        if self._watcher is None:
            self._watcher = StoreWatcher(self.root, self.outside.apply, self.outside.known_paths,
                                         self.config["watcher.debounce_ms"])
        self._watcher.start()
        return True

    def stop_watcher(self) -> None:
        """Stop the file watcher, if one runs (idempotent)."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()

    def subscribe_held_back(self, listener: HeldBackListener) -> Callable[[], None]:
        """Tell `listener` of each hand edit held back for a likely secret; returns the unsubscribe."""
        return _subscribe(self.held_listeners, listener)

    def subscribe_outcomes(self, listener: OutcomeListener) -> Callable[[], None]:
        """Tell `listener` of each finished write path (the chat service is not built for it)."""
        return _subscribe(self.outcome_listeners, listener)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until background write paths finished (True when none runs or is queued)."""
        return self._chat.wait_idle(timeout) if self._chat is not None else True

    def is_empty(self) -> bool:
        """True for a new store: no memory (live or deleted) and no conversation."""
        return not len(self.catalog) and not self.store.conversations()

    def held_back_left_out(self, **filters: Any) -> int:
        """How many held-back hand edits the shared `list_memories(**filters)` leaves out."""
        return len(self.raw.list_memories(**filters)) - len(self.shared.list_memories(**filters))

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Re-read the files under the writer lock, then rebuild the derived indexes from them."""
        self.writer.require_writer()
        with self.writer.lock:
            self.refresh()
        return self.search_index.rebuild(progress)

    def _released_by(self, change: StoreChange) -> None:
        self.held.released_by(change)  # a held-back file committed any way is no longer held

    def _every_path(self) -> list[str]:
        return [m.path for m in self.raw.list_memories(include_deleted=True)]

    def _project_of(self, conversation_id: str) -> str | None:
        """The project scope a conversation is bound to (conversation.yaml `project:`), if any."""
        if conversation_id == GLOBAL_CONVERSATION or conversation_id.startswith(PREFIX):
            return None
        value = self.store.conversation_meta(conversation_id).get("project")
        return value if isinstance(value, str) and value.startswith(PREFIX) else None

    def _indexable(self) -> list[Memory]:
        """Every memory the index should hold: all but the held-back ones."""
        return self.shared.list_memories(include_deleted=True, include_summaries=True)

    # ------------------------------------------------------------- the chat path

    @property
    def chat(self) -> ChatService:
        """The chat pipeline (built on first use: it loads the LLM client, about a second)."""
        if self._chat is None:
            from desktop_mem.engine.chat.ports import ChatPorts
            from desktop_mem.engine.chat.service import ChatService

            ports = ChatPorts(self.config, self.shared, self.raw, self.writer, self.search_index.search,
                              lambda: self.held.ids, self.conversations.strategy, self.conversations.title,
                              self._project_of)
            self._chat = ChatService(ports, self.outcome_listeners, self.write_progress)
        return self._chat

    @property
    def chat_started(self) -> ChatService | None:
        """The chat pipeline if something built it, else None (closing need not build it)."""
        return self._chat

    def tidy_view(self) -> TidyView:
        """What tidy-up (chat/tidy.py) reads and writes through."""
        return TidyView(self.config, self.root, self.writer, self.shared, self.search_index)

    # ---------------------------- the store view history/, transfer/ and doctor take (their ports)

    @property
    def memory_llm(self) -> ChatModel:
        """The summary/memory model (imports extract facts with it)."""
        return self.chat.memory_llm

    def get(self, memory_id: str) -> Memory:
        """Shared view: HeldBackError for a held-back hand edit."""
        return self.shared.get(memory_id)

    def lookup(self, memory_id: str) -> Memory | None:
        """Shared view: None for a held-back hand edit."""
        return self.shared.lookup(memory_id)

    def summary(self, conversation_id: str) -> Memory | None:
        """Shared view: a held-back summary comes redacted."""
        return self.shared.summary(conversation_id)

    def list_memories(self, **filters: Unpack[ListFilters]) -> list[Memory]:
        """Shared view: held-back hand edits left out."""
        return self.shared.list_memories(**filters)

    def transcript(self, conversation_id: str) -> list[Memory]:
        """Shared view: a held-back turn in its place, redacted."""
        return self.shared.transcript(conversation_id)

    def conversation_title(self, conversation_id: str) -> str:
        """A conversation's title (its id when none was set)."""
        return self.conversations.title(conversation_id)

    def held_back_files(self) -> tuple[SecretHeldBack, ...]:
        """Hand-edited files held back now for a likely secret."""
        return self.held.files

    def problems(self) -> list[Problem]:
        """Files that could not be read, with their reasons."""
        return self.catalog.problems()

    def index_status(self) -> str:
        """One line about the search index."""
        return self.search_index.status()

    def refresh(self, temp_files: list[str] | None = None) -> None:
        """Re-read the store (outside_edits.py)."""
        self.outside.refresh(temp_files)

    def apply_external_changes(self, paths: Iterable[str]) -> StoreChange | None:
        """Files changed outside the app: re-read, screen, index, one commit (outside_edits.py)."""
        return self.outside.apply(paths)

    def commit_all(
        self, subject: str, operation: Operation, trailers: Mapping[str, str] | None = None, *,
        dirty: Sequence[str] | None = None,
    ) -> str | None:
        """Commit everything that differs from HEAD (history/recorder.py)."""
        return self.recorder.commit_all(subject, operation, trailers, dirty=dirty)


def build(config: Config, *, read_only: bool = False) -> Parts:
    """The parts of the store `config` names, wired; nothing on disk is touched yet."""
    return Parts(config, read_only=read_only)


def start(parts: Parts) -> None:
    """Open the store: take the store lock (a writer), set up git, load the catalog, commit what
    changed while the app was closed, and run the store's pending migrations."""
    begin(parts)
    finish(parts)


def begin(parts: Parts, *, catalog_later: bool = False) -> None:
    """The first part of `start`: the store lock (a writer) and git. With `catalog_later`, every
    read of the catalog waits until `finish` has loaded it (the window lists the last session's
    first page meanwhile: store/first_page.py)."""
    from desktop_mem.engine.history import validity_migration

    config, root = parts.config, parts.root
    if not parts.read_only:
        root.mkdir(parents=True, exist_ok=True)
        parts.lock.acquire()
        try:
            if config["store.git_versioning"]:
                fresh = not parts.git.exists() and not (root / layout.ENTRIES).exists()
                parts.git.init()
                if fresh:  # a new store's facts get their validity as they are written
                    validity_migration.mark_done(root)
            _remove_stale_git_lock(root)
        except Exception:
            parts.lock.release()
            raise
    elif not root.exists():
        raise ValidationError(f"the store {root} does not exist yet")
    if catalog_later:
        parts.catalog.defer_reads()


def finish(parts: Parts) -> None:
    """The rest of `start`: load the catalog, commit what changed while the app was closed, run
    the store's pending migrations. Readers waiting since `begin` go on once it has ended."""
    parts.catalog.loading_here()
    try:
        _finish(parts)
    finally:
        parts.catalog.release_readers()  # a failed start raises to its caller; nobody waits forever


def _finish(parts: Parts) -> None:
    from desktop_mem.engine.chat import scope_migration
    from desktop_mem.engine.history import validity_migration

    root = parts.root
    versioned = not parts.read_only and bool(parts.config["store.git_versioning"])
    # `git status` (lock-free) runs while the catalog loads: two cores, not one after the other.
    dirty = parts.git.dirty_paths_later(".gitignore") if versioned else None
    temp_files: list[str] = []
    parts.refresh(temp_files=None if parts.read_only else temp_files)
    remove_temp_files(temp_files)
    if dirty is not None:
        # a store's first commit says what it is (issue #39), not that something changed
        subject = ("Create the memory store" if parts.git.head() is None
                   else "Record changes made while desktop-mem was closed")
        parts.commit_all(subject, Operation.SYNC, dirty=dirty())
    if not parts.read_only and validity_migration.needs_migration(parts):
        validity_migration.migrate_validity(parts)  # a store made before validity: one commit
    if not parts.read_only and scope_migration.needs_migration(root):
        migrate_user_scope(parts)  # migration 2, after validity: the user's facts, one commit


def read_git(config: Config, read: Callable[[GitHistory], Any]) -> Any:
    """`read(git)` over the store's repository alone, without opening the store: no lock, no
    catalog (3-5 s at 100,000 memories), no index. For readers of committed history only
    (`desktop-mem history` and `diff`): what git holds was checked when it was committed."""
    root = config.store_path.expanduser().resolve()
    if not root.exists():
        raise ValidationError(f"the store {root} does not exist yet")
    git = GitHistory(root)
    try:
        return read(git)
    finally:
        git.close()


def migrate_user_scope(parts: Parts) -> str | None:
    """Facts about the user learned in a chat move to the user scope (chat/scope_migration.py)."""
    from desktop_mem.engine.chat import scope_migration

    with parts.writer.lock:
        sha, _moved = scope_migration.migrate_scopes(
            parts.root, parts.raw.list_memories(role="memory"),
            commit=parts.recorder.commit_paths if parts.config["store.git_versioning"] else None,
            reload=parts.refresh,
            held=frozenset(h.memory_id for h in parts.held_back_files() if h.memory_id))
    return sha


def close(parts: Parts) -> None:
    """Stop the watcher, finish queued write paths, then release the store lock, the indexes and
    git's helpers."""
    parts.stop_watcher()
    if parts.chat_started is not None:
        parts.chat_started.close()
    if not parts.read_only:
        parts.manifest.flush()
        if parts.catalog.loaded:  # the next start lists this while its catalog loads
            try:
                first_page.save(parts.root, parts.shared.list_page(0, first_page.FIRST_PAGE_ROWS),
                                parts.manifest.signature)
            except Exception:  # a cache: never in the way of releasing the store
                log.exception("could not keep the memory list's first page")
    parts.catalog.release_readers()  # closed before its catalog loaded: nobody waits forever
    parts.search_index.close()
    parts.git.close()
    parts.lock.release()


def _subscribe(listeners: list[Any], listener: Any) -> Callable[[], None]:
    listeners.append(listener)
    return lambda: listeners.remove(listener) if listener in listeners else None


def _remove_stale_git_lock(root: Path) -> None:
    """A killed git command's index lock (we hold the store lock: no git of ours runs)."""
    index_lock = root / ".git" / "index.lock"
    if index_lock.exists():
        log.warning("removing a stale %s left by an interrupted git command", index_lock)
        index_lock.unlink(missing_ok=True)


class TidyView:
    """Tidy-up's port (chat/tidy.py TidySource): the shared reads, the writer, and the index's
    stored vectors (a fact the index does not hold yet is embedded now)."""

    def __init__(self, config: Config, root: Path, writer: StoreWriter, reads: MemoryReads,
                 search_index: SearchIndex) -> None:
        self.config, self.root, self.writer = config, root, writer
        self._reads, self._search_index = reads, search_index

    def list_memories(self, **filters: Unpack[ListFilters]) -> list[Memory]:
        return self._reads.list_memories(**filters)

    def lookup(self, memory_id: str) -> Memory | None:
        return self._reads.lookup(memory_id)

    def vectors(self, memories: Sequence[Memory]) -> dict[str, Any]:
        index = self._search_index.index
        found: dict[str, Any] = dict(index.vectors.get_embeddings([m.id for m in memories]))
        missing = [m for m in memories if m.id not in found]
        if missing:
            found.update(zip([m.id for m in missing], index.embedder.embed([m.text for m in missing]),
                             strict=True))
        return found

    def embed(self, texts: Sequence[str]) -> Any:
        return self._search_index.index.embedder.embed(texts)

    def index_open(self) -> bool:
        return self._search_index.is_open
