"""Questions about the past are answered from memory: superseded facts come back, labelled.

The read path prefers what is true now (currency.py). A question about the past ("Which city did
I live in before Leuven?", "When did I change jobs?", "What did I use to drink?") needs the facts
that were replaced too. For such a question the facts a found fact replaced (its `replaced_by`
chain backwards) and the best matching tombstones are brought in, and every fact says when it was
true: "[memory; no longer true: until 2026-11-20; replaced by: ...] The user lives in Ghent",
"[memory; current: since 2026-11-20] The user lives in Leuven". A question about the present
gets no old facts, only the labels that keep a fact whose `valid_to` has passed from passing as
current.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Protocol

from desktop_mem.engine.chat.currency import CurrentView
from desktop_mem.engine.index.retrieval import SearchFilters, SearchResult
from desktop_mem.engine.models import Memory, Role, utc_now
from desktop_mem.engine.store import validity

MAX_PAST = 4  # superseded facts brought in per question (beyond top_k; they are short)
CHAIN_DEPTH = 5

_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
           "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_PAST = re.compile(
    r"\b(?:before|used\s+to|previous(?:ly)?|former(?:ly)?|earlier|back\s+then|at\s+the\s+time|"
    r"when\s+did|since\s+when|how\s+long|until|ago|originally|at\s+first|any\s?more|no\s+longer|"
    r"ever|first|last\s+(?:year|month|week|summer|winter|spring|autumn|fall)|"
    r"(?:did|was|were|had)\s+(?:i|we|you|my)\b|what\s+did|where\s+did|which\s+\w+\s+did|"
    r"change[ds]?|moved|switched|old|past|history|timeline|"
    rf"in\s+(?:{_MONTHS})\b|in\s+(?:19|20)\d\d)\b",
    re.I,
)


def about_the_past(message: str) -> bool:
    """True when the question asks about an earlier state ("before", "used to", "when did",
    "in March", "since when" ...)."""
    return bool(_PAST.search(message))


class PastReads(Protocol):
    """What the temporal step reads: the turn's snapshot of the store."""

    def list_memories(
        self, *, conversation_id: str | None = None, role: str | None = None, only_deleted: bool = False
    ) -> list[Memory]: ...

    def lookup(self, memory_id: str) -> Memory | None: ...


Search = Callable[..., list[SearchResult]]


def with_validity(
    view: CurrentView, message: str, reads: PastReads, search: Search, now: datetime | None = None
) -> CurrentView:
    """The read path's results with the past brought in for a question about it, and a validity
    label on every fact that has a history."""
    now = now or utc_now()
    asked_about_past = about_the_past(message)
    # Only a question about the past needs the chains: a present question's turn costs a regex and
    # a look at the k results, nothing that grows with the store.
    predecessors = _replaced(reads) if asked_about_past else {}
    past = _superseded(view.results, predecessors, search) if asked_about_past else []
    notes = dict(view.notes)
    results = [*view.results, *past]
    for result in results:
        memory = result.memory
        ended = validity.valid_to(memory)
        if memory.role != Role.MEMORY or not (asked_about_past or (ended is not None and ended <= now)):
            continue  # a present question keeps today's labels; only a fact that ended says so
        label = _label(memory, predecessors, reads, now)
        if not label:
            continue
        note = notes.get(memory.id)
        if note and note.startswith("current") and label.startswith("current"):
            notes[memory.id] = label + note[len("current"):]  # "current: since D; replaces: ..."
        else:
            notes[memory.id] = f"{label}; {note}" if note else label
    shown_ids = {r.memory.id for r in view.results}
    return CurrentView(results, notes,
                       view.brought_in | frozenset(r.memory.id for r in past if r.memory.id not in shown_ids))


def _replaced(reads: PastReads) -> dict[str, list[Memory]]:
    """Tombstones by the id of the fact that replaced them."""
    by_successor: dict[str, list[Memory]] = {}
    for tomb in reads.list_memories(role="memory", only_deleted=True):
        if tomb.replaced_by:
            by_successor.setdefault(tomb.replaced_by, []).append(tomb)
    return by_successor


def _superseded(
    results: Sequence[SearchResult], by_successor: dict[str, list[Memory]], search: Search
) -> list[SearchResult]:
    """Facts that were true before: what each found fact replaced, then the best tombstones."""
    shown = {r.memory.id for r in results}
    found: list[SearchResult] = []
    for result in results:
        frontier = [result.memory.id]
        for _ in range(CHAIN_DEPTH):
            older = [t for mid in frontier for t in by_successor.get(mid, [])]
            for tomb in older:
                if tomb.id not in shown:
                    shown.add(tomb.id)
                    found.append(SearchResult(tomb, replace(result.scores, mmr_rank=None)))
            frontier = [t.id for t in older]
    try:
        hits = search(filters=SearchFilters(roles=("memory",), include_deleted=True), use_mmr=False)
    except Exception:  # a broken index: what the chains give is still worth having
        hits = []
    for hit in hits:
        if hit.memory.deleted and hit.memory.id not in shown:
            shown.add(hit.memory.id)
            found.append(hit)
    return found[:MAX_PAST]


def _label(memory: Memory, predecessors: dict[str, list[Memory]], reads: PastReads, now: datetime) -> str:
    """"current: since D" / "no longer true: D1 – D2; replaced by: ..." for a fact with a history
    (replaced something, was replaced or forgotten, or carries a date the user gave)."""
    since = validity.label(memory.valid_from) or validity.label(validity.stamp(memory.created_at))
    end = validity.valid_to(memory)
    if end is not None and end <= now:
        until = validity.label(memory.valid_to) or validity.label(validity.stamp(end))
        label = f"no longer true: {since} – {until}"
        successor = reads.lookup(memory.replaced_by) if memory.replaced_by else None
        if successor is not None and not successor.deleted:
            label += f"; replaced by: {' '.join(successor.text.split())}"
        return label
    stated = memory.valid_from is not None and "T" not in memory.valid_from
    if memory.id in predecessors or stated:
        return f"current: since {since}"
    return ""
