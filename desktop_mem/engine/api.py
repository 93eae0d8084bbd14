"""MemoryEngine: the engine's public face for the CLI, the servers and the UI.

    engine = MemoryEngine.open(config)            # or read_only=True; close() or `with`

Plain delegation over the parts engine/compose.py builds and wires: every policy lives in its
part (writes: store/memory_writes.py; outside edits and secret screening: store/outside_edits.py;
conversations: store/conversations.py; history: history/recorder.py; the index and the read path:
index/read_path.py; chat: chat/service.py). Every mutation is one transaction (store lock +
writer lock): file write -> catalog -> one git commit; then, after the lock is released, index and
notify in commit order. Reads never take the writer lock and are safe by default: held-back hand
edits are left out (`raw` names the files as they are).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from desktop_mem.engine import compose
from desktop_mem.engine.chat.chat_types import ChatReply, MemoryUsed, WriteOutcome
from desktop_mem.engine.config import Config, load_config
from desktop_mem.engine.index.index_sync import IndexSync, Progress, SyncReport
from desktop_mem.engine.index.retrieval import RetrievalOverrides, Retriever, SearchFilters, SearchResult
from desktop_mem.engine.models import (
    CommitInfo,
    HeldBackChoice,
    Memory,
    NotFoundError,
    Operation,
    Problem,
    SecretHeldBack,
    StoreChange,
    StoredMessage,
)
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.markdown_store import atomic_write
from desktop_mem.engine.store.memory_writes import clean_client_name, client_meta, provenance_trailers

if TYPE_CHECKING:
    from desktop_mem.engine.chat.decisions import Applied, Planned
    from desktop_mem.engine.chat.extraction import ChatModel
    from desktop_mem.engine.chat.provenance import Provenance
    from desktop_mem.engine.chat.review import Proposal
    from desktop_mem.engine.chat.service import ChatService
    from desktop_mem.engine.chat.turn_memory import TurnMemory
    from desktop_mem.engine.chat.write_progress import WriteProgress
    from desktop_mem.engine.doctor import DoctorReport
    from desktop_mem.engine.watcher import StoreWatcher

Listener = Callable[[StoreChange], None]

# What the front ends (ui/, cli/, api/) take from the engine besides MemoryEngine, models and
# config: loaded on first use, so importing this module stays light (no numpy, chromadb, openai).
_PUBLIC: dict[str, str] = {
    **dict.fromkeys(["ChatReply", "MemoryUsed", "WriteOutcome"], "chat.chat_types"),
    **dict.fromkeys(["LLMClient", "LLMEndpoint", "LLMError"], "chat.llm_client"),
    **dict.fromkeys(["FoundEndpoint", "discover_endpoints", "nothing_found_advice"],
                    "chat.endpoint_discovery"),
    **dict.fromkeys(["reconcile", "kind_of"], "chat.extraction"),
    **dict.fromkeys(["TurnMemory", "learned_in", "scope_of"], "chat.turn_memory"),
    "STRATEGY_NAMES": "chat.context", "Planned": "chat.decisions", "Provenance": "chat.provenance",
    "Proposal": "chat.review",
    **dict.fromkeys(["RetrievalOverrides", "ScoreBreakdown", "SearchFilters"], "index.retrieval"),
    **dict.fromkeys(["Lineage", "LineageStep", "lineage"], "history.lineage"),
    **dict.fromkeys(["SOURCE_APP", "SOURCE_OUTSIDE", "commit_source"], "history.timeline"),
    **dict.fromkeys(["TimelineCursor", "TimelinePage", "TimelineQuery", "DiffOp", "FieldChange",
                     "event_bytes", "front_matter_changes", "timeline_page", "word_diff"],
                    "history.timeline_query"),
    **dict.fromkeys(["memory_at", "restore_deleted", "restore_summary_version", "revert_replacement"],
                    "history.timeline_actions"),
    **dict.fromkeys(["ImportResult", "apply_import", "plan_import", "iter_plan_lines"], "transfer.importers"),
    **dict.fromkeys(["export_json", "export_zip"], "transfer.exporters"),
    **dict.fromkeys(["SyncResult", "sync"], "transfer.git_sync"),
    "SecretDetectedError": "store.secrets_scan", "FrontMatterError": "store.front_matter",
    "parse_as_of": "store.validity", **dict.fromkeys(["describe_holder", "read_holder"], "store.store_lock"),
    "create_demo_store": "demo",
}
_MODULES = {"turn_memory": "chat.turn_memory", "sent_log": "chat.sent_log", "validity": "store.validity",
            "layout": "store.layout"}
__all__ = ["MemoryEngine", "clean_client_name", "import_index_modules", "provenance_trailers",
           "validate_conversation_id", *_PUBLIC, *_MODULES]


def __getattr__(name: str) -> Any:
    """The front ends' other engine names, imported when first asked for."""
    import importlib

    if name in _MODULES:
        return importlib.import_module(f"desktop_mem.engine.{_MODULES[name]}")
    if name in _PUBLIC:
        return getattr(importlib.import_module(f"desktop_mem.engine.{_PUBLIC[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def import_index_modules() -> None:
    """Import chromadb, onnxruntime and the index modules (seconds of imports) ahead of opening
    the index, so saves made meanwhile do not wait for them. Imports only: no state is touched."""
    import desktop_mem.engine.index.index_factory  # noqa: F401


class MemoryEngine:
    """One open store: read or change its memories, chat with memory, follow its history."""

    def __init__(self, config: Config | compose.Parts | None = None, *, read_only: bool = False) -> None:
        """Wrap started parts; given a Config (or nothing), open that store as `open` does."""
        if not isinstance(config, compose.Parts):
            config = compose.build(config or load_config(), read_only=read_only)
            compose.start(config)
        parts = self._p = config
        self.config, self.root, self.read_only = parts.config, parts.root, parts.read_only
        self.store, self.git, self.lock, self.writer = parts.store, parts.git, parts.lock, parts.writer
        self.manifest, self.catalog, self.raw = parts.manifest, parts.catalog, parts.raw
        self._closed = False
        self._watcher: StoreWatcher | None = None

    @classmethod
    def open(cls, config: Config | None = None, *, read_only: bool = False) -> MemoryEngine:
        """Open the store `config` names (a writer takes its store lock; ReadOnly for readers)."""
        parts = compose.build(config or load_config(), read_only=read_only)
        compose.start(parts)
        return cls(parts)

    def close(self) -> None:
        """Release the store lock, the indexes and git's helpers (idempotent)."""
        self.stop_watcher()
        if not self._closed:
            self._closed = True
            compose.close(self._p)

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start_watcher(self) -> bool:
        """Apply edits made outside the app as they happen, if `watcher.enabled` (True if running)."""
        from desktop_mem.engine.watcher import StoreWatcher

        if self.read_only or self._closed or not self.config["watcher.enabled"]:
            return False
        if self._watcher is None:
            self._watcher = StoreWatcher(self.root, self.apply_external_changes, self._p.outside.known_paths,
                                         self.config["watcher.debounce_ms"])
        self._watcher.start()
        return True

    def stop_watcher(self) -> None:
        """Stop the file watcher, if one runs (idempotent)."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` after every change (indexed, in commit order); returns the unsubscribe."""
        return self._p.publisher.subscribe(listener)

    def subscribe_held_back(self, listener: Callable[[SecretHeldBack], None]) -> Callable[[], None]:
        """Call `listener` (from the thread that found it) when a hand-edited file is held back for a
        likely secret; returns the unsubscribe. Files held back before: `held_back_files()`."""
        held = self._p.held_listeners
        held.append(listener)
        return lambda: held.remove(listener) if listener in held else None

    # -------------------------------------------------------------- reads

    def refresh(self, temp_files: list[str] | None = None) -> None:
        """Re-read the store (start-up, or after a burst of outside changes)."""
        self._p.refresh(temp_files)

    def apply_external_changes(self, paths: Iterable[str]) -> StoreChange | None:
        """Files changed outside the app: re-read, screen for secrets, index, one commit."""
        return self._p.apply_external_changes(paths)

    def get(self, memory_id: str) -> Memory:
        """By id or unique prefix (live or deleted); NotFoundError, or HeldBackError for a held-back
        hand edit (the editor asks `engine.raw.get`)."""
        return self._p.get(memory_id)

    def lookup(self, memory_id: str) -> Memory | None:
        """Exactly this id, or None (also for a held-back one)."""
        return self._p.lookup(memory_id)

    def list_memories(self, **filters: Any) -> list[Memory]:
        """Memories matching the filters (conversation_id, role, kind, include_deleted, only_deleted,
        include_summaries, since, until), oldest first; held-back hand edits left out."""
        return self._p.list_memories(**filters)

    def summary(self, conversation_id: str) -> Memory | None:
        """The conversation's rolling summary, if any; held back, with its likely secrets redacted."""
        return self._p.summary(conversation_id)

    def transcript(self, conversation_id: str) -> list[Memory]:
        """The conversation's live turns, oldest first; a held-back one in place, redacted."""
        validate_conversation_id(conversation_id)
        return self._p.shared.transcript(conversation_id)

    def messages(self, conversation_id: str) -> list[StoredMessage]:
        """The conversation's stored turns as chat messages (as the model is shown them)."""
        return [{"role": m.role, "content": m.text, "id": m.id, "created_at": m.created_at.isoformat()}
                for m in self.transcript(conversation_id)]

    def is_empty(self) -> bool:
        """True for a new store: no memory (live or deleted) and no conversation."""
        return not len(self.catalog) and not self.store.conversations()

    def problems(self) -> list[Problem]:
        """Files that could not be read, with their reasons."""
        return self._p.problems()

    def problem_text(self, rel: str) -> str:
        """The raw text of a store file that failed to parse (the problem editor's), undecodable
        bytes replaced. Any other file is refused: a memory is read through `get` (or `raw`)."""
        if rel not in {p.path for p in self.problems()}:
            raise NotFoundError(f"{rel} is not a file that failed to read; `desktop-mem doctor` lists them")
        return self.store.abspath(rel).read_bytes().decode("utf-8", errors="replace")

    def save_problem_file(self, rel: str, text: str) -> Problem | None:
        """Save the user's fix of a file that failed to parse (atomically, under the writer lock),
        then take it in as an edit (re-read, indexed, one commit); the problem left, if any."""
        self.writer.require_writer()
        with self.writer.lock:
            atomic_write(self.store.abspath(rel), text.encode("utf-8"))
            self.apply_external_changes([rel])
        return next((p for p in self.problems() if p.path == rel), None)

    def list_as_of(self, moment: datetime, **filters: Any) -> list[Memory]:
        """What was live at `moment` (validity + git history; history/as_of.py)."""
        return self._p.list_as_of(moment, **filters)

    def search_as_of(self, query: str, moment: datetime, **options: Any) -> list[SearchResult]:
        """The read path over what was live at `moment` (history/as_of.py)."""
        from desktop_mem.engine.history.as_of import search_as_of

        return search_as_of(self._p, self.search, query, moment, **options)

    def provenance(self, memory_id: str) -> Provenance:
        """Why the app knows a memory: its source turns, first commit, where it was sent."""
        from desktop_mem.engine.chat.provenance import provenance
        from desktop_mem.engine.chat.sent_log import SentLog

        return provenance(self._p, SentLog(self.root), memory_id)

    def note_sent(self, memory_ids: Sequence[str], endpoint: str, model: str) -> None:
        """Note in the sent log that these memories went to `model` at `endpoint` (an AI tool)."""
        from desktop_mem.engine.chat.sent_log import SentLog

        SentLog(self.root).record(memory_ids, endpoint, model)

    def proposals(self) -> tuple[list[Proposal], list[str]]:
        """Review mode: changes the model proposed that wait for the user, and unreadable files."""
        from desktop_mem.engine.chat import review

        return review.pending(self.root)

    def accept_proposal(self, proposal_id: str, text: str | None = None) -> tuple[Proposal, str | None]:
        """Apply a proposal (with `text` instead of the model's, if given): one commit."""
        from desktop_mem.engine.chat import review

        return review.accept(self._p, proposal_id, text)

    def reject_proposal(self, proposal_id: str) -> tuple[Proposal, str | None]:
        """Drop a proposal (one commit); memory stays as it is."""
        from desktop_mem.engine.chat import review

        return review.reject(self._p, proposal_id)

    # ------------------------------------------------------------- writes

    def add(self, text: str, **options: Any) -> Memory:
        """A new memory file, committed. Options: conversation_id, kind, role, source, expires_at,
        created_at, memory_id (imports), secrets ("keep"/"redact": the user's answer to a likely
        secret, else SecretDetectedError under "ask"), client (the MCP client that asked)."""
        return self._p.writes.add(text, **options)

    def add_many(self, texts: Sequence[str], **options: Any) -> list[Memory]:
        """Several facts as one commit or nothing (conversation_id, kinds, source, secrets, client);
        the error names the item and says nothing was saved."""
        return self._p.writes.add_many(texts, **options)

    def edit(self, memory_id: str, **options: Any) -> Memory:
        """New text and/or front matter (text, meta, expected_hash, secrets, source, client)."""
        return self._p.writes.edit(memory_id, **options)

    def delete(self, memory_id: str, *, operation: Operation = Operation.DELETE, source: str | None = None,
               client: str | None = None) -> Memory:
        """Soft-delete: move under deleted/, stamp deleted_at, commit."""
        return self._p.writes.delete(memory_id, operation=operation, source=source, client=client)

    def restore(self, memory_id: str, *, source: str | None = None, client: str | None = None) -> Memory:
        """Move a soft-deleted memory back and commit."""
        return self._p.writes.restore(memory_id, source=source, client=client)

    def replace(self, memory_id: str, new_text: str, **options: Any) -> tuple[Memory, Memory]:
        """UPDATE: tombstone with replaced_by + the new memory, one commit (source, secrets, client)."""
        return self._p.writes.replace(memory_id, new_text, **options)

    def apply_decisions(self, conversation_id: str, decisions: Sequence[Planned], *, source: str | None,
                        client: str | None = None, secrets: str | None = None) -> Applied:
        """Reconciled facts (ADD / UPDATE / DELETE / NONE) as ONE commit (chat/decisions.py)."""
        from desktop_mem.engine.chat.apply_plan import apply_as_one_commit

        return apply_as_one_commit(self._p, conversation_id, decisions, secrets=secrets,
                                   trailers=provenance_trailers(source, client), extra=client_meta(client))

    def undo_update(self, memory_ids: Sequence[str], commit: str | None, *, force: bool = False
                    ) -> tuple[Memory, Memory]:
        """Undo the update that made `commit` (its two ids) in one commit; ConflictError unless
        `force` if either changed since. Returns (old, live; new, tombstone)."""
        from desktop_mem.engine.history.timeline_actions import replacement_pair, undo_update

        return undo_update(self._p, *replacement_pair(self._p, memory_ids), commit, force=force)

    def restore_version(self, memory_id: str, revision: str, *, expected_hash: str | None = None) -> Memory:
        """Put back the text a memory had at `revision` (a new commit; nothing is lost)."""
        return self._p.recorder.restore_version(memory_id, revision, expected_hash=expected_hash)

    def file_at(self, memory: Memory, revision: str) -> bytes:
        """The bytes of a memory's file at a revision, wherever it lived then."""
        return self._p.recorder.file_at(memory, revision)

    def commit_all(self, subject: str, operation: Operation, trailers: Mapping[str, str] | None = None, *,
                   dirty: Sequence[str] | None = None) -> str | None:
        """Commit everything under entries/ that differs from HEAD (changes made while closed)."""
        return self._p.commit_all(subject, operation, trailers, dirty=dirty)

    def migrate_user_scope(self) -> str | None:
        """Facts about the user learned in a chat move to the user scope (chat/scope_migration.py)."""
        return compose.migrate_user_scope(self._p)

    # ------------------------------------------------------ index and search

    def open_index(self, progress: Progress | None = None) -> SyncReport:
        """Open the embedder and indexes and bring them in step with the files (no writer lock)."""
        return self._p.search_index.open(progress)

    def close_index(self) -> None:
        """Close the search index; the next search opens it again and catches up."""
        self._p.search_index.close()

    @property
    def index(self) -> IndexSync:
        """The open index (opened and synced on first use)."""
        return self._p.search_index.index

    @property
    def retriever(self) -> Retriever:
        """The read path over the open index."""
        return self._p.search_index.retriever

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Drop the derived indexes and rebuild them from the Markdown files."""
        self.writer.require_writer()
        with self.writer.lock:
            self.refresh()
        return self._p.search_index.rebuild(progress)

    def search(self, query: str, *, conversation_id: str | None = None, top_k: int | None = None,
               filters: SearchFilters | None = None, use_mmr: bool = True,
               overrides: RetrievalOverrides | None = None, rerank: bool = False) -> list[SearchResult]:
        """The read path: best memories for `query` with their score breakdowns (`overrides`: top_k,
        recency_weight, score_threshold; `rerank`: the cross-encoder, if `retrieval.rerank`)."""
        return self._p.search_index.search(query, conversation_id=conversation_id, top_k=top_k,
                                           filters=filters, use_mmr=use_mmr, overrides=overrides,
                                           rerank=rerank)

    def match_similarity(self) -> float:
        """From which dense similarity a search result counts as close in meaning (per model)."""
        from desktop_mem.engine.index.index_factory import match_similarity

        return match_similarity(self.config)

    def index_status(self) -> str:
        """One line about the search index."""
        return self._p.index_status()

    # ---------------------------------------------------------------- chat

    @property
    def chat_service(self) -> ChatService:
        """The chat pipeline (created on first use)."""
        return self._p.chat

    @property
    def memory_llm(self) -> ChatModel:
        """The summary/memory model (imports extract facts with it)."""
        return self._p.memory_llm

    def chat(self, conversation_id: str, message: str, *, strategy: str | None = None,
             on_token: Callable[[str], None] | None = None,
             on_used: Callable[[MemoryUsed], None] | None = None, cancel: threading.Event | None = None,
             history: Sequence[Mapping[str, Any]] | None = None,
             retrieval: RetrievalOverrides | None = None, retry: bool = False,
             client_turn_id: str | None = None) -> ChatReply:
        """One chat turn; returns when the reply is complete, the write path runs afterwards.
        `retrieval`: this turn's read-path knobs; a message sent again after its reply failed
        reuses its stored user turn; `client_turn_id` makes a resend idempotent (chat/service.py)."""
        validate_conversation_id(conversation_id)
        return self._p.chat.chat(
            conversation_id, message, strategy=strategy, on_token=on_token, on_used=on_used, cancel=cancel,
            history=[dict(m) for m in history] if history is not None else None, retrieval=retrieval,
            retry=retry, client_turn_id=client_turn_id)

    def subscribe_write_progress(self, listener: Callable[[WriteProgress], None]) -> Callable[[], None]:
        """Be told (from the write-path thread) when a turn's memory update starts, moves to a step
        and ends (chat/write_progress.py); cheap on the GUI thread."""
        return self._p.write_progress.subscribe(listener)

    def cancel_write_path(self, turn_id: str | None = None) -> bool:
        """Cancel the memory update of `turn_id` (None: all): between steps, nothing half-applied."""
        return self._p.write_progress.cancel(turn_id)

    def turn_memory(self, turn_id: str) -> TurnMemory | None:
        """What memory the reply to the user turn `turn_id` used and changed, as stored with it."""
        return self.turn_memories(self.raw.get(turn_id).conversation_id).get(turn_id)

    def turn_memories(self, conversation_id: str) -> dict[str, TurnMemory]:
        """Every reply's Memory used / Memory updated in a conversation, by user turn id."""
        from desktop_mem.engine.chat import turn_memory

        return turn_memory.records(self.raw.transcript(conversation_id))

    def subscribe_outcomes(self, listener: Callable[[WriteOutcome], None]) -> Callable[[], None]:
        """Be told (from a background thread) when a turn's write path finished (cheap: the chat
        service is not created)."""
        listeners = self._p.outcome_listeners
        listeners.append(listener)
        return lambda: listeners.remove(listener) if listener in listeners else None

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until background write paths finished (tests, CLI exit)."""
        chat = self._p.chat_started
        return chat.wait_idle(timeout) if chat is not None else True

    def llm_check(self) -> str:
        """Probe the chat endpoint; raises LLMError with a message a user can act on."""
        return self._p.chat.llm.check()

    # -------------------------------------------------------- conversations

    def conversations(self) -> list[str]:
        """Conversation ids in the store (global first); fully deleted ones are left out."""
        return self._p.conversations.ids()

    def conversation_title(self, conversation_id: str) -> str:
        """The conversation's title (its id when none was set)."""
        return self._p.conversations.title(conversation_id)

    def conversation_strategy(self, conversation_id: str) -> str | None:
        """The context strategy saved for this conversation, if any."""
        return self._p.conversations.strategy(conversation_id)

    def new_conversation(self, title: str) -> str:
        """Create a conversation (a folder with its title) and return its id."""
        return self._p.conversations.new(title)

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        """Change a conversation's title (its id, and so its folder, stays)."""
        self._p.conversations.rename(conversation_id, title)

    def delete_conversation(self, conversation_id: str) -> list[Memory]:
        """Soft-delete every memory of a conversation in one commit (restorable)."""
        return self._p.conversations.delete(conversation_id)

    # ------------------------------------------------------------- history

    def history(self, limit: int = 50, offset: int = 0) -> list[CommitInfo]:
        """Commits newest first, each with its classified events."""
        return self._p.recorder.history(limit, offset)

    def diff(self, sha: str) -> str:
        """The patch of one commit."""
        return self.git.diff(sha)

    def memory_history(self, memory_id: str, limit: int = 100) -> list[CommitInfo]:
        """Commits that touched this memory's file in its two places (live and deleted/)."""
        return self._p.recorder.memory_history(memory_id, limit)

    # ----------------------------------------------------- held-back secrets

    def held_back_files(self) -> tuple[SecretHeldBack, ...]:
        """Hand-edited files held back now for a likely secret (kinds only, never the secret)."""
        return self._p.held_back_files()

    def resolve_held_back(self, path: str, choice: HeldBackChoice | str, *,
                          expected_hash: str | None = None) -> StoreChange:
        """Redact a held-back file's likely secrets or keep it as written, then commit and index
        it; refuses a path outside the store, a file not held back, or one changed since."""
        self.writer.require_writer()
        return self._p.held.resolve(path, HeldBackChoice(choice), expected_hash=expected_hash)

    def held_back_ids(self) -> frozenset[str]:
        """Ids of the held-back memories: the read path, prompts and the write path leave them out."""
        return self._p.held.ids

    def held_back_left_out(self, **filters: Any) -> int:
        """How many held-back hand edits `list_memories(**filters)` leaves out (a count, never text)."""
        return len(self.raw.list_memories(**filters)) - len(self.list_memories(**filters))

    def doctor(self) -> DoctorReport:
        """Problems, lock holder, git health and uncommitted changes."""
        from desktop_mem.engine.doctor import examine

        return examine(self._p)
