"""A chat turn as a pipeline, each step a function of the one before (chat/turn_steps.py holds
what they hand on): accept (the user turn stored) -> prepare (read path, context) -> stream ->
record (the reply stored) -> the write path in the background (the reply never waits for it).
Used by the window, `desktop-mem chat` and `serve`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from desktop_mem.engine.chat import prompts, turn_memory
from desktop_mem.engine.chat.chat_types import ChatReply, MemoryUsed, TurnRecord, WriteOutcome
from desktop_mem.engine.chat.context import (
    FORGET_NOTE,
    INCOMPLETE,
    NOTHING_TO_FORGET_NOTE,
    ContextResult,
    SessionState,
    StrategySettings,
    context_from,
    open_memory,
    resolve_strategy,
    unclear_forget_note,
)
from desktop_mem.engine.chat.ingest import run_write_path
from desktop_mem.engine.chat.llm_client import LLMClient
from desktop_mem.engine.chat.llm_endpoint import LLMEndpoint
from desktop_mem.engine.chat.llm_errors import LLMError
from desktop_mem.engine.chat.named_facts import forget_named
from desktop_mem.engine.chat.ports import ChatPorts
from desktop_mem.engine.chat.recall import cross_session, recall
from desktop_mem.engine.chat.sent_log import SentLog, endpoint_label
from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.chat.summary_update import update_summary
from desktop_mem.engine.chat.token_count import TokenCounter, make_counter
from desktop_mem.engine.chat.turn_steps import (
    CLIENT_TURN_ID,
    Accepted,
    Prepared,
    Streamed,
    TurnAsk,
    past_messages,
    read_conversation,
    redacted_note,
    resent_turn,
)
from desktop_mem.engine.chat.understanding import Understood, in_english, understand_turn
from desktop_mem.engine.chat.write_progress import CANCELLED, FAILED, FINISHED, WriteProgressHub
from desktop_mem.engine.index.retrieval import RetrievalOverrides, said_on
from desktop_mem.engine.models import (
    TURN_ROLES,
    ChatMessage,
    Memory,
    Operation,
    Role,
    StrategyName,
    utc_now,
)
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.projects import project_name

if TYPE_CHECKING:
    from desktop_mem.engine.config import Config

log = logging.getLogger(__name__)
TokenCallback = Callable[[str], None]
UsedCallback = Callable[[MemoryUsed], None]
OutcomeListener = Callable[[WriteOutcome], None]
UNDERSTAND_TIMEOUT_S = 45.0  # most the reply waits for the memory model to read the message


def endpoints(config: Config) -> tuple[LLMEndpoint, LLMEndpoint]:
    """The chat endpoint and the summary/memory endpoint (defaults to the chat one)."""
    key = config["llm.api_key"]
    timeout = config["llm.timeout"]
    main = LLMEndpoint(config["llm.base_url"], key, config["llm.model"], timeout)
    summary = LLMEndpoint(
        config["llm.summary_base_url"] or config["llm.base_url"], key,
        config["llm.summary_model"] or config["llm.model"], timeout,
    )
    return main, summary


class ChatService:
    """Runs turns for one engine; write paths run one at a time on a background thread.

    What a turn tells the model, besides memory, is held here for whoever drives the turns:
    `today` (when the turn is asked: the model is told the day, and validity is read at that
    time; a benchmark replaying old conversations asks "the day after the last session") and
    `data_preamble` (the answer instruction before the data block, prompts.DATA_PREAMBLES).
    """

    def __init__(self, ports: ChatPorts, listeners: list[OutcomeListener] | None = None,
                 progress: WriteProgressHub | None = None) -> None:
        self.ports = ports
        self.progress = progress or WriteProgressHub()  # "Updating memory…" events and Cancel
        main, summary = endpoints(ports.config)
        self.llm = LLMClient(main)
        self.memory_llm = LLMClient(summary)
        # The reply waits for the understanding step: it gives up sooner (the pattern rules
        # answer, and the write path reads the message again with the full timeout).
        self.understand_llm = LLMClient(replace(summary, timeout=min(summary.timeout, UNDERSTAND_TIMEOUT_S)))
        self.sent_log = SentLog(ports.config.store_path.expanduser().resolve())  # where memories went
        self.counter: TokenCounter = make_counter(_opt_path(ports.config["context.tokenizer_path"]))
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="write-path")
        self._pending: set[Future[WriteOutcome]] = set()
        self._pending_lock = threading.Lock()
        # Shared with the engine, so the UI can subscribe before the first chat creates this
        # service (creating it imports openai: about a second, never on the GUI thread).
        self._listeners: list[OutcomeListener] = listeners if listeners is not None else []
        self.today: Callable[[], datetime] = utc_now
        self.data_preamble: str = prompts.MEMORY_DATA_PREAMBLE

    # ------------------------------------------------------------------ API

    def chat(
        self,
        conversation_id: str,
        message: str,
        *,
        strategy: str | None = None,
        on_token: TokenCallback | None = None,
        on_used: UsedCallback | None = None,
        cancel: threading.Event | None = None,
        history: Sequence[Mapping[str, Any]] | None = None,
        retrieval: RetrievalOverrides | None = None,
        retry: bool = False,
        client_turn_id: str | None = None,
        temporary: bool = False,
    ) -> ChatReply:
        """One turn. `history` replaces the stored transcript (e.g. an API client's messages).

        `temporary`: the turn reads memory as any turn does and writes nothing: no turn files,
        no facts, no summary, no commit, no index change (only the sent log notes which memories
        went to the model, as for every turn). Its reply has no `turn_id`.

        One message, one turn, whatever path the user takes: a message sent again after its reply
        failed (Retry, Send after Settings, after a restart) reuses its stored turn while it is
        the conversation's last user turn followed by nothing but failed replies, and those are
        left out of what the model sees (`retry` is kept for callers; it is the default now).
        `client_turn_id`: the sender's own id for this message; sent again, the same message is
        never stored twice, and once it has a complete reply that reply is returned as it is.

        The turn is a pipeline, each step a function of the one before: accept (the user turn
        stored) -> prepare (read path, context) -> stream -> record (the reply stored) -> the
        write path in the background.
        """
        ask = self._ask(conversation_id, message, strategy, history, retrieval, temporary)
        if temporary:  # a summary the strategy makes is sent, never saved
            prepared = self._prepare(ask, self.ports.snapshot())
            streamed = self._stream(prepared, on_token, on_used, cancel)
            return streamed.reply(prepared, None, temporary=True)
        accepted = self._accept(ask, client_turn_id)
        if accepted.answered is not None:  # this very message was answered already
            prepared = self._prepare(ask, accepted.snapshot, accepted.skipped | {accepted.answered.id})
            return ChatReply(conversation_id, accepted.answered.text, prepared.used, turn_id=accepted.user.id)
        prepared = self._prepare(ask, accepted.snapshot, accepted.skipped, understand=True)
        streamed = self._stream(prepared, on_token, on_used, cancel)
        self._schedule(self._record(accepted, prepared, streamed))
        return streamed.reply(prepared, accepted.user.id)

    def prepare(
        self,
        conversation_id: str,
        message: str,
        *,
        strategy: str | None = None,
        history: Sequence[ChatMessage] | None = None,
        exclude: Collection[str] = (),
        retrieval: RetrievalOverrides | None = None,
        snapshot: ConversationSnapshot | None = None,
        understand: bool = False,
    ) -> tuple[MemoryUsed, ContextResult]:
        """The read path and the context for `message` (without calling the chat model); the
        stored turns `exclude` (ids: this message's own turn) are neither recalled nor replayed.
        `snapshot`: the turn's one read of the store (taken here when not given). `understand`:
        read what the message asks of memory (the memory model's one call per turn)."""
        ask = TurnAsk(conversation_id, message, self._strategy(conversation_id, strategy),
                      tuple(history) if history is not None else None, retrieval)
        prepared = self._prepare(ask, snapshot if snapshot is not None else self.ports.snapshot(),
                                 frozenset(exclude), understand=understand)
        return prepared.used, prepared.context

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for pending write paths; True when all finished in time."""
        with self._pending_lock:
            pending = list(self._pending)
        for future in pending:
            try:
                future.result(timeout=timeout)
            except TimeoutError:
                return False
            except Exception:  # reported through the outcome listeners/logs already
                pass
        return True

    def close(self) -> None:
        """Finish queued write paths, then stop the background thread."""
        self._background.shutdown(wait=True)

    # --------------------------------------------------- the turn's steps

    def _ask(
        self, conversation_id: str, message: str, strategy: str | None,
        history: Sequence[Mapping[str, Any]] | None, retrieval: RetrievalOverrides | None, temporary: bool,
    ) -> TurnAsk:
        """What is asked, checked before anything is written; the strategy is read here, once."""
        validate_conversation_id(conversation_id)
        # an API client's messages (OpenAI-shaped; REST passes role and text), copied
        given = tuple(cast(ChatMessage, dict(m)) for m in history) if history is not None else None
        if not temporary:
            self.ports.writer.require_writer()
        if not message.strip():
            raise ValueError("the message is empty")
        return TurnAsk(conversation_id, message, self._strategy(conversation_id, strategy), given, retrieval)

    def _strategy(self, conversation_id: str, requested: str | None) -> StrategyName:
        """The request's strategy, else the conversation's, else the setting (a bad one refused)."""
        saved = self.ports.conversation_strategy(conversation_id)
        return resolve_strategy(requested, saved, self.ports.config["context.strategy"])

    def _accept(self, ask: TurnAsk, client_turn_id: str | None) -> Accepted:
        """Step 1: the message's user turn in the store, unpublished (the write path commits it
        with its turn), or its turn found again when it was sent before. The message is redacted
        here, once: what is stored is what a resend is compared with. Likely secrets are redacted
        unless `security.secrets` is "keep": nobody is there to ask."""
        conv = ask.conversation_id
        writer = self.ports.writer
        text, found = writer.redact(ask.message)
        snapshot = self.ports.snapshot()  # the one read of the store for this reply
        failed, answered = resent_turn(snapshot.transcript(conv), text, client_turn_id)
        if failed:
            return Accepted(snapshot, failed[0], frozenset(m.id for m in failed), answered)
        with writer.transaction(Operation.TURN, conversation=conv, publish=False) as tx:
            user = tx.add(text, conversation_id=conv, role="user", source="manual",
                          extra={CLIENT_TURN_ID: client_turn_id} if client_turn_id else None)
        return Accepted(snapshot.including(user), user, frozenset({user.id}),
                        notes=(redacted_note(found, "user"),) if found else ())

    def _prepare(
        self, ask: TurnAsk, snap: ConversationSnapshot, exclude: frozenset[str] = frozenset(),
        *, understand: bool = False,
    ) -> Prepared:
        """Step 2: the read path and the context, from the turn's snapshot (`exclude`: the
        message's own stored turns, neither recalled nor replayed)."""
        cfg = self.ports.config
        conv, message = ask.conversation_id, ask.message
        now = self.today()
        read = read_conversation(snap, conv, exclude, self.ports.conversation_project(conv))
        recalled = recall(self.ports, ask, snap, read, exclude, now)
        cross = cross_session(snap, conv, read) if cfg["context.cross_session"] else []
        # The in-session strategy is a 004 memory: the conversation so far, then this message.
        summary = read.summary
        memory = open_memory(
            past_messages(ask, read, recalled.session_notes),
            strategy=ask.strategy,
            settings=strategy_settings(cfg),
            state=SessionState(summary.text if summary else None,
                               (summary.summarized_count or 0) if summary and ask.history is None else 0),
            counter=self.counter,
            summarizer=self._summarize_messages,
        )
        memory.store({"role": "user", "content": message})
        # What the message asks of memory is read once, here (one model call, the one that
        # extracted facts before): the reply is told what a forget does, and the write path
        # applies what was read (TurnRecord.understood), without reading it again.
        understood = self._understand(conv, message, read.prompt_turns, read.masked, read.live) if (
            understand and cfg["memory.extract_facts"]) else None
        forget, unclear = self._forget_targets(conv, message, understood, read.live, read.own)
        note = None
        if understood is not None and understood.asks_forget:
            note = (FORGET_NOTE if forget else unclear_forget_note([m.text for m in unclear]) if unclear
                    else NOTHING_TO_FORGET_NOTE)
        context = context_from(memory, counter=self.counter, base_prompt=cfg["llm.system_prompt"],
                               injected_memories=recalled.lines,
                               cross_session=cross, data_preamble=self._preamble(understood),
                               forget_note=note,
                               today=_today(now))
        shown, in_transcript = recalled.picked(context.sent_ids)
        used = MemoryUsed(
            conversation_id=conv, summary=summary, memories=shown,
            cross_session=tuple(cross), strategy=context.strategy, tokens_before=context.tokens_before,
            tokens_after=context.tokens_after, system_prompt=str(context.messages[0]["content"]),
            in_transcript=in_transcript, summary_stale=read.summary_stale, masked=len(read.masked),
            forget=tuple(m.id for m in forget), understood=understood, unclear=tuple(m.id for m in unclear),
        )
        return Prepared(used, context, memory)

    def _preamble(self, understood: Understood | None) -> str:
        """The notes' instruction: "answer only from the notes, else say you don't know" is for a
        message that asks; one the model read as telling memory something (facts, a forget) gets
        the notes without it, or a small model answers the news with "I don't know."."""
        if understood is not None and (understood.facts or understood.asks_forget):
            return prompts.DATA_PREAMBLE_TOLD
        if understood is not None and understood.language and not in_english(understood, ""):
            # a question the model read as not English: only-notes' quoted English "I don't
            # know." drew the 1.5B model to answer "Welk huisdier heb ik?" with it, the fact
            # beside it; "say in the user's language that you do not know" answers "Snuf"
            return prompts.DATA_PREAMBLE_ONLY_NOTES_LANG
        return self.data_preamble

    def _stream(
        self, prepared: Prepared, on_token: TokenCallback | None, on_used: UsedCallback | None,
        cancel: threading.Event | None,
    ) -> Streamed:
        """Step 3: what memory the reply uses is told and logged, then the reply streams."""
        used = prepared.used
        if on_used is not None:
            on_used(used)
        self.sent_log.record([r.memory.id for r in used.memories], endpoint_label(self.llm.endpoint.base_url),
                             self.llm.endpoint.model)
        parts: list[str] = []
        try:
            stream = self.llm.stream(prepared.context.messages)
            for delta in stream:
                if cancel is not None and cancel.is_set():
                    close = getattr(stream, "close", None)
                    if close is not None:
                        close()
                    return Streamed(used.conversation_id, "".join(parts), cancelled=True)
                parts.append(delta)
                if on_token is not None:
                    on_token(delta)
        except LLMError as exc:
            return Streamed(used.conversation_id, "".join(parts), exc.message, exc.kind)
        return Streamed(used.conversation_id, "".join(parts))

    def _record(self, accepted: Accepted, prepared: Prepared, streamed: Streamed) -> TurnRecord:
        """Step 4: the reply and the summarizing strategy's new summary in one transaction,
        unpublished like the user turn; returns what the write path is handed."""
        conv, used, context = streamed.conversation_id, prepared.used, prepared.context
        model = self.llm.endpoint.model
        # the turn's in-session memory holds this message (stored on disk before the reply
        # streamed); the reply joins it, and what this run appended is what the turn records
        prepared.memory.store({"role": "assistant", "content": streamed.text})
        said = str(prepared.memory.appended()[-1]["content"] or "")
        reply, cut = _fit(said, self.ports.config["store.max_file_bytes"])
        has_reply = bool(said.strip())
        new_summary = context.summary if context.summary_changed and context.summary else None
        notes = list(accepted.notes)
        assistant = summary = None
        if has_reply or new_summary:
            with self.ports.writer.transaction(Operation.TURN, conversation=conv, publish=False) as tx:
                if has_reply:
                    # the memory this reply used, kept with it (chat/turn_memory.py)
                    ended = streamed.error or streamed.cancelled
                    extra: dict[str, Any] = {"interrupted": True} if ended else {}
                    extra[turn_memory.USED_KEY] = turn_memory.used_front_matter(used, model)
                    if cut:
                        extra["truncated"] = True
                    text, found = tx.redact(reply)
                    assistant = tx.add(text, conversation_id=conv, role="assistant", source="llm",
                                       extra=extra)
                    if found:
                        notes.append(redacted_note(found, "assistant"))
                if new_summary:
                    summary = tx.write_summary(conv, tx.redact(new_summary)[0], context.summarized_count)
        if assistant is not None and cut:
            notes.append(f"The reply was {len(streamed.text.encode('utf-8')):,} bytes; only the first "
                         f"{len(reply.encode('utf-8')):,} were stored (store.max_file_bytes).")
        return TurnRecord(conv, accepted.user, assistant, tuple(notes), (summary,) if summary else (),
                          used=None if assistant is not None else turn_memory.used_front_matter(used, model),
                          forget=used.forget, understood=used.understood, unclear=used.unclear)

    # ------------------------------------------------------------- internals

    def _understand(
        self, conv: str, message: str, turns: Sequence[Memory], masked: Mapping[str, str],
        live: Sequence[Memory],
    ) -> Understood:
        """What `message` asks of memory, read with the turns before it (as the model is sent
        them: what was forgotten masked), what memory holds about the names it mentions and the
        project the conversation is in."""
        llm = self.understand_llm if self.ports.config["llm.base_url"] else None
        recent = [(str(m.role), masked.get(m.id, m.text)) for m in turns if m.role in TURN_ROLES]
        project = project_name(self.ports.conversation_project(conv))
        return understand_turn(llm, message, recent, live, project, first_reading=True)

    def _forget_targets(
        self, conv: str, message: str, understood: Understood | None, live: Sequence[Memory],
        own: Sequence[Memory],
    ) -> tuple[list[Memory], list[Memory]]:
        """(the facts a forget names, those it might mean when none is clear): by search, and
        the model's choice when the words find nothing (another language than the facts')."""
        if understood is None or understood.forget is None:
            return [], []
        previous_user = next((m.id for m in reversed(own) if m.role == Role.USER), None)
        llm = self.understand_llm if self.ports.config["llm.base_url"] else None
        named = forget_named(self.ports.search, conv, live, understood, message, previous_user, llm)
        return list(named.clear), list(named.maybe)

    def _summarize_messages(self, previous: str | None, messages: list[ChatMessage]) -> str | None:
        material = [f"{m.get('role')}: {m.get('content')}" for m in messages
                    if m.get("content") and not m.get(INCOMPLETE)]
        return update_summary(self.memory_llm, previous, material).text

    def _schedule(self, turn: TurnRecord) -> None:
        llm = None if not self.ports.config["llm.base_url"] else self.memory_llm
        tracker = self.progress.tracker(turn.conversation_id, turn.user.id)

        def write_path() -> WriteOutcome:
            tracker.started()
            try:
                outcome = run_write_path(self.ports, turn, llm, tracker)
            except Exception:
                tracker.ended(FAILED)
                raise
            tracker.ended(CANCELLED if tracker.stopped else FINISHED)
            return outcome

        future = self._background.submit(write_path)
        with self._pending_lock:
            self._pending.add(future)
        future.add_done_callback(self._finished)

    def _finished(self, future: Future[WriteOutcome]) -> None:
        with self._pending_lock:
            self._pending.discard(future)
        try:
            outcome = future.result()
        except Exception:
            log.exception("the write path failed; the turns are on disk and will be committed later")
            return
        for listener in list(self._listeners):
            try:
                listener(outcome)
            except Exception:
                log.exception("outcome listener failed")


def strategy_settings(cfg: Config) -> StrategySettings:
    """In-session strategy knobs from the settings (each field named like a `context.*` or
    `memory.*` setting; `context.trigger`'s choices are the field's Literal)."""
    return cfg.section(StrategySettings, "context", "memory")


def _fit(text: str, max_file_bytes: int) -> tuple[str, bool]:
    """The reply cut to fit one memory file (an enormous answer must not lose the turn)."""
    room = max(max_file_bytes - 8192, 1024)  # front matter and the interrupted/truncated marks
    raw = text.encode("utf-8")
    if len(raw) <= room:
        return text, False
    return raw[:room].decode("utf-8", "ignore"), True


def _today(now: datetime) -> str:
    """Today as the model is told it, in local time: `Saturday 28 November 2026`."""
    local = now.astimezone()
    return f"{local:%A} {said_on(local)}"


def _opt_path(value: str) -> Any:
    from pathlib import Path

    return Path(value).expanduser() if value else None
