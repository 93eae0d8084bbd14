"""The summary follows every change to the facts it speaks for, and keeps the user's core facts.

A summary records (front matter `facts_digest`) the facts it was written against: the live facts
learned in its conversation (filed there, or in the user scope with `from_conversation`). Any
change to them afterwards - a write-path update or delete, a hand delete or edit, a restore, a
revert, an MCP call - makes the digest differ: the summary is stale. A stale summary is never
injected as it is: the model gets the current facts instead, and the next write path rewrites the
summary. A summary without a digest (older stores, a hand-made file) is stale when a fact it
speaks for changed after it was written.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from desktop_mem.engine.chat import fact_guards, scopes
from desktop_mem.engine.chat.chat_types import learned_in
from desktop_mem.engine.chat.summary_cleanup import SUMMARY_SENTENCE, stale_matcher
from desktop_mem.engine.models import GLOBAL_CONVERSATION, Memory, Role

DIGEST_KEY = "facts_digest"
MAX_CORE = 8
MAX_FALLBACK_FACTS = 30


@dataclass(frozen=True)
class SummaryView:
    """What the read path injects for a conversation's summary."""

    text: str | None  # the summary, or the current facts when it is stale (None: nothing)
    stale: bool


def own_facts(facts: Iterable[Memory], conversation_id: str) -> list[Memory]:
    """Facts (live or not) learned in ``conversation_id``: filed there, or the user's with it as origin."""
    return [m for m in facts if m.role == Role.MEMORY and (
        m.conversation_id == conversation_id
        or (m.conversation_id == GLOBAL_CONVERSATION and learned_in(m) == conversation_id))]


def digest(live_facts: Iterable[Memory], conversation_id: str) -> str:
    """A fingerprint of the live facts a conversation's summary speaks for."""
    items = sorted(f"{m.id}\x1f{' '.join(m.text.split())}" for m in own_facts(live_facts, conversation_id)
                   if not m.deleted)
    return hashlib.sha256("\x1e".join(items).encode("utf-8")).hexdigest()[:16]


def is_stale(summary: Memory, facts: Sequence[Memory], conversation_id: str) -> bool:
    """True when a fact the summary speaks for changed since it was written. ``facts``: every
    fact of the conversation and the user scope, tombstones included."""
    recorded = summary.extra.get(DIGEST_KEY)
    if isinstance(recorded, str) and recorded:
        return recorded != digest([m for m in facts if not m.deleted], conversation_id)
    written = summary.updated_at or summary.created_at
    for m in own_facts(facts, conversation_id):
        changed = m.deleted_at if m.deleted else (m.updated_at or m.created_at)
        if changed is not None and changed > written:
            return True
    return False


def view(summary: Memory | None, facts: Sequence[Memory], conversation_id: str) -> SummaryView:
    """The summary to inject: as it is when fresh; when stale, the current facts it speaks for and
    the user's core facts instead (never the stale text)."""
    if summary is None:
        return SummaryView(None, False)
    if not is_stale(summary, facts, conversation_id):
        return SummaryView(summary.text, False)
    live = [m for m in facts if not m.deleted and m.role == Role.MEMORY]
    lines = [m.text for m in own_facts(live, conversation_id)][-MAX_FALLBACK_FACTS:]
    lines += [t for t in core_facts(live) if t not in lines]
    return SummaryView("\n".join(f"- {t}" for t in lines) or None, True)


def states_gone(summary: Memory, facts: Sequence[Memory]) -> list[str]:
    """The forgotten or replaced facts (tombstones in ``facts``) that ``summary`` still states, by
    the sentence test the write path uses to drop them; names a live fact states never count."""
    keep = frozenset(n for m in facts if not m.deleted for n in fact_guards.specifics(m.text))
    live_texts = {m.text for m in facts if not m.deleted}
    sentences = [p for p in SUMMARY_SENTENCE.split(summary.text) if p and p.strip()]
    found: list[str] = []
    for m in facts:
        if not m.deleted or m.role != Role.MEMORY or m.text in live_texts or m.text in found:
            continue
        test = stale_matcher(m.text, None, keep)
        if any(test(s) for s in sentences):
            found.append(m.text)
    return found


def core_facts(live_facts: Iterable[Memory]) -> list[str]:
    """The user's core facts (name, family, home, work, health) now, newest last."""
    found = [m for m in live_facts if m.role == Role.MEMORY and not m.deleted
             and m.conversation_id == GLOBAL_CONVERSATION and scopes.is_core(m.text)]
    found.sort(key=lambda m: (m.created_at, m.path))
    return [m.text for m in found][-MAX_CORE:]


def with_core_facts(summary: str, core: Sequence[str]) -> str:
    """``summary`` plus every core fact it does not state yet (as "- " lines): a summary keeps who
    the user is, even when a small model left it out."""
    words = fact_guards.stems(summary)
    lowered = summary.casefold()
    missing: list[str] = []
    for fact in core:
        specific = fact_guards.specifics(fact)
        if specific:
            stated = all(n in lowered for n in specific)
        else:
            content = fact_guards.stems(fact) - {"user"}
            stated = bool(content) and len(content & words) * 3 >= len(content) * 2
        if not stated and fact not in missing:
            missing.append(fact)
    if not missing:
        return summary
    return "\n".join([summary.rstrip(), *(f"- {t}" for t in missing)]).strip()
