"""A chat turn's scope (its conversation + global) is searched exactly over vectors held in memory
(resident_vectors.py, issue #25): those copies must follow every write through the index, never
outgrow their budget, and give the same answers as a full scan of what the index holds. Real
chromadb; the engine tests use a real store and the real e5 model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index import resident_vectors, retrieval
from desktop_mem.engine.index.vector_index import VectorIndex, VectorIndexError

DIM = 16


class Mirror:
    """What the index should hold, per conversation: the truth a full scan searches."""

    def __init__(self, index: VectorIndex, seed: int = 0) -> None:
        self.index = index
        self.rng = np.random.default_rng(seed)
        self.vectors: dict[str, np.ndarray] = {}
        self.where: dict[str, str] = {}
        self.fresh = 0

    def write(self, conversation: str, ids: list[str] | None = None, count: int = 1) -> list[str]:
        if ids is None:
            ids = [f"{conversation}-{self.fresh + i}" for i in range(count)]
            self.fresh += count
        rows = self.rng.normal(size=(len(ids), DIM)).astype(np.float32)
        self.index.upsert(ids, rows, [{"conversation_id": conversation}] * len(ids), ids)
        for entry_id, row in zip(ids, rows, strict=True):
            self.vectors[entry_id], self.where[entry_id] = row, conversation
        return ids

    def move(self, ids: list[str], conversation: str) -> None:
        rows = np.stack([self.vectors[i] for i in ids])
        self.index.upsert(ids, rows, [{"conversation_id": conversation}] * len(ids), ids)
        self.where.update(dict.fromkeys(ids, conversation))

    def delete(self, ids: list[str]) -> None:
        self.index.delete(ids)
        for entry_id in ids:
            del self.vectors[entry_id], self.where[entry_id]

    def ids_of(self, conversation: str) -> list[str]:
        return [i for i, c in self.where.items() if c == conversation]

    def scan(self, query: np.ndarray, conversations: list[str]) -> list[tuple[str, float]]:
        """Every memory of these conversations by cosine similarity, nearest first."""
        scored = [(i, float(v @ query / np.linalg.norm(v) / np.linalg.norm(query)))
                  for i, v in self.vectors.items() if self.where[i] in conversations]
        return sorted(scored, key=lambda s: -s[1])


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mirror]:
    monkeypatch.setattr(resident_vectors, "CHUNK_ROWS", 8)  # small chunks: writes cross their edges
    index = VectorIndex(path=tmp_path / "chroma")
    yield Mirror(index)
    index.close()


def _agree(mirror: Mirror, conversations: list[str]) -> None:
    query = mirror.rng.normal(size=DIM).astype(np.float32)
    hits = mirror.index.nearest_in(query, conversations, 1000, mirror.ids_of)
    assert hits is not None
    expected = mirror.scan(query, conversations)
    assert [h.id for h in hits] == [i for i, _ in expected]
    np.testing.assert_allclose([h.similarity for h in hits], [s for _, s in expected], atol=1e-4)
    for hit in hits[:3]:  # the vector comes along, for MMR
        np.testing.assert_allclose(hit.embedding, mirror.vectors[hit.id], atol=1e-3)


def test_the_held_vectors_answer_like_a_full_scan_after_every_kind_of_write(mirror: Mirror) -> None:
    """A fact saved, a memory re-embedded after an edit, one moved to another conversation, one
    deleted: each is reflected at the very next search, as a scan of the index would see it."""
    mirror.write("a", count=21)  # a-0 ... a-20
    mirror.write("b", count=5)  # b-21 ... b-25
    mirror.write("global", count=9)  # global-26 ... global-34
    _agree(mirror, ["a", "global"])  # loads a and global
    _agree(mirror, ["b", "global"])  # and b
    mirror.write("a", count=12)  # new rows (a-35 ... a-46), across chunk edges
    _agree(mirror, ["a", "global"])
    mirror.write("a", ids=["a-0", "a-7", "a-40"])  # edited: new vectors for held rows
    _agree(mirror, ["a", "global"])
    mirror.move(["b-21", "b-22"], "a")
    mirror.move(["a-3"], "b")
    _agree(mirror, ["a", "global"])
    _agree(mirror, ["b", "global"])
    mirror.delete(["a-1", "a-46", "global-26", "a-35"])  # first, last and middle rows
    _agree(mirror, ["a", "global"])
    mirror.delete(mirror.ids_of("b"))  # a whole conversation
    _agree(mirror, ["b", "global"])
    _agree(mirror, ["a", "global"])


def test_a_save_while_a_conversation_is_read_into_memory_is_not_lost(mirror: Mirror) -> None:
    """A chat turn saves its message while a search reads the conversation's vectors: the kept
    copy has the new memory (and not an old vector of one it replaced), at once or at the next
    search."""
    mirror.write("a", count=5)
    index = mirror.index
    real_call = index._call

    def racing(method: str, **kwargs: object) -> object:
        result = real_call(method, **kwargs)
        if method == "get":  # the writes land between the read and the keeping
            index._call = real_call  # type: ignore[method-assign]
            mirror.write("a", count=1)
            mirror.write("a", ids=["a-2"])  # re-embedded: the vector just read is out of date
            mirror.delete(["a-3"])
        return result

    index._call = racing  # type: ignore[method-assign]
    query = mirror.rng.normal(size=DIM).astype(np.float32)
    ids = mirror.ids_of("a")[:5]
    assert index.nearest_in(query, ["a"], 100, lambda _c: list(ids)) is not None
    _agree(mirror, ["a"])


@pytest.mark.parametrize("write", ["upsert", "delete"])
def test_a_write_that_fails_half_way_leaves_no_stale_copy(mirror: Mirror, write: str) -> None:
    """chroma takes the first part of a large write and refuses the rest: what it took is unknown
    to the held copy, so the copy is dropped and read again, and searches see what chroma holds."""
    mirror.write("a", count=6)
    _agree(mirror, ["a"])
    index = mirror.index
    index._max_batch = 2  # the write goes to chroma in parts of 2
    real_call = index._call
    calls = [0]

    def refuse_second(method: str, **kwargs: object) -> object:
        if method == write:
            calls[0] += 1
            if calls[0] == 2:
                raise VectorIndexError("refused")
        return real_call(method, **kwargs)

    index._call = refuse_second  # type: ignore[method-assign]
    new = {f"new-{i}": mirror.rng.normal(size=DIM).astype(np.float32) for i in range(4)}
    with pytest.raises(VectorIndexError):
        if write == "upsert":
            index.upsert(list(new), np.stack(list(new.values())), [{"conversation_id": "a"}] * 4, list(new))
        else:
            index.delete(["a-0", "a-1", "a-2", "a-3"])
    index._call = real_call  # type: ignore[method-assign]
    held = index.ids()  # the truth is what chroma took: the first part of the write
    assert 0 < len(held ^ set(mirror.where)) < 4
    for entry_id in [i for i in mirror.where if i not in held]:
        del mirror.vectors[entry_id], mirror.where[entry_id]
    for entry_id in held & set(new):
        mirror.vectors[entry_id], mirror.where[entry_id] = new[entry_id], "a"
    _agree(mirror, ["a"])


def test_the_held_vectors_stay_within_their_budget(mirror: Mirror) -> None:
    """Past the budget the least recently searched conversation is dropped; a scope that cannot
    fit at all is left to chroma (None), and the next search of a dropped one reads it again."""
    mirror.write("a", count=8)
    mirror.write("b", count=8)
    index = mirror.index
    one_block = 8 * (DIM * 2 + 8)
    index.resident.budget = one_block
    _agree(mirror, ["a"])
    assert index.resident.nbytes <= one_block
    _agree(mirror, ["b"])
    assert index.resident.nbytes <= one_block
    assert index.nearest_in(np.ones(DIM, np.float32), ["a", "b"], 10, mirror.ids_of) is None
    _agree(mirror, ["a"])
    mirror.write("a", count=1)  # a grows past the budget: dropped, and searched through chroma
    assert index.resident.nbytes <= one_block
    assert index.nearest_in(np.ones(DIM, np.float32), ["a"], 10, mirror.ids_of) is None


def test_a_reset_index_forgets_the_held_vectors(mirror: Mirror) -> None:
    mirror.write("a", count=4)
    _agree(mirror, ["a"])
    mirror.index.reset()
    mirror.vectors.clear()
    mirror.where.clear()
    assert mirror.index.nearest_in(np.ones(DIM, np.float32), ["a"], 10, mirror.ids_of) == []


@pytest.fixture
def chat(make_config: Callable[..., Any]) -> Iterator[MemoryEngine]:
    eng = MemoryEngine(make_config())
    eng.add("We went kayaking on the lake at sunrise and saw herons.", conversation_id="other", role="user")
    eng.add("The user is allergic to penicillin.", role="memory")
    eng.add("I bought a new tent for the camping trip.", conversation_id="mine", role="user")
    eng.open_index()
    yield eng
    eng.close()


def test_a_fact_saved_mid_conversation_is_found_by_meaning_at_the_next_turn(chat: MemoryEngine) -> None:
    """The scope's vectors are in memory after the first search; a fact saved after it (sharing
    no word with the question) is found by meaning at the next search, with no reload."""
    question = "kayak on the lake and the herons"
    chat.search(question, conversation_id="mine")  # the scope's vectors are now held
    assert chat._parts.search_index.retriever.vectors.resident.nbytes > 0
    chat.add("Paddling across the water early, we spotted some big grey birds.", role="memory")
    hits = chat.search(question, conversation_id="mine", top_k=3)
    found = next((h for h in hits if h.memory.text.startswith("Paddling")), None)
    assert found is not None and found.scores.dense is not None and found.scores.keyword is None


def test_memories_the_filters_drop_do_not_crowd_out_the_rest(
    chat: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleted memories nearer to the question than every live one fill the first nearest rows:
    the search looks further down the scope, and the live memory is still found by meaning."""
    for i in range(10):
        m = chat.add(f"We kayaked on the lake and saw herons, trip {i}.", conversation_id="mine", role="user")
        chat.delete(m.id)
    chat.add("Paddling across the water early, we spotted some big grey birds.", conversation_id="mine",
             role="user")
    retriever = chat._parts.search_index.retriever
    monkeypatch.setattr(retriever, "settings", replace(retriever.settings, candidates=3))
    monkeypatch.setattr(retrieval, "RESIDENT_FIRST", 1)  # the nearest 9 rows are all deleted ones
    hits = chat.search("kayak on the lake and the herons", conversation_id="mine", top_k=3, use_mmr=False)
    dense = [h.memory.text for h in hits if h.scores.dense is not None]
    assert hits and not any(t.startswith("We kayaked") for t in dense)
    assert any(t.startswith("Paddling") for t in dense)
