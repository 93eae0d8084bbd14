"""`desktop-mem`: the command line over MemoryEngine. A bare `desktop-mem` opens the window."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from desktop_mem import __version__
from desktop_mem.cli.output import EngineError_, emit_json, terminal_safe, to_jsonable
from desktop_mem.cli.progress import embedding_progress
from desktop_mem.engine.api import MemoryEngine, SecretDetectedError, read_holder
from desktop_mem.engine.config import SETTINGS, Config, load_config
from desktop_mem.engine.models import (
    EngineError,
    HeldBackChoice,
    Memory,
    ReadOnlyError,
    StoreLockedError,
    ValidationError,
    disk_problem,
)
from desktop_mem.engine.schema import (
    HISTORY_EVENTS_SHOWN,
    MemoryQuery,
    SearchRequest,
    commit_json,
    search_hit_json,
)

READ_COMMANDS = {"list", "show", "history", "diff", "doctor", "search", "config", "sessions"}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to generate the CLI section of the README)."""
    parser = argparse.ArgumentParser(
        prog="desktop-mem",
        description="Chat with an LLM that remembers; memory is plain Markdown in git. "
        "Without a command, opens the desktop window.",
    )
    parser.add_argument("--version", action="version", version=f"desktop-mem {__version__}")
    parser.add_argument("--store", type=Path, help="memory store folder (default: platform data dir)")
    parser.add_argument("--config", type=Path, help="config file (default: platform config dir)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting, e.g. --set retrieval.top_k=8 (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("add", help="add a memory")
    p.add_argument("text")
    p.add_argument("--conversation", default="global")
    p.add_argument("--project", type=_project, metavar="P",
                   help="store it in a project's scope: " + PROJECT_HELP)
    p.add_argument("--kind", default="fact", choices=["fact", "preference", "context"])
    p.add_argument("--json", action="store_true")
    _add_secret_flags(p)

    p = sub.add_parser("list", help="list memories")
    p.add_argument("--conversation")
    p.add_argument("--project", type=_project, metavar="P",
                   help="only a project's memories: " + PROJECT_HELP)
    p.add_argument("--role", choices=["memory", "user", "assistant", "summary"])
    p.add_argument("--kind", choices=["fact", "preference", "context"])
    p.add_argument("--deleted", action="store_true", help="include soft-deleted memories")
    p.add_argument("--as-of", type=_as_of, metavar="DATE",
                   help="what was live then (ISO date or date-time), from validity and the git history")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("show", help="show one memory")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")

    if_hash = ("refuse (exit 1, naming what changed) unless the memory's file still has this "
               "content_hash (`show --json` prints it); without it, a change made outside the app "
               "since is committed first")
    p = sub.add_parser("edit", help="change a memory's text")
    p.add_argument("id")
    p.add_argument("--text", required=True)
    p.add_argument("--expected-hash", help=if_hash)
    p.add_argument("--json", action="store_true")
    _add_secret_flags(p)

    for name, help_text in (("delete", "soft-delete a memory (moved under deleted/)"),
                            ("restore", "restore a soft-deleted memory")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("id")
        p.add_argument("--expected-hash", help=if_hash)
        p.add_argument("--json", action="store_true")

    p = sub.add_parser("history", help="classified history of memory changes, newest first")
    p.add_argument("--limit", type=_positive_int, default=20)
    p.add_argument("--offset", type=_non_negative_int, default=0)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("diff", help="the git diff of one commit")
    p.add_argument("commit")

    p = sub.add_parser("doctor", help="problems, lock, git state")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("secrets", help="hand-edited files held back for a likely secret: list them, "
                       "or redact / keep one (then it is committed)")
    p.add_argument("action", nargs="?", choices=["list", "redact", "keep"], default="list")
    p.add_argument("path", nargs="?", help="the held-back file (as `secrets` lists it, or its path on disk)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("search", help="search memories (meaning + keywords), with score breakdowns")
    p.add_argument("query")
    p.add_argument("--conversation", help="scope: this conversation + global")
    p.add_argument("--project", type=_project, metavar="P",
                   help="scope: this project (+ the conversation, if given) + global; " + PROJECT_HELP)
    p.add_argument("--top-k", type=int, default=None)
    p.add_argument("--deleted", action="store_true", help="include soft-deleted memories")
    p.add_argument("--as-of", type=_as_of, metavar="DATE",
                   help="search what was live then (ISO date or date-time)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("reindex", help="rebuild the search indexes from the Markdown files")

    _add_chat_parsers(sub)

    p = sub.add_parser("config", help="show the resolved settings")
    p.add_argument("--list", action="store_true", help="list every declared setting")
    p.add_argument("--json", action="store_true")
    return parser


def _add_chat_parsers(sub: Any) -> None:
    from desktop_mem.engine.api import STRATEGY_NAMES

    p = sub.add_parser("chat", help="chat in the terminal (streams; shows injected and stored memory)")
    p.add_argument("--conversation", default="default", help="conversation id (default: default)")
    p.add_argument("--project", type=_project, metavar="P",
                   help="work in a project: the conversation reads its memories; " + PROJECT_HELP)
    p.add_argument("--strategy", choices=STRATEGY_NAMES, help="in-session context strategy for this run")
    p.add_argument("--message", help="send this one message, print the reply and exit")
    p.add_argument("--temporary", action="store_true",
                   help="a temporary chat: read memory, store nothing (no turns, facts, summary or commit)")

    p = sub.add_parser("serve", help="OpenAI-compatible endpoint with memory (+ sessions and memory API)")
    p.add_argument("--host", help="address to bind (default: server.host, 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default: server.port, 8100)")
    p.add_argument("--token", help="bearer token clients must send (default: server.token / "
                   "DESKTOP_MEM_TOKEN, generated and kept in the settings file the first time)")
    p.add_argument("--no-token", action="store_true",
                   help="serve without a token (loopback only): any local user can then read your memories")

    p = sub.add_parser("mcp", help="MCP server over stdio for Claude Desktop, Cursor, VS Code ... "
                       "(forwards writes to the app or `serve` when one of them has the store open)")
    mcp_sub = p.add_subparsers(dest="mcp_action", metavar="[setup]")
    p = mcp_sub.add_parser("setup", help="add desktop-mem to an MCP client's config file (merged, "
                           "with a backup; prints the diff)")
    p.add_argument("client", choices=("claude-desktop", "cursor", "vscode", "codex"))
    p.add_argument("--config", dest="client_config", type=Path, metavar="FILE",
                   help="the client's config file (default: where that client keeps it)")
    p.add_argument("--dry-run", action="store_true", help="show the change, write nothing")


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} is not 1 or more")
    return number


def _as_of(value: str) -> datetime:
    from desktop_mem.engine.api import parse_as_of

    try:
        return parse_as_of(value)
    except EngineError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _non_negative_int(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{value} is not 0 or more")
    return number


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `desktop-mem` script."""
    parser = build_parser()
    extend_parser(parser)
    args = parser.parse_args(argv)
    try:
        config = _config_from_args(args)
        if args.command is None:
            return _open_window(config, parser)
        handler = HANDLERS[args.command]
        return handler(args, config)
    except EngineError as exc:
        print(f"desktop-mem: {exc}", file=sys.stderr)
        return 1
    except (OSError, sqlite3.Error) as exc:  # a full disk, a folder that cannot be written: one line
        if (problem := disk_problem(exc)) is not None:  # the same words whichever layer met it (#34)
            print(f"desktop-mem: {problem}", file=sys.stderr)
            return 1
        if isinstance(exc, sqlite3.Error):
            raise
        where = f": {exc.filename}" if exc.filename else ""
        print(f"desktop-mem: could not write{where}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _config_from_args(args: argparse.Namespace) -> Config:
    flags: dict[str, Any] = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            raise EngineError_(f"--set {item!r} must look like KEY=VALUE")
        flags[key.strip()] = value
    if args.store is not None:
        flags["store.path"] = str(args.store)
    return load_config(args.config, flags=flags)


WRITE_WAIT_S = 15.0  # as long as `desktop-mem mcp` waits for a holder that does not forward


def open_engine(config: Config, command: str) -> MemoryEngine:
    """Read commands open read-only (they work while another process writes).

    `search` takes the writer lock when it is free so it can bring the index up to date first;
    with another writer running it searches the index as that writer keeps it.
    """
    if command == "search":
        try:
            return MemoryEngine.open(config)
        except (StoreLockedError, ReadOnlyError):  # another writer, or a read-only store
            return MemoryEngine.open(config, read_only=True)
    if command in READ_COMMANDS:
        return MemoryEngine.open(config, read_only=True)
    deadline = time.monotonic() + WRITE_WAIT_S
    root = config.store_path.expanduser().resolve()
    while True:
        try:
            return MemoryEngine.open(config)
        except StoreLockedError:
            # A brief holder (an MCP call, another command) is waited for; the app or `serve`
            # (it advertises an endpoint) keeps the store for long: add, edit, delete and
            # restore are forwarded to it, other writes say so at once (issue #22).
            if "endpoint" in read_holder(root):
                from desktop_mem.cli.forward import remote_writer

                remote = remote_writer(root, command)
                if remote is not None:
                    return remote  # type: ignore[return-value]  # the writes those commands make
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def no_display_reason(env: Mapping[str, str], platform: str) -> str | None:
    """Why the window cannot open here (Linux without X11/Wayland), or None when it can.

    Checked before Qt loads: without a display Qt aborts the process with its plugin message.
    """
    if not platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return None
    if env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"):
        return None
    return ("desktop-mem: no display (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot "
            "open; use the command line (desktop-mem --help) or the HTTP endpoint (desktop-mem serve).")


def _open_window(config: Config, parser: argparse.ArgumentParser) -> int:
    reason = no_display_reason(os.environ, sys.platform)
    if reason is not None:
        print(reason, file=sys.stderr)
        return 2
    try:
        from desktop_mem.ui.app import run_app
    except ImportError:
        parser.print_help()
        return 0
    return run_app(config)


# ---------------------------------------------------------------- output


def _memory_line(m: Memory) -> str:
    flag = " [deleted]" if m.deleted else ""
    when = m.created_at.strftime("%Y-%m-%d %H:%M")
    text = " ".join(m.text.split())
    return terminal_safe(f"{m.id[:8]}  {when}  {m.conversation_id:<14} {m.role:<9} {text[:70]}{flag}")


def _print_memory(m: Memory, args: argparse.Namespace) -> None:
    if getattr(args, "json", False):
        emit_json(m)
    else:
        print(_memory_line(m))


# ---------------------------------------------------------------- commands


def _add_secret_flags(p: argparse.ArgumentParser) -> None:
    group = p.add_mutually_exclusive_group()
    group.add_argument("--keep-secret", dest="secrets", action="store_const", const="keep",
                       help="store a likely secret (API key, token, password) as typed")
    group.add_argument("--redact-secret", dest="secrets", action="store_const", const="redact",
                       help="store a likely secret as [redacted:<kind>]")


def _secret_refused(exc: SecretDetectedError) -> int:
    found = ", ".join(f"{f.kind} ({f.masked})" for f in exc.findings)
    print(f"desktop-mem: the text looks like it contains a secret: {found}; nothing was stored. "
          "Run again with --redact-secret to store it as [redacted:<kind>], or --keep-secret to "
          "store it as typed.", file=sys.stderr)
    return 1


PROJECT_HELP = "a name, or a folder ('.', a path with '/') named by its git root"


def _project(value: str) -> str:
    """`--project P`: the scope of project P (a name), or of the folder P ('.', or with a '/')."""
    from desktop_mem.engine.api import project_of_folder, project_scope

    try:
        if value in (".", "..") or "/" in value or os.sep in value:
            return str(project_of_folder(value))
        return str(project_scope(value))
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_add(args: argparse.Namespace, config: Config) -> int:
    if args.project and args.conversation != "global":
        raise ValidationError("give --conversation or --project, not both: a memory has one scope")
    with open_engine(config, "add") as engine:
        try:
            memory = engine.add(args.text, conversation_id=args.project or args.conversation, kind=args.kind,
                                secrets=args.secrets)
        except SecretDetectedError as exc:
            return _secret_refused(exc)
        _print_memory(memory, args)
    return 0


def cmd_list(args: argparse.Namespace, config: Config) -> int:
    # The one query of every front end (engine/schema.py): "../x" is an error, not an empty list.
    if args.project and args.conversation:
        raise ValidationError("give --conversation or --project, not both")
    scope = args.project or args.conversation
    query = MemoryQuery(conversation_id=scope, role=args.role, kind=args.kind,
                        include_deleted=args.deleted, newest_first=False)
    with open_engine(config, "list") as engine:
        if args.as_of is not None:  # what was live then: validity and the history (history/as_of.py)
            items = engine.list_as_of(args.as_of, conversation_id=scope, role=args.role,
                                      kind=args.kind)
        else:
            items = list(query.run(engine).items)
        problems = engine.problems()
        held = engine.held_back_files()
    if args.json:
        emit_json({"memories": items, "problems": problems, "held_back": held})
        return 0
    for m in items:
        print(_memory_line(m))
    for p in problems:
        print(terminal_safe(f"problem: {p.path}: {p.reason}"), file=sys.stderr)
    for h in held:
        line = (f"held back: {h.path}: a hand edit with a likely {', '.join(h.kinds)}, not listed until "
                f"you answer (`desktop-mem secrets redact|keep {h.path}`)")
        print(terminal_safe(line), file=sys.stderr)
    return 0


def _holder_reader(config: Config) -> Any:
    """The process holding the store (the app or `serve`), to ask instead of loading the store a
    second time (cli/forward.py); None when nothing holds it or it cannot be verified."""
    root = config.store_path.expanduser().resolve()
    if "endpoint" not in read_holder(root):
        return None
    from desktop_mem.cli.forward import remote_reader

    return remote_reader(root)


def _asked_of_holder(config: Config, ask: Callable[[Any], Any]) -> Any:
    """`ask(reader)` answered by the store's holder, or None: nothing holds the store, it could
    not be verified or it did not answer (then nothing was sent; the command reads the store)."""
    reader = _holder_reader(config)
    if reader is None:
        return None
    from desktop_mem.cli.forward import NotAnswered

    try:
        return ask(reader)
    except NotAnswered:
        return None


def cmd_show(args: argparse.Namespace, config: Config) -> int:
    m = _asked_of_holder(config, lambda holder: holder.get(args.id))
    if m is None:
        with open_engine(config, "show") as engine:
            m = engine.get(args.id)
    if args.json:
        emit_json(m)
        return 0
    print(terminal_safe(f"id:           {m.id}\nconversation: {m.conversation_id}\nrole:         {m.role}"))
    print(f"kind:         {m.kind}\ncreated_at:   {m.created_at.isoformat()}\npath:         {m.path}")
    if m.deleted:
        print(terminal_safe(f"deleted_at:   {m.deleted_at}\nreplaced_by:  {m.replaced_by}"))
    print(terminal_safe(f"\n{m.text}"))
    return 0


def cmd_edit(args: argparse.Namespace, config: Config) -> int:
    with open_engine(config, "edit") as engine:
        try:
            memory = engine.edit(args.id, text=args.text, secrets=args.secrets,
                                 expected_hash=args.expected_hash)
        except SecretDetectedError as exc:
            return _secret_refused(exc)
        _print_memory(memory, args)
    return 0


def cmd_delete(args: argparse.Namespace, config: Config) -> int:
    with open_engine(config, "delete") as engine:
        _print_memory(engine.delete(args.id, expected_hash=args.expected_hash), args)
    return 0


def cmd_restore(args: argparse.Namespace, config: Config) -> int:
    with open_engine(config, "restore") as engine:
        _print_memory(engine.restore(args.id, expected_hash=args.expected_hash), args)
    return 0


def cmd_history(args: argparse.Namespace, config: Config) -> int:
    # git alone: a history reader need not load the store's memories (seconds at 100,000)
    commits = MemoryEngine.read_history(config, limit=args.limit, offset=args.offset)
    if args.json:
        emit_json([commit_json(c, events_shown=None) for c in commits])  # every event
        return 0
    for c in commits:
        print(terminal_safe(f"{c.sha[:10]}  {c.committed_at:%Y-%m-%d %H:%M}  {c.subject}"))
        for e in islice(c.events, HISTORY_EVENTS_SHOWN):
            old = f" {_short(e.old_text)!r}" if e.old_text else ""
            new = f" -> {_short(e.new_text)!r}" if e.new_text and e.new_text != e.old_text else ""
            line = f"    {e.type.value:<8} {(e.memory_id or '')[:8]} {e.conversation_id or ''}{old}{new}"
            print(terminal_safe(line))
        if (more := len(c.events) - HISTORY_EVENTS_SHOWN) > 0:
            counts = ", ".join(f"{t.value} {n:,}" for t, n in c.type_counts().items())
            print(f"    … {more:,} more ({counts} in all; `history --json` lists every event)")
    return 0


def _short(text: str | None, n: int = 50) -> str:
    one = " ".join((text or "").split())
    return one if len(one) <= n else one[: n - 1] + "…"


def cmd_diff(args: argparse.Namespace, config: Config) -> int:
    print(terminal_safe(MemoryEngine.read_diff(config, args.commit)))
    return 0


def cmd_doctor(args: argparse.Namespace, config: Config) -> int:
    with open_engine(config, "doctor") as engine:
        report = engine.doctor()
        health = None
        try:
            if not engine.is_empty():
                engine.open_index()  # the health line's duplicates are counted from the index's vectors
                health = engine.memory_health()
        except EngineError as exc:  # e.g. a full disk: the report is still what the user needs (#34)
            report = dataclasses.replace(report, notes=(*report.notes, f"the index cannot open: {exc}"),
                                         index="cannot open (see the note)")
    if args.json:
        emit_json({**to_jsonable(report), "health": to_jsonable(health)})
        return 0 if report.ok else 1
    print(f"store:      {report.store}\nmemories:   {report.memories} live, {report.deleted} deleted")
    print(f"lock:       {report.lock}\ngit:        {report.git}\nindex:      {report.index}")
    for path in report.uncommitted:
        print(f"uncommitted: {path}")
    for p in report.problems:
        print(terminal_safe(f"problem:    {p.path}: {p.reason}"))
    for note in report.notes:
        print(f"note:       {note}")
    for line in health.lines() if health is not None else []:
        print(f"health:     {line}")
    print("ok" if report.ok else "needs attention")
    return 0 if report.ok else 1


def cmd_secrets(args: argparse.Namespace, config: Config) -> int:
    """List held-back files (kinds only, never the secret), or answer for one."""
    if args.action != "list" and not args.path:
        raise EngineError_(f"`desktop-mem secrets {args.action}` needs a file; "
                           "`desktop-mem secrets` lists the held-back files")
    with open_engine(config, "secrets") as engine:
        if args.action == "list":
            held = engine.held_back_files()
        else:
            on_disk = Path(args.path)
            path = str(on_disk.resolve()) if on_disk.exists() else args.path
            change = engine.resolve_held_back(path, args.action)
    if args.json:
        emit_json(held if args.action == "list" else change)
    elif args.action == "list":
        for h in held:
            print(terminal_safe(f"{h.path}  {', '.join(h.kinds)}  {h.preview}"))
        if not held:
            print("no hand-edited file is held back for a likely secret")
    else:
        done = "redacted and committed" if args.action == HeldBackChoice.REDACT else "committed as written"
        print(terminal_safe(f"{args.path}: {done} ({(change.commit or 'not committed')[:10]})"))
    return 0


def cmd_search(args: argparse.Namespace, config: Config) -> int:
    request = SearchRequest(args.query, args.conversation, args.top_k, args.deleted, args.project)
    results = None if args.as_of is not None else _asked_of_holder(
        config, lambda holder: holder.search(request))
    if results is None:
        with open_engine(config, "search") as engine:
            with embedding_progress() as progress:
                engine.open_index(progress)  # a changed embedding model re-embeds everything first
            if args.as_of is not None:
                request = dataclasses.replace(request, top_k=args.top_k or config["retrieval.top_k"],
                                              as_of=args.as_of)
            results = request.run(engine)
    if args.json:
        emit_json([search_hit_json(r, nested_memory=True) for r in results])
        return 0
    if not results:
        print("no matching memories")
    for r in results:
        s = r.scores
        kw = f"{s.keyword:.2f}" if s.keyword is not None else "-"
        dense = f"{s.dense:.2f}" if s.dense is not None else "-"
        print(f"{s.final:.3f}  {_memory_line(r.memory)}")
        rerank = f"  rerank {s.rerank:.2f}" if s.rerank is not None else ""
        print(f"       keyword {kw}  dense {dense}{rerank}  recency {s.recency:.2f}  mmr #{s.mmr_rank}")
    return 0


def cmd_reindex(args: argparse.Namespace, config: Config) -> int:
    with open_engine(config, "reindex") as engine, embedding_progress() as progress:
        report = engine.reindex(progress)
    print(f"reindexed: {report.embedded} embedded, {report.metadata_only + report.unchanged} kept")
    return 0


def cmd_config(args: argparse.Namespace, config: Config) -> int:
    if args.list:
        for s in SETTINGS:
            env = f" (env {s.env})" if s.env else ""
            print(f"{s.name:<28} {s.type.__name__:<6} default {s.default!r}{env}\n    {s.description}")
        return 0
    values = config.as_dict()
    if args.json:
        emit_json({"file": str(config.file), "values": values})
        return 0
    print(f"# config file: {config.file}")
    for name, value in values.items():
        print(f"{name} = {value!r}    # {config.source(name)}")
    return 0


def cmd_chat(args: argparse.Namespace, config: Config) -> int:
    from desktop_mem.cli.chat import run_chat

    return run_chat(config, args.conversation, args.strategy, args.message, args.temporary, args.project)


def cmd_serve(args: argparse.Namespace, config: Config) -> int:
    from desktop_mem.api.rest import serve

    serve(config, args.host, args.port, token=args.token, no_token=args.no_token)
    return 0


def cmd_mcp(args: argparse.Namespace, config: Config) -> int:
    if getattr(args, "mcp_action", None) == "setup":
        from desktop_mem.cli.mcp_setup import run

        return run(args.client, config.store_path, config_file=args.config, target=args.client_config,
                   dry_run=args.dry_run)
    from desktop_mem.api.mcp_stdio import run_stdio

    run_stdio(config)
    return 0


Handler = Callable[[argparse.Namespace, Config], int]
HANDLERS: dict[str, Handler] = {
    "add": cmd_add, "list": cmd_list, "show": cmd_show, "edit": cmd_edit, "delete": cmd_delete,
    "restore": cmd_restore, "history": cmd_history, "diff": cmd_diff, "doctor": cmd_doctor,
    "config": cmd_config, "search": cmd_search, "secrets": cmd_secrets, "reindex": cmd_reindex,
    "chat": cmd_chat, "serve": cmd_serve, "mcp": cmd_mcp,
}


def extend_parser(parser: argparse.ArgumentParser) -> None:
    """Commands added by later layers (search, chat, serve ...) register here."""
    from desktop_mem.cli.transfer import register

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    register(sub, HANDLERS)  # import, export, sync
    from desktop_mem.cli import review

    review.register(sub, HANDLERS, open_engine)  # review mode's proposals
    from desktop_mem.cli import tidy

    tidy.register(sub, HANDLERS, open_engine)  # propose a clean-up for review
    from desktop_mem.cli import endpoints

    endpoints.register(sub, HANDLERS)  # find the user's model servers
    from desktop_mem.cli import hooks

    hooks.register(sub, HANDLERS)  # coding agents' hooks (Claude Code, Codex)


if __name__ == "__main__":
    sys.exit(main())
