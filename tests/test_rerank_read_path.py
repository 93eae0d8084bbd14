"""The shipped cross-encoder in the read path: on by default for searches that ask for it (the
chat turn, `desktop-mem search`) over a small fused pool, off by a setting, replaced by a user's
own folder; every result says what the reranker scored."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_mem.engine.facade import MemoryEngine
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
        assert getattr(eng.retriever.reranker, "name", "") == "ms-marco-MiniLM-L-12-v2"
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
        assert eng.retriever.reranker is None
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
        assert getattr(eng.retriever.reranker, "folder", None) == folder
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


def test_the_time_budget_shrinks_the_pool_then_skips_the_cross_encoder(
    make_config: Callable[..., Any],
) -> None:
    with MemoryEngine(make_config(retrieval__rerank_budget_ms=1)) as eng:
        _fill(eng)
        first = eng.search("What did Caroline research?", conversation_id="c1", rerank=True)
        # No cost known yet: the whole pool is scored, and that measures the cost per pair.
        assert all(r.scores.rerank is not None for r in first)
        # A real cross-encoder pair takes far more than 1 ms / 5 candidates: the next search
        # keeps the fused order instead of blowing the budget.
        second = eng.search("What did Caroline research?", conversation_id="c1", rerank=True)
        assert second and all(r.scores.rerank is None for r in second)
        assert second[0].memory.text == TURNS[2]
    with MemoryEngine(make_config(retrieval__rerank_budget_ms=0)) as eng:  # 0: no limit
        eng.open_index()
        for _ in range(2):
            ranked = eng.search("What did Caroline research?", conversation_id="c1", rerank=True)
            assert all(r.scores.rerank is not None for r in ranked)
