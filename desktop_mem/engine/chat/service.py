"""A chat turn: read path -> context -> streamed reply -> turns persisted -> write path in the
background (the reply never waits for it). Used by the window, `desktop-mem chat` and `serve`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from desktop_mem.engine.chat import forgetting, prompts, summary_state, temporal, turn_memory
from desktop_mem.engine.chat.chat_types import ChatReply, MemoryUsed, TurnRecord, WriteOutcome
from desktop_mem.engine.chat.context import (
    FORGET_NOTE,
    INCOMPLETE,
    MESSAGE_ID,
    NOTHING_TO_FORGET_NOTE,
    ContextResult,
    SessionState,
    StrategySettings,
    context_from,
    open_memory,
    resolve_strategy,
    unclear_forget_note,
)
from desktop_mem.engine.chat.currency import (
    CurrentView,
    Superseded,
    prefer_current,
    stale_notes,
    superseded_by_turn,
)
from desktop_mem.engine.chat.ingest import run_write_path
from desktop_mem.engine.chat.llm_client import LLMClient
from desktop_mem.engine.chat.llm_endpoint import LLMEndpoint
from desktop_mem.engine.chat.llm_errors import LLMError
from desktop_mem.engine.chat.named_facts import forget_named
from desktop_mem.engine.chat.ports import ChatPorts
from desktop_mem.engine.chat.sent_log import SentLog, endpoint_label
from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.chat.summary_update import update_summary
from desktop_mem.engine.chat.token_count import TokenCounter, make_counter
from desktop_mem.engine.chat.understanding import Understood, understand_turn
from desktop_mem.engine.chat.write_progress import CANCELLED, FAILED, FINISHED, WriteProgressHub
from desktop_mem.engine.index.retrieval import (
    RetrievalOverrides,
    SearchFilters,
    SearchResult,
    injection_lines,
    said_on,
)
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    TURN_ROLES,
    ChatMessage,
    Memory,
    Operation,
    Role,
    utc_now,
)
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.secrets_scan import describe

if TYPE_CHECKING:
    from desktop_mem.engine.config import Config

log = logging.getLogger(__name__)
TokenCallback = Callable[[str], None]
UsedCallback = Callable[[MemoryUsed], None]
OutcomeListener = Callable[[WriteOutcome], None]
MAX_CROSS_SESSION = 3
UNDERSTAND_TIMEOUT_S = 45.0  # most the reply waits for the memory model to read the message
CLIENT_TURN_ID = "client_turn_id"  # front matter of a user turn: the sender's id for the message


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
        """
        validate_conversation_id(conversation_id)
        # an API client's messages (OpenAI-shaped; REST passes role and text), copied
        given = [cast(ChatMessage, dict(m)) for m in history] if history is not None else None
        ports = self.ports
        if not temporary:
            ports.writer.require_writer()
        if not message.strip():
            raise ValueError("the message is empty")
        # Refuse a bad strategy before anything is written.
        saved = ports.conversation_strategy(conversation_id)
        resolve_strategy(strategy, saved, ports.config["context.strategy"])
        if temporary:
            return self._temporary_turn(conversation_id, message, strategy=strategy, history=given,
                                        retrieval=retrieval, on_token=on_token, on_used=on_used,
                                        cancel=cancel)
        notes: list[str] = []
        snapshot = ports.snapshot()  # the one read of the store for this reply
        failed, answered = self._resent_turn(snapshot, conversation_id, message, client_turn_id)
        if answered is not None and failed:  # this very message was answered already
            used, _context = self.prepare(conversation_id, message, strategy=strategy, history=given,
                                          exclude={failed[0].id, answered.id}, retrieval=retrieval,
                                          snapshot=snapshot)
            return ChatReply(conversation_id, answered.text, used, turn_id=failed[0].id)
        if failed:
            user_turn, skipped = failed[0], {m.id for m in failed}
        else:
            user_turn = self._persist_turn(conversation_id, "user", message, notes,
                                           extra={CLIENT_TURN_ID: client_turn_id} if client_turn_id else None)
            snapshot.including(user_turn)
            skipped = {user_turn.id}
        used, context = self.prepare(conversation_id, message, strategy=strategy, history=given,
                                     exclude=skipped, retrieval=retrieval, snapshot=snapshot, understand=True)
        if on_used is not None:
            on_used(used)
        self.sent_log.record([r.memory.id for r in used.memories], endpoint_label(self.llm.endpoint.base_url),
                             self.llm.endpoint.model)
        text, error, kind, cancelled = self._generate(context.messages, on_token, cancel)
        assistant = None
        if text.strip():
            extra: dict[str, Any] = {"interrupted": True} if (error or cancelled) else {}
            # What memory this reply used, kept with it (chat/turn_memory.py)
            extra[turn_memory.USED_KEY] = turn_memory.used_front_matter(used, self.llm.endpoint.model)
            stored, cut = _fit(text, ports.config["store.max_file_bytes"])
            if cut:
                extra["truncated"] = True
            assistant = self._persist_turn(conversation_id, "assistant", stored, notes, extra=extra)
            if cut:
                notes.append(
                    f"The reply was {len(text.encode('utf-8')):,} bytes; only the first "
                    f"{len(stored.encode('utf-8')):,} were stored (store.max_file_bytes).")
        summary = None
        if context.summary_changed and context.summary:
            summary = self._save_strategy_summary(conversation_id, context.summary, context.summarized_count)
        model = self.llm.endpoint.model
        record = None if assistant is not None else turn_memory.used_front_matter(used, model)
        self._schedule(TurnRecord(conversation_id, user_turn, assistant, tuple(notes),
                                  (summary,) if summary else (), used=record, forget=used.forget,
                                  understood=used.understood, unclear=used.unclear))
        return ChatReply(conversation_id, text, used, error, kind, cancelled, turn_id=user_turn.id)

    def _temporary_turn(
        self, conversation_id: str, message: str, *, strategy: str | None,
        history: Sequence[ChatMessage] | None, retrieval: RetrievalOverrides | None,
        on_token: TokenCallback | None, on_used: UsedCallback | None, cancel: threading.Event | None,
    ) -> ChatReply:
        """A turn that writes nothing: the read path and the context as `chat` builds them, the
        reply streamed, and nothing persisted or scheduled (a summary the strategy makes is sent,
        never saved)."""
        used, context = self.prepare(conversation_id, message, strategy=strategy, history=history,
                                     retrieval=retrieval)
        if on_used is not None:
            on_used(used)
        self.sent_log.record([r.memory.id for r in used.memories], endpoint_label(self.llm.endpoint.base_url),
                             self.llm.endpoint.model)
        text, error, kind, cancelled = self._generate(context.messages, on_token, cancel)
        return ChatReply(conversation_id, text, used, error, kind, cancelled, turn_id=None, temporary=True)

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
        ports = self.ports
        cfg = ports.config
        now = self.today()
        snap = snapshot if snapshot is not None else ports.snapshot()
        summary = ports.summary(conversation_id)  # shared: a held-back one comes redacted
        own = [m for m in snap.transcript(conversation_id) if m.id not in exclude]
        # Forgetting is immediate, and a summary older than the facts it speaks for is not
        # injected as it is (chat/forgetting.py, chat/summary_state.py).
        facts = [m for c in dict.fromkeys([conversation_id, GLOBAL_CONVERSATION])
                 for m in snap.list_memories(conversation_id=c, role="memory", include_deleted=True)]
        live = [m for m in facts if not m.deleted]
        summary_stale = False
        if summary is not None:
            shown_summary = summary_state.view(summary, facts, conversation_id)
            summary_stale = shown_summary.stale
            if summary_stale:
                summary = replace(summary, text=shown_summary.text) if shown_summary.text else None
        gone = superseded_by_turn(snap, [conversation_id, GLOBAL_CONVERSATION])
        prompt_turns = [snap.for_prompt(m) for m in own]
        replies_to = _replies_to(own)
        masked = forgetting.mask_transcript(prompt_turns, gone, replies_to, live) if gone else {}
        masked.update(forgetting.restored_asks(prompt_turns, live, replies_to))
        k = int((retrieval or {}).get("top_k") or cfg["retrieval.top_k"])
        # Turns the transcript will show are not injected again: ask for that many more (within
        # the cross-encoder's pool), so `top_k` memories are still injected after they are left out.
        spare = min(len(own), max(cfg["retrieval.rerank_pool"] - k, 0)) if history is None else 0
        view, session_notes = self._retrieve(snap, conversation_id, message, exclude, retrieval,
                                             k + spare, own)
        # A question about the past brings the facts it replaced, each saying when it was true.
        view = temporal.with_validity(view, message, snap, lambda **kw: ports.search(
            message, conversation_id=conversation_id, top_k=2 * temporal.MAX_PAST, **kw), now=now)
        view = replace(view, results=_without_forgotten(view.results, gone, live))
        cross = self._cross_session(snap, conversation_id) if cfg["context.cross_session"] else []
        if gone:
            cross = [(c, forgetting.mask_text(text, gone, live)) for c, text in cross]
        if history is None:
            past = [_as_message(replace(m, text=masked[m.id]), None) if m.id in masked
                    else _as_message(m, session_notes.get(m.id)) for m in prompt_turns]
        else:
            past = [m.copy() for m in history if m.get("role") != "system"]
        saved = ports.conversation_strategy(conversation_id)
        name = resolve_strategy(strategy, saved, cfg["context.strategy"])
        shown: list[SearchResult] = view.results[:k]
        skipped: list[str] = []

        def recalled(sent: frozenset[str]) -> list[str]:
            # A turn the model reads in the transcript itself is not repeated as a memory; the
            # best `k` others are, with the current facts brought in for a stale turn.
            left = k
            shown.clear()
            skipped.clear()
            for r in view.results:
                if r.memory.id in sent:
                    skipped.append(r.memory.id)
                    continue
                if r.memory.id not in view.brought_in:
                    if left == 0:
                        continue
                    left -= 1
                shown.append(r)
            return injection_lines(shown, view.notes, dated=True)

        # The in-session strategy is a 004 memory: the conversation so far, then this message.
        memory = open_memory(
            past,
            strategy=name,
            settings=strategy_settings(cfg),
            state=SessionState(summary.text if summary else None,
                               (summary.summarized_count or 0) if summary and history is None else 0),
            counter=self.counter,
            summarizer=self._summarize_messages,
        )
        memory.store({"role": "user", "content": message})
        # What the message asks of memory is read once, here (one model call, the one that
        # extracted facts before): the reply is told what a forget does, and the write path
        # applies what was read (TurnRecord.understood), without reading it again.
        understood = self._understand(message, prompt_turns, masked, live) if (
            understand and cfg["memory.extract_facts"]) else None
        forget, unclear = self._forget_targets(conversation_id, message, understood, live, own)
        note = None
        if understood is not None and understood.asks_forget:
            note = (FORGET_NOTE if forget else unclear_forget_note([m.text for m in unclear]) if unclear
                    else NOTHING_TO_FORGET_NOTE)
        context = context_from(memory, counter=self.counter, base_prompt=cfg["llm.system_prompt"],
                               injected_memories=recalled, cross_session=cross,
                               data_preamble=self.data_preamble, forget_note=note,
                               today=_today(now))
        used = MemoryUsed(
            conversation_id=conversation_id, summary=summary, memories=tuple(shown),
            cross_session=tuple(cross), strategy=context.strategy, tokens_before=context.tokens_before,
            tokens_after=context.tokens_after, system_prompt=str(context.messages[0]["content"]),
            in_transcript=len(skipped), summary_stale=summary_stale, masked=len(masked),
            forget=tuple(m.id for m in forget), understood=understood, unclear=tuple(m.id for m in unclear),
        )
        return used, context

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

    # ------------------------------------------------------------- internals

    def _resent_turn(
        self, snap: ConversationSnapshot, conv: str, message: str, client_turn_id: str | None
    ) -> tuple[list[Memory], Memory | None]:
        """A message sent again: (its stored user turn and the replies to it that did not
        complete, its complete reply or None); ([], None) for a new message.

        With `client_turn_id`, the user turn that carries it, wherever it is; without, the
        conversation's last user turn if it holds `message` and no complete reply followed it.
        """
        turns = snap.transcript(conv)
        users = [i for i, m in enumerate(turns) if m.role == Role.USER]
        if client_turn_id:
            at = next((i for i in users if turns[i].extra.get(CLIENT_TURN_ID) == client_turn_id), None)
        else:
            same = bool(users) and turns[users[-1]].text == self.ports.writer.redact(message)[0]
            at = users[-1] if same else None
        if at is None:
            return [], None
        end = next((i for i in users if i > at), len(turns))
        after = turns[at + 1:end]
        answered = next((m for m in after if not m.interrupted), None)
        if answered is not None and not client_turn_id:
            return [], None  # it was answered: the same words again are a new question
        return [turns[at], *(m for m in after if m.interrupted)], answered

    def _retrieve(
        self, snap: ConversationSnapshot, conv: str, message: str, exclude: Collection[str],
        retrieval: RetrievalOverrides | None, top_k: int, own: list[Memory],
    ) -> tuple[CurrentView, dict[str, str]]:
        """The read path, then current beats stale (currency.py).

        Returns the results with a note per result id, and a note per turn of ``conv`` itself
        (``own``: its stored turns, oldest first) that a replaced or deleted fact came from (the
        transcript repeats it too).
        """
        try:
            results = self.ports.search(message, conversation_id=conv, filters=SearchFilters(),
                                        overrides=retrieval, rerank=True, top_k=top_k)
        except Exception:  # a broken index degrades memory, never the reply
            log.exception("read path failed; answering without memories")
            return CurrentView([], {}), {}
        results = [r for r in results if r.memory.id not in exclude]
        stale = superseded_by_turn(snap, {r.memory.conversation_id for r in results}
                                   | {conv, GLOBAL_CONVERSATION})
        if not stale:
            return CurrentView(results, {}), {}
        replies_to: dict[str, str] = {}
        for c in {r.memory.conversation_id for r in results if r.memory.role == Role.ASSISTANT} | {conv}:
            replies_to.update(_replies_to(own if c == conv else snap.transcript(c)))
        return prefer_current(results, stale, replies_to), stale_notes(own, stale, replies_to)

    def _understand(
        self, message: str, turns: Sequence[Memory], masked: Mapping[str, str], live: Sequence[Memory]
    ) -> Understood:
        """What `message` asks of memory, read with the turns before it (as the model is sent
        them: what was forgotten masked) and what memory holds about the names it mentions."""
        llm = self.understand_llm if self.ports.config["llm.base_url"] else None
        recent = [(str(m.role), masked.get(m.id, m.text)) for m in turns if m.role in TURN_ROLES]
        return understand_turn(llm, message, recent, live)

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

    def _cross_session(self, snap: ConversationSnapshot, conv: str) -> list[tuple[str, str]]:
        summaries = [m for m in snap.list_memories(role="summary") if m.conversation_id != conv]
        summaries.sort(key=lambda m: m.updated_at or m.created_at, reverse=True)
        items = [(m.conversation_id, m.text) for m in summaries[:MAX_CROSS_SESSION]]
        if conv != GLOBAL_CONVERSATION:
            facts = snap.list_memories(conversation_id=GLOBAL_CONVERSATION, role="memory")
            if facts:
                items.insert(0, (GLOBAL_CONVERSATION, "\n".join(f"- {m.text}" for m in facts[-20:])))
        return items

    def _summarize_messages(self, previous: str | None, messages: list[ChatMessage]) -> str | None:
        material = [f"{m.get('role')}: {m.get('content')}" for m in messages
                    if m.get("content") and not m.get(INCOMPLETE)]
        return update_summary(self.memory_llm, previous, material).text

    def _generate(
        self, messages: list[ChatMessage], on_token: TokenCallback | None, cancel: threading.Event | None
    ) -> tuple[str, str | None, str | None, bool]:
        parts: list[str] = []
        try:
            stream = self.llm.stream(messages)
            for delta in stream:
                if cancel is not None and cancel.is_set():
                    close = getattr(stream, "close", None)
                    if close is not None:
                        close()
                    return "".join(parts), None, None, True
                parts.append(delta)
                if on_token is not None:
                    on_token(delta)
        except LLMError as exc:
            return "".join(parts), exc.message, exc.kind, False
        return "".join(parts), None, None, False

    def _persist_turn(
        self, conversation_id: str, role: str, text: str, notes: list[str],
        extra: dict[str, Any] | None = None,
    ) -> Memory:
        """Write a turn file now, unpublished: the write path indexes and commits it with its turn.

        Likely secrets are redacted unless `security.secrets` is "keep": nobody is there to ask.
        """
        writer = self.ports.writer
        with writer.transaction(Operation.TURN, conversation=conversation_id, publish=False) as tx:
            text, found = tx.redact(text)
            memory = tx.add(text, conversation_id=conversation_id, role=role,
                            source="llm" if role == Role.ASSISTANT else "manual", extra=extra)
        if found:
            notes.append(f"A likely secret ({describe(found)}) was redacted from the stored {role} turn "
                         "(security.secrets).")
        return memory

    def _save_strategy_summary(self, conversation_id: str, text: str, summarized_count: int) -> Memory:
        """The summarizing strategy's new summary, unpublished like the turn files."""
        writer = self.ports.writer
        with writer.transaction(Operation.SUMMARY, conversation=conversation_id, publish=False) as tx:
            text, _found = tx.redact(text)
            return tx.write_summary(conversation_id, text, summarized_count)

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


def _replies_to(turns: Sequence[Memory]) -> dict[str, str]:
    """Assistant turn id -> the user turn it answers."""
    replies: dict[str, str] = {}
    previous_user = ""
    for turn in turns:
        if turn.role == Role.USER:
            previous_user = turn.id
        else:
            replies[turn.id] = previous_user
    return replies


def _without_forgotten(
    results: Sequence[SearchResult], gone: dict[str, list[Superseded]], live: Sequence[Memory]
) -> list[SearchResult]:
    """Recalled turns with what was forgotten masked; a turn that said nothing else is left out.
    A fact deleted without a replacement (forgotten) is never sent, not even to a question about
    the past: only replaced facts have a "before"."""
    kept: list[SearchResult] = []
    for r in results:
        if r.memory.role == Role.MEMORY and r.memory.deleted and not r.memory.replaced_by:
            continue
        if gone and r.memory.role in TURN_ROLES:
            text = forgetting.mask_text(r.memory.text, gone, live)
            if text != r.memory.text:
                if not text.replace(forgetting.FORGOTTEN, "").strip(" .!?\n"):
                    continue
                r = replace(r, memory=replace(r.memory, text=text))
        kept.append(r)
    return kept


def _as_message(m: Memory, note: str | None = None) -> ChatMessage:
    """A stored turn as a chat message; ``note`` says what in it is out of date (not stored)."""
    text = f"{m.text}\n\n[Memory note: {note}]" if note else m.text
    message: ChatMessage = {"role": str(m.role), "content": text, MESSAGE_ID: m.id}
    if not m.complete:
        message[INCOMPLETE] = True  # never summarised; context_from drops the key before sending
    return message


def _today(now: datetime) -> str:
    """Today as the model is told it, in local time: `Saturday 28 November 2026`."""
    local = now.astimezone()
    return f"{local:%A} {said_on(local)}"


def _opt_path(value: str) -> Any:
    from pathlib import Path

    return Path(value).expanduser() if value else None
