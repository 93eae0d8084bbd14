"""Scoped reads before vs after issue #25's read-path work, interleaved per query on one store.

"before" switches the same process back to what main did until 4875fe1: a large scope that the
oversampled query misses falls back to chroma's `where` filter on the conversation (no catalog
ids), the keyword index filters on its UNINDEXED columns, the cross-encoder runs on 1 thread and
the query embedder's 2 threads spin. "after" is this tree's defaults. Each query runs both ways
(order alternating) with the same conversation, so both see the same load; wall and process CPU
time are printed with the load average. The store is only read; open a copy of a kept scale store
(an old keyword index is upgraded in place when it opens, the old query still works on it).

    python benchmarks/read_before_after.py --store DIR [--queries 100] [--rerank-queries 30]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.synthetic import queries  # noqa: E402
from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from desktop_mem.engine.index import embedder as embedder_module  # noqa: E402
from desktop_mem.engine.index import onnx_session  # noqa: E402
from desktop_mem.engine.index.reranker import OnnxReranker  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def before_parts(model: str) -> tuple[Any, Any]:
    """The cross-encoder and query embedder as they were: 1 thread / 2 spinning threads."""
    spinning = onnx_session.cpu_session
    reranker = OnnxReranker.__new__(OnnxReranker)
    original = OnnxReranker.__dict__["_load_session"]
    OnnxReranker._load_session = staticmethod(lambda path, threads: spinning(path, threads))  # type: ignore[method-assign]
    try:
        reranker.__init__(None, threads=1, idle_release_s=0)  # type: ignore[misc]
        reranker.prepare()  # it loads on first use: load it here, with the old session options
    finally:
        OnnxReranker._load_session = original  # type: ignore[method-assign]
    plain = getattr(embedder_module, "cpu_session")  # noqa: B009 - the name the embedder calls
    setattr(embedder_module, "cpu_session", lambda path, threads, **_: spinning(path, threads))  # noqa: B010
    try:
        embedder = embedder_module.OnnxEmbedder(model=model, threads=1, query_threads=2)
        embedder.embed_query("warm up")
    finally:
        setattr(embedder_module, "cpu_session", plain)  # noqa: B010
    return reranker, embedder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rerank-queries", type=int, default=30)
    args = parser.parse_args()
    rng = random.Random(3)
    flags = {"store.path": str(args.store), "watcher.enabled": False, "retrieval.rerank_budget_ms": 0}
    with MemoryEngine.open(load_config(flags=flags)) as engine:
        engine.open_index()
        r = engine._parts.search_index.retriever
        after = (r.scope_ids, r.reranker, r.embedder)
        old_reranker, old_embedder = before_parts(engine.config["embedding.local_model"])

        def use(way: str) -> None:
            if way == "before":
                r.scope_ids, r.reranker, r.embedder = None, old_reranker, old_embedder
                r.keywords._tagged = False  # the UNINDEXED-column query
                r.keywords._tags_now = lambda: False  # type: ignore[method-assign]
            else:
                r.scope_ids, r.reranker, r.embedder = after
                r.keywords.__dict__.pop("_tags_now", None)
                r.keywords._tagged = True

        convs = [c for c in engine.conversations() if c != "global"]
        qs = queries(args.queries + args.rerank_queries + 10)
        for q in qs[:10]:  # warm-up, not timed
            c = rng.choice(convs)
            for way in ("before", "after"):
                use(way)
                engine.search(q, conversation_id=c, rerank=True)
        wall: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        load = os.getloadavg()[0]
        for i, q in enumerate(qs[10:]):
            c = rng.choice(convs)
            rerank = i >= args.queries
            for way in ("before", "after") if i % 2 else ("after", "before"):
                use(way)
                key = way + (" + cross-encoder" if rerank else "")
                c0, t0 = time.process_time(), time.perf_counter()
                engine.search(q, conversation_id=c, rerank=rerank)
                wall.setdefault(key, []).append((time.perf_counter() - t0) * 1000)
                cpu.setdefault(key, []).append((time.process_time() - c0) * 1000)
        use("after")
    print(f"{args.store}: load {load:.2f} -> {os.getloadavg()[0]:.2f}")
    for key in wall:
        w_ms, c_ms = wall[key], cpu[key]
        print(f"{key:26} wall p50 {statistics.median(w_ms):7.1f} ms  p95 {pct(w_ms, 0.95):7.1f} ms | "
              f"CPU p50 {statistics.median(c_ms):7.1f} ms  p95 {pct(c_ms, 0.95):7.1f} ms  (n={len(w_ms)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
