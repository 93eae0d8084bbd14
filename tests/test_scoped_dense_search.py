"""The read path's dense search within a conversation's scope (issue #25): exact, and without
asking chroma for a metadata filter on the scope (that filter costs time in proportion to the
whole store: 83-213 ms at 100k memories against 5 ms unfiltered, docs/benchmarks.md). Real
store, real chromadb, real e5 model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index import retrieval
from desktop_mem.engine.index.resident_vectors import RESIDENT_BYTES

OTHERS = 40  # other conversations, each holding a near-copy of the query's answer


@pytest.fixture
def crowded(make_config: Callable[..., Any]) -> Iterator[MemoryEngine]:
    """One conversation's memory about the lake, crowded out by other conversations' nearer ones."""
    eng = MemoryEngine(make_config())
    for i in range(OTHERS):
        eng.add("We went kayaking on the lake at sunrise and saw herons.", conversation_id=f"other-{i}",
                role="user")
    eng.add("Paddling across the water early, we spotted some big grey birds.", conversation_id="mine",
            role="user")
    eng.add("The user is allergic to penicillin.", role="memory")  # global: in every scope
    eng.open_index()
    yield eng
    eng.close()


def _spy_where(eng: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []
    vectors = eng._parts.search_index.retriever.vectors
    real = vectors.query

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[2] if len(args) > 2 else kwargs.get("where"))
        return real(*args, **kwargs)

    monkeypatch.setattr(vectors, "query", spy)
    return seen


@pytest.mark.parametrize("resident_bytes", [RESIDENT_BYTES, 0])
def test_a_scope_crowded_out_by_other_conversations_still_gets_its_nearest_memories(
    crowded: MemoryEngine, monkeypatch: pytest.MonkeyPatch, resident_bytes: int
) -> None:
    """A scope whose vectors fit in memory is searched exactly over them; one too large, whose
    memories are far down the store-wide nearest list, is searched over its own ids. Either way
    the conversation's memory and the user's global facts are found, nothing from other
    conversations is, and chroma is never asked to filter by conversation."""
    monkeypatch.setattr(crowded._parts.search_index.retriever.vectors.resident, "budget", resident_bytes)
    monkeypatch.setattr(retrieval, "MAX_OVERSAMPLED", 41)  # the nearest 41 are all other conversations'
    wheres = _spy_where(crowded, monkeypatch)
    hits = crowded.search("kayak on the lake and the herons", conversation_id="mine", top_k=5)
    found = {(h.memory.conversation_id, h.memory.text.split()[0]) for h in hits}
    assert ("mine", "Paddling") in found
    assert all(h.memory.conversation_id in ("mine", "global") for h in hits)
    dense = {h.memory.conversation_id for h in hits if h.scores.dense is not None}
    assert dense == {"mine", "global"}  # both came through the dense search, not only keywords
    assert all(w is None or "conversation_id" not in str(w) for w in wheres)


def test_exact_scoped_similarity_equals_the_vector_index_similarity(crowded: MemoryEngine) -> None:
    """The exact path scores like chroma does (1 - cosine distance), so fusion weighs a memory the
    same whichever path found it."""
    hits = crowded.search("kayak on the lake and the herons", conversation_id="mine", top_k=5, use_mmr=False)
    mine = next(h for h in hits if h.memory.conversation_id == "mine")
    vector = crowded._parts.search_index.retriever.embedder.embed_query("kayak on the lake and the herons")
    by_chroma = crowded._parts.search_index.retriever.vectors.query(vector, 100, None, with_payload=False)
    expected = next(h.similarity for h in by_chroma if h.id == mine.memory.id)
    assert mine.scores.dense == pytest.approx(expected, abs=1e-4)


def test_a_scope_holding_a_memory_not_yet_indexed_is_still_searched(
    crowded: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large scope is searched over its ids; one of them not in the vector index (the user's
    message saved a moment before the chat turn searches, or a hand edit held back for a secret)
    made chroma refuse the whole search, and the chat turn answered without memories."""
    monkeypatch.setattr(crowded._parts.search_index.retriever.vectors.resident, "budget", 0)
    monkeypatch.setattr(retrieval, "MAX_OVERSAMPLED", 41)
    fresh = crowded.add("A heron stood on one leg by the boathouse.", conversation_id="mine", role="user")
    # in the catalog, not (yet) in the vector index
    crowded._parts.search_index.retriever.vectors.delete([fresh.id])
    hits = crowded.search("kayak on the lake and the herons", conversation_id="mine", top_k=5)
    texts = {h.memory.text.split()[0] for h in hits if h.memory.conversation_id == "mine"}
    assert "Paddling" in texts
    mine = next(h for h in hits if h.memory.text.startswith("Paddling"))
    assert mine.scores.dense is not None  # found by meaning, not only by its words
