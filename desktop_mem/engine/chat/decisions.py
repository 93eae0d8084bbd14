"""Apply reconciliation decisions (ADD / UPDATE / DELETE / NONE) to the store.

The one apply path: the chat write path (ingest) applies a turn's decisions inside its turn
transaction, and an MCP add with `reconcile` applies its decisions as one commit of their own
(`apply_as_one_commit`), so both write the same files the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from desktop_mem.engine.models import Decision, Memory, NotFoundError, Operation, ValidationError
from desktop_mem.engine.store.ports import MemorySource
from desktop_mem.engine.store.transaction import Transaction, clip

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Planned:
    """A reconciliation decision with the kind and source of the fact it came from."""

    event: str
    text: str
    target_id: str | None
    kind: str = "fact"
    source: str = "llm"


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
    """Write the decisions in `tx`. A target gone meanwhile (the user deleted it) is skipped."""
    applied = Applied()
    for d in decisions:
        try:
            if d.event == Decision.ADD and (same := tx.same_fact(d.text, conv)) is not None:
                applied.unchanged.append(same.id)  # said before: never an exact duplicate (#22)
            elif d.event == Decision.ADD:
                applied.added.append(tx.add(d.text, conversation_id=conv, role="memory", kind=d.kind,
                                            source=d.source, extra=extra))
            elif d.event == Decision.UPDATE and d.target_id:
                applied.updated.append(tx.replace(get(d.target_id), d.text, source=d.source,
                                                  kind=d.kind, extra=extra))
            elif d.event == Decision.DELETE and d.target_id:
                applied.deleted.append(tx.soft_delete(get(d.target_id)))
            elif d.target_id:
                applied.unchanged.append(d.target_id)
        except (NotFoundError, ValidationError) as exc:
            log.warning("skipping %s decision: %s", d.event, exc)
    return applied


def apply_as_one_commit(
    engine: MemorySource, conv: str, decisions: Sequence[Planned], *, secrets: str | None,
    trailers: Mapping[str, str], extra: Mapping[str, Any] | None,
) -> Applied:
    """Every decision in ONE transaction and commit. New texts pass the secrets policy first
    (`secrets`: the caller's choice), so a refusal writes nothing."""
    checked = [replace(d, text=engine.writer.check_secrets(d.text, secrets))
               if d.event in (Decision.ADD, Decision.UPDATE) else d for d in decisions]
    changes = [d for d in checked if d.event != Decision.NONE]
    operation = Operation.ADD if all(d.event == Decision.ADD for d in changes) else Operation.UPDATE
    with engine.writer.transaction(operation, conversation=conv, trailers=dict(trailers),
                                   publish=False) as tx:
        from desktop_mem.engine.chat import review  # review mode builds on this module

        held = len(checked)
        checked = review.hold_for_review(engine.config, engine.lookup, tx, conv, checked, extra)
        applied = apply_decisions(tx, engine.get, conv, checked, extra)
        held -= len(checked)
        tx.subject = _subject(applied) + (f" ({held} for review)" if held else "")
        change = tx.publish() if (applied.added or applied.updated or applied.deleted or held) else None
    applied.commit = change.commit if change is not None else None
    return applied


def _subject(applied: Applied) -> str:
    parts = [f"{len(items)} {verb}" for verb, items in
             (("added", applied.added), ("updated", applied.updated), ("deleted", applied.deleted)) if items]
    touched = [*applied.added, *(new for _old, new in applied.updated), *applied.deleted]
    head = f"Reconcile facts ({', '.join(parts) or 'nothing'})"
    return f"{head}: {clip(touched[0].text)}" if touched else head
