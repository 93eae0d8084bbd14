"""Apply reconciliation decisions (ADD / UPDATE / DELETE / NONE) to the store.

The one apply path: the chat write path applies a turn's decisions inside its turn transaction,
an MCP add with `reconcile` its decisions as one commit of their own, and review mode an accepted
proposal (chat/apply_plan.py, chat/review.py), so all write the same files the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from desktop_mem.engine.chat.chat_types import FROM_CONVERSATION
from desktop_mem.engine.chat.currency import FROM_TURNS
from desktop_mem.engine.models import GLOBAL_CONVERSATION, Decision, Memory, NotFoundError, ValidationError
from desktop_mem.engine.store.transaction import Transaction

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Planned:
    """A reconciliation decision with the kind and source of the fact it came from."""

    event: str
    text: str
    target_id: str | None
    kind: str = "fact"
    source: str = "llm"
    forgets: bool = False  # a DELETE the user asked for ("forget ..."): the fact records the turn


@dataclass
class Applied:
    """What a set of decisions changed (`unchanged`: ids the decisions left as they were)."""

    added: list[Memory] = field(default_factory=list)
    updated: list[tuple[Memory, Memory]] = field(default_factory=list)
    deleted: list[Memory] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    commit: str | None = None


def apply_decisions(
    tx: Transaction, get: Callable[[str], Memory], conv: str, decisions: Sequence[Planned],
    extra: Mapping[str, Any] | None = None,
) -> Applied:
    """Write the decisions in `tx`. A target gone meanwhile (the user deleted it) is skipped. A
    delete the user asked for records the turn that asked (`extra`'s from_turns: a chat turn's)."""
    applied = Applied()
    turns = (extra or {}).get(FROM_TURNS)
    asked_by = str(turns[0]) if isinstance(turns, list) and turns else None
    for d in decisions:
        try:
            if d.event == Decision.ADD and (same := tx.same_fact(d.text, conv)) is not None:
                applied.unchanged.append(same.id)  # said before: never an exact duplicate (#22)
            elif d.event == Decision.ADD:
                applied.added.append(tx.add(d.text, conversation_id=conv, role="memory", kind=d.kind,
                                            source=d.source, extra=extra))
            elif d.event == Decision.UPDATE and d.target_id:
                old = get(d.target_id)
                applied.updated.append(tx.replace(old, d.text, source=d.source, kind=d.kind,
                                                  extra=_learned_here(extra, old, conv)))
            elif d.event == Decision.DELETE and d.target_id:
                by_turn = asked_by if d.forgets else None
                applied.deleted.append(tx.soft_delete(get(d.target_id), by_turn=by_turn))
            elif d.target_id:
                applied.unchanged.append(d.target_id)
        except (NotFoundError, ValidationError) as exc:
            log.warning("skipping %s decision: %s", d.event, exc)
    return applied


def _learned_here(extra: Mapping[str, Any] | None, old: Memory, conv: str) -> Mapping[str, Any] | None:
    """`extra` for the new version of `old`: a user fact (filed under global) replaced from a
    conversation's turn was learned there (`from_conversation`), like one added from it. Without
    it that conversation's summary did not count the new version among the facts it speaks for,
    so a Timeline revert of the update left the summary ("The user is a nurse") unmarked as out
    of date, and it was sent as it was (seen with the 1.5B model)."""
    if old.conversation_id != GLOBAL_CONVERSATION or conv == GLOBAL_CONVERSATION \
            or FROM_CONVERSATION in (extra or {}):
        return extra
    return {**(extra or {}), FROM_CONVERSATION: conv}
