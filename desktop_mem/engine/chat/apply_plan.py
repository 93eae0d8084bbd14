"""Apply what was decided without the lock, in ONE transaction and one commit.

Two callers, one path: a chat turn's `TurnPlan` (its turn files, facts, summary, expiries,
evictions and the turn's memory record: `apply_turn`) and an MCP add's reconciled decisions
(`apply_as_one_commit`). Both hold what review mode keeps for the user as proposals
(chat/review.py) and write the rest with chat/decisions.py's `apply_decisions`. The deciding
(LLM steps, no lock) is chat/ingest.py's; nothing here calls a model.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from desktop_mem.engine.chat import review, summary_state, turn_memory
from desktop_mem.engine.chat.chat_types import FROM_CONVERSATION, TurnRecord, WriteOutcome
from desktop_mem.engine.chat.currency import FROM_TURNS
from desktop_mem.engine.chat.decisions import Applied, Planned, apply_decisions
from desktop_mem.engine.chat.ports import ChatPorts
from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.config import Config
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    TURN_ROLES,
    Decision,
    Memory,
    Operation,
    Role,
    utc_now,
)
from desktop_mem.engine.store.ports import Writer
from desktop_mem.engine.store.transaction import Transaction, clip

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnPlan:
    """Everything one turn asks of memory, decided before the writer lock is taken.

    `decisions` are for the conversation (its new facts filed in its project when it is bound to
    one), `user_facts` the new facts about the user (filed in the user scope, learned in this
    conversation); `summary_text` None keeps the current summary;
    `snapshot` is the store as the plan read it (expiry and eviction re-check it under the lock).
    """

    turn: TurnRecord
    snapshot: ConversationSnapshot
    decisions: tuple[Planned, ...] = ()
    user_facts: tuple[Planned, ...] = ()
    summary_text: str | None = None
    summary_count: int = 0
    notes: tuple[str, ...] = ()
    # changes the write path would not make on its own (a delete beyond the per-turn cap, what
    # an unclear correction may make out of date): proposals for the user (chat/review.py)
    held: tuple[Planned, ...] = ()
    # where the conversation's new facts (its task) are filed: the project it is bound to, else
    # the conversation itself (None)
    project: str | None = None


class DecisionTarget(Protocol):
    """What an MCP add's decisions are applied through (the engine's parts satisfy it)."""

    @property
    def config(self) -> Config: ...
    @property
    def writer(self) -> Writer: ...

    def get(self, memory_id: str) -> Memory: ...

    def lookup(self, memory_id: str) -> Memory | None: ...


def apply_turn(ports: ChatPorts, plan: TurnPlan) -> WriteOutcome:
    """Write `plan` in the turn's own transaction (its turn files adopted, one commit under one
    `Turn:` trailer); returns what changed, with the commit."""
    turn, conv, snap = plan.turn, plan.turn.conversation_id, plan.snapshot
    notes = list(plan.notes)
    origin: dict[str, Any] = {FROM_TURNS: [turn.user.id]}
    learned = {**origin, FROM_CONVERSATION: conv}
    with ports.writer.transaction(Operation.TURN, conversation=conv, turn_id=turn.user.id,
                                  publish=False) as tx:
        tx.adopt(turn.user, turn.assistant, *turn.written)
        # the conversation's decisions, then the user's facts (read in every conversation,
        # learned in this one)
        waiting: list[review.Proposal] = []
        applied = _held_or_applied(ports, tx, [(plan.project or conv, plan.decisions,
                                                learned if plan.project else origin),
                                               (GLOBAL_CONVERSATION, plan.user_facts, learned)],
                                   turn.user.id, notes, waiting)
        for d in plan.held:
            target = ports.lookup(d.target_id) if d.target_id else None
            waiting += review.propose(ports.config, ports.lookup, tx,
                                      target.conversation_id if target else conv, [d], origin, turn.user.id)
        summary: Memory | None
        if plan.summary_text is not None:
            written = tx.write_summary(conv, plan.summary_text, plan.summary_count)
            summary = tx.rewrite(written, {summary_state.DIGEST_KEY: summary_state.digest(
                _live_facts(ports, conv), conv)})
        else:
            summary = ports.summary(conv)
        expired = _expire(ports, tx, snap, conv)
        evicted = _evict(ports, tx, snap, conv, summary)
        if evicted or expired:
            tx.trailers["Evicted"] = ", ".join(m.id for m in [*evicted, *expired])
        if evicted:
            notes.append(f"{len(evicted)} old message{'s' if len(evicted) > 1 else ''} of this chat "
                         f"left memory (beyond memory.max_entries); restorable on the Timeline.")
        tx.subject = _turn_subject(_title(ports, conv), applied, plan.summary_text is not None)
        outcome = WriteOutcome(
            conversation_id=conv,
            turns=(turn.user, *([turn.assistant] if turn.assistant else [])),
            added=tuple(applied.added), updated=tuple(applied.updated), deleted=tuple(applied.deleted),
            evicted=tuple(evicted), expired=tuple(expired), summary_changed=plan.summary_text is not None,
            summary=summary, notes=tuple(notes), turn_id=turn.user.id,
            waiting=tuple(p.describe() for p in waiting),
        )
        _record(tx, turn, outcome)
        change = tx.publish()
    return replace(outcome, commit=change.commit)


def apply_as_one_commit(
    target: DecisionTarget, conv: str, decisions: Sequence[Planned], *, secrets: str | None,
    trailers: Mapping[str, str], extra: Mapping[str, Any] | None,
) -> Applied:
    """Every decision in ONE transaction and commit. New texts pass the secrets policy first
    (`secrets`: the caller's choice), so a refusal writes nothing."""
    checked = [replace(d, text=target.writer.check_secrets(d.text, secrets))
               if d.event in (Decision.ADD, Decision.UPDATE) else d for d in decisions]
    changes = [d for d in checked if d.event != Decision.NONE]
    operation = Operation.ADD if all(d.event == Decision.ADD for d in changes) else Operation.UPDATE
    with target.writer.transaction(operation, conversation=conv, trailers=dict(trailers),
                                   publish=False) as tx:
        now = review.hold_for_review(target.config, target.lookup, tx, conv, checked, extra)
        held = len(checked) - len(now)
        applied = apply_decisions(tx, target.get, conv, now, extra)
        tx.subject = _reconcile_subject(applied) + (f" ({held} for review)" if held else "")
        change = tx.publish() if (applied.added or applied.updated or applied.deleted or held) else None
    applied.commit = change.commit if change is not None else None
    return applied


def _held_or_applied(
    ports: ChatPorts, tx: Transaction, scopes: Sequence[tuple[str, Sequence[Planned], Mapping[str, Any]]],
    turn_id: str, notes: list[str], waiting: list[review.Proposal],
) -> Applied:
    """For each (conversation, decisions, front matter) in turn: review mode's proposals for what
    it holds (in `tx`), the rest applied; what all of them changed."""
    applied = Applied()
    for conv, decisions, extra in scopes:
        now = review.hold_for_review(ports.config, ports.lookup, tx, conv, decisions, extra, turn_id, notes,
                                     waiting)
        done = apply_decisions(tx, ports.get, conv, now, extra)
        applied.added += done.added
        applied.updated += done.updated
        applied.deleted += done.deleted
    return applied


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


def _evict(
    ports: ChatPorts, tx: Transaction, snap: ConversationSnapshot, conv: str, summary: Memory | None
) -> list[Memory]:
    """001 §4.5, kept safe: beyond max_entries, soft-delete the oldest TURNS (the summarised ones
    are the oldest, so they go first). Facts are never evicted: what the user told the app stays
    until they say otherwise; a conversation with too many facts gets a tidy-up proposal instead
    (chat/tidy.py). Summaries are exempt. Counted: the snapshot's memories still live, and what
    this transaction wrote. ``summary``: the conversation's summary as this transaction left it."""
    limit = ports.config["memory.max_entries"]
    mine = [m for m in tx.written if m.conversation_id == conv]
    live = [m for m in _still_live(ports, [*snap.list_memories(conversation_id=conv), *mine])
            if m.role != Role.SUMMARY]
    excess = len(live) - limit
    if excess <= 0:
        return []
    turns = sorted((m for m in live if m.role in TURN_ROLES), key=lambda m: (m.created_at, m.path))
    evicted = [tx.soft_delete(m) for m in turns[:excess]]
    turns_gone = sum(1 for m in evicted if m.role in TURN_ROLES)
    if summary is not None and turns_gone and summary.summarized_count and (
            summary.id not in ports.held_back_ids()):  # a held-back summary is not committed as it is
        # the summary counts positions in the turn history; evicted turns shift them
        count = max(summary.summarized_count - turns_gone, 0)
        tx.write_summary(conv, summary.text, count)
    return evicted


def _title(ports: ChatPorts, conv: str) -> str:
    """The conversation's title for a commit subject (its id if the title cannot be read)."""
    try:
        title = " ".join(ports.conversation_title(conv).split())
    except Exception:  # a broken conversation file must not fail the turn's commit
        log.exception("could not read the title of %s", conv)
        return conv
    return f"“{clip(title, 60)}”" if title and title != conv else conv


def _turn_subject(conv: str, applied: Applied, summary: bool) -> str:
    parts = [f"{len(items)} {word}" for word, items in
             (("added", applied.added), ("updated", applied.updated), ("deleted", applied.deleted)) if items]
    if summary:
        parts.append("summary updated")
    return f"Chat turn in {conv}" + (f": {', '.join(parts)}" if parts else "")


def _reconcile_subject(applied: Applied) -> str:
    parts = [f"{len(items)} {verb}" for verb, items in
             (("added", applied.added), ("updated", applied.updated), ("deleted", applied.deleted)) if items]
    touched = [*applied.added, *(new for _old, new in applied.updated), *applied.deleted]
    head = f"Reconcile facts ({', '.join(parts) or 'nothing'})"
    return f"{head}: {clip(touched[0].text)}" if touched else head
