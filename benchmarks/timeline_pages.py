"""Timeline paging benchmark: first and next page of `timeline_page` over a 5,000-commit store.

The store is generated with `git fast-import` (seconds instead of minutes) from memory files
rendered exactly as the app writes them, in a realistic mix: facts added, edited, replaced
(tombstone with replaced_by + new fact), deleted, evicted, restored, turns, rolling summaries,
and a few commits made by hand without trailers; `--bulk N` ends it with one commit re-stamping
N facts (what a migration makes). Each run uses a fresh in-memory commit cache, and is timed
twice: "first sight" without the on-disk cache of what each commit changed
(history/commit_summaries.py: a store opened by an older version, a sync remote's commits), and
"kept" with it (every later session; the app's own bulk commits are kept when made).
`--store DIR` times an existing history instead (it writes only that cache file under DIR/.git).
Usage:

    python benchmarks/timeline_pages.py [--commits 5000] [--bulk 0] [--runs 7] [--json]
    python benchmarks/timeline_pages.py --store DIR [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from desktop_mem.engine.history import commit_summaries
from desktop_mem.engine.history.git_history import GITIGNORE, GitHistory, format_message
from desktop_mem.engine.history.timeline import classify
from desktop_mem.engine.history.timeline_query import (
    CommitCache,
    TimelineQuery,
    timeline_page,
    wait_for_background,
)
from desktop_mem.engine.models import EventType
from desktop_mem.engine.store import front_matter

TARGET_FIRST_MS = 200.0  # issue #25: the first page at 100k memories
TARGET_NEXT_MS = 150.0
_SUBJECTS = ["lives in", "works at", "likes", "has a", "prefers", "is learning", "visited", "owns"]
_OBJECTS = ["Berlin", "a small bakery", "jazz records", "grey cat", "green tea over coffee", "Rust",
            "Lisbon last spring", "an old bicycle", "the night shift", "board games", "Hamburg"]
_OPS = [("add", 26), ("turns", 24), ("edit", 10), ("update", 12), ("delete", 8), ("evict", 4),
        ("restore", 4), ("summary", 8), ("hand", 4)]


@dataclass
class _File:
    meta: dict[str, Any]
    body: str

    def render(self) -> bytes:
        return front_matter.render(self.meta, self.body).encode()


@dataclass
class _Sim:
    """The simulated store: live and deleted files by path, and the fast-import stream."""

    rng: random.Random
    live: dict[str, _File] = field(default_factory=dict)
    deleted: dict[str, _File] = field(default_factory=dict)
    out: list[bytes] = field(default_factory=list)
    now: datetime = datetime(2025, 1, 1, tzinfo=UTC)
    mark: int = 0
    recent: dict[str, list[str]] = field(default_factory=dict)  # paths by role, newest last

    def add_live(self, path: str, f: _File) -> None:
        self.live[path] = f
        self.recent.setdefault(str(f.meta["role"]), []).append(path)

    def fact_text(self) -> str:
        return f"User {self.rng.choice(_SUBJECTS)} {self.rng.choice(_OBJECTS)} ({self.rng.randrange(10**6)})"

    def new_file(self, conv: str, role: str, text: str) -> tuple[str, _File]:
        mid = str(uuid.UUID(int=self.rng.getrandbits(128)))
        folder = {"memory": "facts", "user": "turns/user", "assistant": "turns/assistant"}[role]
        stamp = self.now.strftime("%Y%m%dT%H%M%SZ")
        meta = {"id": mid, "role": role, "conversation_id": conv,
                "kind": "fact" if role == "memory" else None, "source": "llm", "created_at": self.now}
        return f"entries/{conv}/{folder}/{stamp}__{mid}.md", _File({k: v for k, v in meta.items() if v}, text)

    def commit(self, subject: str, trailers: dict[str, str], changes: list[tuple[str, str, bytes]]) -> None:
        self.mark += 1
        self.now += timedelta(seconds=self.rng.randrange(20, 900))
        msg = format_message(subject, trailers).encode()
        author = b"desktop-mem <desktop-mem@localhost>" if trailers else b"Me <me@example.org>"
        head = b"commit refs/heads/main\nmark :%d\ncommitter %s %d +0000\ndata %d\n%s\n" % (
            self.mark, author, int(self.now.timestamp()), len(msg), msg)
        self.out.append(head)
        for op, path, data in changes:
            if op == "D":
                self.out.append(f"D {path}\n".encode())
            else:
                self.out.append(f"M 100644 inline {path}\n".encode() + b"data %d\n%s\n" % (len(data), data))
        self.out.append(b"\n")

    def pick(self, pool: dict[str, _File], role: str = "memory") -> str | None:
        """One of the 400 newest live files of `role` (recent ones, as in real use).

        Kept in a list per role, pruned of files gone since: a scan of every live file per step
        made a 100,000-commit build quadratic."""
        paths = self.recent.get(role, [])
        tail = [p for p in paths[-800:] if p in pool][-400:]
        if len(paths) > 1600:
            paths[:-800] = []
        return self.rng.choice(tail) if tail else None


def _to_deleted(path: str) -> str:
    conv_root = "/".join(path.split("/")[:2])
    return f"{conv_root}/deleted/{path[len(conv_root) + 1:]}"


def _step(sim: _Sim, op: str, conv: str) -> None:
    rng = sim.rng
    trail = {"Conversation": conv}
    if op == "add" or (op in ("edit", "update", "delete", "evict", "hand") and sim.pick(sim.live) is None):
        path, f = sim.new_file(conv, "memory", sim.fact_text())
        sim.add_live(path, f)
        sim.commit(f"Add fact: {f.body}", {"Operation": "add", "Ids": f.meta["id"], **trail},
                   [("M", path, f.render())])
    elif op == "turns":
        u_path, u = sim.new_file(conv, "user", "Can you remember that " + sim.fact_text().lower() + "?")
        reply = "Sure - noted. " + " ".join(sim.fact_text() for _ in range(3))
        a_path, a = sim.new_file(conv, "assistant", reply)
        sim.add_live(u_path, u)
        sim.add_live(a_path, a)
        ids = f"{u.meta['id']}, {a.meta['id']}"
        sim.commit(f"Turn: {u.body[:60]}", {"Operation": "turn", "Ids": ids, **trail},
                   [("M", u_path, u.render()), ("M", a_path, a.render())])
    elif op == "summary":
        path = f"entries/{conv}/summaries/summary.md"
        old = sim.live.get(path)
        text = " ".join(sim.fact_text() + "." for _ in range(rng.randrange(6, 14)))
        fresh: dict[str, Any] = {"id": f"summary-{conv}", "role": "summary", "conversation_id": conv,
                 "summary_kind": "rolling", "created_at": sim.now}
        meta = dict(old.meta) if old else fresh
        meta.update(updated_at=sim.now, summarized_count=int(meta.get("summarized_count", 0)) + 4)
        sim.live[path] = _File(meta, text)
        sim.commit("Update summary", {"Operation": "summary", "Ids": f"summary-{conv}", **trail},
                   [("M", path, sim.live[path].render())])
    elif op == "edit":
        picked = sim.pick(sim.live)
        assert picked
        f = sim.live[picked]
        f.body = f.body.rsplit(" (", 1)[0] + f" ({rng.randrange(10**6)})"
        f.meta["updated_at"] = sim.now
        sim.commit(f"Edit fact: {f.body}", {"Operation": "edit", "Ids": f.meta["id"], **trail},
                   [("M", picked, f.render())])
    elif op in ("update", "hand", "delete", "evict"):
        picked = sim.pick(sim.live)
        assert picked
        f = sim.live.pop(picked)
        tomb = _to_deleted(picked)
        f.meta["deleted_at"] = sim.now
        changes = [("D", picked, b"")]
        if op in ("update", "hand"):
            new_path, new = sim.new_file(f.meta["conversation_id"], "memory", sim.fact_text())
            f.meta["replaced_by"] = new.meta["id"]
            sim.add_live(new_path, new)
            changes.append(("M", new_path, new.render()))
        sim.deleted[tomb] = f
        changes.append(("M", tomb, f.render()))
        if op == "hand":
            sim.commit("replace a fact by hand", {}, changes)
        else:
            verb = {"update": "Update", "delete": "Delete", "evict": "Evict"}[op]
            sim.commit(f"{verb} fact: {f.body}", {"Operation": op, "Ids": f.meta["id"], **trail}, changes)
    elif op == "restore":
        tombs = [p for p, f in sim.deleted.items() if not f.meta.get("replaced_by")]
        if not tombs:
            _step(sim, "add", conv)
            return
        tomb = rng.choice(tombs)
        f = sim.deleted.pop(tomb)
        f.meta.pop("deleted_at", None)
        f.meta["updated_at"] = sim.now
        path = tomb.replace("/deleted/", "/", 1)
        sim.add_live(path, f)
        sim.commit(f"Restore fact: {f.body}", {"Operation": "restore", "Ids": f.meta["id"], **trail},
                   [("D", tomb, b""), ("M", path, f.render())])


def build_store(root: Path, commits: int, seed: int = 7, bulk: int = 0) -> None:
    """A git store at `root` with `commits` commits in a realistic mix (+ one bulk commit)."""
    sim = _Sim(random.Random(seed))
    sim.commit("Create the store", {"Operation": "init"}, [("M", ".gitignore", GITIGNORE.encode())])
    names, weights = zip(*_OPS, strict=True)
    convs = ["global"] + [f"c{i:02d}" for i in range(1, 21)]
    while sim.mark < commits:
        _step(sim, sim.rng.choices(names, weights)[0], sim.rng.choice(convs))
    if bulk:
        facts = [p for p, f in sim.live.items() if f.meta["role"] == "memory"][:bulk]
        for path in facts:
            sim.live[path].meta["valid_from"] = sim.now.date()
        sim.commit(f"Record when each fact was true (valid_from / valid_to) for {len(facts)} facts",
                   {"Operation": "migrate"}, [("M", p, sim.live[p].render()) for p in facts])
    root.mkdir(parents=True)
    run = {"cwd": root, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q", "-b", "main"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "fast-import", "--quiet"], input=b"".join(sim.out), **run)  # type: ignore[call-overload]
    subprocess.run(["git", "reset", "--hard", "-q"], **run)  # type: ignore[call-overload]


def measure(source: Any, runs: int, query: TimelineQuery, *, kept: bool) -> tuple[float, float, int]:
    """Median first-page and next-page times (ms), fresh commit cache each run, and the events on
    page 1; `kept=False` removes the on-disk cache before each run (commits never seen)."""
    firsts, nexts = [], []
    events = 0
    cache_file = commit_summaries.cache_file(source.git)
    if kept:  # what an earlier session (or the app's own bulk commits) left
        timeline_page(source, query, None, 50, CommitCache())
        wait_for_background()
    for _ in range(runs):
        if not kept:
            for path in cache_file.parent.glob(cache_file.name + "*"):
                path.unlink()
        cache = CommitCache()  # a new session: nothing classified in memory
        start = time.perf_counter()
        first = timeline_page(source, query, None, 50, cache)
        firsts.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        timeline_page(source, query, first.next_cursor, 50, cache)
        nexts.append((time.perf_counter() - start) * 1000)
        wait_for_background()  # runs do not overlap (a page's background work is not timed)
        events = sum(len(c.events) for c in first.commits)
    return statistics.median(firsts), statistics.median(nexts), events


class _History:
    """An existing store's history alone (no engine open: nothing else is read or migrated)."""

    def __init__(self, root: Path) -> None:
        self.git = GitHistory(root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--bulk", type=int, default=0, help="end with a commit of this many facts")
    parser.add_argument("--store", type=Path, help="time this existing store's history instead")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    if args.store:
        source = _History(args.store)
        results.update(commits=source.git.count(), build_seconds=0.0, event_mix={})
        results.update(_timings(source, args.runs))
        source.git.close()
    else:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "store"
            t0 = time.perf_counter()
            build_store(root, args.commits, bulk=args.bulk)
            build_s = time.perf_counter() - t0
            # The history alone, as built (opening an engine would run its migrations first).
            source = _History(root)
            total = source.git.count()
            mix = Counter(e.type for r in source.git.log(limit=min(total, 5000))
                          for e in classify(r, source.git.blob).events)
            results.update(commits=total, build_seconds=round(build_s, 1),
                           event_mix={str(k): mix.get(k, 0) for k in EventType})
            results.update(_timings(source, args.runs))
            source.git.close()
    results["load_average"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"store: {results['commits']} commits, built in {results['build_seconds']} s")
    if results["event_mix"]:
        print(f"event mix (newest 5,000 commits): {results['event_mix']}")
    for name in _QUERIES:
        for kept in (False, True):
            first, nxt, events = results[f"{name}{'' if kept else ' (first sight)'}"]
            label = f"{name} ({'kept' if kept else 'first sight'})"
            print(f"{label:46s} first page {first:7.1f} ms   next page {nxt:7.1f} ms   "
                  f"({events} events on page 1)")
    print(f"load average: {results['load_average']}")
    first, nxt, _ = results["all"]
    ok = first <= TARGET_FIRST_MS and nxt <= TARGET_NEXT_MS
    verdict = "met" if ok else "MISSED"
    print(f"targets (kept): first <= {TARGET_FIRST_MS:.0f} ms, next <= {TARGET_NEXT_MS:.0f} ms -> {verdict}")
    return 0 if ok else 1


_QUERIES = {
    "all": TimelineQuery(),
    "only_deletes_and_replacements": TimelineQuery(only_deletes_and_replacements=True),
    "conversation_c07": TimelineQuery(conversation="c07"),
}


def _timings(source: Any, runs: int) -> dict[str, tuple[float, float, int]]:
    out: dict[str, tuple[float, float, int]] = {}
    for name, query in _QUERIES.items():
        out[f"{name} (first sight)"] = measure(source, runs, query, kept=False)
        out[name] = measure(source, runs, query, kept=True)
    return out


if __name__ == "__main__":
    sys.exit(main())
