"""The write path after a turn (reference 001 §4, 000, 002), run in the background.

Order: facts from the latest user message (LLM, else the 002 pattern rules) -> reconcile with
ADD / UPDATE / DELETE / NONE -> rolling summary -> TTL expiry -> eviction beyond max_entries ->
one git commit. LLM calls run without the writer lock; file changes take it. Every LLM failure
has a documented fallback and a note in the outcome; nothing already stored is ever lost.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from desktop_mem.engine.chat import fact_guards
from desktop_mem.engine.chat.chat_types import WriteOutcome
from desktop_mem.engine.chat.currency import FROM_TURNS, from_turns
from desktop_mem.engine.chat.extraction import (
    ChatModel,
    Decision,
    ExtractedFact,
    ReconcileResult,
    extract_facts,
    pattern_facts,
    reconcile,
    update_summary,
)
from desktop_mem.engine.index.retrieval import SearchFilters
from desktop_mem.engine.models import Memory, NotFoundError, ValidationError, utc_now
from desktop_mem.engine.store.secrets_scan import describe

if TYPE_CHECKING:
    from desktop_mem.engine.facade import MemoryEngine

log = logging.getLogger(__name__)
NEIGHBOURS_PER_FACT = 5
# How much of each new turn the summary reads: the user's words in full (up to a limit), the
# assistant's reply as an excerpt (its answers are not facts about the user).
SUMMARY_USER_CHARS = 1200
SUMMARY_REPLY_CHARS = 400


@dataclass(frozen=True)
class TurnRecord:
    """The turns persisted on the reply path, handed to the write path."""

    conversation_id: str
    user: Memory
    assistant: Memory | None


def run_write_path(engine: MemoryEngine, turn: TurnRecord, llm: ChatModel | None) -> WriteOutcome:
    """Everything after a reply: returns what changed, for the UI's "Memory updated" line."""
    conv = turn.conversation_id
    notes: list[str] = []
    for memory in (turn.user, *([turn.assistant] if turn.assistant else [])):
        notes.extend(engine._turn_notes.pop(memory.id, []))
    facts: tuple[ExtractedFact, ...] = ()
    forget = fact_guards.forget_request(turn.user.text) if engine.config["memory.extract_facts"] else None
    if engine.config["memory.extract_facts"] and forget is None:
        if llm is None:
            facts = pattern_facts(" ".join(fact_guards.statements(turn.user.text)))
            notes.append("No LLM configured: facts were taken by pattern rules.")
        else:
            result = extract_facts(llm, turn.user.text)
            facts = result.facts
            if result.error:
                notes.append(result.error)
            for text, why in result.rejected:
                log.info("not stored as a fact (%s): %s", why, text)
    added: list[Memory] = []
    updated: list[tuple[Memory, Memory]] = []
    deleted: list[Memory] = []
    if forget is not None:
        targets = _forget_targets(engine, conv, forget, turn)
        if targets:
            _a, _u, deleted, _note = _apply(engine, conv, ReconcileResult(targets), {}, turn)
        else:
            notes.append("Nothing in memory matched what you asked to forget.")
    elif facts:
        a, u, d, note = _reconcile_and_apply(engine, conv, facts, llm, turn)
        added, updated, deleted = a, u, d
        if note:
            notes.append(note)
    superseded: list[tuple[str, str | None]] = [(o.text, n.text) for o, n in updated]
    superseded += [(d.text, None) for d in deleted]
    summary, summary_changed, note = _update_summary(
        engine, conv, [m.text for m in added] + [n.text for _o, n in updated], superseded, llm)
    if note:
        notes.append(note)
    expired = _expire(engine, conv)
    evicted = _evict(engine, conv)
    changed = [turn.user, *([turn.assistant] if turn.assistant else []), *added,
               *(n for _o, n in updated), *(o for o, _n in updated), *deleted, *expired, *evicted]
    if summary is not None and summary_changed:
        changed.append(summary)
    subject = _subject(conv, len(added), len(updated), len(deleted), summary_changed)
    trailers = {"Evicted": ", ".join(m.id for m in [*evicted, *expired])} if evicted or expired else None
    with engine._write_lock:
        sha = engine._after_write(changed, [], "turn", subject, conv, trailers)
    return WriteOutcome(
        conversation_id=conv,
        turns=(turn.user, *([turn.assistant] if turn.assistant else [])),
        added=tuple(added), updated=tuple(updated), deleted=tuple(deleted),
        evicted=tuple(evicted), expired=tuple(expired), summary_changed=summary_changed,
        summary=summary, commit=sha, notes=tuple(notes),
    )


def _neighbourhood(engine: MemoryEngine, conv: str, facts: Sequence[ExtractedFact]) -> list[tuple[str, str]]:
    """Existing facts near the new ones (conversation + global), for reconciliation."""
    found: dict[str, str] = {}
    filters = SearchFilters(conversation_id=conv, roles=("memory",))
    for fact in facts:
        try:
            results = engine.search(fact.text, top_k=NEIGHBOURS_PER_FACT, filters=filters, use_mmr=False)
        except Exception:  # an index problem must not stop memory from being written
            log.exception("neighbourhood search failed; reconciling against the catalog")
            results = []
        for r in results:
            found.setdefault(r.memory.id, r.memory.text)
    if not found:
        recent = engine.list_memories(conversation_id=conv, role="memory")[-NEIGHBOURS_PER_FACT * 2:]
        found = {m.id: m.text for m in recent}
    return list(found.items())


def _forget_targets(engine: MemoryEngine, conv: str, request: str, turn: TurnRecord) -> tuple[Decision, ...]:
    """DELETE decisions for "forget ...": a bare "forget that" means the facts of the previous
    user message; otherwise the live facts that best match what the user named."""
    live = engine.list_memories(conversation_id=conv, role="memory")
    if not request:
        previous = [m for m in history_messages(engine, conv) if m.role == "user" and m.id != turn.user.id]
        if not previous:
            return ()
        last = previous[-1].id
        return tuple(Decision("DELETE", m.text, m.id) for m in live if last in from_turns(m))
    wanted = fact_guards.stems(request)
    scored: list[tuple[float, Memory]] = []
    for m in live:
        words = fact_guards.stems(m.text)
        shared = len(wanted & words) + (0.5 if fact_guards.same_topic(request, m.text) else 0.0)
        if wanted and shared / len(wanted) >= 0.5:
            scored.append((shared, m))
    if not scored:
        return ()
    best = max(score for score, _m in scored)
    return tuple(Decision("DELETE", m.text, m.id) for score, m in scored if score == best)


def _reconcile_and_apply(
    engine: MemoryEngine, conv: str, facts: Sequence[ExtractedFact], llm: ChatModel | None, turn: TurnRecord
) -> tuple[list[Memory], list[tuple[Memory, Memory]], list[Memory], str | None]:
    existing = _neighbourhood(engine, conv, facts)
    kinds = {f.text: f for f in facts}
    if llm is None:
        known = {t.casefold() for _i, t in existing}
        result = ReconcileResult(tuple(Decision("ADD", f.text, None) for f in facts
                                       if f.text.casefold() not in known))
    else:
        result = reconcile(llm, [f.text for f in facts], existing, turn.user.text)
    return _apply(engine, conv, result, kinds, turn)


def _apply(
    engine: MemoryEngine, conv: str, result: ReconcileResult, kinds: dict[str, ExtractedFact],
    turn: TurnRecord,
) -> tuple[list[Memory], list[tuple[Memory, Memory]], list[Memory], str | None]:
    """Write the decisions; every new fact records the user turn it came from (provenance)."""
    origin = [turn.user.id]
    added: list[Memory] = []
    updated: list[tuple[Memory, Memory]] = []
    deleted: list[Memory] = []
    redacted: list[str] = []
    with engine._write_lock:
        for decision in result.decisions:
            fact = kinds.get(decision.text)
            kind = fact.kind if fact else "fact"
            source = fact.source if fact else "llm"
            text, found = engine._auto_redact(decision.text)
            if found:
                redacted.append(describe(found))
            try:
                if decision.event == "ADD":
                    added.append(_new_fact(engine, conv, text, kind, source, origin))
                elif decision.event == "UPDATE" and decision.target_id:
                    old = engine.get(decision.target_id)
                    new = _new_fact(engine, old.conversation_id, text, kind, source, origin)
                    tomb = engine.store.soft_delete(old, replaced_by=new.id)
                    engine._forget(old)
                    engine._remember(tomb)
                    updated.append((tomb, new))
                elif decision.event == "DELETE" and decision.target_id:
                    old = engine.get(decision.target_id)
                    tomb = engine.store.soft_delete(old)
                    engine._forget(old)
                    engine._remember(tomb)
                    deleted.append(tomb)
            except (NotFoundError, ValidationError) as exc:  # e.g. the user deleted it meanwhile
                log.warning("skipping %s decision: %s", decision.event, exc)
    notes = [result.error] if result.error else []
    if redacted:
        notes.append(f"A likely secret ({', '.join(dict.fromkeys(redacted))}) was redacted from the "
                     "extracted facts (security.secrets).")
    return added, updated, deleted, " ".join(notes) or None


def _new_fact(
    engine: MemoryEngine, conv: str, text: str, kind: str, source: str, origin: list[str]
) -> Memory:
    memory = engine.store.new_memory(text, conversation_id=conv, role="memory", kind=kind, source=source,
                                     extra={FROM_TURNS: origin})
    engine._remember(memory)
    return memory


def history_messages(engine: MemoryEngine, conv: str) -> list[Memory]:
    """The conversation's live turns, oldest first (the order the model saw them)."""
    turns = [m for m in engine.list_memories(conversation_id=conv) if m.role in ("user", "assistant")]
    turns.sort(key=lambda m: (m.created_at, 0 if m.role == "user" else 1, m.path))
    return turns


def _update_summary(
    engine: MemoryEngine, conv: str, new_facts: list[str], superseded: list[tuple[str, str | None]],
    llm: ChatModel | None,
) -> tuple[Memory | None, bool, str | None]:
    """001 §4.4 + 000: fold the new turns, new facts and replacements into the rolling summary.

    ``summarized_count`` is the number of history messages the summary covers. It is updated when
    there is something to remember (new facts, replacements) or when more than
    ``memory.summary_threshold`` messages are not covered yet, and then reads every message not
    covered yet (the user's words, an excerpt of each complete reply), so its count is the whole
    history. A reply that was interrupted or cut is never read (000: no partial responses).
    ``superseded`` facts are removed from the summary: it follows replacements.
    """
    current = engine.summary(conv)
    if not engine.config["memory.enable_summarization"] or llm is None:
        return current, False, None
    turns = history_messages(engine, conv)
    covered = min(current.summarized_count or 0, len(turns)) if current else 0
    pending = turns[covered:]
    if not new_facts and not superseded and len(pending) <= engine.config["memory.summary_threshold"]:
        return current, False, None
    material = [_summary_line(m) for m in pending if _complete(m)]
    material += [f"fact: {t}" for t in new_facts]
    result = update_summary(llm, current.text if current else None, material, superseded)
    if result.text is None:
        note = None
        if result.error:
            note = f"Summary not updated ({result.error}); the previous summary was kept."
        return current, False, note
    return _write_summary(engine, conv, result.text, len(turns)), True, None


def _write_summary(engine: MemoryEngine, conv: str, text: str, count: int) -> Memory:
    text, _found = engine._auto_redact(text)
    with engine._write_lock:
        memory = engine.store.write_summary(conv, text, count)
        engine._remember(memory)
    return memory


def _complete(turn: Memory) -> bool:
    """False for a reply the user stopped or the server cut (front matter interrupted/truncated)."""
    return not (turn.extra.get("interrupted") or turn.extra.get("truncated"))


def _summary_line(turn: Memory) -> str:
    limit = SUMMARY_USER_CHARS if turn.role == "user" else SUMMARY_REPLY_CHARS
    text = " ".join(turn.text.split())
    return f"{turn.role}: {text[:limit]}" + ("..." if len(text) > limit else "")


def _expire(engine: MemoryEngine, conv: str) -> list[Memory]:
    """002: drop entries whose TTL passed (soft delete, so they can be restored)."""
    now = utc_now()
    gone: list[Memory] = []
    with engine._write_lock:
        for m in engine.list_memories(conversation_id=conv, include_summaries=False):
            if m.expired(now):
                tomb = engine.store.soft_delete(m)
                engine._forget(m)
                engine._remember(tomb)
                gone.append(tomb)
    return gone


def _evict(engine: MemoryEngine, conv: str) -> list[Memory]:
    """001 §4.5: beyond max_entries, soft-delete the oldest facts/turns; summaries are exempt."""
    limit = engine.config["memory.max_entries"]
    with engine._write_lock:
        live = [m for m in engine.list_memories(conversation_id=conv) if m.role != "summary"]
        excess = len(live) - limit
        if excess <= 0:
            return []
        live.sort(key=lambda m: (m.created_at, m.path))
        evicted: list[Memory] = []
        for m in live[:excess]:
            tomb = engine.store.soft_delete(m)
            engine._forget(m)
            engine._remember(tomb)
            evicted.append(tomb)
        turns_gone = sum(1 for m in evicted if m.role in ("user", "assistant"))
        summary = engine.summary(conv)
        if summary is not None and turns_gone and summary.summarized_count:
            # the summary counts positions in the turn history; evicted turns shift them
            count = max(summary.summarized_count - turns_gone, 0)
            engine._remember(engine.store.write_summary(conv, summary.text, count))
    return evicted


def _subject(conv: str, added: int, updated: int, deleted: int, summary: bool) -> str:
    parts = [f"{n} {word}" for n, word in ((added, "added"), (updated, "updated"), (deleted, "deleted")) if n]
    if summary:
        parts.append("summary updated")
    return f"Chat turn in {conv}" + (f": {', '.join(parts)}" if parts else "")
