"""The cross-encoder is loaded on first use and released after an idle period (issue #25: the
window and `serve` at 100k memories held its ~40 MB from start, whether anyone chatted or not).
A release never changes a score, never happens under a running score, gives the memory back, and
the first chat turn after one still reranks its whole pool. Real shipped model, real store."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.reranker import OnnxReranker
from desktop_mem.engine.index.retrieval import SearchFilters
from tests.mcp_clients import ROOT, cli_env
from tests.test_onnx_memory import _long_memories, _rss_mb
from tests.test_security import _wait_for

QUERY = "When did Caroline go to the LGBTQ support group?"
PASSAGES = [
    "Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
    "Melanie: Yes, it was amazing!",
    "The user prefers ramen over sushi and avoids peanuts.",
    "Melanie: We hiked the lake trail with the dog and had a picnic.",
]


on_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RSS read from /proc")


@on_linux
def test_the_model_is_loaded_by_the_first_score_not_by_construction() -> None:
    before = _rss_mb()
    reranker = OnnxReranker()
    assert not reranker.loaded and reranker.loads == 0
    assert _rss_mb() - before < 15  # the tokenizer (~7 MB) is; the session (~37 MB) is not yet
    scores = reranker.score(QUERY, PASSAGES)
    assert reranker.loaded and reranker.loads == 1
    assert max(range(len(PASSAGES)), key=lambda i: scores[i]) == 0
    reranker.score(QUERY, PASSAGES[:1])
    assert reranker.loads == 1  # loaded once, used from then on


@on_linux
def test_a_release_frees_the_model_and_the_next_score_is_the_same() -> None:
    reranker = OnnxReranker(idle_release_s=0)  # 0: only released when asked
    first = reranker.score(QUERY, PASSAGES)
    pool = reranker.score(QUERY, [*_long_memories(8), *PASSAGES])
    session = weakref.ref(reranker.session)
    held = _rss_mb()
    assert reranker.release()
    assert not reranker.loaded
    assert session() is None  # nothing else kept the session alive
    given_back = held - _rss_mb()
    assert given_back > 25, f"a release gave back only {given_back:.1f} MB"
    # Loaded again by the next score: the very same scores (one pair per run, same model).
    assert reranker.score(QUERY, PASSAGES) == first
    assert reranker.score(QUERY, [*_long_memories(8), *PASSAGES]) == pool
    assert reranker.loads == 2


# In a process of its own: RSS is the whole process's, and in a long test run other objects'
# memory is freed meanwhile (an earlier test's shared model released by its idle watcher, garbage
# collected sessions), which a trim would count as the load's.
LOAD_ON_A_WORKER = """
import json, threading
from desktop_mem.engine.index.native_heap import release_free_heap
from desktop_mem.engine.index.onnx_session import cpu_session
from desktop_mem.engine.index.reranker import MODEL_FILE, OnnxReranker
from tests.test_onnx_memory import _rss_mb

folder = OnnxReranker().folder
release_free_heap()
sessions, kept = [], []

def load():
    before = _rss_mb()
    sessions.append(cpu_session(folder / MODEL_FILE, 1, spinning=False))
    untrimmed = _rss_mb()
    release_free_heap()
    kept.extend([untrimmed - before, _rss_mb() - before])

worker = threading.Thread(target=load)
worker.start()
worker.join()
print(json.dumps(kept))
"""


@on_linux
def test_loading_on_a_worker_thread_leaves_no_freed_weight_copies_in_the_heap() -> None:
    """The chat turn loads the cross-encoder on a worker thread, at its busiest moment: building
    the session copied each weight out of the parsed model and left the parsed copies as holes
    in glibc's heap, 14 MB above what the session keeps (the window's peak in use was ~17 MB
    higher than with the model loaded at start); they now go back at once."""
    done = subprocess.run([sys.executable, "-c", LOAD_ON_A_WORKER], cwd=ROOT, env=cli_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    untrimmed, trimmed = json.loads(done.stdout.strip().splitlines()[-1])
    assert untrimmed - trimmed < 5, f"{untrimmed - trimmed:.1f} MB of freed blocks were left by the load"


def test_an_idle_model_is_released_by_itself_and_never_under_a_running_score() -> None:
    reranker = OnnxReranker(threads=1, idle_release_s=0.2)
    threads = set(threading.enumerate())
    reranker.prepare()
    assert reranker.loaded
    (idle_watcher,) = set(threading.enumerate()) - threads
    assert idle_watcher.daemon  # it never keeps a process alive
    # One pool of long memories takes well over the idle period on one thread: it must not be
    # released while the score runs (checked all along from beside it).
    seen: list[bool] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.append(reranker.loaded)
            time.sleep(0.005)

    watcher = threading.Thread(target=watch)
    watcher.start()
    started = time.monotonic()
    try:
        reranker.score(QUERY, _long_memories(12))
    finally:
        done.set()
        watcher.join()
    assert time.monotonic() - started > 0.4  # the score did outlast the idle period
    assert seen and all(seen), "released while a score was running"
    assert reranker.loads == 1
    assert _wait_for(lambda: not reranker.loaded, 20), "not released after the idle period"
    idle_watcher.join(5)
    assert not idle_watcher.is_alive()  # nothing left to watch: no timer fires after the release
    assert reranker.score(QUERY, PASSAGES[:1])[0] > 0.5 and reranker.loads == 2


def test_scores_stay_right_while_releases_happen_between_and_during_them() -> None:
    reranker = OnnxReranker(idle_release_s=0.01)  # the idle watcher fires between calls too
    expected = reranker.score(QUERY, PASSAGES)
    errors: list[BaseException] = []
    wrong: list[list[float]] = []
    stop = threading.Event()
    rounds = threading.Barrier(3, timeout=60)

    def chat() -> None:
        try:
            for i in range(12):
                scores = reranker.score(QUERY, PASSAGES)
                if scores != expected:
                    wrong.append(scores)
                rounds.wait()  # the three score together; every other round all pause a moment
                time.sleep(0.03 * (i % 2))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    refused: list[bool] = []

    def release() -> None:
        while not stop.is_set():
            refused.append(not reranker.release())  # refused while a score runs
            time.sleep(0.003)

    releaser = threading.Thread(target=release)
    chats = [threading.Thread(target=chat) for _ in range(3)]
    releaser.start()
    for thread in chats:
        thread.start()
    for thread in chats:
        thread.join(120)
    stop.set()
    releaser.join()
    assert not errors and not wrong
    assert any(refused)  # releases were asked for during scores ...
    assert reranker.loads > 2  # ... and between them: it was released and loaded again


def test_the_first_chat_turn_after_a_release_scores_the_whole_pool(make_config: Callable[..., Any]) -> None:
    """A load is not charged to the rerank budget: before, the first step of the turn after a
    load took the load's time, looked too slow for the rest, and only 2 of the 20 best candidates
    were scored (silently weaker recall on that turn)."""
    config = make_config(retrieval__rerank_budget_ms=5000, retrieval__rerank_pool=20,
                         retrieval__rerank_idle_release_s=0)
    with MemoryEngine(config) as eng:
        eng.add_many([f"Caroline: note {i} about the support group, the garden and the adoption agency"
                      for i in range(24)], conversation_id="c1")
        eng.open_index()
        retriever = eng._parts.search_index.retriever
        reranker: Any = retriever.reranker
        assert isinstance(reranker, OnnxReranker)
        reranker.prepare()
        assert reranker.release() and not reranker.loaded
        # The clock of a busy machine, where a load takes longer than the whole budget (10 s
        # against 5: on this one it takes ~0.25 s against the default 0.5 s budget).
        retriever.clock = lambda: time.perf_counter() + 10.0 * reranker.loads
        results = retriever.search("When did Caroline go to the support group?",
                                   SearchFilters(conversation_id="c1"), top_k=24, rerank=True, use_mmr=False)
        assert reranker.loads == 2
        assert sum(r.scores.rerank is not None for r in results) == 20
