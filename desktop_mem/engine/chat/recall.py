"""The prepare step's read path (chat/service.py): what memory the message recalls, as the model
may be shown it.

The search, then current beats stale (chat/currency.py), a question about the past brings the
facts it replaced (chat/temporal.py), and what was forgotten is masked (chat/forgetting.py); the
other conversations' summaries and the user's facts likewise. Everything else is read from the
turn's snapshot.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from desktop_mem.engine.chat import forgetting, temporal
from desktop_mem.engine.chat.currency import (
    CurrentView,
    Superseded,
    prefer_current,
    stale_notes,
    superseded_by_turn,
)
from desktop_mem.engine.chat.ports import ChatPorts
from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.chat.turn_steps import ConversationRead, TurnAsk, replies_to_user
from desktop_mem.engine.index.retrieval import (
    RetrievalOverrides,
    SearchFilters,
    SearchResult,
    injection_lines,
)
from desktop_mem.engine.models import GLOBAL_CONVERSATION, TURN_ROLES, Memory, Role

log = logging.getLogger(__name__)
MAX_CROSS_SESSION = 3


@dataclass(frozen=True)
class Recall:
    """What the read path found for the message, how many to show (`k`), and a note per turn of
    the conversation that a replaced or deleted fact came from."""

    view: CurrentView
    k: int
    session_notes: Mapping[str, str]

    def picked(self, sent: frozenset[str]) -> tuple[tuple[SearchResult, ...], int]:
        """(the memories to show, how many were left out): a turn the model reads in the
        transcript (`sent`) is not repeated as a memory; the best `k` others are, with the
        current facts brought in for a stale turn."""
        left, skipped = self.k, 0
        shown: list[SearchResult] = []
        for r in self.view.results:
            if r.memory.id in sent:
                skipped += 1
                continue
            if r.memory.id not in self.view.brought_in:
                if left == 0:
                    continue
                left -= 1
            shown.append(r)
        return tuple(shown), skipped

    def lines(self, sent: frozenset[str]) -> list[str]:
        """The memories to show, as injected (context_from calls this with the ids it sends)."""
        return injection_lines(self.picked(sent)[0], self.view.notes, dated=True)


def recall(
    ports: ChatPorts, ask: TurnAsk, snap: ConversationSnapshot, read: ConversationRead,
    exclude: frozenset[str], now: datetime,
) -> Recall:
    """The read path for the message: current beats stale, a question about the past brings the
    facts it replaced (each saying when it was true), what was forgotten is masked."""
    cfg = ports.config
    conv, message, search = ask.conversation_id, ask.message, ports.search
    k = int((ask.retrieval or {}).get("top_k") or cfg["retrieval.top_k"])
    # Turns the transcript will show are not injected again: ask for that many more (within
    # the cross-encoder's pool), so `top_k` memories are still injected after they are left out.
    spare = min(len(read.own), max(cfg["retrieval.rerank_pool"] - k, 0)) if ask.history is None else 0
    view, session_notes = _retrieve(ports, snap, conv, message, exclude, ask.retrieval, k + spare, read.own)
    view = temporal.with_validity(view, message, snap, lambda **kw: search(
        message, conversation_id=conv, top_k=2 * temporal.MAX_PAST, **kw), now=now)
    view = replace(view, results=_without_forgotten(view.results, read.gone, read.live))
    return Recall(view, k, session_notes)


def cross_session(snap: ConversationSnapshot, conv: str, read: ConversationRead) -> list[tuple[str, str]]:
    """(conversation, text): the user's facts and the latest summaries of other conversations,
    what was forgotten masked."""
    summaries = [m for m in snap.list_memories(role="summary") if m.conversation_id != conv]
    summaries.sort(key=lambda m: m.updated_at or m.created_at, reverse=True)
    items = [(m.conversation_id, m.text) for m in summaries[:MAX_CROSS_SESSION]]
    if conv != GLOBAL_CONVERSATION:
        facts = snap.list_memories(conversation_id=GLOBAL_CONVERSATION, role="memory")
        if facts:
            items.insert(0, (GLOBAL_CONVERSATION, "\n".join(f"- {m.text}" for m in facts[-20:])))
    if read.gone:
        items = [(c, forgetting.mask_text(text, read.gone, read.live)) for c, text in items]
    return items


def _retrieve(
    ports: ChatPorts, snap: ConversationSnapshot, conv: str, message: str, exclude: Collection[str],
    retrieval: RetrievalOverrides | None, top_k: int, own: Sequence[Memory],
) -> tuple[CurrentView, dict[str, str]]:
    """The read path, then current beats stale (currency.py).

    Returns the results with a note per result id, and a note per turn of ``conv`` itself
    (``own``: its stored turns, oldest first) that a replaced or deleted fact came from (the
    transcript repeats it too).
    """
    try:
        results = ports.search(message, conversation_id=conv, filters=SearchFilters(),
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
        replies_to.update(replies_to_user(own if c == conv else snap.transcript(c)))
    return prefer_current(results, stale, replies_to), stale_notes(own, stale, replies_to)


def _without_forgotten(
    results: Sequence[SearchResult], gone: Mapping[str, list[Superseded]], live: Sequence[Memory]
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
