"""Build a tiny BERT-shaped cross-encoder (model.onnx + tokenizer.json) in a folder, at test time.

No package registry ships a real ms-marco cross-encoder, so tests build one with the same
interface (inputs input_ids / attention_mask / optional token_type_ids, output "logits") and
deterministic weights that make its score meaningful: the logit is a linear function of the share
of distinct query words that also occur in the passage,

    logit = SCALE * overlap_fraction + BIAS        (SCALE=4, BIAS=-2: 0 -> -2, all -> +2)

so a passage containing every query word scores sigmoid(2) ~ 0.88 and one with none sigmoid(-2).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

SCALE = 4.0
BIAS = -2.0
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = (
    "the", "user", "has", "a", "dog", "named", "biscuit", "greyhound", "cat", "tabby", "miso", "likes",
    "dislikes", "sushi", "pizza", "food", "works", "as", "nurse", "teacher", "engineer", "at",
    "hospital", "school", "city", "lives", "in", "paris", "berlin", "london", "allergic", "to",
    "peanuts", "favourite", "colour", "blue", "green", "hiking", "trail", "lake", "weekend", "plays",
    "tennis", "what", "is", "my", "name", "where", "do", "i", "live", "which", "pet", "who", "when",
    "how"
)
VOCAB = SPECIAL_TOKENS + sorted(set(WORDS)) + ["##s", "##ing", "##ed"]


def expected_logit(overlap_fraction: float) -> float:
    """The logit the tiny model gives a pair whose passage holds this share of the query words."""
    return SCALE * overlap_fraction + BIAS


def build_tokenizer() -> Tokenizer:
    """A BERT-style WordPiece tokenizer over VOCAB with [CLS] q [SEP] p [SEP] pair encoding."""
    vocab = {token: index for index, token in enumerate(VOCAB)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    # Like the real ms-marco tokenizer.json: fixed settings the reranker must override.
    tokenizer.enable_padding(pad_id=vocab["[PAD]"], pad_token="[PAD]", length=64)
    tokenizer.enable_truncation(max_length=64)
    return tokenizer


def build_model(with_token_type_ids: bool = True, output_rank: int = 2) -> onnx.ModelProto:
    """The scoring graph: one-hot token bags of query and passage, overlap share, linear layer."""
    size = len(VOCAB)
    embedding = np.eye(size, dtype=np.float32)
    # Special and unknown tokens carry no meaning: their rows are zero so they never "overlap".
    for index in range(len(SPECIAL_TOKENS)):
        embedding[index] = 0.0
    sep_id = VOCAB.index("[SEP]")
    inits = [
        numpy_helper.from_array(embedding, "embedding"),
        numpy_helper.from_array(np.array([[SCALE]], dtype=np.float32), "dense_w"),
        numpy_helper.from_array(np.array([BIAS], dtype=np.float32), "dense_b"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "flat"),
    ]
    nodes = [
        helper.make_node("Gather", ["embedding", "input_ids"], ["onehot"]),  # (n, s, V)
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
    ]
    if with_token_type_ids:
        nodes.append(helper.make_node("Cast", ["token_type_ids"], ["segment"], to=TensorProto.FLOAT))
    else:
        # Without segment ids, a token belongs to the passage once the first [SEP] has passed.
        inits += [
            numpy_helper.from_array(np.array(1, dtype=np.int64), "axis1_scalar"),
            numpy_helper.from_array(np.array(sep_id, dtype=np.int64), "sep_id"),
        ]
        nodes += [
            helper.make_node("Equal", ["input_ids", "sep_id"], ["is_sep_b"]),
            helper.make_node("Cast", ["is_sep_b"], ["is_sep"], to=TensorProto.FLOAT),
            helper.make_node("CumSum", ["is_sep", "axis1_scalar"], ["seps_so_far"]),
            helper.make_node("Sub", ["seps_so_far", "is_sep"], ["seps_before"]),
            helper.make_node("Min", ["seps_before", "one"], ["segment"]),
        ]
    nodes += [
        helper.make_node("Sub", ["one", "segment"], ["query_side"]),
        helper.make_node("Mul", ["mask_f", "query_side"], ["q_mask"]),
        helper.make_node("Mul", ["mask_f", "segment"], ["p_mask"]),
        helper.make_node("Unsqueeze", ["q_mask", "flat"], ["q_mask3"]),
        helper.make_node("Unsqueeze", ["p_mask", "flat"], ["p_mask3"]),
        helper.make_node("Mul", ["onehot", "q_mask3"], ["q_tokens"]),
        helper.make_node("Mul", ["onehot", "p_mask3"], ["p_tokens"]),
        helper.make_node("ReduceMax", ["q_tokens", "axis1"], ["q_bag"], keepdims=0),  # (n, V)
        helper.make_node("ReduceMax", ["p_tokens", "axis1"], ["p_bag"], keepdims=0),
        helper.make_node("Mul", ["q_bag", "p_bag"], ["shared"]),
        helper.make_node("ReduceSum", ["shared", "axis1"], ["shared_n"], keepdims=1),  # (n, 1)
        helper.make_node("ReduceSum", ["q_bag", "axis1"], ["query_n"], keepdims=1),
        helper.make_node("Max", ["query_n", "one"], ["query_n_safe"]),
        helper.make_node("Div", ["shared_n", "query_n_safe"], ["overlap"]),
        helper.make_node("MatMul", ["overlap", "dense_w"], ["dense"]),
        helper.make_node(
            "Add", ["dense", "dense_b"], ["logits" if output_rank == 2 else "logits2d"]
        ),
    ]
    if output_rank == 1:
        nodes.append(helper.make_node("Reshape", ["logits2d", "flat"], ["logits"]))
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
        for name in (["input_ids", "attention_mask"] + (["token_type_ids"] if with_token_type_ids else []))
    ]
    out_shape: list[str | int] = ["batch", 1] if output_rank == 2 else ["batch"]
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, out_shape)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8  # readable by any onnxruntime of the last few years
    onnx.checker.check_model(model, full_check=True)
    return model


def write_cross_encoder(
    folder: Path, with_token_type_ids: bool = True, output_rank: int = 2
) -> Path:
    """Write model.onnx and tokenizer.json into folder (created) and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(build_model(with_token_type_ids, output_rank), str(folder / "model.onnx"))
    build_tokenizer().save(str(folder / "tokenizer.json"))
    return folder
