"""`desktop-mem import`, `export` and `sync`: bring history in, take memory out, sync machines."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

from desktop_mem.cli.progress import eta_progress
from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.config import Config

Handler = Callable[[argparse.Namespace, Config], int]


def register(subparsers: Any, handlers: MutableMapping[str, Handler]) -> None:
    """Add the three commands to the `desktop-mem` parser and their handlers to `handlers`."""
    p = subparsers.add_parser("import", help="import a ChatGPT or Claude data export, a mem0 / OpenMemory "
                              "export, a JSON list of memories or Markdown bullets and index them (one "
                              "commit per 5,000 memories; re-importing adds nothing, and finishes an "
                              "import that was interrupted)")
    p.add_argument("file", type=Path, help="the export .zip as downloaded, conversations.json, "
                   "memories.json, "
                   ".json or .md")
    # The engine checks the name (an unknown one is an error listing the formats), so the list
    # is not repeated here.
    p.add_argument("--format", metavar="{chatgpt,claude,mem0,json,markdown}",
                   help="default: guessed from the file")
    p.add_argument("--dry-run", action="store_true",
                   help="show what would be added and skipped; write nothing")
    p.add_argument("--no-index", action="store_true",
                   help="write the files only; the search index catches up when the store next opens")
    p.add_argument("--workers", type=int, default=2, choices=range(1, 9), metavar="N",
                   help="embedding runs side by side while importing (default 2; 1 leaves a core to a "
                   "local LLM)")
    p.add_argument("--batch-size", type=int, default=5000, metavar="N",
                   help="memories per commit (default 5000; a kill loses at most one batch's files)")
    p.add_argument("--extract", action="store_true",
                   help="also extract facts from imported user messages (uses the LLM; off by default)")
    secrets = p.add_mutually_exclusive_group()
    secrets.add_argument("--keep-secret", dest="secrets", action="store_const", const="keep",
                         help="import likely secrets (API keys, tokens, passwords) as they are")
    secrets.add_argument("--redact-secret", dest="secrets", action="store_const", const="redact",
                         help="import likely secrets as [redacted:<kind>] (titles and folder names too)")

    p = subparsers.add_parser("export",
                              help="export the store or one conversation as JSON or a zip of Markdown")
    p.add_argument("--conversation", help="only this conversation (default: the whole store)")
    p.add_argument("--format", choices=["json", "zip"], default="json")
    p.add_argument("--output", type=Path, required=True,
                   help="file to write (never overwritten without --force)")
    p.add_argument("--force", action="store_true", help="replace --output if it exists")

    subparsers.add_parser("sync",
                          help="commit, pull and push the store with its git remote (sync.remote_url)")
    handlers.update({"import": cmd_import, "export": cmd_export, "sync": cmd_sync})


def cmd_import(args: argparse.Namespace, config: Config) -> int:
    """Plan the import, print it for a dry run, else write it (one commit per 5,000 memories) and
    index it while it writes, each with progress and an ETA. Killed half way, the same command
    finishes it: what is already in the store is left out, and what was indexed stays indexed."""
    with MemoryEngine.open(config) as engine:
        plan = engine.transfer.plan_import(args.file, args.format, extract=args.extract, secrets=args.secrets)
        if args.dry_run:
            for line in engine.transfer.plan_lines(plan):
                print(line)
            print("dry run: nothing was written")
            return 0
        if plan.already_present and plan.entries:
            print(f"{plan.already_present:,} of these memories are already in the store (an earlier "
                  f"or interrupted import): importing the other {len(plan.entries):,}", file=sys.stderr)
        indexed_now = None
        if args.no_index:
            with eta_progress("writing", 0) as wrote:
                result = engine.transfer.apply_import(plan, wrote, batch_size=args.batch_size)
        else:
            with eta_progress("indexing", 1) as indexed:
                # the store as it was in step first: quick, unless an import was interrupted
                caught_up = engine.open_index(indexed).embedded
                # the writing bar ends when the files are written, the indexing one after
                with engine.index_in_background(indexed, expected=len(plan.entries), workers=args.workers) \
                        as counts, eta_progress("writing", 0) as wrote:
                    result = engine.transfer.apply_import(plan, wrote, batch_size=args.batch_size)
            indexed_now = caught_up + counts[0]
    last = (result.commit or "")[:10]
    commits = f" ({len(result.commits)} commits, the last {last})" if len(result.commits) > 1 \
        else f" (commit {last})" if last else ""
    print(f"imported {result.conversations} conversations, {result.turns} turns, "
          f"{result.facts} facts{commits}")
    if result.already_present:
        print(f"already in the store, left out: {result.already_present}")
    if indexed_now is not None:
        print(f"indexed {indexed_now} memories")
    for note in result.notes:
        print(f"note: {note}")
    for s in result.skipped:
        print(f"skipped: {s.where}: {s.reason}", file=sys.stderr)
    return 0


def cmd_export(args: argparse.Namespace, config: Config) -> int:
    """Write the JSON export or the zip of the Markdown tree."""
    with MemoryEngine.open(config, read_only=True) as engine:
        write = engine.transfer.export_zip if args.format == "zip" else engine.transfer.export_json
        result = write(args.output, args.conversation, overwrite=args.force)
    print(f"exported {result.memories} memories ({result.deleted} deleted) in {result.conversations} "
          f"conversations to {result.path}")
    for path in result.held_back:
        print(f"left out: {path}: a hand edit with a likely secret, held back until you answer "
              f"(`desktop-mem secrets redact|keep {path}`)", file=sys.stderr)
    return 0


def cmd_sync(args: argparse.Namespace, config: Config) -> int:
    """Sync and say what came in, what went out and which memories conflicted."""
    with MemoryEngine.open(config) as engine:
        result = engine.transfer.sync()
    print(f"synced with {result.remote} ({result.branch}): {result.incoming_commits} commits in "
          f"({len(result.incoming_paths)} files), {result.outgoing_commits} out")
    for c in result.conflicts:
        copy = f"; the other version is {c.their_copy_id or c.their_copy_path}" \
            if c.their_copy_id or c.their_copy_path else ""
        print(f"conflict: {c.memory_id or c.path}: {c.note}{copy}")
    return 0
