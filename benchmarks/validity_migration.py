"""The validity migration's git look-ups on a long history: one `git log` per tombstone (how the
migration found when a fact moved into deleted/ before) vs one pass over entries/
(`GitHistory.last_added`, what it does now). Prints one JSON line.

    .venv/bin/python benchmarks/validity_migration.py STORE [--sample 20]

STORE is a store's folder with a long history (e.g. one built by benchmarks/timeline_pages.py);
it is only read.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from desktop_mem.engine.history.git_history import GitHistory
from desktop_mem.engine.history.lineage import moves_into_deleted
from desktop_mem.engine.store import layout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--sample", type=int, default=20, help="tombstones looked up the old way")
    args = parser.parse_args()
    root: Path = args.store
    git = GitHistory(root)
    tombstones = [rel for p in (root / layout.ENTRIES).rglob("*.md")
                  if layout.in_deleted(rel := p.relative_to(root).as_posix())]
    per_tombstone = []
    for path in random.Random(1).sample(tombstones, min(args.sample, len(tombstones))):
        started = time.perf_counter()
        commits = git.log(limit=200, paths=layout.both_places(path, path.split("/")[1]))
        next((c.committed_at for c in commits if moves_into_deleted(c)), None)
        per_tombstone.append(time.perf_counter() - started)
    started = time.perf_counter()
    added = git.last_added(layout.ENTRIES)
    one_pass = time.perf_counter() - started
    print(json.dumps({
        "commits": git.count(), "tombstones": len(tombstones),
        "old_ms_per_tombstone_p50": (round(statistics.median(per_tombstone) * 1000, 1)
                                     if per_tombstone else None),
        "new_one_pass_s": round(one_pass, 1), "paths_seen": len(added),
        "load": round(os.getloadavg()[0], 1),
    }))


if __name__ == "__main__":
    main()
