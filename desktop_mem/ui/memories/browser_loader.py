"""What the memory browser shows, read in a worker: a listing page by page, or a search cut to
what matches, then the filters the read path does not scope.

`load_page` and `load_more` run on the TaskRunner's read pool (never on the GUI thread) and
return frozen snapshots (`BrowserPage`, a tuple of memories) that the browser's table shows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from desktop_mem.engine.api import MemoryEngine, ScoreBreakdown, SearchFilters, SearchResult
from desktop_mem.engine.models import Memory, Problem, Role
from desktop_mem.ui.memories.memory_model import FETCH_BATCH, sort_key

SEARCH_TOP_K = 100
# A search result is a match when a query word occurs in it (keyword hit) or its meaning is
# close: cosine similarity >= the embedding model's `match_similarity` (MemoryEngine.
# match_similarity: MiniLM 0.35, e5 0.78, each measured on the LoCoMo dev set). The read path
# ranks every memory, so without a cut "seafood" listed the whole store. "Show all ranked" shows
# the rest, in order.
# A text this short matches by keyword only: the embedding of "Understood." or "Thanks!" is
# generic and came as close as 0.43 to "daughter" (MiniLM), above the 0.35 cut-off.
SHORT_TEXT_WORDS = 3
# Facts come first, and a fact has its own, lower cut-off (MemoryEngine.match_similarity(facts=
# True)): a question shares few words with "The user lives in Ghent". A fact within this much of
# the best fact's similarity is shown too, down to this much under the fact cut-off, so the best
# fact is not hidden (benchmarks/fact_cutoff.py: e5 keeps 97% of the relevant facts, ~5 of 33
# others shown; 0.78 kept 76%).
NEAR_BEST_FACT = 0.03


@dataclass(frozen=True)
class BrowserQuery:
    """What the browser shows: the search text and the filters."""

    text: str
    conversation_id: str | None
    role: str | None
    kind: str | None
    since: datetime | None
    until: datetime | None
    include_deleted: bool
    show_all_ranked: bool = False
    as_of: datetime | None = None  # time travel: what was live then (validity + git history)
    sort_column: int = -1  # a listing's order: a column (-1: newest first)
    descending: bool = False
    page_size: int = FETCH_BATCH
    keep: int = 0  # a listing read again after a change: list this many rows at once (the place)


# What a new pane lists: everything live, newest first (the page store/first_page.py keeps).
DEFAULT_LISTING = BrowserQuery("", None, None, None, None, None, False)


@dataclass(frozen=True)
class BrowserPage:
    """One answer for the table: rows, their scores when searching, and the problem files."""

    memories: tuple[Memory, ...]
    scores: dict[str, ScoreBreakdown]
    problems: tuple[Problem, ...]
    below_cutoff: int = 0  # ranked results not shown because they do not match
    searched: bool = False  # the rows answer a search (rank order), not a listing
    total: int = -1  # a paged listing: rows in all of it (`memories` is its first page); -1: all here
    any_deleted: bool = False


def is_match(scores: ScoreBreakdown, threshold: float, text: str = "") -> bool:
    """A keyword hit, or close enough in meaning (dense similarity >= threshold) for a text long
    enough for its meaning to say something (SHORT_TEXT_WORDS)."""
    if scores.keyword is not None:
        return True
    if text and len(text.split()) < SHORT_TEXT_WORDS:
        return False
    return scores.dense is not None and scores.dense >= threshold


def load_page(engine: MemoryEngine, query: BrowserQuery) -> BrowserPage:
    """Run in a worker: list or search, then apply the filters the read path does not scope."""
    problems = tuple(engine.problems())
    if query.as_of is not None:
        return _load_as_of(engine, query, problems)
    if not query.text.strip():
        page = engine.list_page(0, max(query.page_size, query.keep), **_listing_options(query))
        return BrowserPage(page.memories, {}, problems, total=page.total, any_deleted=page.any_deleted)
    filters = SearchFilters(
        conversation_id=query.conversation_id,
        roles=(query.role,) if query.role else None,
        kinds=(query.kind,) if query.kind else None,
        since=query.since, until=query.until,
        include_deleted=query.include_deleted,
        include_summaries=query.role in (None, "summary"),
    )
    results = engine.search(query.text, top_k=SEARCH_TOP_K, filters=filters, use_mmr=False)
    if query.conversation_id is not None:  # the read path adds global memories to a scope
        results = [r for r in results if r.memory.conversation_id == query.conversation_id]
    shown = results if query.show_all_ranked else _matches(results, engine.match_similarity(),
                                                           engine.match_similarity(facts=True))
    shown = facts_first(shown)
    return BrowserPage(tuple(r.memory for r in shown), {r.memory.id: r.scores for r in shown},
                       problems, below_cutoff=len(results) - len(shown), searched=True)


def _matches(results: list[SearchResult], threshold: float, fact_threshold: float) -> list[SearchResult]:
    """The results that match: turns and summaries at `threshold`, facts at `fact_threshold` or
    near the best fact (NEAR_BEST_FACT, never under `fact_threshold` - NEAR_BEST_FACT)."""
    dense = [r.scores.dense for r in results if r.memory.role == Role.MEMORY and r.scores.dense is not None]
    best = max(dense, default=None)
    fact_cut = fact_threshold if best is None else max(min(fact_threshold, best - NEAR_BEST_FACT),
                                                       fact_threshold - NEAR_BEST_FACT)
    return [r for r in results
            if is_match(r.scores, fact_cut if r.memory.role == Role.MEMORY else threshold, r.memory.text)]


def facts_first(results: list[SearchResult]) -> list[SearchResult]:
    """The user's facts above the turns that say the same thing; each part in rank order."""
    return sorted(results, key=lambda r: r.memory.role != Role.MEMORY)


def same_listing(a: BrowserQuery, b: BrowserQuery) -> bool:
    """The same listing (filters and order), however many rows each asked for at first."""
    return not a.text.strip() and replace(a, keep=0) == replace(b, keep=0)


def load_more(engine: MemoryEngine, query: BrowserQuery, offset: int) -> tuple[Memory, ...]:
    """Run in a worker: the listing's next page, from `offset`."""
    return engine.list_page(offset, query.page_size, **_listing_options(query)).memories


def _listing_options(query: BrowserQuery) -> dict[str, object]:
    """A listing's filters and order, as engine.list_page takes them (newest first by default)."""
    return {"conversation_id": query.conversation_id, "role": query.role, "kind": query.kind,
            "include_deleted": query.include_deleted, "since": query.since, "until": query.until,
            "key": sort_key(query.sort_column), "descending": query.descending}


def _load_as_of(engine: MemoryEngine, query: BrowserQuery, problems: tuple[Problem, ...]) -> BrowserPage:
    """What the app held as true at `query.as_of`: listed, or searched (history/as_of.py)."""
    assert query.as_of is not None
    if not query.text.strip():
        listed = engine.list_as_of(query.as_of, conversation_id=query.conversation_id, role=query.role,
                                   kind=query.kind)
        listed.reverse()
        return BrowserPage(tuple(listed), {}, problems)
    results = engine.search_as_of(query.text, query.as_of, conversation_id=query.conversation_id,
                                  top_k=SEARCH_TOP_K, roles=(query.role,) if query.role else None)
    shown = [r for r in results if query.kind is None or r.memory.kind == query.kind]
    return BrowserPage(tuple(r.memory for r in shown), {r.memory.id: r.scores for r in shown}, problems,
                       searched=True)
