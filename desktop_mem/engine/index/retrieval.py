"""The read path (reference 001 §3, extended): scopes, dense + keyword candidates fused,
optional cross-encoder rerank with a threshold, recency weighting, MMR, injection text.

Fusion is a convex combination of min-max normalised scores (keyword and dense), because on
conversational data keyword matching alone beats MiniLM vectors alone, while each finds evidence
the other misses. Every result carries its score breakdown so the UI can explain it.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING

from desktop_mem.engine.config import default
from desktop_mem.engine.index.relative_dates import with_dates
from desktop_mem.engine.models import GLOBAL_CONVERSATION, TURN_ROLES, Memory, Role, utc_now

if TYPE_CHECKING:  # heavy (chromadb, onnxruntime, numpy): loaded when an index is built or searched
    import numpy as np
    import numpy.typing as npt

    from desktop_mem.engine.index.embedder import Embedder
    from desktop_mem.engine.index.keyword_index import KeywordIndex
    from desktop_mem.engine.index.reranker import Reranker
    from desktop_mem.engine.index.vector_index import VectorHit, VectorIndex

    Vector = npt.NDArray[np.float32]

OVERSAMPLE = 3.0  # unfiltered hits fetched per wanted in-scope hit (divided by the scope's share)
MAX_OVERSAMPLED = 1500  # beyond this a filtered query is cheaper
# A scope whose vectors fit the vector index's resident blocks is searched exactly over them: ~1 ms
# for 9.3k memories, where chroma's HNSW search limited to a scope's ids walks much of the graph
# (at 100k memories: 110-120 ms for 300 ids, 15-20 ms for 9.3k; load ~10 and ~1). The nearest
# RESIDENT_FIRST x n are ranked first; the rest only when the filters drop too many of them.
RESIDENT_FIRST = 4
MMR_POOL_PER_PICK = 3  # MMR considers the best 3·k candidates (k = results wanted) ...
MMR_MIN_POOL = 20  # ... and at least 20
# Under the rerank budget the cross-encoder scores the pool best first, a few pairs at a time (as
# many as it runs at once), and stops when the next few would end after the budget: the rest keep
# their fused order below the scored ones. Each search so gets what fits now. Before, a cost per
# pair measured on earlier searches decided the pool up front and skipped the cross-encoder when
# fewer than 10 fitted; after a load spike that estimate kept it off for many searches (LoCoMo
# beside two CPU hogs: scored in 148 of 306 chat turns, recall@5 0.658; docs/benchmarks.md).
# Any scored head helps or is neutral: the head is the fused top n, so for n <= top_k it only
# reorders what the fused order shows, and from 6 on it finds more (LoCoMo recall@5 with n scored:
# 6: 0.663, 10: 0.687, 14: 0.700, 20: 0.711; none: 0.642).


# Per-request read-path knobs: top_k, recency_weight, score_threshold (None: the setting).
RetrievalOverrides = Mapping[str, float | int | None]


@dataclass(frozen=True)
class RetrievalSettings:
    """Knobs of the read path; defaults from reference 001 §6 (those that are settings are
    declared once, in engine/config.py, and taken from there)."""

    top_k: int = default("retrieval.top_k")
    mmr_lambda: float = default("retrieval.mmr_lambda")
    recency_weight: float = default("retrieval.recency_weight")
    recency_days: float = 30.0
    # 001 §6 said 0.35 for ms-marco-MiniLM-L-6; with the shipped L-12 model conversational turns
    # that hold the answer ("Yes, it was amazing!") score near 0: even 0.01 cut LoCoMo recall@5
    # from 0.704 to 0.676, and 0.35 to 0.617. Off by default; a setting for a stricter model.
    score_threshold: float = default("retrieval.score_threshold")
    keyword_weight: float = 0.6
    candidates: int = 40
    # The cross-encoder scores only the best `rerank_pool` fused candidates: its cost is per pair
    # (docs/benchmarks.md), and the evidence is almost always in the fused top 20 already.
    rerank_pool: int = default("retrieval.rerank_pool")
    # Wall-time budget of one rerank: the pool is scored best first until the next step would end
    # after it; the rest keep their fused order below (0: no budget). See docs/benchmarks.md.
    rerank_budget_ms: float = default("retrieval.rerank_budget_ms")
    # relevance = w * cross-encoder + (1 - w) * fused: the fused score still knows about exact
    # keyword matches the cross-encoder underrates (LoCoMo recall@5: 0.687 at w = 1, 0.704 at 0.8).
    rerank_weight: float = 0.8


@dataclass(frozen=True)
class SearchFilters:
    """Which memories may be returned. `conversation_id` scopes to it + global; `project` (a
    project's scope, store/projects.py) adds that project's memories to the scope."""

    conversation_id: str | None = None
    project: str | None = None
    roles: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_deleted: bool = False
    include_summaries: bool = False


@dataclass(frozen=True)
class ScoreBreakdown:
    """Why a memory was chosen: each stage's score (None where a stage did not run)."""

    keyword: float | None
    dense: float | None
    fused: float
    rerank: float | None
    relevance: float
    recency: float
    final: float
    mmr_rank: int | None = None


@dataclass(frozen=True)
class SearchResult:
    """A memory with its scores."""

    memory: Memory
    scores: ScoreBreakdown
    embedding: Vector | None = field(default=None, repr=False, compare=False)


MemoryLookup = Callable[[str], Memory | None]


class Retriever:
    """Runs the read path over the indexes; memories are resolved through the catalog."""

    def __init__(
        self,
        embedder: Embedder,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        lookup: MemoryLookup,
        settings: RetrievalSettings | None = None,
        reranker: Reranker | None = None,
        scope_share: Callable[[Sequence[str]], float] | None = None,
        scope_ids: Callable[[Sequence[str]], list[str]] | None = None,
    ) -> None:
        self.embedder = embedder
        self.vectors = vectors
        self.keywords = keywords
        self.lookup = lookup
        self.settings = settings or RetrievalSettings()
        self.reranker = reranker
        self.scope_share = scope_share
        self.scope_ids = scope_ids  # every id a scope holds (the catalog's), for exact scoped search
        self.clock: Callable[[], float] = time.perf_counter  # seconds; the rerank budget's clock

    def search(
        self,
        query: str,
        filters: SearchFilters | None = None,
        *,
        top_k: int | None = None,
        use_mmr: bool = True,
        rerank: bool = False,
        now: datetime | None = None,
        settings: RetrievalSettings | None = None,
    ) -> list[SearchResult]:
        """The best memories for `query`, most relevant first, each with its score breakdown.

        `rerank` asks for the cross-encoder (when one is configured): the chat turn's read path
        and explicit searches, where precision matters and ~100 ms is hidden behind the LLM. Lists
        that want recall and speed (the write path's neighbourhood, search-as-you-type) skip it.
        `settings` replaces the configured knobs for this one search (a request's overrides).
        """
        if settings is not None and settings != self.settings:
            once = copy.copy(self)
            once.settings = settings
            return once.search(query, filters, top_k=top_k, use_mmr=use_mmr, rerank=rerank, now=now)
        f = filters or SearchFilters()
        k = top_k or self.settings.top_k
        if not query.strip():
            return []
        pool = max(self.settings.candidates, k * 3)
        query_vec = self.embedder.embed_query(query)
        dense = self._dense(query_vec, f, pool)
        keyword = self._keyword(query, f, pool)
        candidates = self._fuse(dense, keyword, f, now or utc_now())
        if not candidates:
            return []
        if rerank and self.reranker is not None and self.settings.rerank_pool > 0:
            candidates = self._rerank(query, self.reranker, candidates, self.settings.rerank_pool)
        candidates.sort(key=lambda r: r.scores.final, reverse=True)
        if not use_mmr:
            return candidates[:k]
        return self._mmr(candidates, k)

    # ------------------------------------------------------------ candidates

    def _scopes(self, f: SearchFilters) -> list[str] | None:
        if f.conversation_id is None and f.project is None:
            return None
        return list(dict.fromkeys([c for c in (f.conversation_id, f.project) if c] + [GLOBAL_CONVERSATION]))

    def _dense(self, query_vec: Vector, f: SearchFilters, n: int) -> dict[str, tuple[float, Vector | None]]:
        # Only selective conditions reach chroma (the scope, an explicit role filter): "not
        # deleted", "not a summary" match nearly every row; _passes() applies them on the catalog
        # afterwards, and a margin of extra hits covers what it drops. A scope never becomes a
        # chroma `where`: its metadata filter costs time in proportion to the whole collection
        # (100k memories: 83-213 ms for a conversation + global, 5 ms unfiltered).
        roles = {"role": {"$in": list(f.roles)}} if f.roles else None
        scopes = self._scopes(f)
        if scopes is not None:
            resident = self._resident(query_vec, scopes, f, n)
            if resident is not None:
                return resident
            ids = self.scope_ids(scopes) if self.scope_ids is not None else None
            # A scope too large to hold in memory: an oversampled unfiltered HNSW query usually
            # finds enough hits in the scope; when the scope's memories are far from the query
            # (other conversations hold the near ones), the search is limited to the scope's ids
            # (7-27 ms for 3k-10k ids at 100k, load ~10).
            share = self.scope_share(scopes) if self.scope_share else 1.0
            fetch = min(MAX_OVERSAMPLED, int(n * OVERSAMPLE / max(share, 1e-6)))
            hits = (self.vectors.query(query_vec, fetch, None, with_payload=False, with_embeddings=False)
                    if fetch > n else [])
            kept = self._in_scope(hits, f, scopes if ids is None else set(ids), n)
            if len(kept) >= max(n // 4, min(n, 10)):  # enough to fuse with the keyword candidates
                # No vectors yet: MMR fetches them in one call with the keyword-only candidates'.
                return {h.id: (h.similarity, None) for h in kept}
            if ids is not None:
                hits = self.vectors.query(query_vec, n + n // 2, None, with_payload=False, ids=ids)
                return self._kept(hits, f, n)
            clause: dict[str, object] = {"conversation_id": {"$in": scopes}}
            hits = self.vectors.query(query_vec, n + n // 2, {"$and": [clause, roles]} if roles else clause,
                                      with_payload=False)
            return self._kept(hits, f, n)
        return self._kept(self.vectors.query(query_vec, n + n // 2, roles, with_payload=False), f, n)

    def _kept(self, hits: list[VectorHit], f: SearchFilters, n: int
              ) -> dict[str, tuple[float, Vector | None]]:
        """The first n hits whose memory passes the filters, with their vectors (the catalog is
        asked about the nearest only, until n pass)."""
        kept: dict[str, tuple[float, Vector | None]] = {}
        for h in hits:
            if (m := self.lookup(h.id)) is not None and _passes(m, f):
                kept[h.id] = (h.similarity, h.embedding)
                if len(kept) == n:
                    break
        return kept

    def prepare(self) -> None:
        """Load the models a chat turn's read path runs (the local query embedder's session, the
        cross-encoder), so the turn does not wait for them: both load on first use (~0.2 s each;
        the cross-encoder is released again after `retrieval.rerank_idle_release_s` idle)."""
        if getattr(self.embedder, "loaded", True) is False:
            self.embedder.session  # type: ignore[attr-defined]  # noqa: B018 - OnnxEmbedder builds it
        if self.reranker is not None and self.settings.rerank_pool > 0:
            getattr(self.reranker, "prepare", lambda: None)()

    def hold(self, conversation_id: str = GLOBAL_CONVERSATION) -> None:
        """Read a conversation's vectors into memory now (the global facts: every chat turn's
        scope holds them), not at the first search that needs them (0.3-0.8 s at 100k)."""
        scope_ids = self.scope_ids
        if scope_ids is None:
            return
        import numpy as np

        unit = np.full(self.embedder.dim, self.embedder.dim ** -0.5, dtype=np.float32)
        self.vectors.nearest_in(unit, [conversation_id], 1, lambda c: scope_ids([c]))

    def _resident(self, query_vec: Vector, scopes: list[str], f: SearchFilters, n: int
                  ) -> dict[str, tuple[float, Vector | None]] | None:
        """The scope's n nearest memories that pass the filters, exactly, from the vector index's
        resident blocks; None when the scope does not fit them (or the ids of a conversation
        cannot be known)."""
        scope_ids = self.scope_ids
        if scope_ids is None:
            return None

        def ids_of(conversation: str) -> list[str]:
            return scope_ids([conversation])

        want = RESIDENT_FIRST * n
        while True:
            hits = self.vectors.nearest_in(query_vec, scopes, want, ids_of)
            if hits is None:
                return None
            kept = self._kept(hits, f, n)
            if len(kept) >= n or len(hits) < want:
                return kept
            want *= 8  # the filters dropped many (deleted, summaries, a date range): look further

    def _in_scope(
        self, hits: list[VectorHit], f: SearchFilters, scope: list[str] | set[str], n: int
    ) -> list[VectorHit]:
        """The first n hits (nearest first) whose memory is in scope and passes the filters;
        `scope` is the scope's conversations (a list) or the ids it holds (a set: most hits of
        a small scope are then dropped without a catalog lookup)."""
        members = scope if isinstance(scope, set) else None
        kept: list[VectorHit] = []
        for h in hits:  # stop at n: at LoCoMo size ~80 of the hits are looked at, not all
            if members is not None and h.id not in members:
                continue
            m = self.lookup(h.id)
            if m is not None and (members is not None or m.conversation_id in scope) and _passes(m, f):
                kept.append(h)
                if len(kept) == n:
                    break
        return kept

    def _keyword(self, query: str, f: SearchFilters, n: int) -> dict[str, float]:
        hits = self.keywords.query(
            query, n, conversation_ids=self._scopes(f), roles=list(f.roles) if f.roles else None,
            exclude_roles=() if f.include_summaries or f.roles else ("summary",),
            include_deleted=f.include_deleted,
        )
        return {h.id: h.score for h in hits}

    def _fuse(
        self,
        dense: dict[str, tuple[float, Vector | None]],
        keyword: dict[str, float],
        f: SearchFilters,
        now: datetime,
    ) -> list[SearchResult]:
        # Score fusion, not reciprocal-rank fusion: RRF throws away how far ahead the best
        # keyword hit is, and measured lower on LoCoMo (recall@5 0.531 vs 0.573, same index).
        # Each list is z-scored (a candidate missing from a list gets that list's lowest score),
        # not min-maxed: e5's cosines sit in a narrow band, and min-max over 40 of them stretches
        # noise between the two extremes (LoCoMo recall@5 0.633 -> 0.641, same weights). The sum
        # is then min-maxed to [0, 1] over the candidates so it can be blended and explained.
        d_norm = _zscore({i: s for i, (s, _) in dense.items()})
        k_norm = _zscore(keyword)
        if len(set(keyword.values())) == 1 and dense:
            # Keyword hits that do not spread (one hit: a rare name only one memory holds) all
            # z-score to 0, the floor the candidates the keywords missed get too, so the only
            # memory that has the word ranked like one that has not (issue #25: a hand-edited
            # fact was not found by its new name at 100k memories, where the meaning search does
            # not reach it). Here a missed word counts as what it is, a keyword score of 0.
            k_norm = _zscore({**dict.fromkeys(dense, 0.0), **keyword})
        d_floor, k_floor = min(d_norm.values(), default=0.0), min(k_norm.values(), default=0.0)
        w = self.settings.keyword_weight if keyword else 0.0
        ids = list(dict.fromkeys([*keyword, *dense]))
        combined = _minmax({i: w * k_norm.get(i, k_floor) + (1 - w) * d_norm.get(i, d_floor) for i in ids})
        results: list[SearchResult] = []
        for mid in ids:
            memory = self.lookup(mid)
            if memory is None or not _passes(memory, f):
                continue
            fused = combined[mid]
            recency = math.exp(-max((now - memory.created_at).total_seconds(), 0.0) / 86400.0
                               / self.settings.recency_days)
            rw = self.settings.recency_weight
            scores = ScoreBreakdown(
                keyword=keyword.get(mid), dense=dense[mid][0] if mid in dense else None, fused=fused,
                rerank=None, relevance=fused, recency=recency, final=(1 - rw) * fused + rw * recency,
            )
            results.append(SearchResult(memory, scores, dense[mid][1] if mid in dense else None))
        return results

    def _scored_in_time(self, query: str, reranker: Reranker, pool: list[SearchResult]) -> list[float]:
        """Cross-encoder scores of the pool's first candidates, best first, as many as the budget
        allows: a step is as many pairs as the reranker runs at once, and the next step is not
        started when the steps so far say it would end after the budget (0: no budget). Once they
        say the whole rest fits, it is scored in one call (its threads never wait for each other
        between steps: on a quiet machine stepping to the end cost ~10 % more wall time)."""
        budget = self.settings.rerank_budget_ms / 1000
        step = max(1, int(getattr(reranker, "workers", 1)))
        if budget <= 0:
            return self._cross_scores(query, reranker, pool)
        # A released cross-encoder loads now, not inside the first step: a load there (~0.3 s)
        # made the step look too slow for the rest, and only 2 of 20 were scored (#25).
        getattr(reranker, "prepare", lambda: None)()
        start = self.clock()
        scores: list[float] = []
        for at in range(0, len(pool), step):
            if at:
                elapsed = self.clock() - start
                per_step = elapsed / (at // step)
                if elapsed + per_step * -(-(len(pool) - at) // step) <= budget:
                    return scores + self._cross_scores(query, reranker, pool[at:])
                if elapsed + per_step > budget:
                    break
            scores += self._cross_scores(query, reranker, pool[at : at + step])
        return scores

    def _rerank(
        self, query: str, reranker: Reranker, candidates: list[SearchResult], size: int
    ) -> list[SearchResult]:
        candidates.sort(key=lambda r: r.scores.final, reverse=True)
        relevance = self._scored_in_time(query, reranker, candidates[:size])
        pool, rest = candidates[: len(relevance)], candidates[len(relevance) :]
        rw, w = self.settings.recency_weight, self.settings.rerank_weight
        kept: list[SearchResult] = []
        for cand, rerank in zip(pool, relevance, strict=True):
            if rerank < self.settings.score_threshold:
                continue  # 001 §3 step 2: hard-pruned
            s = cand.scores
            rel = w * rerank + (1 - w) * s.fused
            final = (1 - rw) * rel + rw * s.recency
            scores = ScoreBreakdown(s.keyword, s.dense, s.fused, rerank, rel, s.recency, final)
            kept.append(SearchResult(cand.memory, scores, cand.embedding))
        return kept + self._below(rest, kept, len(pool) >= size)

    @staticmethod
    def _below(rest: list[SearchResult], head: list[SearchResult], full_pool: bool) -> list[SearchResult]:
        """Candidates the budget left unscored, in their fused order below every scored one (their
        final scaled into [0, the head's lowest)); none when the whole configured pool was scored."""
        if full_pool or not rest or not head:
            return []
        floor = min(r.scores.final for r in head)
        top = max(rest[0].scores.final, 1e-9)
        return [SearchResult(r.memory, replace(r.scores, final=0.99 * floor * max(r.scores.final, 0.0) / top),
                             r.embedding) for r in rest]

    @staticmethod
    def _cross_scores(query: str, reranker: Reranker, pool: list[SearchResult]) -> list[float]:
        """Cross-encoder relevance per candidate; facts and summaries (written about "the user")
        are scored against the query turned to the third person (see reranker.about_the_user)."""
        from desktop_mem.engine.index.reranker import about_the_user

        third = [i for i, c in enumerate(pool) if c.memory.role in (Role.MEMORY, Role.SUMMARY)]
        first = [i for i, c in enumerate(pool) if c.memory.role not in (Role.MEMORY, Role.SUMMARY)]
        scores = [0.0] * len(pool)
        for indices, text in ((first, query), (third, about_the_user(query))):
            if indices:
                for i, score in zip(indices, reranker.score(text, [pool[i].memory.text for i in indices]),
                                    strict=True):
                    scores[i] = score
        return scores

    # ------------------------------------------------------------------ MMR

    def _mmr(self, ranked: list[SearchResult], k: int) -> list[SearchResult]:
        """Maximal Marginal Relevance: λ·relevance − (1−λ)·max cosine to what is already chosen."""
        import numpy as np  # not at import: the app's start-up path imports this module

        if not ranked:  # the reranker's threshold can prune every candidate
            return []
        lam = self.settings.mmr_lambda
        # MMR weighs relevance against a cosine similarity in [0, 1], so relevance must span
        # [0, 1] too: rescale the final scores over the candidate pool (best = 1). Otherwise the
        # trade-off drifts with the score scale - e.g. final = 0.8 * fused for memories older than
        # a few months (recency ~ 0), which let redundancy win too often (LoCoMo recall@5 0.590
        # -> 0.605 with the rescale; 0.612 with no MMR at all).
        rel = list(_minmax({str(i): r.scores.final for i, r in enumerate(ranked)}).values())
        # Only the best few per pick can be picked: at λ = 0.7 a candidate far down the list needs
        # every one above it to be a near-duplicate of what is chosen. On LoCoMo the picks are the
        # same at 3·k as over the whole pool, and fetching the vectors of the rest was half of
        # MMR's time (cProfile).
        size = max(MMR_POOL_PER_PICK * k, MMR_MIN_POOL)
        ranked, rel = ranked[:size], rel[:size]
        missing = [r.memory.id for r in ranked if r.embedding is None]
        stored = self.vectors.get_embeddings(missing, exact=False) if missing else {}
        vectors = [r.embedding if r.embedding is not None else stored.get(r.memory.id) for r in ranked]
        # Cosines of unit vectors; a memory without a vector has none.
        has = np.array([v is not None for v in vectors])
        dim = next((v.shape[0] for v in vectors if v is not None), 1)
        matrix = np.stack([v if v is not None else np.zeros(dim, np.float32) for v in vectors])
        # Vectorised: `closest[i]` is candidate i's highest cosine to anything chosen so far,
        # updated once per pick (a Python loop over every candidate per pick: 14 ms under load).
        # A memory without a vector has no penalty; one chosen without a vector counts as cosine 0.
        gain = lam * np.asarray(rel, dtype=np.float64)
        closest = np.full(len(ranked), -np.inf)
        open_ = np.ones(len(ranked), dtype=bool)
        chosen: list[int] = []
        while len(chosen) < min(k, len(ranked)):
            penalty = np.where(np.isfinite(closest), closest, 0.0)
            score = np.where(open_, gain - (1 - lam) * penalty, -np.inf)
            best = int(np.argmax(score))  # the first of equal scores, as before
            chosen.append(best)
            open_[best] = False
            # One column of cosines per pick, not the whole pool x pool matrix (k of ~400 columns:
            # the matrix was 14 ms of a 58 ms query at 1k memories, cProfile).
            column = matrix @ matrix[best] if has[best] else np.zeros(len(ranked))
            closest = np.where(has, np.maximum(closest, column), closest)
        out: list[SearchResult] = []
        for rank, i in enumerate(chosen, start=1):
            r = ranked[i]
            out.append(SearchResult(r.memory, replace(r.scores, mmr_rank=rank), r.embedding))
        return out


def _minmax(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo < 1e-12:
        return {k: 1.0 for k in scores}
    return {k: (v - lo) / (hi - lo) for k, v in scores.items()}


def _zscore(scores: dict[str, float]) -> dict[str, float]:
    """(score - mean) / standard deviation; all 0 when the scores do not spread."""
    import numpy as np

    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    spread = float(values.std())
    if spread < 1e-12:
        return {k: 0.0 for k in scores}
    mean = float(values.mean())
    return {k: (v - mean) / spread for k, v in scores.items()}


def _passes(m: Memory, f: SearchFilters) -> bool:
    if m.deleted and not f.include_deleted:
        return False
    if m.role == Role.SUMMARY and not (f.include_summaries or (f.roles and "summary" in f.roles)):
        return False
    if f.roles and m.role not in f.roles:
        return False
    if f.kinds and m.kind not in f.kinds:
        return False
    if f.since and m.created_at < f.since:
        return False
    if f.until and m.created_at > f.until:
        return False
    return not m.expired()


def injection_lines(results: Sequence[SearchResult], notes: Mapping[str, str] | None = None, *,
                    dated: bool = False) -> list[str]:
    """001 §3 step 5: each memory as `[<role>] <content>` (scores are not shown to the model).

    ``notes`` adds a label by memory id, e.g. `[memory; current; replaces: ...]` or
    `[user; earlier message, out of date: ...]`, so the model can tell current from superseded.
    ``dated`` adds when a turn was said (`[user; said 8 May 2023]`, the local date): a
    question about *when* is answered from it, and "yesterday" in the turn is written out as the
    day it means, "yesterday (7 May 2023)" (relative_dates.py, any language dateparser reads).
    """
    notes = notes or {}
    lines = []
    for r in results:
        label = [str(r.memory.role)]
        if dated and r.memory.role in TURN_ROLES:  # a fact's labels say when it was true
            label.append(f"said {said_on(r.memory.created_at)}")
        if r.memory.id in notes:
            label.append(notes[r.memory.id])
        text = " ".join(r.memory.text.split())
        if dated and r.memory.role in TURN_ROLES:
            text = with_dates(text, r.memory.created_at)  # "yesterday (7 May 2023)"
        lines.append(f"[{'; '.join(label)}] {text}")
    return lines


def said_on(when: datetime) -> str:
    """A day as people write it, in local time: `8 May 2023` (a weekday costs tokens on every
    recalled turn; the model is given today's weekday)."""
    local = when.astimezone()
    return f"{local.day} {local:%B %Y}"

