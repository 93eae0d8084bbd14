"""Read-path latency at 1k / 10k / 100k synthetic memories, without and with the cross-encoder.

Each store is built once under --dir (kept, so a re-run only opens it): files are written through
the real store (MarkdownStore.new_memory; git versioning off, as a bulk import would be), then
MemoryEngine.open_index() embeds and indexes them. Queries are scoped to a conversation, as the
per-turn read path is. The first row per size runs with `retrieval.rerank` off; the second with
the shipped ms-marco-MiniLM-L-12-v2 cross-encoder over the default pool (its cost per query).
`--set` overrides a setting for every store (e.g. --set embedding.local_model=all-MiniLM-L6-v2;
a store built with another model is re-embedded on open). Usage:

    python benchmarks/read_latency.py [--sizes 1000,10000,100000] [--queries 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.synthetic import memories, queries  # noqa: E402
from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


OVERRIDES: dict[str, Any] = {}


def config(root: Path, threads: int, **extra: Any) -> Any:
    return load_config(flags={"store.path": str(root), "store.git_versioning": False,
                              "watcher.enabled": False, "embedding.threads": threads,
                              **OVERRIDES, **extra})


def build(root: Path, n: int, threads: int) -> None:
    """Write n memories as files through the store and index them (skipped if already built)."""
    marker = root / ".bench-built"  # written last: an interrupted build is redone, not reused
    if marker.exists():
        return
    with MemoryEngine.open(config(root, threads)) as engine:
        start, files = time.perf_counter(), engine._parts.store
        for m in memories(n):
            files.new_memory(m.text, conversation_id=m.conversation_id, role=m.role, kind=m.kind,
                             source="import", created_at=m.created_at)
        engine.refresh()
        wrote = time.perf_counter() - start
        start = time.perf_counter()
        engine.open_index()
        print(f"  built {n}: files {wrote:.0f} s, index {time.perf_counter() - start:.0f} s", flush=True)
    marker.write_text("ok\n", encoding="utf-8")


def measure(engine: MemoryEngine, n_queries: int, rerank: bool = False) -> dict[str, float]:
    rng = random.Random(3)
    convs = [c for c in engine.conversations() if c != "global"]
    qs = queries(n_queries)
    for q in qs[:5]:  # warm-up: first-query costs (ONNX session, sqlite pages) are not per-turn costs
        engine.search(q, conversation_id=rng.choice(convs), rerank=rerank)
    times: list[float] = []
    cpu: list[float] = []
    for q in qs:
        conv = rng.choice(convs)
        start, start_cpu = time.perf_counter(), time.process_time()
        engine.search(q, conversation_id=conv, rerank=rerank)
        times.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - start_cpu) * 1000)
    # CPU time (all threads of this process) next to wall time: on a shared, loaded machine it
    # shows the read path's own cost when wall time mostly measures waiting for a core.
    return {"p50_ms": statistics.median(times), "p95_ms": pct(times, 0.95),
            "cpu_p50_ms": statistics.median(cpu)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "desktop-mem-bench")
    parser.add_argument("--build-threads", type=int, default=2, help="embedder threads while building")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--rerank-queries", type=int, default=50, help="queries for the reranker row")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting, e.g. --set embedding.local_model=all-MiniLM-L6-v2")
    args = parser.parse_args()
    for item in args.set:
        key, _, value = item.partition("=")
        OVERRIDES[key] = value
    rows: list[dict[str, Any]] = []
    for n in [int(s) for s in args.sizes.split(",")]:
        root = args.dir / f"store-{n}"
        build(root, n, args.build_threads)
        # Queries with the default 1 embedder thread; the reranker row with the shipped model.
        with MemoryEngine.open(config(root, 1, **{"retrieval.rerank": False})) as engine:
            engine.open_index()
            plain = measure(engine, args.queries)
            embedder = engine._parts.search_index.retriever.embedder.name
        # No time budget here: the row measures what the full pool of the cross-encoder costs.
        full_pool = {"retrieval.rerank": True, "retrieval.rerank_budget_ms": 0}
        with MemoryEngine.open(config(root, 1, **full_pool)) as engine:
            engine.open_index()
            ranked = measure(engine, args.rerank_queries, rerank=True)
        rows.append({"memories": n, "embedder": embedder, "p50_ms": plain["p50_ms"],
                     "p95_ms": plain["p95_ms"], "cpu_p50_ms": plain["cpu_p50_ms"],
                     "rerank_p50_ms": ranked["p50_ms"], "rerank_p95_ms": ranked["p95_ms"],
                     "rerank_cpu_p50_ms": ranked["cpu_p50_ms"], "load": os.getloadavg()[0]})
        r = rows[-1]
        print(f"{n:>8} memories ({embedder}): p50 {r['p50_ms']:6.1f} ms  p95 {r['p95_ms']:6.1f} ms  "
              f"(CPU p50 {r['cpu_p50_ms']:5.1f} ms)   with reranker: p50 {r['rerank_p50_ms']:6.1f} ms  "
              f"p95 {r['rerank_p95_ms']:6.1f} ms   [load average {r['load']:.1f}]", flush=True)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
