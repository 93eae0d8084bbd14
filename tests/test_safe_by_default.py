"""Safe by default: no read of the engine and no front end gives out a hand edit held back for a
likely secret. The reads are ENUMERATED, not listed by hand: every public method of MemoryEngine,
every CLI command, every REST route and every MCP tool and resource is either called here (with
the held-back memories' ids and conversations) or named as a write with the reason. A new read
is therefore checked the day it is added; a new write must say that it is one.

Real parts: a real store with git, a real index (ONNX model), the CLI as a child process, the
REST app over HTTP (TestClient), MCP through the SDK's in-process client.
"""

from __future__ import annotations

import argparse
import inspect
import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from mcp.client.client import Client
from mcp.types import TextContent
from starlette.routing import Route
from starlette.testclient import TestClient

from desktop_mem.api.mcp_server import EngineBackend, StdioBackend, build_server
from desktop_mem.api.rest import create_app
from desktop_mem.cli.main import build_parser, extend_parser
from desktop_mem.engine.config import Config, load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EngineError, Memory, Operation, utc_now
from tests.test_hand_edit_secrets import KEY, _hand_edit

pytestmark = pytest.mark.timeout(600)

TEA = "User likes green tea from Japan"
QUERIES = ("green tea from Japan shop key", "Porto hotel card", "trip to Porto")


@dataclass(frozen=True)
class HeldStore:
    """A store whose app holds it, with a held-back fact, summary and user turn."""

    config: Config
    app: MemoryEngine
    held: tuple[Memory, ...]  # as they were before the hand edit (ids, paths)
    plain: Memory


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HeldStore]:
    root = tmp_path_factory.mktemp("safe") / "store"
    config = load_config(flags={"store.path": str(root), "watcher.enabled": False})
    with MemoryEngine(config) as app:
        app.open_index()
        tea = app.add(TEA)
        coffee = app.add("User likes strong coffee")
        with app._parts.writer.transaction(Operation.SUMMARY, "Summary", "trip") as tx:
            summary = tx.write_summary("trip", "The user plans a trip to Porto.", 0)
        turn = app.add("Book the Porto hotel", conversation_id="trip", role="user")
        app.add("Booked.", conversation_id="trip", role="assistant")
        _hand_edit(app, tea.path, f"{TEA}; shop key {KEY}")
        _hand_edit(app, summary.path, f"The user plans a trip to Porto; portal key {KEY}")
        _hand_edit(app, turn.path, f"Book the Porto hotel with card key {KEY}")
        app.apply_external_changes([tea.path, summary.path, turn.path])
        held = (tea, summary, turn)
        assert app.held_back_ids() == {m.id for m in held}
        # The raw view (asked for by name, for the editor) does hold the secret: the checks below
        # can fail, they are not looking at a store without one.
        assert all(KEY in app._parts.raw.get(m.id).text for m in held)
        yield HeldStore(config, app, held, coffee)


def _shown(value: Any) -> str:
    """Everything a result carries, as text (dataclasses, lists, dicts and bytes included)."""
    return repr(value)


def _no_secret(where: str, shown: str) -> None:
    assert KEY not in shown, f"{where} gave out a held-back hand edit's secret"


# ------------------------------------------------------------------------------------ engine

# Every public member of MemoryEngine that is NOT a read, and why. Anything else is called below.
ENGINE_NOT_READS: dict[str, str] = {
    "add": "write", "edit": "write", "delete": "write", "restore": "write", "replace": "write",
    "restore_version": "write", "delete_conversation": "write", "new_conversation": "write",
    "rename_conversation": "write", "apply_decisions": "write (reconciled decisions, one commit)",
    "undo_update": "write", "save_problem_file": "write", "add_many": "write", "migrate_user_scope": "write",
    "delete_many": "write (one commit)", "retag_many": "write (front matter only, one commit)",
    "set_conversation_project": "write (conversation.yaml)",
    "close_index": "lifecycle",
    "cancel_write_path": "lifecycle", "subscribe_write_progress": "events",
    "resolve_held_back": "write (the user's answer)",
    "accept_proposal": "write (review mode: the user's answer)", "reject_proposal": "write (review mode)",
    "tidy_up": "write (review proposals; their texts are live facts the shared view gave)",
    "note_sent": "write (the sent log: ids, endpoint, model; no text)",
    "apply_external_changes": "write (the watcher's)", "commit_all": "write", "reindex": "write",
    "open_index": "opens the index (returns counts)", "refresh": "re-reads the store (returns None)",
    "chat": "a chat turn: what it sends is checked in test_hand_edit_secrets",
    "llm_check": "probes the LLM endpoint", "open": "lifecycle (opens a store)", "close": "lifecycle",
    "start_watcher": "lifecycle",
    "stop_watcher": "lifecycle", "wait_idle": "lifecycle", "subscribe": "events: see the UI bridge test",
    "subscribe_held_back": "events (a SecretHeldBack carries no secret)",
    "subscribe_outcomes": "events",
    "index_in_background": "lifecycle (a bulk import's indexing block)",
    "acquire_lock": "lifecycle (the store lock)", "release_lock": "lifecycle (the store lock)",
    "save_derived": "write (the index manifest)", "publish_endpoint": "write (the store lock's note)",
    "withdraw_endpoint": "write (the store lock's note)", "llm_models": "probes the LLM endpoint",
    "count_tokens": "counts the tokens of the text it is given",
    "reconcile": "asks the memory model about the texts it is given; writes nothing",
    "extract_facts": "asks the memory model about the message it is given; writes nothing",
    "get_raw": "the raw view, asked for by name: the editor shows a held-back hand edit as written",
    "create_demo": "write (the demo store)",
    "open_first": "lifecycle (opens a store, its catalog to come)", "finish_opening": "lifecycle",
    "catalog_loaded": "lifecycle (a flag)",
}

# What else is one dot from a front end: the engine's public attributes. A sub-facade's reads are
# called like the engine's; a value carries no memory text; a part is named here with why.
# No part is among them: tests and benchmarks reach the parts through `engine._parts`, which no
# front end may name (test_architecture).
ENGINE_ATTRIBUTES: dict[str, str] = {
    "config": "value (settings)", "root": "value (the store's folder)", "read_only": "value",
    "timeline": "sub-facade", "transfer": "sub-facade",
}
FACADE_NOT_READS: dict[str, str] = {
    "timeline.restore_deleted": "write", "timeline.revert_replacement": "write",
    "timeline.restore_summary_version": "write",
    "transfer.plan_import": "reads the file it is given (what it would add; nothing of the store's)",
    "transfer.plan_lines": "the lines of a plan it is given", "transfer.apply_import": "write",
    "transfer.export_json": "write (a file; held-back hand edits left out: test_held_back_readers)",
    "transfer.export_zip": "write (a file; held-back hand edits left out: test_held_back_readers)",
    "transfer.sync": "write (commit, pull, push)",
}


def _engine_arguments(s: HeldStore) -> dict[str, list[Any]]:
    """Values for each parameter name a read takes: the held-back memories first of all."""
    raw = [s.app._parts.raw.get(m.id) for m in s.held]
    return {
        "memory_id": [*(m.id for m in s.held), s.held[0].id[:8]],
        "conversation_id": ["trip", "global"],
        "query": list(QUERIES),
        "sha": [c.sha for c in s.app.history(limit=3)],
        "memory": raw,
        "revision": ["HEAD"],
        "moment": [utc_now(), utc_now() + timedelta(days=1)],
        "rel": [m.path for m in s.held],
        "turn_id": [s.held[2].id],
        "offset": [0], "limit": [50],
        "config": [s.config],  # read_history / read_diff: the store's git alone, without opening it
        "event": [e for c in s.app.history(limit=20) for e in c.events
                  if e.memory_id in {m.id for m in s.held}],
    }


def _calls(method: Any, arguments: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of values for the parameters that have no default."""
    needed = [p.name for p in inspect.signature(method).parameters.values()
              if p.name != "self" and p.default is inspect.Parameter.empty
              and p.kind not in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]
    missing = [n for n in needed if n not in arguments]
    assert not missing, f"{method.__qualname__} takes {missing}: add values for them to _engine_arguments"
    combos = itertools.product(*(arguments[n] for n in needed))
    return [dict(zip(needed, values, strict=True)) for values in combos]


def _check_engine_reads(engine: MemoryEngine, s: HeldStore) -> int:
    public = {n for n in dir(MemoryEngine) if not n.startswith("_")}
    arguments = _engine_arguments(s)
    calls = 0
    for name in sorted(public - set(ENGINE_NOT_READS)):
        member = inspect.getattr_static(MemoryEngine, name)
        assert callable(member) or isinstance(member, staticmethod), (
            f"MemoryEngine.{name} is a {type(member).__name__}: classify it in ENGINE_NOT_READS or make it "
            "a method this test can call")
        for kwargs in _calls(getattr(MemoryEngine, name), arguments):
            try:
                shown = _shown(getattr(engine, name)(**kwargs))
            except EngineError as exc:  # e.g. HeldBackError for `get`: its message names the file only
                shown = str(exc)
            _no_secret(f"MemoryEngine.{name}({kwargs})", shown)
            calls += 1
    return calls


def _check_facade_reads(engine: MemoryEngine, s: HeldStore) -> int:
    attributes = {n for n in vars(engine) if not n.startswith("_")}
    assert attributes == set(ENGINE_ATTRIBUTES), "classify every public attribute in ENGINE_ATTRIBUTES"
    arguments = _engine_arguments(s)
    calls = 0
    for facade in sorted(n for n, why in ENGINE_ATTRIBUTES.items() if why == "sub-facade"):
        room = getattr(engine, facade)
        # a sub-facade hands out no part either: its collaborators are private, its members methods
        assert not {n for n in vars(room) if not n.startswith("_")}, f"engine.{facade} has public attributes"
        for name in (n for n in dir(type(room)) if not n.startswith("_")):
            member = inspect.getattr_static(type(room), name)
            assert callable(member) or isinstance(member, staticmethod), (
                f"engine.{facade}.{name} is a {type(member).__name__}: make it a method this test can call")
        for name in sorted(n for n in dir(type(room)) if not n.startswith("_")):
            if f"{facade}.{name}" in FACADE_NOT_READS:
                continue
            for kwargs in _calls(getattr(type(room), name), arguments):
                try:
                    shown = _shown(getattr(room, name)(**kwargs))
                except EngineError as exc:
                    shown = str(exc)
                _no_secret(f"engine.{facade}.{name}({kwargs})", shown)
                calls += 1
    return calls


def test_no_public_read_of_the_engine_gives_out_a_held_back_hand_edit(store: HeldStore) -> None:
    calls = _check_engine_reads(store.app, store) + _check_facade_reads(store.app, store)
    with MemoryEngine(store.config, read_only=True) as reader:  # another process, while the app writes
        calls += _check_engine_reads(reader, store) + _check_facade_reads(reader, store)
    assert calls > 40
    # Held back is not hidden from the user's own view of their store: the plain reads still work.
    assert store.app.get(store.plain.id).text == "User likes strong coffee"
    assert "[redacted:openai_key]" in str(store.app.summary("trip"))


# --------------------------------------------------------------------------------------- CLI

CLI_NOT_READS: dict[str, str] = {
    "add": "write", "edit": "write", "delete": "write", "restore": "write", "reindex": "write",
    "import": "write", "sync": "write (commit, pull, push)", "chat": "a chat turn (LLM)",
    "serve": "a server: its routes are checked below", "mcp": "a server: its tools are checked below",
    "endpoints": "finds model servers on this computer (reads no memory)",
    "tidy": "write (review proposals made from the shared view; tested in test_tidy)",
    "hooks": "install / uninstall an agent's hook (its config file), status (counts), deliver (writes)",
}


def _cli_reads(s: HeldStore, out: Path) -> dict[str, list[list[str]]]:
    ids = [m.id for m in s.held]
    return {
        "list": [[], ["--deleted", "--role", "user", "--conversation", "trip"], ["--role", "summary"]],
        "show": [[i] for i in ids],
        "history": [[]],
        "diff": [[c.sha] for c in s.app.history(limit=3)],
        "doctor": [[]],
        "secrets": [["list"]],
        "review": [["list"]],
        "search": [[q] for q in QUERIES[:2]] + [[QUERIES[1], "--conversation", "trip"]],
        "config": [[]],
        "export": [["--output", str(out / "all.json"), "--force"],
                   ["--format", "zip", "--conversation", "trip", "--output", str(out / "trip.zip"),
                    "--force"]],
    }


def _cli(store: Path, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *args],
                          capture_output=True, text=True, timeout=180)
    return proc.stdout + proc.stderr


def test_no_cli_command_gives_out_a_held_back_hand_edit(store: HeldStore, tmp_path: Path) -> None:
    parser = build_parser()
    extend_parser(parser)
    [commands] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    reads = _cli_reads(store, tmp_path)
    assert set(commands.choices) == set(reads) | set(CLI_NOT_READS), "classify every CLI command"
    root = store.config.store_path
    for name, variants in reads.items():
        has_json = "--json" in commands.choices[name]._option_string_actions
        for args in variants:
            for extra in (["--json"], []) if has_json else ([],):
                _no_secret(f"desktop-mem {name} {' '.join(args + extra)}", _cli(root, name, *args, *extra))
    for written in tmp_path.iterdir():
        _no_secret(f"the exported {written.name}", repr(written.read_bytes()))
    listed = json.loads(_cli(root, "list", "--json"))
    ids = {m["id"] for m in listed["memories"]}
    assert store.plain.id in ids and not ids & {m.id for m in store.held}, "left out, not everything hidden"


# -------------------------------------------------------------------------------------- REST

REST_NOT_READS: dict[tuple[str, str], str] = {
    ("POST", "/v1/chat/completions"): "a chat turn: what it sends is checked in test_hand_edit_secrets",
    ("POST", "/api/memories"): "write",
    ("DELETE", "/api/memories/{memory_id}"): "write",
    ("POST", "/api/memories/batch"): "write (one commit or nothing)",
    ("PATCH", "/api/memories/{memory_id}"): "write", ("POST", "/api/memories/{memory_id}/restore"): "write",
    ("POST", "/api/agent-capture"): "write (a coding agent's hook: facts from the user's messages)",
    ("POST", "/api/claude-memory"): "Claude's memory tool: its view reads engine.list_memories (safe by "
    "default); tested in test_claude_memory",
}
QUERY_VARIANTS = ("", "?deleted=true&type=user&conversation=trip", "?type=summary", "?search=key&type=fact",
                  # /api/search, the read path with the cross-encoder
                  *(f"?q={quote(q)}&deleted=true" for q in QUERIES), "?q=Porto&conversation=trip")


def test_no_rest_route_gives_out_a_held_back_hand_edit(store: HeldStore) -> None:
    app = create_app(store.app, None)
    values = {"memory_id": [m.id for m in store.held], "conversation_id": ["trip", "global"]}
    checked = 0
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for route in app.routes:
            if not isinstance(route, Route) or route.path.startswith("/mcp"):
                continue  # the MCP endpoint: its tools are checked below
            for method in sorted((route.methods or set()) - {"HEAD"}):
                if method != "GET":
                    assert (method, route.path) in REST_NOT_READS, f"classify {method} {route.path}"
                    continue
                names = list(route.param_convertors)
                for combo in itertools.product(*(values[n] for n in names)):
                    path = route.path.format(**dict(zip(names, combo, strict=True)))
                    for query in QUERY_VARIANTS:
                        response = client.get(path + query)
                        _no_secret(f"GET {path}{query} ({response.status_code})", response.text)
                        checked += 1
        listed = client.get("/api/memories")
        assert listed.status_code == 200 and "User likes strong coffee" in listed.text, "the routes answer"
    assert checked > 20


# --------------------------------------------------------------------------------------- MCP

MCP_WRITES: dict[str, str] = {
    "add_memories": "write", "update_memory": "write", "delete_memories": "write", "restore_memory": "write",
    "review_memory_changes": "write (accept / reject a proposal; list is tested in test_review)",
    "tidy_memory": "write (proposals only; tested in test_tidy)",
}


def _tool_arguments(schema: dict[str, Any], s: HeldStore) -> list[dict[str, Any]]:
    values: dict[str, list[Any]] = {
        "id": [m.id for m in s.held], "query": list(QUERIES), "conversation": ["trip", None],
        "limit": [50], "offset": [0], "kind": [None], "top_k": [5], "as_of": [None, "2099-01-01"],
        "project": [None, "trip"],
    }
    props = list(schema.get("properties", {}))
    missing = [p for p in props if p not in values]
    assert not missing, f"give values for the MCP arguments {missing}"
    combos = itertools.product(*(values[p] for p in props))
    return [{k: v for k, v in zip(props, combo, strict=True) if v is not None} for combo in combos]


class _ForwardingStdio(StdioBackend):
    """A `desktop-mem mcp` process: reads on its own read-only engine, the rest (search) at the
    writer, as its forward to the app does."""

    def __init__(self, config: Config, writer: MemoryEngine) -> None:
        super().__init__(config)
        self._writer = EngineBackend(writer)

    async def at_writer(self, tool: str, arguments: dict[str, Any], client: Any, call: Any) -> dict[str, Any]:
        return await self._writer.at_writer(tool, arguments, client, call)


async def _check_mcp(backend: Any, s: HeldStore) -> int:
    checked = 0
    async with Client(build_server(backend)) as client:
        listed = await client.call_tool("list_memories", {})
        assert "User likes strong coffee" in repr(listed), "the tools answer"
        for tool in (await client.list_tools()).tools:
            if tool.name in MCP_WRITES:
                continue
            assert tool.annotations is not None and tool.annotations.read_only_hint, (
                f"MCP tool {tool.name}: mark it read-only or name it in MCP_WRITES")
            for arguments in _tool_arguments(tool.input_schema, s):
                result = await client.call_tool(tool.name, arguments)
                shown = repr(result) + "".join(c.text for c in result.content if isinstance(c, TextContent))
                _no_secret(f"MCP {tool.name}({arguments})", shown)
                checked += 1
        values = {"memory_id": [m.id for m in s.held], "conversation": ["trip"]}
        for template in (await client.list_resource_templates()).resource_templates:
            names = [n for n in values if "{" + n + "}" in template.uri_template]
            assert names, f"give values for the resource {template.uri_template}"
            for combo in itertools.product(*(values[n] for n in names)):
                uri = template.uri_template.format(**dict(zip(names, combo, strict=True)))
                try:
                    shown = repr(await client.read_resource(uri))
                except Exception as exc:  # a refusal comes back as an MCP error: its text is checked
                    shown = repr(exc)
                _no_secret(f"MCP resource {uri}", shown)
                checked += 1
    return checked


def test_no_mcp_tool_or_resource_gives_out_a_held_back_hand_edit(store: HeldStore) -> None:
    # In the app or `serve` (the writer's engine), and in a `desktop-mem mcp` process (its own
    # read-only engine per call, while the app holds the store).
    for backend in (EngineBackend(store.app), _ForwardingStdio(store.config, store.app)):
        assert anyio.run(_check_mcp, backend, store) > 10
