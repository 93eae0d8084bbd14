"""The local models give back what a run used: scoring a chat turn's pool with the cross-encoder,
or embedding a batch of long memories, does not leave the process holding the runs' buffers for
the rest of the session (issue #25: the window's RSS at 100k memories). Real shipped models, RSS
read from /proc (Linux, glibc)."""

from __future__ import annotations

import sys

import pytest

from desktop_mem.engine.index.embedder import OnnxEmbedder
from desktop_mem.engine.index.reranker import OnnxReranker

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RSS read from /proc")

# With onnxruntime's arena the buffers of the longest run stayed with the session: +40 MB after
# one pool of 20 long pairs on the cross-encoder, +110 MB after one batch of 32 long memories on
# e5 (measured with this test before the change). Without it (and the C heap trimmed) a few MB.
KEPT_AT_MOST_MB = 15


def _status_mb(field: str) -> float:
    """A size line of /proc/self/status (VmRSS, VmHWM), in MB."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def _rss_mb() -> float:
    return _status_mb("VmRSS")


def _long_memories(count: int) -> list[str]:
    """Memories long enough to fill the models' windows (512 / 256 word pieces)."""
    words = ["sister", "garden", "Lisbon", "cello", "tomato", "rain", "tea", "harbour", "violin", "autumn",
             "train", "museum"]
    return [" ".join(words[(i * 7 + j) % len(words)] + str(j % 10) for j in range(700)) for i in range(count)]


def test_a_scored_pool_leaves_no_run_buffers_behind() -> None:
    # the shipped cross-encoder; one thread: two (the default) also leave glibc per-thread heaps
    # holding 4-35 MB that malloc_trim does not give back (not what this test is about)
    reranker = OnnxReranker(threads=1)
    assert reranker.session.get_session_options().enable_cpu_mem_arena is False
    short = reranker.score("where does my sister live", ["The user's sister lives in Lisbon."])
    before = _rss_mb()
    pool = _long_memories(19) + ["The user's sister lives in Lisbon."]
    scores = reranker.score("where does my sister live", pool)
    kept = _rss_mb() - before
    assert kept < KEPT_AT_MOST_MB, f"the process kept {kept:.0f} MB after scoring one pool"
    assert scores[-1] == pytest.approx(short[0], abs=1e-6)  # the same score, whatever ran before


def test_an_embedded_batch_leaves_no_run_buffers_behind() -> None:
    embedder = OnnxEmbedder()  # e5, one session for searches and saves
    assert embedder.session.get_session_options().enable_cpu_mem_arena is False
    alone = embedder.embed(["The user's sister lives in Lisbon."])
    before = _rss_mb()
    vectors = embedder.embed([*_long_memories(31), "The user's sister lives in Lisbon."])
    kept = _rss_mb() - before
    assert kept < KEPT_AT_MOST_MB, f"the process kept {kept:.0f} MB after embedding one batch"
    # the same meaning (an int8 run quantises over its whole padded batch: not bit for bit)
    assert float(vectors[-1] @ alone[0]) > 0.99


def _peak_since_reset_mb() -> float:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
    return _rss_mb()


def _hwm_mb() -> float:
    return _status_mb("VmHWM")


def test_embedding_a_batch_peaks_no_higher_than_its_buffers() -> None:
    embedder = OnnxEmbedder()
    embedder.embed(["The user's sister lives in Lisbon."])
    before = _peak_since_reset_mb()
    embedder.embed(_long_memories(8))
    # glibc put the freed run buffers in its heap and the heap grew: 222 MB above; with large
    # blocks mapped on their own (onnx_session._large_blocks_mapped) ~60, the arena's was 81.
    assert _hwm_mb() - before < 120
