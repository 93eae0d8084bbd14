"""Tokenizers read from the same tokenizer.json share its parsed vocabulary (issue #25).

The shipped embedder's and cross-encoder's tokenizer.json files are byte-identical; each parsed
copy held ~8.4 MB. They now share one model, each with its own padding and truncation, and must
encode exactly as a tokenizer read on its own from the file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from desktop_mem.engine.index.onnx_session import batch_tokenizer, shipped_model_folder

ROOT = Path(__file__).resolve().parent.parent
EMBEDDER = shipped_model_folder("e5-small-v2") / "tokenizer.json"
RERANKER = shipped_model_folder("ms-marco-MiniLM-L-12-v2") / "tokenizer.json"
TEXTS = ["Caroline: I went to the LGBTQ support group yesterday and it was ✨ great",
         "query: who keeps bees? [SEP] [MASK] [CLS] [PAD] café naïve 東京 ü",
         "word " * 700, "", "x" * 5000]


def alone(path: Path, max_length: int) -> Tokenizer:
    """A tokenizer read from the file on its own, set up as batch_tokenizer sets one up."""
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
    return tokenizer


def same(a: Tokenizer, b: Tokenizer, batch: list[str] | list[tuple[str, str]]) -> bool:
    left, right = a.encode_batch(batch), b.encode_batch(batch)
    return all((x.ids, x.type_ids, x.attention_mask) == (y.ids, y.type_ids, y.attention_mask)
               for x, y in zip(left, right, strict=True))


def test_the_shipped_files_are_one_file() -> None:
    assert EMBEDDER.read_bytes() == RERANKER.read_bytes()


@pytest.mark.parametrize("max_length", [64, 256, 512])
def test_tokenizers_of_one_file_encode_as_each_would_alone(max_length: int) -> None:
    embedder = batch_tokenizer(EMBEDDER, 256)
    reranker = batch_tokenizer(RERANKER, max_length)
    pairs = [(TEXTS[i], TEXTS[-1 - i]) for i in range(len(TEXTS))]

    assert same(embedder, alone(EMBEDDER, 256), TEXTS)
    assert same(reranker, alone(RERANKER, max_length), pairs)
    assert same(reranker, alone(RERANKER, max_length), TEXTS)
    # Each keeps its own truncation: the other's does not leak into it.
    assert len(embedder.encode(TEXTS[2]).ids) == 256
    assert len(reranker.encode(TEXTS[2]).ids) == max_length


def test_a_file_of_its_own_keeps_its_own_pad_token(tmp_path: Path) -> None:
    spec = json.loads(EMBEDDER.read_text(encoding="utf-8"))
    spec["padding"]["pad_id"], spec["padding"]["pad_token"] = 103, "[MASK]"
    mine = tmp_path / "tokenizer.json"
    mine.write_text(json.dumps(spec), encoding="utf-8")

    first, second = batch_tokenizer(mine, 32), batch_tokenizer(mine, 32)

    for tokenizer in (first, second):
        short, longer = tokenizer.encode_batch(["bees", "who keeps bees on the roof"])
        assert short.ids[-1] == 103 and len(short.ids) == len(longer.ids)


def test_an_unreadable_file_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(RuntimeError):
        batch_tokenizer(broken, 32)
    with pytest.raises(RuntimeError):
        batch_tokenizer(tmp_path / "missing.json", 32)


def test_the_second_tokenizer_of_a_file_holds_no_second_vocabulary() -> None:
    """In a process of its own: RSS after the first and after the second (a parsed copy of this
    vocabulary is ~8.4 MB)."""
    code = f"""
import json
from pathlib import Path
from desktop_mem.engine.index.onnx_session import batch_tokenizer
def rss():
    return int(open('/proc/self/status').read().split('VmRSS:')[1].split()[0]) / 1024
start = rss()
one = batch_tokenizer(Path({str(EMBEDDER)!r}), 256)
first = rss() - start
two = batch_tokenizer(Path({str(RERANKER)!r}), 512)
print(json.dumps({{"first": first, "second": rss() - start - first}}))
"""
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    grew = json.loads(proc.stdout)
    assert grew["first"] > 4 and grew["second"] < 1.5, grew
