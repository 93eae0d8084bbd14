"""The write path after a turn (reference 001 §4, 000, 002), run in the background.

Order: facts from the latest user message (LLM, else the 002 pattern rules), or the targets of a
"forget ..." request -> reconcile with ADD / UPDATE / DELETE / NONE -> rolling summary -> TTL
expiry -> eviction beyond max_entries -> one commit. The LLM steps run without the writer lock;
their results are applied in one write transaction with the turn's files. Every LLM failure has a
documented fallback and a note in the outcome; nothing already stored is ever lost.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from desktop_mem.engine.chat import fact_guards, review, scopes, summary_state, turn_memory
from desktop_mem.engine.chat.chat_types import WriteOutcome
from desktop_mem.engine.chat.currency import FROM_TURNS, from_turns
from desktop_mem.engine.chat.decisions import Planned, apply_decisions
from desktop_mem.engine.chat.extraction import (
    ChatModel,
    Decision,
    ExtractedFact,
    ReconcileResult,
    drop_gone,
    drop_superseded,
    extract_facts,
    pattern_facts,
    reconcile,
    update_summary,
)
from desktop_mem.engine.chat.ports import ChatPorts
from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.chat.write_progress import (
    EXTRACTING,
    RECONCILING,
    SAVING,
    SUMMARIZING,
    Tracker,
    WriteCancelled,
    quiet,
)
from desktop_mem.engine.index.retrieval import SearchFilters
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    TURN_ROLES,
    Memory,
    Operation,
    Role,
    utc_now,
)
from desktop_mem.engine.models import Decision as Act  # the verdict; `Decision` here is extraction's
from desktop_mem.engine.store.secrets_scan import REDACTED_PREFIX, describe
from desktop_mem.engine.store.transaction import Transaction

log = logging.getLogger(__name__)
NEIGHBOURS_PER_FACT = 5
# How much of each new turn the summary reads: the user's words in full (up to a limit), the
# assistant's reply as an excerpt (its answers are not facts about the user).
SUMMARY_USER_CHARS = 1200
SUMMARY_REPLY_CHARS = 400


@dataclass(frozen=True)
class TurnRecord:
    """The turns persisted on the reply path, handed to the write path.

    `notes` say what the reply path changed in them (redacted, cut); `written` are other files it
    wrote unpublished (the summarizing strategy's summary), committed with the turn.
    """

    conversation_id: str
    user: Memory
    assistant: Memory | None
    notes: tuple[str, ...] = ()
    written: tuple[Memory, ...] = ()
    # memory_used of the reply (turn_memory.py), for the user turn when no reply was stored
    used: Mapping[str, Any] | None = None


def run_write_path(
    ports: ChatPorts, turn: TurnRecord, llm: ChatModel | None, progress: Tracker | None = None
) -> WriteOutcome:
    """Everything after a reply: returns what changed, for the UI's "Memory updated" line.

    The store is read once (a snapshot, taken after the previous turn's write path finished);
    the writes are one transaction that re-checks what it changes against the catalog. Facts
    about the user are filed in the user scope, the conversation's task in the conversation.
    ``progress`` reports each step; a cancel between steps commits the turn's messages alone."""
    conv = turn.conversation_id
    notes: list[str] = list(turn.notes)
    track = progress or quiet(conv, turn.user.id)
    snap = ports.snapshot()
    user_scoped: set[str] = set()
    try:
        track.stage(EXTRACTING)
        decisions = _decide(ports, snap, turn, llm, notes, user_scoped, track)
        superseded = _superseded(snap, decisions)
        new_texts = [d.text for d in decisions if d.event in (Act.ADD, Act.UPDATE)]
        track.stage(SUMMARIZING)
        summary_text, summary_count, note = _summary_update(ports, snap, conv, new_texts, superseded, llm)
        track.stage(SAVING)
    except WriteCancelled:
        decisions, summary_text, summary_count, note = (), None, 0, None
        notes.append("Memory update cancelled: this turn's messages were saved, no fact or summary changed.")
    if note:
        notes.append(note)
    origin: dict[str, Any] = {FROM_TURNS: [turn.user.id]}
    with ports.writer.transaction(Operation.TURN, conversation=conv, turn_id=turn.user.id,
                                  publish=False) as tx:
        tx.adopt(turn.user, turn.assistant, *turn.written)
        mine = [d for d in decisions if d.event == Act.ADD and d.text in user_scoped]
        # Review mode: the changes it holds become proposals in this commit (chat/review.py).
        rest = review.hold_for_review(ports.config, ports.lookup, tx, conv,
                                      [d for d in decisions if d not in mine], origin, turn.user.id, notes)
        mine = review.hold_for_review(ports.config, ports.lookup, tx, GLOBAL_CONVERSATION, mine,
                                      {**origin, turn_memory.FROM_CONVERSATION: conv}, turn.user.id, notes)
        applied = apply_decisions(tx, ports.get, conv, rest, origin)
        if mine:  # the user's facts: read in every conversation, learned in this one
            applied.added += apply_decisions(tx, ports.get, GLOBAL_CONVERSATION, mine,
                                             {**origin, turn_memory.FROM_CONVERSATION: conv}).added
        summary = ports.summary(conv)
        if summary_text is not None:
            summary = tx.write_summary(conv, summary_text, summary_count)
        if summary is not None and summary_text is not None:
            summary = tx.rewrite(summary, {summary_state.DIGEST_KEY: summary_state.digest(
                _live_facts(ports, conv), conv)})
        expired = _expire(ports, tx, snap, conv)
        evicted = _evict(ports, tx, snap, conv)
        if evicted or expired:
            tx.trailers["Evicted"] = ", ".join(m.id for m in [*evicted, *expired])
        tx.subject = _subject(conv, len(applied.added), len(applied.updated), len(applied.deleted),
                              summary_text is not None)
        outcome = WriteOutcome(
            conversation_id=conv,
            turns=(turn.user, *([turn.assistant] if turn.assistant else [])),
            added=tuple(applied.added), updated=tuple(applied.updated), deleted=tuple(applied.deleted),
            evicted=tuple(evicted), expired=tuple(expired), summary_changed=summary_text is not None,
            summary=summary, notes=tuple(notes), turn_id=turn.user.id,
        )
        _record(tx, turn, outcome)
        change = tx.publish()
    return replace(outcome, commit=change.commit)


def _record(tx: Transaction, turn: TurnRecord, outcome: WriteOutcome) -> None:
    """Keep the reply's Memory used / Memory updated with its turn (turn_memory.py)."""
    holder = turn_memory.holder(turn.user, turn.assistant)
    updates: dict[str, Any] = {turn_memory.UPDATED_KEY: turn_memory.updated_front_matter(outcome)}
    if turn.assistant is None and turn.used is not None:
        updates[turn_memory.USED_KEY] = dict(turn.used)
    try:
        tx.rewrite(holder, updates)
    except Exception:  # e.g. the user deleted the turn meanwhile: the record is not worth a failed turn
        log.exception("could not record what memory the turn used and changed")


def _live_facts(ports: ChatPorts, conv: str) -> list[Memory]:
    """The facts of the conversation and of the user scope as the catalog holds them now."""
    return [m for c in dict.fromkeys([conv, GLOBAL_CONVERSATION])
            for m in ports.raw.list_memories(conversation_id=c, role="memory")]


def _decide(
    ports: ChatPorts, snap: ConversationSnapshot, turn: TurnRecord, llm: ChatModel | None, notes: list[str],
    user_scoped: set[str], track: Tracker,
) -> tuple[Planned, ...]:
    """What the turn asks of memory: DELETEs for "forget ...", else the reconciled new facts
    (LLM steps; no lock held). Texts are redacted of likely secrets: nobody is there to ask.
    The texts of new facts about the user (the user scope) are added to ``user_scoped``."""
    conv = turn.conversation_id
    if not ports.config["memory.extract_facts"]:
        return ()
    forget = fact_guards.forget_request(turn.user.text)
    if forget is not None:
        targets = _forget_targets(snap, conv, forget, turn)
        if not targets:
            notes.append("Nothing in memory matched what you asked to forget.")
        return tuple(Planned(d.event, d.text, d.target_id) for d in targets)
    facts: tuple[ExtractedFact, ...]
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
    if not facts:
        return ()
    track.stage(RECONCILING)
    existing = _neighbourhood(ports, snap, conv, facts)
    if llm is None:
        known = {t.casefold() for _i, t in existing}
        reconciled = ReconcileResult(tuple(Decision("ADD", f.text, None) for f in facts
                                           if f.text.casefold() not in known))
    else:
        reconciled = reconcile(llm, [f.text for f in facts], existing, turn.user.text)
    if reconciled.error:
        notes.append(reconciled.error)
    kinds = {f.text: f for f in facts}
    found_kinds: list[str] = []
    decisions: list[Planned] = []
    for d in reconciled.decisions:
        text, found = ports.writer.redact(d.text)
        if found or (REDACTED_PREFIX in text and d.event != Act.DELETE):
            # never a fact about a secret, not even a redacted one (issue #22)
            found_kinds.append(describe(found) if found else "an already redacted secret")
            continue
        fact = kinds.get(d.text)
        decisions.append(Planned(d.event, text, d.target_id, fact.kind if fact else "fact",
                                 fact.source if fact else "llm"))
        if (fact.scope if fact else scopes.classify(text)) == scopes.USER:
            user_scoped.add(text)
    if found_kinds:
        notes.append(f"A fact holding a likely secret ({', '.join(dict.fromkeys(found_kinds))}) was not "
                     "stored (security.secrets).")
    return tuple(decisions)


def _facts(snap: ConversationSnapshot, conv: str, include_deleted: bool = False) -> list[Memory]:
    """The facts a conversation reads: its own and the user's (oldest first)."""
    found = [m for c in dict.fromkeys([conv, GLOBAL_CONVERSATION])
             for m in snap.list_memories(conversation_id=c, role="memory", include_deleted=include_deleted)]
    found.sort(key=lambda m: (m.created_at, m.path))
    return found


def _superseded(snap: ConversationSnapshot, decisions: Sequence[Planned]) -> list[tuple[str, str | None]]:
    """(old text, new text or None) of what the decisions replace or delete: the summary drops them."""
    result: list[tuple[str, str | None]] = []
    for d in decisions:
        old = snap.lookup(d.target_id) if d.target_id else None
        if old is not None and d.event in (Act.UPDATE, Act.DELETE):
            result.append((old.text, d.text if d.event == Act.UPDATE else None))
    return result


def _neighbourhood(
    ports: ChatPorts, snap: ConversationSnapshot, conv: str, facts: Sequence[ExtractedFact]
) -> list[tuple[str, str]]:
    """Existing facts near the new ones (conversation + global), for reconciliation."""
    found: dict[str, str] = {}
    filters = SearchFilters(conversation_id=conv, roles=("memory",))
    for fact in facts:
        try:
            results = ports.search(fact.text, top_k=NEIGHBOURS_PER_FACT, filters=filters, use_mmr=False)
        except Exception:  # an index problem must not stop memory from being written
            log.exception("neighbourhood search failed; reconciling against the catalog")
            results = []
        for r in results:
            found.setdefault(r.memory.id, r.memory.text)
    if not found:
        recent = _facts(snap, conv)[-NEIGHBOURS_PER_FACT * 2:]
        found = {m.id: m.text for m in recent}
    return list(found.items())


def _forget_targets(
    snap: ConversationSnapshot, conv: str, request: str, turn: TurnRecord
) -> tuple[Decision, ...]:
    """DELETE decisions for "forget ...": a bare "forget that" means the facts of the previous
    user message; otherwise the live facts (of the conversation and the user's) that best match
    what the user named."""
    live = _facts(snap, conv)
    if not request:
        previous = [m for m in snap.transcript(conv) if m.role == Role.USER and m.id != turn.user.id]
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


def _summary_update(
    ports: ChatPorts, snap: ConversationSnapshot, conv: str, new_facts: list[str],
    superseded: list[tuple[str, str | None]], llm: ChatModel | None,
) -> tuple[str | None, int, str | None]:
    """001 §4.4 + 000: fold the new turns, new facts and replacements into the rolling summary.

    Returns (the new text, or None to keep the current summary; its summarized_count; a note).
    ``summarized_count`` is the number of history messages the summary covers. It is updated when
    there is something to remember (new facts, replacements) or when more than
    ``memory.summary_threshold`` messages are not covered yet, and then reads every message not
    covered yet (the user's words, an excerpt of each complete reply), so its count is the whole
    history. A reply that was interrupted or cut is never read (000: no partial responses).
    ``superseded`` facts are removed from the summary: it follows replacements.
    """
    current = ports.summary(conv)
    if not ports.config["memory.enable_summarization"] or llm is None:
        return None, 0, None
    if current is not None and current.id in snap.held:
        return None, 0, "The summary was not updated: its hand edit waits for your Redact / Keep answer."
    turns = [snap.for_prompt(m) for m in snap.transcript(conv)]
    covered = min(current.summarized_count or 0, len(turns)) if current else 0
    pending = turns[covered:]
    facts = _facts(snap, conv, include_deleted=True)
    stale = current is not None and summary_state.is_stale(current, facts, conv)
    if not new_facts and not superseded and not stale and (
            len(pending) <= ports.config["memory.summary_threshold"]):
        return None, covered, None
    gone_now = {old for old, _new in superseded}  # replaced or forgotten by this very turn
    live = [m for m in facts if not m.deleted and m.text not in gone_now]
    previous = current.text if current else None
    material = [_summary_line(m) for m in pending if _complete(m)]
    material += [f"fact: {t}" for t in new_facts]
    if stale and previous is not None:
        # Facts it speaks for changed since it was written (a hand delete, restore, revert,
        # edit): what is gone leaves it, and it is written again from the facts true now.
        gone = [(m.text, None) for m in summary_state.own_facts(facts, conv) if m.deleted]
        keep = frozenset(n for m in live for n in fact_guards.specifics(m.text))
        previous = drop_gone(previous, gone, keep)
        material += [f"fact: {m.text}" for m in summary_state.own_facts(live, conv)
                     if f"fact: {m.text}" not in material]
    result = update_summary(llm, previous, material, superseded)
    text, note = result.text, None
    if text is not None:
        text = summary_state.with_core_facts(text, summary_state.core_facts(live))
    if text is None and superseded and current is not None:
        # The model failed or had nothing left to say, yet what was replaced or forgotten must
        # leave the summary: the previous one without its stale sentences.
        text = drop_superseded(current.text, superseded)
        if text == current.text.strip():
            text = None
        elif result.error:
            note = f"Summary: {result.error}; only what is no longer true was removed from it."
    if text is None:
        if result.error:
            note = f"Summary not updated ({result.error}); the previous summary was kept."
        return None, covered, note
    if not text.strip():
        text = _facts_summary(snap, conv, new_facts, superseded)
    text, _found = ports.writer.redact(text)
    return text, len(turns), note


NOTHING_TO_SUMMARISE = "Nothing about the user is remembered from this conversation."


def _facts_summary(
    snap: ConversationSnapshot, conv: str, new_facts: list[str], superseded: list[tuple[str, str | None]]
) -> str:
    """A summary made of the conversation's live facts: for when all the old summary said is gone."""
    gone = {old for old, _new in superseded}
    live = [m.text for m in snap.list_memories(conversation_id=conv, role="memory")]
    facts = [t for t in dict.fromkeys([*live, *new_facts]) if t not in gone]
    return "\n".join(f"- {t}" for t in facts) or NOTHING_TO_SUMMARISE


def _complete(turn: Memory) -> bool:
    """False for a reply the user stopped or the server cut (front matter interrupted/truncated)."""
    return not (turn.extra.get("interrupted") or turn.extra.get("truncated"))


def _summary_line(turn: Memory) -> str:
    limit = SUMMARY_USER_CHARS if turn.role == Role.USER else SUMMARY_REPLY_CHARS
    text = " ".join(turn.text.split())
    return f"{turn.role}: {text[:limit]}" + ("..." if len(text) > limit else "")


def _still_live(ports: ChatPorts, memories: Sequence[Memory]) -> list[Memory]:
    """The snapshot's memories as the catalog holds them now, under the writer lock: each one's
    current version, without those that left, were deleted or are held back meanwhile."""
    held = ports.held_back_ids()
    current: dict[str, Memory] = {}
    for m in memories:
        now = ports.raw.lookup(m.id)
        if now is not None and not now.deleted and now.id not in held:
            current[now.id] = now
    return list(current.values())


def _expire(ports: ChatPorts, tx: Transaction, snap: ConversationSnapshot, conv: str) -> list[Memory]:
    """002: drop entries whose TTL passed (soft delete, so they can be restored)."""
    now = utc_now()
    candidates = _still_live(ports, snap.list_memories(conversation_id=conv, include_summaries=False))
    return [tx.soft_delete(m) for m in candidates if m.expired(now)]


def _evict(ports: ChatPorts, tx: Transaction, snap: ConversationSnapshot, conv: str) -> list[Memory]:
    """001 §4.5: beyond max_entries, soft-delete the oldest facts/turns; summaries are exempt.
    Counted: the snapshot's memories still live, and what this transaction wrote."""
    limit = ports.config["memory.max_entries"]
    mine = [m for m in tx.written if m.conversation_id == conv]
    live = [m for m in _still_live(ports, [*snap.list_memories(conversation_id=conv), *mine])
            if m.role != Role.SUMMARY]
    excess = len(live) - limit
    if excess <= 0:
        return []
    live.sort(key=lambda m: (m.created_at, m.path))
    evicted = [tx.soft_delete(m) for m in live[:excess]]
    turns_gone = sum(1 for m in evicted if m.role in TURN_ROLES)
    summary = ports.summary(conv)
    if summary is not None and turns_gone and summary.summarized_count and (
            summary.id not in ports.held_back_ids()):  # a held-back summary is not committed as it is
        # the summary counts positions in the turn history; evicted turns shift them
        count = max(summary.summarized_count - turns_gone, 0)
        tx.write_summary(conv, summary.text, count)
    return evicted


def _subject(conv: str, added: int, updated: int, deleted: int, summary: bool) -> str:
    parts = [f"{n} {word}" for n, word in ((added, "added"), (updated, "updated"), (deleted, "deleted")) if n]
    if summary:
        parts.append("summary updated")
    return f"Chat turn in {conv}" + (f": {', '.join(parts)}" if parts else "")
