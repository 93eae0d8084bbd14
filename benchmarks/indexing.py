"""Indexing speed: cold throughput, warm restart with unchanged files, hand edit -> searchable.

- cold: N memory files written through the store, then MemoryEngine.open_index() embeds and
  indexes all of them (memories/s).
- warm restart: a store of --warm memories (default 10k) already indexed; time
  MemoryEngine.open(config) + open_index() (nothing changed, so nothing is parsed or embedded).
  Git versioning is on, as in the app, so the start-up `git status` is included.
- hand edit -> searchable: with the watcher running (default debounce setting), rewrite a file's
  body like an editor would and time until search returns the new text (polled every 5 ms);
  also the time until the external-edit commit exists. Usage:

    python benchmarks/indexing.py [--cold 2000] [--warm 10000] [--edits 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.synthetic import memories  # noqa: E402
from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from desktop_mem.engine.models import StoreChange  # noqa: E402


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def config(root: Path, git: bool, watcher: bool = False) -> Any:
    return load_config(flags={"store.path": str(root), "store.git_versioning": git,
                              "watcher.enabled": watcher})


def write_files(engine: MemoryEngine, n: int) -> None:
    for m in memories(n):
        engine._parts.store.new_memory(m.text, conversation_id=m.conversation_id, role=m.role, kind=m.kind,
                                source="import", created_at=m.created_at)
    engine.refresh()


def cold(root: Path, n: int) -> float:
    with MemoryEngine.open(config(root, git=False)) as engine:
        write_files(engine, n)
        start = time.perf_counter()
        engine.open_index()
        return n / (time.perf_counter() - start)


def warm(root: Path, n: int, runs: int) -> list[float]:
    with MemoryEngine.open(config(root, git=False)) as engine:
        write_files(engine, n)
    with MemoryEngine.open(config(root, git=True)) as engine:  # first open commits the import once
        engine.open_index()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        with MemoryEngine.open(config(root, git=True)) as engine:
            report = engine.open_index()
            times.append(time.perf_counter() - start)
            assert report.embedded == 0, report
    return times


def edits(root: Path, n: int) -> tuple[list[float], list[float]]:
    searchable: list[float] = []
    committed: list[float] = []
    with MemoryEngine.open(config(root, git=True, watcher=True)) as engine:
        engine.open_index()
        assert engine.start_watcher()
        done = threading.Event()

        def on_change(change: StoreChange) -> None:
            if change.operation == "external-edit":
                done.set()

        engine.subscribe(on_change)
        facts = engine.list_memories(role="memory")[:n]
        for i, mem in enumerate(facts):
            word = f"zebracode{i}x"
            path = engine.root / mem.path
            raw = path.read_text(encoding="utf-8")
            done.clear()
            start = time.perf_counter()
            path.write_text(raw.replace(mem.text, f"{mem.text} Remember {word}."), encoding="utf-8")
            while not any(word in r.memory.text for r in engine.search(word, top_k=1)):
                time.sleep(0.005)
            searchable.append(time.perf_counter() - start)
            done.wait(10)
            committed.append(time.perf_counter() - start)
            time.sleep(0.05)
        engine.stop_watcher()
    return searchable, committed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", type=int, default=2000)
    parser.add_argument("--warm", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="desktop-mem-indexing-"))
    rate = cold(tmp / "cold", args.cold)
    print(f"cold indexing: {rate:.0f} memories/s ({args.cold} memories, 1 embedder thread)", flush=True)
    restart = warm(tmp / "warm", args.warm, args.runs)
    print(f"warm restart, {args.warm} unchanged files: median {statistics.median(restart):.2f} s "
          f"(max {max(restart):.2f} s over {args.runs})", flush=True)
    searchable, committed = edits(tmp / "warm", args.edits)
    ms = {name: (statistics.median(v) * 1000, pct(v, 0.95) * 1000)
          for name, v in (("searchable", searchable), ("committed", committed))}
    print(f"hand edit -> searchable ({args.warm} memories, watcher): p50 {ms['searchable'][0]:.0f} ms"
          f"  p95 {ms['searchable'][1]:.0f} ms; -> committed p50 {ms['committed'][0]:.0f} ms"
          f"  p95 {ms['committed'][1]:.0f} ms", flush=True)
    if args.json:
        print(json.dumps({"cold_memories_per_s": rate, "warm_restart_s": statistics.median(restart),
                          "edit_searchable_p50_ms": statistics.median(searchable) * 1000,
                          "edit_searchable_p95_ms": pct(searchable, 0.95) * 1000,
                          "edit_committed_p95_ms": pct(committed, 0.95) * 1000}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
