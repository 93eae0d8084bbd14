"""The shipped cross-encoder in the read path: on by default for searches that ask for it (the
chat turn, `desktop-mem search`) over a small fused pool, off by a setting, replaced by a user's
own folder; every result says what the reranker scored."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.retrieval import SearchFilters
from tests.tiny_cross_encoder import write_cross_encoder

TURNS = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: I painted a sunrise over the lake last weekend.",
    "Caroline: Researching adoption agencies, it has been my dream to have a family.",
    "Melanie: My kids loved the camping trip to the mountains.",
    "Caroline: The counseling workshop on trans mental health was eye-opening.",
    "Melanie: We went to the beach and the kids built a huge sandcastle.",
]


def _fill(eng: MemoryEngine) -> None:
    for text in TURNS:
        eng.add(text, conversation_id="c1", role="user")
    eng.open_index()


def test_default_reranks_a_small_pool_with_the_shipped_model(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config(retrieval__rerank_pool=4, retrieval__rerank_budget_ms=0)) as eng:
        _fill(eng)
        assert getattr(eng._parts.search_index.retriever.reranker, "name", "") == "ms-marco-MiniLM-L-12-v2"
        results = eng.search("What did Caroline research?", conversation_id="c1", rerank=True)
        assert results[0].memory.text == TURNS[2]
        assert all(r.scores.rerank is not None for r in results)
        assert len(results) == 4  # only the pool of 4 was scored; nothing else is padded in
        # Lists that want recall and speed (write path, search-as-you-type) do not ask for it.
        plain = eng.search("What did Caroline research?", conversation_id="c1")
        assert len(plain) == 5 and all(r.scores.rerank is None for r in plain)


def test_rerank_off_is_the_fused_read_path(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config(retrieval__rerank=False)) as eng:
        _fill(eng)
        assert eng._parts.search_index.retriever.reranker is None
        results = eng.search("What did Caroline research?", conversation_id="c1", rerank=True)
        assert results[0].memory.text == TURNS[2]
        assert all(r.scores.rerank is None for r in results)
        assert results[0].scores.relevance == results[0].scores.fused


def test_a_users_own_folder_replaces_the_shipped_model(make_config: Callable[..., Any],
                                                       tmp_path: Path) -> None:
    folder = write_cross_encoder(tmp_path / "my-cross-encoder")
    with MemoryEngine(make_config(retrieval__reranker_path=str(folder),
                                  retrieval__score_threshold=0.0)) as eng:
        _fill(eng)
        assert getattr(eng._parts.search_index.retriever.reranker, "folder", None) == folder
        results = eng.search("kids beach sandcastle", conversation_id="c1", rerank=True)
        # The tiny model scores shared words: the turn with all three comes first.
        assert results[0].memory.text == TURNS[5]
        assert results[0].scores.rerank is not None


def test_facts_about_the_user_are_scored_against_the_question_in_third_person(
    make_config: Callable[..., Any],
) -> None:
    with MemoryEngine(make_config(retrieval__rerank_budget_ms=0)) as eng:
        eng.add("Hi! I'm Mara, I live in Ghent", conversation_id="c1", role="user")
        eng.add("The user lives in Leuven", conversation_id="c1", role="memory")
        eng.add("The user has a greyhound named Biscuit", conversation_id="c1", role="memory")
        eng.open_index()
        results = eng.search("Where do I live?", conversation_id="c1", rerank=True)
        # As asked ("Where do I live?"), ms-marco scores the fact 0.12 and the old turn 0.40.
        assert results[0].memory.text == "The user lives in Leuven"
        assert results[0].scores.rerank is not None and results[0].scores.rerank > 0.9
        dog = eng.search("What is my dog called?", conversation_id="c1", rerank=True)
        assert dog[0].memory.text == "The user has a greyhound named Biscuit"


class _Timed:
    """The real cross-encoder, with a clock that says each pair took `ms_per_pair` (set, not
    timed, so the tests do not depend on this machine's speed or load)."""

    def __init__(self, reranker: Any, ms_per_pair: float) -> None:
        self.reranker, self.ms_per_pair, self.now = reranker, ms_per_pair, 0.0
        self.workers = reranker.workers  # pairs it scores at once: one step of the budget
        self.scored = 0
        self.calls = 0

    def clock(self) -> float:
        return self.now

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.now += self.ms_per_pair * len(texts) / 1000
        self.scored += len(texts)
        self.calls += 1
        return list(self.reranker.score(query, texts))


def _retriever_on_a_busy_machine(eng: MemoryEngine, ms_per_pair: float) -> tuple[Any, _Timed]:
    retriever = eng._parts.search_index.retriever
    timed = _Timed(retriever.reranker, ms_per_pair)
    retriever.reranker, retriever.clock = timed, timed.clock
    return retriever, timed


def test_a_tight_budget_scores_the_best_candidates_that_fit_and_still_returns_top_k(
    make_config: Callable[..., Any],
) -> None:
    """On a busy machine the chat turn gets the cross-encoder over the best candidates that fit,
    not the plain fused order, and still gets every result it asked for."""
    with MemoryEngine(make_config(retrieval__rerank_budget_ms=45, retrieval__rerank_pool=20)) as eng:
        for i in range(8):
            eng.add(f"Melanie: filler turn {i} about the garden and the weather today.", conversation_id="c1",
                    role="user")
        _fill(eng)
        retriever, timed = _retriever_on_a_busy_machine(eng, ms_per_pair=10.0)
        timed.ms_per_pair = 10.0 / timed.workers  # one step (the pairs it runs at once): 10 ms
        results = retriever.search("What did Caroline research?", SearchFilters(conversation_id="c1"),
                                   top_k=12, rerank=True, use_mmr=False)
        assert len(results) == 12
        scored = [r for r in results if r.scores.rerank is not None]
        # Steps of 10 ms against 45 ms: after 4 steps (40 ms) a 5th would end after the budget.
        assert len(scored) == 4 * timed.workers == timed.scored
        assert results[: len(scored)] == scored  # the scored head ranks first
        assert results[0].memory.text == TURNS[2]
        tail = results[len(scored):]
        assert [r.scores.fused for r in tail] == sorted((r.scores.fused for r in tail), reverse=True)


def test_a_budget_too_small_for_the_pool_scores_only_the_best_few(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config(retrieval__rerank_budget_ms=1)) as eng:
        _fill(eng)
        fused = eng.search("What did Caroline research?", conversation_id="c1")
        retriever, timed = _retriever_on_a_busy_machine(eng, ms_per_pair=50.0)
        results = retriever.search("What did Caroline research?", SearchFilters(conversation_id="c1"),
                                   rerank=True, use_mmr=False)
        # One step (the pairs the reranker runs at once) is scored, then the budget is spent: the
        # fused best few, reordered by the cross-encoder, and the fused order below them.
        assert timed.scored == timed.workers
        head = {r.memory.id for r in results[: timed.workers]}
        assert head == {r.memory.id for r in fused[: timed.workers]}
        assert all(r.scores.rerank is not None for r in results[: timed.workers])
        assert all(r.scores.rerank is None for r in results[timed.workers:])
    with MemoryEngine(make_config(retrieval__rerank_budget_ms=0)) as eng:  # 0: no limit
        eng.open_index()
        retriever, timed = _retriever_on_a_busy_machine(eng, ms_per_pair=50.0)
        ranked = eng.search("What did Caroline research?", conversation_id="c1", rerank=True)
        assert all(r.scores.rerank is not None for r in ranked) and timed.scored == len(TURNS)


def test_after_a_load_spike_the_next_search_gets_the_whole_pool_again(
    make_config: Callable[..., Any],
) -> None:
    """A load spike must not turn the cross-encoder off for the searches after it: each search
    scores what fits in its own budget, now (it used to carry a cost measured during the spike
    and skip the cross-encoder for several searches)."""
    with MemoryEngine(make_config(retrieval__rerank_budget_ms=500)) as eng:
        _fill(eng)
        retriever, timed = _retriever_on_a_busy_machine(eng, ms_per_pair=1000.0)  # the spike
        spiked = eng.search("What did Caroline research?", conversation_id="c1", rerank=True)
        assert sum(r.scores.rerank is not None for r in spiked) == timed.workers
        timed.ms_per_pair = 10.0  # the load has gone
        timed.calls = 0
        calm = eng.search("What did Caroline research?", conversation_id="c1", rerank=True)
        assert all(r.scores.rerank is not None for r in calm)
        assert calm[0].memory.text == TURNS[2]
        # The first step said the rest fits: it was scored in one call, its threads not waiting for
        # each other after every step.
        assert timed.calls == 2


def test_a_memorys_cross_encoder_score_does_not_depend_on_the_rest_of_the_pool() -> None:
    """The same question and memory get the same score whatever else is in the pool (the int8
    model quantises per run: batched with other pairs, a score moved by up to a few hundredths)."""
    from desktop_mem.engine.index.reranker import OnnxReranker

    reranker = OnnxReranker()
    question = "What did Caroline research?"
    alone = [reranker.score(question, [text])[0] for text in TURNS]
    together = reranker.score(question, [*TURNS, "Melanie: " + "a very long story about the lake " * 30])
    assert together[: len(TURNS)] == alone
