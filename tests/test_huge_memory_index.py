"""A huge memory (a pasted log, a 2 MB file) is indexed and reranked from what the model can read,
never tokenized in full: tokenizing 2 MB took 5.3 s and ~300 MB even though the model reads only
its first 256-512 word pieces (docs/benchmarks.md, issue #25)."""

from __future__ import annotations

from typing import Any

import numpy as np

from desktop_mem.engine.index.embedder import OnnxEmbedder
from desktop_mem.engine.index.onnx_session import clip_for_model
from desktop_mem.engine.index.reranker import OnnxReranker

HUGE = "2026-11-24 12:00:01 worker-3 retrying the upload of chunk 17 after a timeout\n" * 25_000  # ~2 MB


def _longest_text_tokenized(model: Any) -> list[int]:
    """Wrap the model's real tokenizer to record the longest text of each call."""
    seen: list[int] = []
    real = model.tokenizer.encode_batch

    def recording(items: list[Any]) -> Any:
        seen.append(max(len(x) if isinstance(x, str) else max(len(p) for p in x) for x in items))
        return real(items)

    model.tokenizer = type("Recording", (), {"encode_batch": staticmethod(recording)})()
    return seen


def test_a_huge_memory_is_embedded_from_its_readable_start_only() -> None:
    embedder = OnnxEmbedder(model="e5-small-v2")
    expected = embedder.embed([HUGE[:20_000]])[0]
    seen = _longest_text_tokenized(embedder)
    vector = embedder.embed([HUGE])[0]
    assert max(seen) <= embedder.max_length * 16
    # The model sees the same word pieces: the vector is the one of the text's start.
    assert np.allclose(vector, expected, atol=1e-5)


def test_a_huge_memory_is_reranked_from_its_readable_start_only() -> None:
    reranker = OnnxReranker()
    expected = reranker.score("Why did the upload retry?", [HUGE[:20_000]])
    seen = _longest_text_tokenized(reranker)
    score = reranker.score("Why did the upload retry?", [HUGE])
    assert max(seen) <= reranker.max_length * 16
    assert abs(score[0] - expected[0]) < 1e-5


def test_the_cut_never_drops_a_word_piece_the_model_would_read() -> None:
    """Text of one-character word pieces (the densest there is) keeps every piece the model reads."""
    embedder = OnnxEmbedder(model="e5-small-v2")
    dense = "a, b; c. d! " * 5000
    full = embedder.tokenizer.encode_batch([dense])[0].ids
    cut = embedder.tokenizer.encode_batch([clip_for_model(dense, embedder.max_length)])[0].ids
    assert cut == full


def test_the_vector_index_keeps_a_bounded_copy_of_a_huge_memory(tmp_path: Any) -> None:
    from desktop_mem.engine.index.vector_index import DOCUMENT_CHARS, VectorIndex

    embedder = OnnxEmbedder(model="e5-small-v2")
    index = VectorIndex(path=tmp_path / "chroma")
    try:
        index.upsert(["huge"], embedder.embed([HUGE]), [{"conversation_id": "c1"}], [HUGE])
        (hit,) = index.query(embedder.embed_query("upload retry"), 1, None)
        assert hit.id == "huge" and hit.document == HUGE[:DOCUMENT_CHARS]
    finally:
        index.close()
