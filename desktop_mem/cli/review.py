"""`desktop-mem review [accept|reject ID] [--text T]`: the changes review mode holds for the user."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, MutableMapping
from typing import Any

from desktop_mem.cli.output import EngineError_, terminal_safe
from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.config import Config
from desktop_mem.engine.models import EngineError
from desktop_mem.engine.schema import proposal_json

Handler = Callable[[argparse.Namespace, Config], int]
Opener = Callable[[Config, str], MemoryEngine]


def register(subparsers: Any, handlers: MutableMapping[str, Handler], open_engine: Opener) -> None:
    """Add `review` to the `desktop-mem` parser and its handler to `handlers`; `open_engine` is
    how the commands open the store (cli/main.py's: read-only for a listing)."""
    p = subparsers.add_parser("review", help="changes proposed under review mode (memory.review) "
                              "or by tidy-up: list them, or accept / reject one (one commit each)")
    p.add_argument("action", nargs="?", choices=["list", "accept", "reject"], default="list")
    p.add_argument("id", nargs="?", help="the proposal's id (or a unique prefix), as `review` lists it")
    p.add_argument("--all", action="store_true",
                   help="accept or reject every waiting proposal, one commit each")
    p.add_argument("--text", help="accept with this text instead of the model's")
    p.add_argument("--json", action="store_true")
    handlers["review"] = lambda args, config: cmd_review(args, config, open_engine)


def cmd_review(args: argparse.Namespace, config: Config, open_engine: Opener) -> int:
    if args.action != "list" and args.all:
        return _every(args, config, open_engine)
    if args.action != "list" and not args.id:
        raise EngineError_(f"`desktop-mem review {args.action}` needs a proposal id (or --all); "
                           "`desktop-mem review` lists them")
    with open_engine(config, "review") as engine:
        if args.action == "list":
            found, broken = engine.proposals()
            if args.json:
                print(json.dumps({"proposals": [proposal_json(p) for p in found], "unreadable": broken},
                                 ensure_ascii=False, indent=2))
                return 0
            for p in found:
                print(terminal_safe(f"{p.id}  {p.created_at[:16]}  {p.conversation_id:<14} {p.describe()}"))
            for line in broken:
                print(terminal_safe(f"unreadable: {line}"))
            if not found and not broken:
                print("nothing waits for review")
            return 0
        proposal, commit = _answer(engine, args.action, args.id, args.text)
    verb = _VERBS[args.action]
    if args.json:
        print(json.dumps({verb: proposal_json(proposal), "commit": commit}, ensure_ascii=False, indent=2))
    else:
        print(terminal_safe(f"{verb}: {proposal.describe()} ({(commit or 'not committed')[:10]})"))
    return 0


_VERBS = {"accept": "accepted", "reject": "rejected"}


def _answer(engine: MemoryEngine, action: str, proposal_id: str, text: str | None) -> tuple[Any, str | None]:
    """Accept (with `text`, if given) or reject one proposal: one commit; (proposal, commit)."""
    if action == "accept":
        return engine.accept_proposal(proposal_id, text)
    return engine.reject_proposal(proposal_id)


def _every(args: argparse.Namespace, config: Config, open_engine: Opener) -> int:
    """Accept or reject each waiting proposal in turn (one commit each); one that cannot be
    applied any more (its fact changed meanwhile) is reported and left waiting."""
    done: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    with open_engine(config, "review") as engine:
        for proposal in engine.proposals()[0]:
            try:
                _p, commit = _answer(engine, args.action, proposal.id, None)
            except EngineError as exc:
                failed.append({"id": proposal.id, "error": str(exc)})
                continue
            done.append({"proposal": proposal_json(proposal), "commit": commit})
    verb = _VERBS[args.action]
    if args.json:
        print(json.dumps({verb: done, "failed": failed}, ensure_ascii=False, indent=2))
    else:
        for item in done:
            print(terminal_safe(f"{verb}: {item['proposal']['id']} ({(item['commit'] or '')[:10]})"))
        for item in failed:
            print(terminal_safe(f"left waiting: {item['id']}: {item['error']}"))
        if not done and not failed:
            print("nothing waits for review")
    return 1 if failed else 0
