"""VectorIndex: real chromadb (embedded in tmp_path, and a `chroma run` server on loopback) with
vectors from the real MiniLM ONNX embedder."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from desktop_mem.engine.index.embedder import OnnxEmbedder
from desktop_mem.engine.index.vector_index import VectorIndex, VectorIndexError, clean_metadata

MEMORIES = {
    "m1": ("The user adopted a greyhound named Biscuit.", "c1", "fact"),
    "m2": ("The user is allergic to peanuts.", "c1", "fact"),
    "m3": ("The user works as a nurse at the city hospital.", "c2", "fact"),
    "m4": ("The user's favourite food is sushi.", "global", "fact"),
    "m5": ("Assistant suggested a hiking trail near the lake.", "c2", "assistant"),
}


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return OnnxEmbedder(batch_size=1)  # e5 int8 vectors move slightly with batch-mates (test_embedder)


def _fill(index: VectorIndex, embedder: OnnxEmbedder) -> None:
    ids = list(MEMORIES)
    texts = [MEMORIES[i][0] for i in ids]
    metadatas = [
        {"conversation_id": MEMORIES[i][1], "role": MEMORIES[i][2], "replaced_by": None} for i in ids
    ]
    index.upsert(ids, embedder.embed(texts), metadatas, texts)


@pytest.fixture()
def index(tmp_path: Path, embedder: OnnxEmbedder) -> Iterator[VectorIndex]:
    idx = VectorIndex(path=tmp_path / "chroma")
    _fill(idx, embedder)
    yield idx
    idx.close()


def test_query_finds_the_meaningful_match(index: VectorIndex, embedder: OnnxEmbedder) -> None:
    query = embedder.embed(["What kind of dog do I have?"])[0]
    hits = index.query(query, n=3)
    assert [hit.id for hit in hits][0] == "m1"
    top = hits[0]
    assert top.document == MEMORIES["m1"][0]
    assert top.metadata == {"conversation_id": "c1", "role": "fact"}  # None dropped
    assert top.similarity == pytest.approx(1.0 - top.distance)
    assert top.similarity == pytest.approx(float(query @ embedder.embed([top.document])[0]), abs=1e-3)
    assert [h.distance for h in hits] == sorted(h.distance for h in hits)
    # The stored vector comes back for MMR and is the one we put in.
    np.testing.assert_allclose(top.embedding, embedder.embed([top.document])[0], atol=1e-4)
    assert top.embedding.dtype == np.float32


def test_where_filter_by_conversation(index: VectorIndex, embedder: OnnxEmbedder) -> None:
    query = embedder.embed(["food allergies"])[0]
    hits = index.query(query, n=10, where={"conversation_id": {"$in": ["c2", "global"]}})
    assert {hit.id for hit in hits} == {"m3", "m4", "m5"}
    both = {"$and": [{"conversation_id": {"$in": ["c1", "c2"]}}, {"role": {"$ne": "assistant"}}]}
    assert {hit.id for hit in index.query(query, n=10, where=both)} == {"m1", "m2", "m3"}
    assert index.query(query, n=10, where={"conversation_id": "nope"}) == []


def test_a_search_among_ids_leaves_out_those_not_indexed(index: VectorIndex, embedder: OnnxEmbedder) -> None:
    """The read path limits a scope's search to its memories' ids; one of them not in the index
    yet (saved a moment ago, or a hand edit held back for a secret) made the whole search fail,
    and the chat turn answered without memories."""
    query = embedder.embed(["What kind of dog do I have?"])[0]
    hits = index.query(query, n=3, ids=["m1", "m3", "saved-a-moment-ago"], with_payload=False)
    assert [h.id for h in hits][0] == "m1" and {h.id for h in hits} == {"m1", "m3"}
    assert index.query(query, n=3, ids=["not-indexed", "held-back"]) == []
    with pytest.raises(VectorIndexError):  # a real failure is still one
        index.query(np.zeros(7, dtype=np.float32), n=3, ids=["m1"])


def test_n_larger_than_count_and_empty_collection(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    idx = VectorIndex(path=tmp_path / "chroma")
    try:
        query = embedder.embed(["anything"])[0]
        assert idx.query(query, n=10) == []
        assert idx.count() == 0
        assert idx.ids() == set()
        _fill(idx, embedder)
        assert len(idx.query(query, n=500)) == len(MEMORIES)
        assert idx.query(query, n=0) == []
    finally:
        idx.close()


def test_delete_get_embeddings_and_ids(index: VectorIndex, embedder: OnnxEmbedder) -> None:
    assert index.ids() == set(MEMORIES)
    index.delete(["m1", "unknown"])
    assert index.count() == len(MEMORIES) - 1
    query = embedder.embed(["What kind of dog do I have?"])[0]
    assert "m1" not in {hit.id for hit in index.query(query, n=10)}
    vectors = index.get_embeddings(["m2", "m1", "m4"])
    assert set(vectors) == {"m2", "m4"}
    np.testing.assert_allclose(vectors["m2"], embedder.embed([MEMORIES["m2"][0]])[0], atol=1e-4)


def test_upsert_replaces_and_dedupes(index: VectorIndex, embedder: OnnxEmbedder) -> None:
    new_text = "The user adopted a tabby cat named Miso."
    index.upsert(
        ["m1", "m1"],
        embedder.embed(["old duplicate", new_text]),
        [{"conversation_id": "c1"}, {"conversation_id": "c1", "role": "fact"}],
        ["old duplicate", new_text],
    )
    assert index.count() == len(MEMORIES)
    hits = index.query(embedder.embed(["Which cat does the user own?"])[0], n=1)
    assert hits[0].id == "m1" and hits[0].document == new_text


def test_vectors_served_from_memory_follow_every_write(index: VectorIndex, embedder: OnnxEmbedder) -> None:
    """get_embeddings keeps recent vectors in memory: an upsert, a delete or a reset through the
    index is seen at once, and a cached vector cannot be changed by a caller."""
    before = index.get_embeddings(["m1", "m2"])
    calls: list[object] = []
    real_call = index._call

    def counting(method: str, **kwargs: object) -> object:
        calls.append(method)
        return real_call(method, **kwargs)

    index._call = counting  # type: ignore[method-assign]
    again = index.get_embeddings(["m2", "m1"])
    assert calls == []  # from memory
    np.testing.assert_array_equal(again["m1"], before["m1"])
    with pytest.raises(ValueError):
        again["m1"][0] = 1.0  # shared with the cache: read-only
    cat = embedder.embed(["The user adopted a tabby cat named Miso."])
    index.upsert(["m1"], cat, [{"conversation_id": "c1"}], ["The user adopted a tabby cat named Miso."])
    np.testing.assert_allclose(index.get_embeddings(["m1"])["m1"], cat[0], atol=1e-6)
    assert not np.allclose(cat[0], before["m1"], atol=1e-3)
    index.delete(["m2"])
    assert index.get_embeddings(["m2"]) == {}
    index.reset()
    assert index.get_embeddings(["m1"]) == {}


def test_a_fetch_that_overlaps_a_write_is_not_kept(index: VectorIndex, embedder: OnnxEmbedder) -> None:
    """A search thread reads m1's old vector while an upsert replaces it: the old one is returned to
    that search but not remembered, so the next search sees the new vector."""
    real_call = index._call
    new = embedder.embed(["The user adopted a tabby cat named Miso."])
    old = index.get_embeddings(["m1"])["m1"]
    index._forget(None)  # start cold

    def racing(method: str, **kwargs: object) -> object:
        result = real_call(method, **kwargs)
        if method == "get":  # the write lands between the read and the caching
            index._call = real_call  # type: ignore[method-assign]
            index.upsert(["m1"], new, [{"conversation_id": "c1"}], ["cat"])
        return result

    index._call = racing  # type: ignore[method-assign]
    seen = index.get_embeddings(["m1"])["m1"]
    np.testing.assert_allclose(seen, old, atol=1e-6)
    np.testing.assert_allclose(index.get_embeddings(["m1"])["m1"], new[0], atol=1e-6)


def test_persistence_across_reopen_and_reset(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    path = tmp_path / "chroma"
    first = VectorIndex(path=path)
    _fill(first, embedder)
    first.delete(["m5"])
    first.close()
    second = VectorIndex(path=path, ef_search=150)
    try:
        assert second.ids() == set(MEMORIES) - {"m5"}
        # The changed search breadth is applied to the existing collection, not ignored.
        assert second._collection.configuration["hnsw"]["ef_search"] == 150
        assert second._collection.configuration["hnsw"]["space"] == "cosine"
        hits = second.query(embedder.embed(["peanut allergy"])[0], n=1)
        assert hits[0].id == "m2"
        second.reset()
        assert second.count() == 0
        assert second.query(embedder.embed(["peanut allergy"])[0], n=3) == []
        _fill(second, embedder)  # usable again after reset
        assert second.count() == len(MEMORIES)
    finally:
        second.close()


def test_large_upsert_is_chunked(tmp_path: Path) -> None:
    idx = VectorIndex(path=tmp_path / "chroma")
    try:
        total = idx._max_batch + 10  # more than one client batch
        rng = np.random.default_rng(0)
        vectors = rng.normal(size=(total, 16)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ids = [f"id{i}" for i in range(total)]
        idx.upsert(ids, vectors, [{"n": i} for i in range(total)], [f"doc {i}" for i in range(total)])
        assert idx.count() == total
        assert idx.ids() == set(ids)
        assert len(idx.get_embeddings(ids)) == total
        hit = idx.query(vectors[total - 1], n=1)[0]
        assert hit.id == f"id{total - 1}" and hit.metadata == {"n": total - 1}
        idx.delete(ids)
        assert idx.count() == 0
    finally:
        idx.close()


def test_dimension_change_is_a_clear_error(index: VectorIndex) -> None:
    with pytest.raises(VectorIndexError, match="reset the vector index"):
        index.upsert(["x"], np.ones((1, 8), dtype=np.float32), [None], ["x"])
    with pytest.raises(VectorIndexError, match="one embedding row"):
        index.upsert(["x", "y"], np.ones((1, 384), dtype=np.float32), [None], ["x"])


def test_clean_metadata() -> None:
    when = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
    cleaned = clean_metadata(
        {"a": "s", "b": 1, "c": 1.5, "d": True, "e": None, "f": when, "g": ["x"], "h": float("nan")}
    )
    assert cleaned == {
        "a": "s", "b": 1, "c": 1.5, "d": True, "f": str(when), "g": "['x']", "h": "nan",
    }
    assert clean_metadata(None) == {}


def test_bad_arguments() -> None:
    with pytest.raises(VectorIndexError, match="exactly one of path"):
        VectorIndex()
    with pytest.raises(VectorIndexError, match="not valid"):
        VectorIndex(url="ftp://example")


def test_unreachable_server_is_a_clear_error() -> None:
    port = _free_port()
    with pytest.raises(VectorIndexError, match="is the server running"):
        VectorIndex(url=f"http://127.0.0.1:{port}")


# --- a real Chroma server on loopback -------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _chroma_cli() -> str | None:
    beside_python = Path(sys.executable).parent / "chroma"
    return str(beside_python) if beside_python.exists() else shutil.which("chroma")


@pytest.fixture()
def chroma_server(tmp_path: Path) -> Iterator[str]:
    cli = _chroma_cli()
    if cli is None:
        pytest.skip("the `chroma` CLI (installed with chromadb) is not on this machine")
    port = _free_port()
    log = (tmp_path / "chroma-server.log").open("wb")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    process = subprocess.Popen(
        [cli, "run", "--path", str(tmp_path / "server-db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60  # readiness wait, not a speed assertion
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    output = (tmp_path / "chroma-server.log").read_text()
                    pytest.fail(f"chroma server did not start: {output}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_http_server_round_trip(chroma_server: str, embedder: OnnxEmbedder) -> None:
    idx = VectorIndex(url=chroma_server, collection="shared-memories")
    try:
        _fill(idx, embedder)
        query = embedder.embed(["What kind of dog do I have?"])[0]
        hits = idx.query(query, n=10, where={"conversation_id": {"$in": ["c1"]}})
        assert [hit.id for hit in hits][0] == "m1"
        assert {hit.id for hit in hits} == {"m1", "m2"}
        assert hits[0].embedding.shape == (384,)
        idx.delete(["m1"])
        assert idx.ids() == set(MEMORIES) - {"m1"}
    finally:
        idx.close()
    reopened = VectorIndex(url=chroma_server, collection="shared-memories")
    try:
        assert reopened.count() == len(MEMORIES) - 1
        reopened.reset()
        assert reopened.count() == 0
    finally:
        reopened.close()
