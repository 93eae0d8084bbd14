"""The shipped cross-encoder on two threads (issue #25): idle workers sleep instead of spinning, so
two threads cost the CPU of one (a spinning worker takes a core from a local LLM beside the app),
and the scores do not depend on the thread count. Real ONNX model; no timing here (the wall and
CPU figures are in docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from desktop_mem.engine.config import load_config
from desktop_mem.engine.index.index_factory import make_reranker
from desktop_mem.engine.index.reranker import OnnxReranker

QUERY = "When did Caroline go to the LGBTQ support group?"
PASSAGES = [
    "I went to a LGBTQ support group yesterday and it was so powerful.",
    "Yes, it was amazing!",
    "The user prefers ramen over sushi and avoids peanuts.",
    "We hiked the lake trail with the dog and had a picnic.",
]


def test_the_default_reranker_runs_on_two_threads_that_never_spin() -> None:
    reranker = make_reranker(load_config(flags={}))
    assert isinstance(reranker, OnnxReranker)
    options = reranker.session.get_session_options()
    assert options.intra_op_num_threads == 2
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_two_threads_score_every_pair_as_one_thread_does() -> None:
    one = OnnxReranker(threads=1).score(QUERY, PASSAGES)
    two = OnnxReranker(threads=2).score(QUERY, PASSAGES)
    assert two == pytest.approx(one, abs=1e-6)
    assert max(two) == two[0]  # and they still rank the answer first
