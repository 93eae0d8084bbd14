"""MemoryEngine: the engine's public face for the CLI, the servers and the UI.

    engine = MemoryEngine.open(config)            # or read_only=True; close() or `with`

Plain delegation over the parts engine/compose.py builds and wires; every policy lives in its part
(docs/architecture.md). Every mutation is one transaction: file write -> catalog -> one commit,
then index and notify in commit order. Reads are safe by default: held-back hand edits are left
out (`raw` names the files as they are). The front ends' other engine names (value types, errors
and pure helpers) are imported here by name, so a front end needs no engine module but this one,
models, config and schema; what acts on the store is a method or a sub-facade (`engine.transfer`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from typing_extensions import Unpack

from desktop_mem.engine import compose
from desktop_mem.engine.chat import review, turn_memory
from desktop_mem.engine.chat.apply_plan import apply_as_one_commit
from desktop_mem.engine.chat.chat_types import (
    ChatReply,
    MemoryUsed,
    WriteOutcome,
    learned_in,
    scope_of,
    stored_messages,
    updated_line,
)
from desktop_mem.engine.chat.decisions import Planned
from desktop_mem.engine.chat.endpoint_discovery import FoundEndpoint, discover_endpoints, nothing_found_advice
from desktop_mem.engine.chat.fact_types import kind_of
from desktop_mem.engine.chat.llm_endpoint import LLMEndpoint
from desktop_mem.engine.chat.llm_errors import LLMError
from desktop_mem.engine.chat.provenance import Provenance, provenance
from desktop_mem.engine.chat.review import Proposal
from desktop_mem.engine.chat.sent_log import SentLog
from desktop_mem.engine.chat.sent_log import summary as sent_summary
from desktop_mem.engine.chat.turn_memory import TurnMemory
from desktop_mem.engine.chat.turn_memory import records as turn_records
from desktop_mem.engine.config import Config, load_config
from desktop_mem.engine.doctor import DoctorReport, examine
from desktop_mem.engine.history import as_of, timeline_actions
from desktop_mem.engine.history.lineage import Lineage, LineageStep
from desktop_mem.engine.history.timeline import SOURCE_APP, SOURCE_OUTSIDE, commit_source
from desktop_mem.engine.history.timeline_query import (
    DiffOp,
    FieldChange,
    TimelineCursor,
    TimelinePage,
    TimelineQuery,
    event_texts,
    front_matter_changes,
    word_diff,
)
from desktop_mem.engine.index.index_sync import Progress, SyncReport
from desktop_mem.engine.index.retrieval import (
    RetrievalOverrides,
    ScoreBreakdown,
    SearchFilters,
    SearchResult,
)
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    STRATEGY_NAMES,
    CommitInfo,
    HeldBackChoice,
    ListFilters,
    Memory,
    Operation,
    Problem,
    SecretHeldBack,
    StoreChange,
    StoredMessage,
)
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.front_matter import FrontMatterError
from desktop_mem.engine.store.layout import in_deleted, is_memory_file
from desktop_mem.engine.store.memory_writes import clean_client_name, client_meta, provenance_trailers
from desktop_mem.engine.store.projects import project_name, project_of_folder, project_scope
from desktop_mem.engine.store.reads import MemoryPage
from desktop_mem.engine.store.secrets_scan import SecretDetectedError
from desktop_mem.engine.store.store_lock import describe_holder, read_holder
from desktop_mem.engine.store.validity import VALID_FROM, VALID_TO, parse_as_of
from desktop_mem.engine.store.validity import normalize as normalize_validity
from desktop_mem.engine.store.validity import span as validity_span
from desktop_mem.engine.store.validity import start as validity_start

if TYPE_CHECKING:
    from desktop_mem.engine.chat.decisions import Applied
    from desktop_mem.engine.chat.extraction import ExtractionResult
    from desktop_mem.engine.chat.reconciliation import ReconcileResult
    from desktop_mem.engine.chat.tidy import Health

    # value types front ends name in annotations only (their modules load numpy or are large)
    from desktop_mem.engine.chat.tidy import TidyReport as TidyReport
    from desktop_mem.engine.chat.write_progress import WriteProgress
    from desktop_mem.engine.history.git_history import RawCommit
    from desktop_mem.engine.transfer.git_sync import SyncResult as SyncResult
    from desktop_mem.engine.transfer.importers import ImportResult as ImportResult

Listener = Callable[[StoreChange], None]
__all__ = [
    "MemoryEngine", "clean_client_name", "import_index_modules", "provenance_trailers",
    "validate_conversation_id",
    # value types, errors and pure helpers the front ends use (each imported above by name)
    "STRATEGY_NAMES", "SOURCE_APP", "SOURCE_OUTSIDE", "VALID_FROM", "VALID_TO", "ChatReply", "DiffOp",
    "FieldChange", "FoundEndpoint", "FrontMatterError", "LLMEndpoint", "LLMError", "Lineage", "LineageStep",
    "MemoryPage", "MemoryUsed", "Planned", "Proposal", "Provenance", "RetrievalOverrides", "ScoreBreakdown",
    "SearchFilters", "SearchResult", "SecretDetectedError", "TimelineCursor", "TimelinePage", "TimelineQuery",
    "TurnMemory", "WriteOutcome", "check_endpoint", "commit_source", "describe_holder", "discover_endpoints",
    "event_texts", "front_matter_changes", "in_deleted", "is_memory_file", "kind_of", "learned_in",
    "normalize_validity", "nothing_found_advice", "parse_as_of", "project_name", "project_of_folder",
    "project_scope", "read_holder", "scope_of", "sent_summary", "turn_records", "validity_span",
    "updated_line", "validity_start", "word_diff",
]


def import_index_modules() -> None:
    """Import chromadb, onnxruntime and the index modules (seconds of imports) ahead of opening
    the index, so saves made meanwhile do not wait for them. Imports only: no state is touched."""
    import desktop_mem.engine.index.index_factory  # noqa: F401


def check_endpoint(endpoint: LLMEndpoint) -> str:
    """Ask `endpoint` for its models (Settings' Test connection): a line saying what answered;
    LLMError with a message a user can act on. Loads the LLM client (openai) on first use."""
    from desktop_mem.engine.chat.llm_client import LLMClient

    return LLMClient(endpoint).check()


class MemoryEngine:
    """One open store: read or change its memories, chat with memory, follow its history."""

    def __init__(self, config: Config | compose.Parts | None = None, *, read_only: bool = False) -> None:
        """Wrap started parts; given a Config (or nothing), open that store as `open` does."""
        if not isinstance(config, compose.Parts):
            config = compose.build(config or load_config(), read_only=read_only)
            compose.start(config)
        parts = self._p = config
        self.config, self.root, self.read_only = parts.config, parts.root, parts.read_only
        self.transfer = parts.transfer  # imports, exports, sync (transfer/transfer_facade.py)
        self.timeline = parts.timeline  # the history's pages and actions (history/timeline_facade.py)
        self._closed = False

    @property
    def _parts(self) -> compose.Parts:
        """Tests and benchmarks only: the parts behind the doors (the store, git, the writer, the
        catalog, the index ...). No front end reaches them (tests/test_architecture.py)."""
        return self._p

    @classmethod
    def open(cls, config: Config | None = None, *, read_only: bool = False) -> MemoryEngine:
        """Open the store `config` names (a writer takes its store lock; ReadOnly for readers)."""
        parts = compose.build(config or load_config(), read_only=read_only)
        compose.start(parts)
        return cls(parts)

    @classmethod
    def open_first(cls, config: Config | None = None, *, read_only: bool = False) -> MemoryEngine:
        """Open the store up to its catalog (the store lock and git), for a window that shows
        `cached_first_page()` meanwhile: every read waits until `finish_opening` (run it next,
        off the GUI thread) has loaded the catalog and committed what changed while it was closed."""
        parts = compose.build(config or load_config(), read_only=read_only)
        compose.begin(parts, catalog_later=True)
        return cls(parts)

    def finish_opening(self) -> None:
        """The rest of `open` for a store opened with `open_first` (a no-op otherwise)."""
        if not self._p.catalog.loaded:
            compose.finish(self._p)

    @property
    def catalog_loaded(self) -> bool:
        """False until `finish_opening` of a store opened with `open_first` has ended."""
        return self._p.catalog.loaded

    def cached_first_page(self) -> MemoryPage | None:
        """The memory list's first page (`list_page(0, ...)` unfiltered, newest first) as the last
        session closed it, if every file on it is unchanged since; else None (store/first_page.py)."""
        from desktop_mem.engine.store import first_page

        return first_page.load(self.root)

    def close(self) -> None:
        """Release the store lock, the indexes and git's helpers (idempotent)."""
        self._p.stop_watcher()
        if not self._closed:
            self._closed = True
            compose.close(self._p)

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start_watcher(self) -> bool:
        """Apply edits made outside the app as they happen, if `watcher.enabled` (True if running)."""
        return not self._closed and self._p.start_watcher()

    def stop_watcher(self) -> None:
        """Stop the file watcher, if one runs (idempotent)."""
        self._p.stop_watcher()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` after every change (indexed, in commit order); returns the unsubscribe."""
        return self._p.publisher.subscribe(listener)

    def subscribe_held_back(self, listener: Callable[[SecretHeldBack], None]) -> Callable[[], None]:
        """Be told (from the finding thread) of each hand edit held back for a likely secret."""
        return self._p.subscribe_held_back(listener)

    # -------------------------------------------------------------- reads

    def refresh(self, temp_files: list[str] | None = None) -> None:
        """Re-read the store (start-up, or after a burst of outside changes)."""
        self._p.refresh(temp_files)

    def apply_external_changes(self, paths: Iterable[str]) -> StoreChange | None:
        """Files changed outside the app: re-read, screen for secrets, index, one commit."""
        return self._p.outside.apply(paths)

    def get(self, memory_id: str) -> Memory:
        """By id or unique prefix (live or deleted); NotFoundError, or HeldBackError for a held-back
        hand edit (the editor asks `get_raw`)."""
        return self._p.shared.get(memory_id)

    def get_raw(self, memory_id: str) -> Memory:
        """By id or unique prefix, as its file is written: a held-back hand edit too (the editor's
        view, asked for by name; every other read leaves it out)."""
        return self._p.raw.get(memory_id)

    def lookup(self, memory_id: str) -> Memory | None:
        """Exactly this id, or None (also for a held-back one)."""
        return self._p.shared.lookup(memory_id)

    def list_memories(self, **filters: Unpack[ListFilters]) -> list[Memory]:
        """Memories matching the filters (conversation_id, role, kind, include_deleted, only_deleted,
        include_summaries, since, until), oldest first; held-back hand edits left out."""
        return self._p.shared.list_memories(**filters)

    def list_page(self, offset: int, limit: int, **options: Any) -> MemoryPage:
        """One page of list_memories (newest first, or by `key`/`descending`) and its total."""
        return self._p.shared.list_page(offset, limit, **options)

    def summary(self, conversation_id: str) -> Memory | None:
        """The conversation's rolling summary, if any; held back, with its likely secrets redacted."""
        return self._p.shared.summary(conversation_id)

    def summary_out_of_date(self, conversation_id: str) -> tuple[bool, list[str]]:
        """(whether the conversation's summary is stale, the forgotten or replaced facts it still
        states): what the prompt already leaves out of it (chat/summary_state.py)."""
        from desktop_mem.engine.chat import summary_state

        summary = self.summary(conversation_id)
        if summary is None:
            return False, []
        facts = [m for c in dict.fromkeys([conversation_id, GLOBAL_CONVERSATION])
                 for m in self.list_memories(conversation_id=c, role="memory", include_deleted=True)]
        return (summary_state.is_stale(summary, facts, conversation_id),
                summary_state.states_gone(summary, facts))

    def transcript(self, conversation_id: str) -> list[Memory]:
        """The conversation's live turns, oldest first; a held-back one in place, redacted."""
        return self._p.shared.transcript(validate_conversation_id(conversation_id))

    def messages(self, conversation_id: str) -> list[StoredMessage]:
        """The conversation's stored turns as chat messages (as the model is shown them)."""
        return stored_messages(self.transcript(conversation_id))

    def is_empty(self) -> bool:
        """True for a new store: no memory (live or deleted) and no conversation."""
        return self._p.is_empty()

    def problems(self) -> list[Problem]:
        """Files that could not be read, with their reasons."""
        return self._p.catalog.problems()

    def problem_text(self, rel: str) -> str:
        """The raw text of a store file that failed to parse (the problem editor's); nothing else."""
        return self._p.problem_files.text(rel)

    def save_problem_file(self, rel: str, text: str) -> Problem | None:
        """Save the fix of a file that failed to parse, taken in as an edit; the problem left, if any."""
        return self._p.problem_files.save(rel, text)

    def list_as_of(self, moment: datetime, **filters: Any) -> list[Memory]:
        """What was live at `moment` (validity + git history; history/as_of.py)."""
        return as_of.memories_as_of(self._p, moment, **filters)

    def search_as_of(self, query: str, moment: datetime, **options: Any) -> list[SearchResult]:
        """The read path over what was live at `moment` (history/as_of.py)."""
        return as_of.search_as_of(self._p, self.search, query, moment, **options)

    def provenance(self, memory_id: str) -> Provenance:
        """Why the app knows a memory: its source turns, first commit, where it was sent."""
        return provenance(self._p, SentLog(self.root), memory_id)

    def note_sent(self, memory_ids: Sequence[str], endpoint: str, model: str) -> None:
        """Note in the sent log that these memories went to `model` at `endpoint` (an AI tool)."""
        SentLog(self.root).record(memory_ids, endpoint, model)

    def proposals(self) -> tuple[list[Proposal], list[str]]:
        """Review mode: changes the model proposed that wait for the user, and unreadable files."""
        return review.pending(self.root)

    def accept_proposal(self, proposal_id: str, text: str | None = None) -> tuple[Proposal, str | None]:
        """Apply a proposal (with `text` instead of the model's, if given): one commit."""
        return review.accept(self._p, proposal_id, text)

    def reject_proposal(self, proposal_id: str) -> tuple[Proposal, str | None]:
        """Drop a proposal (one commit); memory stays as it is."""
        return review.reject(self._p, proposal_id)

    def tidy_up(self, *, progress: Callable[[str, int, int], None] | None = None,
                cancelled: Callable[[], bool] = lambda: False) -> TidyReport:
        """Look at the whole memory and propose a clean-up (duplicates, junk, stale facts, gaps)
        as review proposals in one commit; nothing else changes until the user accepts."""
        from desktop_mem.engine.chat import tidy

        self._p.writer.require_writer()
        return tidy.propose(self._p.tidy_view(), self._p.memory_llm, progress=progress, cancelled=cancelled)

    def memory_health(self) -> Health:
        """Likely duplicates, junk and stale facts (no model), and when tidy-up last ran."""
        from desktop_mem.engine.chat import tidy

        return tidy.health(self._p.tidy_view())

    # ------------------------------------------------------------- writes

    def add(self, text: str, **options: Any) -> Memory:
        """A new memory file, committed (options: store/memory_writes.py's MemoryWrites.add)."""
        return self._p.writes.add(text, **options)

    def add_many(self, texts: Sequence[str], **options: Any) -> list[Memory]:
        """Several facts as one commit or nothing; the error names the item, nothing is saved."""
        return self._p.writes.add_many(texts, **options)

    def edit(self, memory_id: str, **options: Any) -> Memory:
        """New text and/or front matter (text, meta, expected_hash, secrets, source, client)."""
        return self._p.writes.edit(memory_id, **options)

    def delete(self, memory_id: str, *, operation: Operation = Operation.DELETE, source: str | None = None,
               client: str | None = None, expected_hash: str | None = None) -> Memory:
        """Soft-delete: move under deleted/, stamp deleted_at, commit. A change made outside the
        app since is committed first; with `expected_hash`, ConflictError if the file differs."""
        return self._p.writes.delete(memory_id, operation=operation, source=source, client=client,
                                     expected_hash=expected_hash)

    def delete_many(self, memory_ids: Sequence[str], *, source: str | None = None,
                    client: str | None = None) -> list[Memory]:
        """Soft-delete several memories as one commit."""
        return self._p.writes.delete_many(memory_ids, source=source, client=client)

    def retag_many(self, changes: Mapping[str, Mapping[str, Any]], *, source: str | None = None,
                   client: str | None = None) -> list[Memory]:
        """New front-matter values (not texts) for several memories, as one commit."""
        return self._p.writes.retag_many(changes, source=source, client=client)

    def restore(self, memory_id: str, *, source: str | None = None, client: str | None = None,
                expected_hash: str | None = None) -> Memory:
        """Move a soft-deleted memory back and commit (`expected_hash`: as for delete)."""
        return self._p.writes.restore(memory_id, source=source, client=client, expected_hash=expected_hash)

    def replace(self, memory_id: str, new_text: str, **options: Any) -> tuple[Memory, Memory]:
        """UPDATE: tombstone with replaced_by + the new memory, one commit (source, secrets, client,
        expected_hash)."""
        return self._p.writes.replace(memory_id, new_text, **options)

    def apply_decisions(self, conversation_id: str, decisions: Sequence[Planned], *, source: str | None,
                        client: str | None = None, secrets: str | None = None) -> Applied:
        """Reconciled facts (ADD / UPDATE / DELETE / NONE) as ONE commit (chat/apply_plan.py)."""
        return apply_as_one_commit(self._p, conversation_id, decisions, secrets=secrets,
                                   trailers=provenance_trailers(source, client), extra=client_meta(client))

    def undo_update(self, memory_ids: Sequence[str], commit: str | None, *, force: bool = False
                    ) -> tuple[Memory, Memory]:
        """Undo the update that made `commit` (its two ids) in one commit; ConflictError unless
        `force` if either changed since. Returns (old, live; new, tombstone)."""
        pair = timeline_actions.replacement_pair(self._p, memory_ids)
        return timeline_actions.undo_update(self._p, *pair, commit, force=force)

    def restore_version(self, memory_id: str, revision: str, *, expected_hash: str | None = None) -> Memory:
        """Put back the text a memory had at `revision` (a new commit; nothing is lost)."""
        return self._p.recorder.restore_version(memory_id, revision, expected_hash=expected_hash)

    def file_at(self, memory: Memory, revision: str) -> bytes:
        """The bytes of a memory's file at a revision, wherever it lived then."""
        return self._p.recorder.file_at(memory, revision)

    def version_at(self, memory: Memory, revision: str) -> Memory:
        """A memory as its file was at a revision (ValueError or EngineError if it had none)."""
        return self._p.store.memory_from_bytes(memory.path, self.file_at(memory, revision))

    def newest_commit(self) -> RawCommit | None:
        """The newest commit without its files (cheap whatever it touched), or None."""
        return self._p.git.newest() if self._p.git.exists() else None

    def create_demo(self) -> None:
        """Fill an empty store with a small demo: conversations, facts, a replacement, a soft
        delete and a summary with two versions, each a real commit (engine/demo.py)."""
        from desktop_mem.engine.demo import create_demo_store

        create_demo_store(self._p.writes, self._p.conversations, self._p.writer)

    def commit_all(self, subject: str, operation: Operation, trailers: Mapping[str, str] | None = None, *,
                   dirty: Sequence[str] | None = None) -> str | None:
        """Commit everything under entries/ that differs from HEAD (changes made while closed)."""
        return self._p.recorder.commit_all(subject, operation, trailers, dirty=dirty)

    def migrate_user_scope(self) -> str | None:
        """Facts about the user learned in a chat move to the user scope (chat/scope_migration.py)."""
        return compose.migrate_user_scope(self._p)

    # ------------------------------------------------------ index and search

    def open_index(self, progress: Progress | None = None) -> SyncReport:
        """Open the embedder and indexes and bring them in step with the files (no writer lock)."""
        return self._p.search_index.open(progress)

    def hold_chat_scope(self) -> None:
        """After open_index, for a window or server that chats: read the global facts' vectors
        into memory now, so the first chat turn's search does not wait for them."""
        self._p.search_index.hold_chat_scope()

    def prepare_chat_turn(self) -> bool:
        """While the user writes a message: load what the turn's search runs (the query
        embedder, the cross-encoder) if the index is open. False if it is not (nothing loads)."""
        return self._p.search_index.prepare_read_path()

    def close_index(self) -> None:
        """Close the search index; the next search opens it again and catches up."""
        self._p.search_index.close()

    def index_in_background(self, progress: Progress | None = None, expected: int = 0,
                            workers: int = 1) -> AbstractContextManager[list[int]]:
        """Within the block, writes are embedded by worker threads while the next ones are written
        (a bulk import); yields [indexed, expected], final when the block ends (index_sync.py)."""
        return self._p.search_index.index.background(progress, expected, workers)

    def reindex(self, progress: Progress | None = None) -> SyncReport:
        """Drop the derived indexes and rebuild them from the Markdown files."""
        return self._p.reindex(progress)

    def search(self, query: str, *, conversation_id: str | None = None, top_k: int | None = None,
               filters: SearchFilters | None = None, use_mmr: bool = True,
               overrides: RetrievalOverrides | None = None, rerank: bool = False) -> list[SearchResult]:
        """The read path: best memories for `query` with their score breakdowns (`overrides`: top_k,
        recency_weight, score_threshold; `rerank`: the cross-encoder, if `retrieval.rerank`)."""
        return self._p.search_index.search(query, conversation_id=conversation_id, top_k=top_k,
                                           filters=filters, use_mmr=use_mmr, overrides=overrides,
                                           rerank=rerank)

    def match_similarity(self, facts: bool = False) -> float:
        """From which dense similarity a search result (a fact, with `facts`) counts as close in
        meaning (per model)."""
        from desktop_mem.engine.index.index_factory import match_similarity  # chromadb, onnxruntime

        return match_similarity(self.config, facts)

    def index_status(self) -> str:
        """One line about the search index."""
        return self._p.search_index.status()

    # ---------------------------------------------------------------- chat

    def open_llm_requests(self) -> int:
        """Chat requests this app has open at its model servers now (the chat's and the memory's)."""
        from desktop_mem.engine.chat.llm_client import open_requests

        chat = self.config["llm.base_url"]
        urls = {chat.rstrip("/"), (self.config["llm.summary_base_url"] or chat).rstrip("/")}
        return sum(open_requests(u) for u in urls)

    def chat(self, conversation_id: str, message: str, *, strategy: str | None = None,
             on_token: Callable[[str], None] | None = None,
             on_used: Callable[[MemoryUsed], None] | None = None, cancel: threading.Event | None = None,
             history: Sequence[Mapping[str, Any]] | None = None,
             retrieval: RetrievalOverrides | None = None, retry: bool = False,
             client_turn_id: str | None = None, temporary: bool = False) -> ChatReply:
        """One chat turn; returns when the reply is complete, the write path runs afterwards
        (chat/service.py: `retrieval`, resending, `client_turn_id`). `temporary`: the turn reads
        memory and writes nothing (no turn, fact, summary, commit or index change)."""
        return self._p.chat.chat(conversation_id, message, strategy=strategy, on_token=on_token,
                                 on_used=on_used, cancel=cancel, history=history, retrieval=retrieval,
                                 retry=retry, client_turn_id=client_turn_id, temporary=temporary)

    def subscribe_write_progress(self, listener: Callable[[WriteProgress], None]) -> Callable[[], None]:
        """Be told (from the write-path thread) of each memory update's steps (chat/write_progress.py)."""
        return self._p.write_progress.subscribe(listener)

    def cancel_write_path(self, turn_id: str | None = None) -> bool:
        """Cancel the memory update of `turn_id` (None: all): between steps, nothing half-applied."""
        return self._p.write_progress.cancel(turn_id)

    def turn_memory(self, turn_id: str) -> TurnMemory | None:
        """What memory the reply to the user turn `turn_id` used and changed, as stored with it."""
        return turn_memory.record_for(self._p.raw, turn_id)

    def turn_memories(self, conversation_id: str) -> dict[str, TurnMemory]:
        """Every reply's Memory used / Memory updated in a conversation, by user turn id."""
        return turn_memory.records(self._p.raw.transcript(conversation_id))

    def subscribe_outcomes(self, listener: Callable[[WriteOutcome], None]) -> Callable[[], None]:
        """Be told (from a background thread) when a turn's write path finished."""
        return self._p.subscribe_outcomes(listener)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until background write paths finished (tests, CLI exit)."""
        return self._p.wait_idle(timeout)

    def llm_check(self) -> str:
        """Probe the chat endpoint; raises LLMError with a message a user can act on."""
        return self._p.chat.llm.check()

    def llm_models(self) -> list[str]:
        """The models the chat endpoint offers; raises LLMError as llm_check does."""
        return self._p.chat.llm.list_models()

    def count_tokens(self, text: str) -> int:
        """`text`'s tokens as the context strategies count them (context.tokenizer_path)."""
        return self._p.chat.counter.count(text)

    def extract_facts(self, message: str) -> ExtractionResult:
        """The facts a user's message states, each with whose it is (the user's or the task's),
        read by the memory model (the pattern rules without one); nothing is written."""
        from desktop_mem.engine.chat.extraction import extract_facts

        return extract_facts(self._p.chat.memory_llm, message)

    def reconcile(self, new_facts: Sequence[str], existing: Sequence[tuple[str, str]]) -> ReconcileResult:
        """ADD / UPDATE / DELETE / NONE for `new_facts` against `existing` (id, text), decided by
        the memory model (a fallback adds them all); nothing is written (apply_decisions does)."""
        from desktop_mem.engine.chat.reconciliation import reconcile

        return reconcile(self._p.chat.memory_llm, new_facts, existing)

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

    def set_conversation_project(self, conversation_id: str, project: str | None) -> None:
        """Bind a conversation to a project scope (`project_scope(name)`), or unbind it (None);
        one commit. A bound conversation reads the project's memories."""
        self._p.conversations.bind_project(conversation_id, project)

    def conversation_project(self, conversation_id: str) -> str | None:
        """The project scope a conversation is bound to, if any."""
        return self._p.conversations.project(conversation_id)

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
        return self._p.git.diff(sha)

    @staticmethod
    def read_history(config: Config, limit: int = 50, offset: int = 0) -> list[CommitInfo]:
        """`history` of the store `config` names, read from git without opening the store."""
        from desktop_mem.engine.history.recorder import commits

        result: list[CommitInfo] = compose.read_git(config, lambda git: commits(git, limit, offset))
        return result

    @staticmethod
    def read_diff(config: Config, sha: str) -> str:
        """`diff` of one commit of the store `config` names, read from git without opening it."""
        result: str = compose.read_git(config, lambda git: git.diff(sha))
        return result

    def memory_history(self, memory_id: str, limit: int = 100) -> list[CommitInfo]:
        """Commits that touched this memory's file in its two places (live and deleted/)."""
        return self._p.recorder.memory_history(memory_id, limit)

    # ----------------------------------------------------- held-back secrets

    def held_back_files(self) -> tuple[SecretHeldBack, ...]:
        """Hand-edited files held back now for a likely secret (kinds only, never the secret)."""
        return self._p.held.files

    def resolve_held_back(self, path: str, choice: HeldBackChoice | str, *,
                          expected_hash: str | None = None) -> StoreChange:
        """Redact a held-back file's likely secrets or keep it as written, then commit and index
        it; refuses a path outside the store, a file not held back, or one changed since."""
        self._p.writer.require_writer()
        return self._p.held.resolve(path, HeldBackChoice(choice), expected_hash=expected_hash)

    def held_back_ids(self) -> frozenset[str]:
        """Ids of the held-back memories: the read path, prompts and the write path leave them out."""
        return self._p.held.ids

    def held_back_left_out(self, **filters: Any) -> int:
        """How many held-back hand edits `list_memories(**filters)` leaves out (a count, never text)."""
        return self._p.held_back_left_out(**filters)

    # ------------------------------------------------ the store lock, for a parked writer

    def acquire_lock(self) -> None:
        """Take the store lock back after release_lock (StoreLockedError if another has it)."""
        self._p.lock.acquire()

    def release_lock(self) -> None:
        """Let another process write while this engine is parked (save_derived first)."""
        self._p.lock.release()

    def save_derived(self) -> None:
        """Write the index manifest now, as close does (a writer about to park)."""
        self._p.manifest.flush()

    def head(self) -> str | None:
        """The store's newest commit, if any."""
        return self._p.git.head()

    def dirty_paths(self) -> list[str]:
        """Files that differ from the newest commit (edited since, by anyone)."""
        return self._p.git.dirty_paths()

    def publish_endpoint(self, endpoint: str, **note: str) -> None:
        """Name this process's loopback endpoint in the store lock's note (forwarders find it)."""
        self._p.lock.publish(endpoint=endpoint, **note)

    def withdraw_endpoint(self) -> None:
        """Take the endpoint (and its key note) out of the store lock's note."""
        self._p.lock.withdraw("endpoint", "endpoint_key")

    def versioning_problem(self) -> str | None:
        """Why git could not commit the last change (the files are saved, not versioned), until a
        commit succeeds again; None while versioning works (or is off)."""
        return self._p.recorder.failure

    def doctor(self) -> DoctorReport:
        """Problems, lock holder, git health and uncommitted changes (and, in the process that
        writes, why the last commit failed)."""
        report = examine(self._p)
        failure = self._p.recorder.failure
        return report if failure is None else dataclasses.replace(report, git=f"cannot commit: {failure}")
