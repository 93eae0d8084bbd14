"""`desktop-mem tidy [--json]`: propose a clean-up of the whole memory for review.

Duplicates to merge, junk to drop, stale facts to retire and gaps the summary shows, each as a
review proposal with its reason and source turns (`desktop-mem review` lists, accepts and
rejects them). Nothing changes until the user accepts; Ctrl+C cancels and proposes nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

from desktop_mem.cli.output import emit_json, terminal_safe
from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.config import Config

Handler = Callable[[argparse.Namespace, Config], int]
Opener = Callable[[Config, str], MemoryEngine]


def register(subparsers: Any, handlers: MutableMapping[str, Handler], open_engine: Opener) -> None:
    p = subparsers.add_parser("tidy", help="propose a clean-up of the whole memory (duplicates, junk, "
                              "stale facts, gaps) as review proposals; applies nothing")
    p.add_argument("--json", action="store_true")
    handlers["tidy"] = lambda args, config: cmd_tidy(args, config, open_engine)


def cmd_tidy(args: argparse.Namespace, config: Config, open_engine: Opener) -> int:
    def progress(step: str, done: int, total: int) -> None:
        if not args.json and sys.stderr.isatty():
            print(f"\r{step} {done}/{total}   ", end="", file=sys.stderr, flush=True)

    with open_engine(config, "tidy") as engine:
        engine.open_index()
        try:
            report = engine.tidy_up(progress=progress)
        except KeyboardInterrupt:
            print("\ncancelled: nothing was proposed", file=sys.stderr)
            return 130
        health = engine.memory_health()
    if args.json:
        emit_json({"proposed": [{**dict(p.extra.get("tidy", {})), "id": p.id, "summary": p.describe()}
                                for p in report.proposals],
                   "counts": report.counts(), "skipped_rejected": report.skipped_rejected,
                   "skipped_pending": report.skipped_pending, "commit": report.commit,
                   "model_error": report.model_error, "health": health})
        return 0
    if sys.stderr.isatty():
        print("\r", end="", file=sys.stderr)
    for p in report.proposals:
        sources = p.extra.get("tidy", {}).get("sources") or []
        origin = f"  [from {', '.join(sources[:3])}]" if sources else ""
        print(terminal_safe(f"{p.id}  {p.describe()}{origin}"))
    if report.model_error:
        print(terminal_safe(f"note: {report.model_error}; only what needs no model was looked at"))
    if not report.proposals:
        print("nothing to tidy" + (f" ({report.skipped_rejected} rejected before, not proposed again)"
                                   if report.skipped_rejected else ""))
    else:
        print(f"{len(report.proposals)} proposals wait for review: `desktop-mem review accept ID` "
              "(or --all), `desktop-mem review reject ID`")
    return 0
