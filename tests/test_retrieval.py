"""The read path over a real store: real files, git, the MiniLM ONNX model and chromadb.

What a user would notice: deleted memories stop being found and come back on restore, another
conversation's memories never leak in, filters filter, every result explains its score, a lost
index is rebuilt from the files with the same answers, and a configured reranker prunes.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.retrieval import SearchFilters, injection_lines
from tests.tiny_cross_encoder import write_cross_encoder

FACTS = [
    "The user has a dog named Biscuit, a greyhound",
    "The user has a tabby cat named Miso",
    "The user works as a nurse at the city hospital",
    "The user lives in Berlin",
    "The user likes sushi and dislikes pizza",
    "The user is allergic to peanuts",
    "The user plays tennis every weekend",
    "The user's favourite colour is green",
]


@pytest.fixture
def indexed(make_config: Callable[..., Any]) -> Iterator[MemoryEngine]:
    """A store with global facts, two conversations of turns, and an open index."""
    eng = MemoryEngine(make_config())
    for text in FACTS:
        eng.add(text)
    eng.add("I went hiking at the lake trail this weekend", conversation_id="trip", role="user")
    eng.add("Which pet do you take hiking?", conversation_id="trip", role="assistant")
    eng.add("The greyhound Biscuit hates the lake", conversation_id="other", role="user")
    eng.open_index()
    yield eng
    eng.close()


def ids(results: list[Any]) -> list[str]:
    return [r.memory.id for r in results]


def find(engine: MemoryEngine, text: str) -> str:
    return next(m.id for m in engine.list_memories(include_deleted=True) if m.text == text)


def test_the_best_match_comes_first_with_a_full_score_breakdown(indexed: MemoryEngine) -> None:
    results = indexed.search("what is my dog called")
    assert results[0].memory.text == FACTS[0]
    assert len(results) == 5
    assert [r.scores.mmr_rank for r in results] == [1, 2, 3, 4, 5]
    top = results[0].scores
    assert top.keyword is not None and top.dense is not None
    assert 0.0 <= top.fused <= 1.0 and top.relevance == top.fused and top.rerank is None
    assert 0.99 <= top.recency <= 1.0  # written seconds ago
    assert top.final == pytest.approx(0.8 * top.relevance + 0.2 * top.recency)
    assert injection_lines(results[:1]) == [f"[memory] {FACTS[0]}"]


def test_soft_delete_leaves_search_and_restore_brings_it_back(indexed: MemoryEngine) -> None:
    peanuts = find(indexed, FACTS[5])
    assert ids(indexed.search("allergic to peanuts"))[0] == peanuts
    indexed.delete(peanuts)
    assert peanuts not in ids(indexed.search("allergic to peanuts", top_k=20))
    assert peanuts in ids(indexed.search("allergic to peanuts", filters=SearchFilters(include_deleted=True)))
    indexed.restore(peanuts)
    assert ids(indexed.search("allergic to peanuts"))[0] == peanuts


def test_a_replaced_memory_is_found_by_its_new_text_only(indexed: MemoryEngine) -> None:
    berlin = find(indexed, FACTS[3])
    _, new = indexed.replace(berlin, "The user lives in Paris")
    found = ids(indexed.search("where do I live", top_k=20))
    assert new.id in found and berlin not in found


def test_a_conversation_sees_itself_and_global_only(indexed: MemoryEngine) -> None:
    trip = indexed.search("greyhound lake hiking", conversation_id="trip", top_k=20)
    conversations = {r.memory.conversation_id for r in trip}
    assert conversations <= {"trip", "global"} and "trip" in conversations
    everywhere = indexed.search("greyhound lake hiking", top_k=20)
    assert "other" in {r.memory.conversation_id for r in everywhere}


def test_filters_role_kind_and_date_range(indexed: MemoryEngine) -> None:
    turns = indexed.search("hiking lake", filters=SearchFilters(roles=("user",)), top_k=20)
    assert turns and {r.memory.role for r in turns} == {"user"}
    pref = indexed.add("The user prefers green tea", kind="preference")
    prefs = indexed.search("green", filters=SearchFilters(kinds=("preference",)), top_k=20)
    assert ids(prefs) == [pref.id]
    old = indexed.add("The user lived in London as a child", created_at=datetime(2001, 5, 1, tzinfo=UTC))
    window = SearchFilters(since=datetime(2000, 1, 1, tzinfo=UTC), until=datetime(2002, 1, 1, tzinfo=UTC))
    assert ids(indexed.search("where did the user live", filters=window, top_k=20)) == [old.id]
    recent = SearchFilters(since=datetime.now(UTC) - timedelta(days=1))
    assert old.id not in ids(indexed.search("where did the user live London", filters=recent, top_k=20))


def test_summaries_are_excluded_unless_asked_for(indexed: MemoryEngine) -> None:
    summary = indexed._parts.store.write_summary("trip", "The user went hiking at the lake with Biscuit", 2)
    indexed.apply_external_changes([summary.path])
    found = indexed.search("hiking lake Biscuit", conversation_id="trip", top_k=20)
    assert summary.id not in ids(found)
    wanted = SearchFilters(include_summaries=True)
    assert summary.id in ids(indexed.search("hiking lake Biscuit", conversation_id="trip", filters=wanted,
                                            top_k=20))


def test_a_reply_is_found_through_the_turn_it_answers(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config()) as eng:
        for text in FACTS:
            eng.add(text)
        eng.add("Did you go to the pottery workshop on Saturday?", conversation_id="c", role="assistant")
        reply = eng.add("Yes, it was amazing!", conversation_id="c", role="user")
        eng.add("The weather was rainy all week", conversation_id="c", role="user")
        eng.open_index()

        def keyword_score(query: str) -> float | None:
            found = {r.memory.id: r for r in eng.search(query, conversation_id="c", top_k=20)}
            return found[reply.id].scores.keyword if reply.id in found else None

        assert keyword_score("pottery workshop") is not None  # matched by the question's words
        # Editing the question changes what the reply is found by (its keyword text is re-derived).
        question = eng.list_memories(conversation_id="c", role="assistant")[0]
        eng.edit(question.id, text="Did you enjoy the violin concert on Saturday?")
        assert keyword_score("violin concert") is not None
        assert keyword_score("pottery workshop") is None
        # Deleting the question leaves the reply without it: deleted words find nothing.
        eng.delete(question.id)
        assert keyword_score("violin concert") is None


def test_a_deleted_index_is_rebuilt_from_the_files_with_identical_results(
    make_config: Callable[..., Any],
) -> None:
    queries = ["what is my dog called", "where do I live", "hiking at the lake", "food I like", "my job"]
    with MemoryEngine(make_config()) as eng:
        for text in FACTS:
            eng.add(text)
        eng.add("I went hiking at the lake trail this weekend", conversation_id="trip", role="user")
        eng.delete(find(eng, FACTS[6]))
        eng.open_index()
        root = eng.root
        # Ids in order and relevance (recency moves with the clock between the two searches).
        before = [[(r.memory.id, round(r.scores.relevance, 4)) for r in eng.search(q)] for q in queries]
    shutil.rmtree(root / "chroma")
    (root / "keyword_index.sqlite3").unlink()
    (root / "memory_index.json.sqlite3").unlink()
    for leftover in root.glob("keyword_index.sqlite3-*"):
        leftover.unlink()
    with MemoryEngine(make_config()) as again:
        report = again.open_index()
        assert report.embedded == len(FACTS) + 1
        after = [[(r.memory.id, round(r.scores.relevance, 4)) for r in again.search(q)] for q in queries]
    assert after == before


def test_reranker_scores_and_its_threshold_prunes(make_config: Callable[..., Any], tmp_path: Path) -> None:
    folder = write_cross_encoder(tmp_path / "cross-encoder")
    config = make_config(retrieval__reranker_path=str(folder), retrieval__score_threshold=0.5)
    with MemoryEngine(config) as eng:
        for text in FACTS:
            eng.add(text)
        eng.open_index()
        results = eng.search("which pet is a tabby cat", top_k=5, rerank=True)
        # The tiny model scores by shared words: only passages sharing enough of them pass 0.5.
        assert results and results[0].memory.text == FACTS[1]
        assert all(r.scores.rerank is not None and r.scores.rerank >= 0.5 for r in results)
        assert len(results) < 5  # the rest were pruned, not padded back in
        top = results[0].scores  # relevance blends the cross-encoder with the fused score
        assert top.rerank is not None
        assert top.relevance == pytest.approx(0.8 * top.rerank + 0.2 * top.fused)
        # Nothing shares a word with this query: everything is pruned, nothing is made up.
        assert eng.search("quantum chromodynamics lecture notes", rerank=True) == []
        assert eng.search("quantum chromodynamics lecture notes")  # no rerank asked: no pruning


def test_empty_and_stopword_only_queries_return_nothing_or_dense_only(indexed: MemoryEngine) -> None:
    assert indexed.search("   ") == []
    results = indexed.search("what is it")  # no keyword terms: the dense side still answers
    assert results and all(r.scores.keyword is None for r in results)


def test_mmr_fetches_vectors_for_the_best_few_per_pick_only(
    make_config: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """MMR looks at the best 3·k candidates (at least 20): the vectors of the rest are not fetched,
    and the picks are the same as over the whole pool."""
    from desktop_mem.engine.index import retrieval

    eng = MemoryEngine(make_config())
    for i in range(60):
        eng.add(f"Trip {i}: we hiked the lake trail with the dog and a picnic number {i}",
                conversation_id="trips", role="user")
    eng.open_index()
    # A scope too large to keep in memory: its dense hits come without their vectors.
    monkeypatch.setattr(eng._parts.search_index.retriever.vectors.resident, "budget", 0)
    try:
        asked: list[int] = []
        real = eng._parts.search_index.retriever.vectors.get_embeddings

        def spy(wanted: list[str], **kwargs: Any) -> Any:
            asked.append(len(wanted))
            return real(wanted, **kwargs)

        monkeypatch.setattr(eng._parts.search_index.retriever.vectors, "get_embeddings", spy)
        capped = ids(eng.search("hiking at the lake with the dog", conversation_id="trips", top_k=3))
        assert len(capped) == 3
        assert asked and max(asked) <= max(retrieval.MMR_POOL_PER_PICK * 3, retrieval.MMR_MIN_POOL)
        monkeypatch.setattr(retrieval, "MMR_POOL_PER_PICK", 1000)
        asked.clear()
        whole = ids(eng.search("hiking at the lake with the dog", conversation_id="trips", top_k=3))
        assert max(asked) > retrieval.MMR_MIN_POOL  # the whole pool, for comparison
        assert whole == capped
    finally:
        eng.close()

