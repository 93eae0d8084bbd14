"""Reconciliation: what the new facts of a turn do to memory (ADD / UPDATE / DELETE / NONE).

The model compares the new facts with the stored facts near them; deterministic guards then
keep it from inventing a fact, changing an unrelated one, making one vaguer or losing a new one
(`_resolve`). When the model fails, every new fact is ADDed, with an ``error`` to show.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from desktop_mem.engine.chat import fact_guards, prompts
from desktop_mem.engine.chat.fact_types import MAX_FACT_CHARS, ChatModel, clean, fold, unique_clean
from desktop_mem.engine.chat.llm_errors import LLMError
from desktop_mem.engine.chat.llm_json import LLMJSONError, RawDecision, parse_decisions
from desktop_mem.engine.models import Decision, Message


@dataclass(frozen=True)
class ReconcileDecision:
    """What to do with memory: ADD ``text``; UPDATE/DELETE/NONE the memory ``target_id``."""

    event: Decision
    text: str
    target_id: str | None


@dataclass(frozen=True)
class ReconcileResult:
    """Decisions to apply; ``error`` is set when the LLM step failed (then all facts are ADDed)."""

    decisions: tuple[ReconcileDecision, ...]
    error: str | None = None


def reconcile(
    llm: ChatModel, new_facts: Sequence[str], existing: Sequence[tuple[str, str]], user_message: str = ""
) -> ReconcileResult:
    """Decide ADD/UPDATE/DELETE/NONE for ``new_facts`` against ``existing`` (id, text) memories.

    ``user_message`` (the words the facts came from) lets an UPDATE drop detail only when the user
    named what is dropped.
    """
    facts = unique_clean(new_facts)
    if not facts:
        return ReconcileResult(())
    if not existing:
        return ReconcileResult(tuple(ReconcileDecision(Decision.ADD, f, None) for f in facts))
    texts = {real_id: text for real_id, text in existing}
    short_ids = {str(i): real_id for i, (real_id, _text) in enumerate(existing)}
    shown = [{"id": str(i), "text": text} for i, (_id, text) in enumerate(existing)]
    user = prompts.UPDATE_MEMORY_USER_TEMPLATE.format(
        existing=json.dumps(shown, ensure_ascii=False), new_facts=json.dumps(facts, ensure_ascii=False)
    )
    messages: list[Message] = [
        {"role": "system", "content": prompts.UPDATE_MEMORY_PROMPT},
        {"role": "user", "content": user},
    ]
    try:
        answer = llm.complete(messages, temperature=0.0, max_tokens=600, json_schema=prompts.DECISIONS_SCHEMA)
        raw = parse_decisions(answer)
    except (LLMError, LLMJSONError) as err:
        detail = err.message if isinstance(err, LLMError) else str(err)
        return ReconcileResult(
            tuple(ReconcileDecision(Decision.ADD, f, None) for f in facts),
            f"Memory reconciliation failed ({detail}); the new facts were added as they are.",
        )
    return ReconcileResult(_resolve(raw, facts, short_ids, texts, user_message or " ".join(facts)))


def _resolve(
    raw: list[RawDecision], facts: list[str], short_ids: dict[str, str], texts: dict[str, str],
    user_message: str,
) -> tuple[ReconcileDecision, ...]:
    """Map short ids back, drop invalid or unsafe decisions, and keep new facts from being lost.

    Guards (fact_guards): an ADD or UPDATE text must be one of the new facts (the reconciler may
    not invent one, e.g. "lives in Belgium" from facts about Belgium); an UPDATE or DELETE must be
    about the same topic as a new fact (a DELETE: the same subject, fact_guards.same_subject);
    an UPDATE may not make a fact vaguer unless the user
    named what it drops. Every new fact not otherwise accounted for is ADDed.
    """
    out: list[ReconcileDecision] = []
    targeted: set[str] = set()
    written: set[str] = set()  # folded texts of ADDs and UPDATEs, to drop repeats
    covered: set[str] = set()  # folded new facts that a decision accounts for
    for item in raw:
        event, text = item["event"], clean(item["text"])
        target = _target(item["id"], short_ids, texts)
        found = _source_fact(text, facts) if text else None
        source = found[0] if found else None
        if found is not None and event in (Decision.ADD, Decision.UPDATE):
            # (a NONE or DELETE that writes a new fact's text beside another memory's id does not
            # account for it: "NONE 1 Priya drives a Skoda" beside "likes jazz" lost the Skoda)
            covered.add(fold(found[1]))
        if event == Decision.ADD or (event == Decision.UPDATE and target is None):
            # An UPDATE of an unknown id still carries a fact worth keeping.
            if source is not None and fold(source) not in written:
                written.add(fold(source))
                out.append(ReconcileDecision(Decision.ADD, source, None))
            continue
        if target is None or target in targeted:
            continue  # unknown id, or a second decision about the same memory (first wins)
        old = texts[target]
        if event == Decision.UPDATE:
            if source is None or fold(source) in written:
                continue  # text the user never stated: the old fact stays
            if not fact_guards.same_topic(old, source, user_message):
                covered.discard(fold(found[1]) if found else "")
                continue  # an unrelated memory; the new fact is ADDed below
            if fold(source) == fold(old) or fact_guards.vaguer(old, source, user_message):
                event, text = Decision.NONE, old
            else:
                written.add(fold(source))
                text = source
        elif event == Decision.DELETE:
            if not any(fact_guards.same_subject(old, f) for f in facts):
                continue  # deleting a memory no new fact speaks about (a shared topic is not enough)
            text = old
        else:
            text = old
            covered.update(fold(f) for f in facts if _near_duplicate(f, old))
        targeted.add(target)
        out.append(ReconcileDecision(Decision(event), text, target))
    changed = {d.target_id for d in out if d.event in (Decision.UPDATE, Decision.DELETE)}
    kept = {fold(t) for memory_id, t in texts.items() if memory_id not in changed}
    for fact in facts:
        # Deletes alone, an omitted fact or a refused decision must not lose what the user said.
        if fold(fact) not in covered and fold(fact) not in written and fold(fact) not in kept:
            written.add(fold(fact))
            out.append(ReconcileDecision(Decision.ADD, fact, None))
    # An ADD that repeats a memory which stays untouched would only duplicate it.
    return tuple(d for d in out if d.event != Decision.ADD or fold(d.text) not in kept)


def _source_fact(text: str, facts: list[str]) -> tuple[str, str] | None:
    """(text to write, the new fact it stands for): a rewording must keep the fact's names and
    most of its words; None when ``text`` is not one of the new facts."""
    if len(text) > MAX_FACT_CHARS:
        return None
    folded = fold(text)
    for fact in facts:
        if fold(fact) == folded:
            return fact, fact
    names = fact_guards.specifics(text)
    best, best_score = None, 0.0
    for fact in facts:
        if names <= fact_guards.specifics(fact):
            score = fact_guards.similarity(text, fact)
            if score > best_score:
                best, best_score = fact, score
    return (text, best) if best is not None and best_score >= 0.6 else None


def _near_duplicate(a: str, b: str) -> bool:
    return fact_guards.specifics(a) <= fact_guards.specifics(b) and fact_guards.similarity(a, b) >= 0.8


def _target(raw_id: str | None, short_ids: dict[str, str], texts: dict[str, str]) -> str | None:
    if raw_id is None:
        return None
    key = raw_id.strip().strip("[]#\"'")
    if key in short_ids:
        return short_ids[key]
    return key if key in texts else None  # a model may echo a real id
