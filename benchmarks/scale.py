"""Scale benchmark: one store of N memories, built once, measured as a user meets it.

Builds N synthetic memories (benchmarks/synthetic.py: facts and user/assistant turns in
conversations of 200 turns) through the real import path as `desktop-mem import` runs it
(`plan_import`, then `apply_import` of a JSON list, one commit per 5,000 files, while
`IndexSync.background` embeds each committed batch). `--reindex` also times a full rebuild of the
index. `--workdir DIR` keeps the store and reuses it on the next run. Then, each in a
fresh process where it matters, it measures:

- read p50 / p95 without the cross-encoder (scoped to a conversation, as a chat turn is);
- the full read path with the cross-encoder (the full pool, no budget) p50;
- the GUI's time to interactive and the window process's peak RSS (benchmarks/gui_start.py);
- the timeline's first page on a history of N commits (benchmarks/timeline_pages.py's store,
  built with git fast-import into the workdir);
- hand edit -> searchable: a file written into entries/ by hand until a search finds it;
- the peak RSS of an engine process that opened the index and searched (what `serve` holds,
  without FastAPI), and the index size on disk.

Prints progress on stderr and one JSON line on stdout. Usage:

    python benchmarks/scale.py --size 10000 --workdir /tmp/scale-10k [--skip gui,timeline]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.synthetic import memories, queries  # noqa: E402
from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402

HERE = Path(__file__).resolve().parent


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {text}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def config(store: Path, **extra: Any) -> Any:
    return load_config(flags={"store.path": str(store), "watcher.enabled": False, **extra})


def progress_printer(what: str) -> Any:
    start = time.perf_counter()
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.perf_counter()
        if now - last[0] < 10 and done < total:
            return
        last[0] = now
        elapsed = now - start
        eta = elapsed / done * (total - done) if done else float("nan")
        say(f"{what}: {done:,}/{total:,} ({done / max(elapsed, 1e-9):.0f}/s, ETA {eta:.0f} s)")
    return progress


def build(store: Path, n: int, workers: int = 2) -> dict[str, float]:
    """Import n memories as one JSON list and index them as `desktop-mem import` does (the files in
    batches of 5,000, each committed, embedded by a worker while the next is written); returns
    the phases' seconds."""
    from desktop_mem.engine.transfer.importers import apply_import, plan_import

    source = store.parent / f"memories-{n}.json"
    items = [{"text": m.text, "role": m.role, "conversation_id": m.conversation_id,
              **({"kind": m.kind} if m.kind else {}), "created_at": m.created_at.isoformat()}
             for m in memories(n)]
    source.write_text(json.dumps(items), encoding="utf-8")
    phases: dict[str, float] = {"workers": workers}
    with MemoryEngine.open(config(store)) as engine:
        start = t = time.perf_counter()
        plan = plan_import(engine._parts, source, "json", secrets="keep")
        phases["import_plan_s"] = time.perf_counter() - t
        t = time.perf_counter()
        engine.open_index()
        phases["index_open_s"] = time.perf_counter() - t
        t = time.perf_counter()
        index = engine._parts.search_index.index
        with index.background(progress_printer("index: embeddings"), expected=n, workers=workers):
            result = apply_import(engine._parts, plan, progress_printer("import: files"))
            phases["import_write_and_commit_s"] = time.perf_counter() - t
            say(f"import wrote and committed {n:,} memories in {phases['import_write_and_commit_s']:.0f} s "
                f"({len(result.commits)} commits); indexing goes on")
        phases["index_s"] = time.perf_counter() - t  # from the first file written: overlapped
        phases["build_total_s"] = time.perf_counter() - start
        say(f"indexed {n:,} memories {phases['index_s']:.0f} s after the first file; "
            f"import + index {phases['build_total_s']:.0f} s")
    return phases


def reindex(store: Path, workers: int) -> dict[str, float]:
    """`desktop-mem reindex` on the built store: drop both indexes, re-embed every memory."""
    with MemoryEngine.open(config(store)) as engine:
        engine.open_index()
        embedder = engine._parts.search_index.retriever.embedder
        if hasattr(embedder, "workers"):
            embedder.workers = workers
        t = time.perf_counter()
        report = engine.reindex(progress_printer("reindex"))
        return {"reindex_s": time.perf_counter() - t, "reindexed": report.embedded}


def child_reads(store: Path, n_queries: int, n_rerank: int) -> dict[str, float]:
    """In a fresh process: read latency without and with the cross-encoder, then peak RSS."""
    rng = random.Random(3)
    with MemoryEngine.open(config(store, **{"retrieval.rerank_budget_ms": 0})) as engine:
        t = time.perf_counter()
        engine.open_index()
        open_s = time.perf_counter() - t
        convs = [c for c in engine.conversations() if c != "global"]
        qs = queries(n_queries + n_rerank + 10)
        for q in qs[:10]:
            engine.search(q, conversation_id=rng.choice(convs), rerank=True)
        plain, full = [], []
        for q in qs[10:10 + n_queries]:
            t = time.perf_counter()
            engine.search(q, conversation_id=rng.choice(convs))
            plain.append((time.perf_counter() - t) * 1000)
        for q in qs[10 + n_queries:]:
            t = time.perf_counter()
            engine.search(q, conversation_id=rng.choice(convs), rerank=True)
            full.append((time.perf_counter() - t) * 1000)
    return {"index_open_s": open_s, "read_p50_ms": statistics.median(plain), "read_p95_ms": pct(plain, 0.95),
            "full_read_p50_ms": statistics.median(full), "full_read_p95_ms": pct(full, 0.95),
            "engine_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def child_hand_edit(store: Path) -> dict[str, float]:
    """In a fresh process with the watcher on: a fact file written by hand, until it is found."""
    from desktop_mem.engine.store import front_matter

    with MemoryEngine.open(load_config(flags={"store.path": str(store), "watcher.enabled": True})) as engine:
        engine.open_index()
        engine.start_watcher()
        time.sleep(1.0)
        word = "zanzibar" + "".join(random.Random().choices("bcdfghjklmnpqrstvwxz", k=8))  # no digits: a long
        # number reads as a likely secret, and a hand edit with one is held back from every read
        rel = store / "entries" / "global" / "facts" / f"hand-{word}.md"
        text = f"The user keeps a pet tortoise called {word}."
        raw = front_matter.render({"id": f"hand-{word}", "role": "memory", "kind": "fact", "source": "manual",
                                   "created_at": "2026-01-01T10:00:00Z"}, text)
        t = time.perf_counter()
        rel.write_text(raw, encoding="utf-8")
        found = float("nan")
        while time.perf_counter() - t < 60:
            if any(word in r.memory.text for r in engine.search(word, top_k=3)):
                found = time.perf_counter() - t
                break
            time.sleep(0.02)
        rel.unlink()  # the store keeps its N memories for the next run (the GUI waits for N listed)
        time.sleep(2.0)
    return {"hand_edit_to_searchable_s": found}


def child(kind: str, store: Path, *extra: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", kind, "--store", str(store), *extra],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        say(f"child {kind} failed: {out.stderr.strip()[-800:]}")
        return {}
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def index_size_mb(store: Path) -> float:
    parts = [store / "chroma", store / "keyword_index.sqlite3", store / "keyword_index.sqlite3-wal",
             store / "memory_index.json", store / "memory_index.json.sqlite3"]
    total = 0
    for part in parts:
        if part.is_file():
            total += part.stat().st_size
        elif part.is_dir():
            total += sum(f.stat().st_size for f in part.rglob("*") if f.is_file())
    return total / 1e6


def timeline(workdir: Path, n: int) -> dict[str, float]:
    from benchmarks.timeline_pages import build_store, measure
    from desktop_mem.engine.history.timeline_query import TimelineQuery

    root = workdir / f"timeline-{n}"
    if not (root / ".git").exists():
        t = time.perf_counter()
        build_store(root, n)
        say(f"timeline store of {n:,} commits built in {time.perf_counter() - t:.0f} s (git fast-import)")
    with MemoryEngine.open(config(root)) as engine:
        first, nxt, _ = measure(engine._parts, 5, TimelineQuery(), kept=True)  # what every later session sees
    return {"timeline_first_page_ms": first, "timeline_next_page_ms": nxt}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--workdir", type=Path, help="keep the stores here and reuse them")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rerank-queries", type=int, default=30)
    parser.add_argument("--skip", default="", help="comma list of: reads, gui, timeline, hand_edit")
    parser.add_argument("--workers", type=int, default=2, help="embedding runs side by side in the build")
    parser.add_argument("--reindex", action="store_true", help="also time a full reindex of the store")
    parser.add_argument("--child", choices=("reads", "hand_edit"))
    parser.add_argument("--store", type=Path)
    args = parser.parse_args()
    if args.child == "reads":
        print(json.dumps(child_reads(args.store, args.queries, args.rerank_queries)), flush=True)
        os._exit(0)
    if args.child == "hand_edit":
        print(json.dumps(child_hand_edit(args.store)), flush=True)
        os._exit(0)
    import tempfile

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="desktop-mem-scale-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text("", encoding="utf-8")
    os.environ["DESKTOP_MEM_CONFIG"] = str(workdir / "config.yaml")
    skip = set(filter(None, args.skip.split(",")))
    store = workdir / f"store-{args.size}"
    built = workdir / f"built-{args.size}.json"  # written last: an interrupted build is redone
    result: dict[str, Any] = {"size": args.size, "load_average_start": round(os.getloadavg()[0], 2)}
    if built.exists():
        result.update(json.loads(built.read_text(encoding="utf-8")))
        say(f"reusing the store of {args.size:,} memories in {store}")
    else:
        phases = build(store, args.size, args.workers)
        built.write_text(json.dumps(phases), encoding="utf-8")
        result.update(phases)
    if args.reindex:
        result.update(reindex(store, args.workers))
        say(f"reindexed {result['reindexed']:,} memories in {result['reindex_s']:.0f} s")
    if "reads" not in skip:
        result.update(child("reads", store, "--queries", str(args.queries),
                            "--rerank-queries", str(args.rerank_queries)))
        say(f"reads: {result.get('read_p50_ms', float('nan')):.1f} ms p50 without the cross-encoder, "
            f"{result.get('full_read_p50_ms', float('nan')):.0f} ms with it")
    result["index_size_mb"] = index_size_mb(store)
    if "gui" not in skip:
        from benchmarks.gui_start import compile_sources

        compile_sources()  # a user's later start, with bytecode caches (see gui_start.py)
        env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}
        out = subprocess.run([sys.executable, str(HERE / "gui_start.py"), "--child", "cold", "--store",
                              str(store), "--memories", str(args.size)], capture_output=True, text=True,
                             check=False, env=env)
        if out.returncode == 0:
            gui = json.loads(out.stdout.strip().splitlines()[-1])
            result.update({f"gui_{k}": v for k, v in gui.items()})
        else:
            say(f"gui child failed: {out.stderr.strip()[-800:]}")
    if "hand_edit" not in skip:
        result.update(child("hand_edit", store))
    if "timeline" not in skip:
        result.update(timeline(workdir, args.size))
    result["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
