"""The shipped cross-encoder on two threads (issue #25): two pairs of a pool are scored at once, each
on a one-thread session, and a pair's score does not depend on which thread ran it or on the thread
count. Real ONNX model; no timing here (the wall and CPU figures are in docs/benchmarks.md)."""

from __future__ import annotations

import threading
from typing import Any

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


class _MeetingSession:
    """The real session, whose first two runs must be in flight at the same moment: each waits
    (up to 20 s) for the other at a barrier, which a one-pair-after-another reranker never passes."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.barrier = threading.Barrier(2, timeout=20)
        self.runs = 0
        self.lock = threading.Lock()

    def run(self, *args: Any) -> Any:
        with self.lock:
            self.runs += 1
            first_two = self.runs <= 2
        if first_two:
            self.barrier.wait()
        return self.session.run(*args)


def test_the_default_reranker_scores_two_pairs_at_once_on_one_thread_sessions() -> None:
    reranker = make_reranker(load_config(flags={}))
    assert isinstance(reranker, OnnxReranker)
    assert reranker.workers == 2
    # One intra-op thread per run: two of them spun between operators and cost ~25 % more CPU.
    assert reranker.session.get_session_options().intra_op_num_threads == 1
    alone = [reranker.score(QUERY, [p])[0] for p in PASSAGES]
    meeting = _MeetingSession(reranker.session)
    reranker.session = meeting
    try:
        scores = reranker.score(QUERY, PASSAGES)  # BrokenBarrierError if the pairs ran one by one
    finally:
        reranker.session = meeting.session
    assert meeting.runs == len(PASSAGES)  # still one run per pair
    assert scores == alone  # the very same score as the pair scored alone


def test_two_threads_score_every_pair_as_one_thread_does() -> None:
    one = OnnxReranker(threads=1).score(QUERY, PASSAGES)
    two = OnnxReranker(threads=2).score(QUERY, PASSAGES * 3)
    assert two == pytest.approx(one * 3, abs=1e-6)
    assert max(two) == two[0]  # and they still rank the answer first
