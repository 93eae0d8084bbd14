"""MCP as the spec has it now, checked with the official SDK client (mcp 2.3.0) against a real
`desktop-mem mcp` process and a real `serve`: typed output (outputSchema / structuredContent),
tool annotations, delete confirmation through elicitation (2025 request and 2026-07-28
input_required), change notifications for resources (resources/subscribe and
subscriptions/listen), and the protocol revisions served."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import jsonschema
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.types import ElicitResult, ResourceListChangedNotification, ResourceUpdatedNotification

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from tests.mcp_clients import CLAUDE, ServeProcess, cli_env

pytestmark = pytest.mark.timeout(400)


def _stdio(store: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "desktop_mem.cli", "--store", str(store), "mcp"], env=cli_env())


def _live_texts(store: Path) -> set[str]:
    with MemoryEngine(load_config(env={}, flags={"store.path": str(store)}), read_only=True) as reader:
        return {m.text for m in reader.list_memories()}


def test_search_list_and_get_declare_their_output_and_answer_with_structured_content(tmp_path: Path) -> None:
    """A client can rely on the declared shape: each result validates against its outputSchema,
    and every tool says whether it only reads, destroys, can be repeated, or reaches outside."""
    store = tmp_path / "store"

    async def scenario() -> dict[str, Any]:
        async with Client(_stdio(store), mode="legacy", client_info=CLAUDE) as c:
            await c.call_tool("add_memories", {"texts": ["I prefer green tea over coffee",
                                                         "I work at Acme Robotics in Lyon"]})
            tools = {t.name: t for t in (await c.list_tools()).tools}
            return {"tools": tools,
                    "search": await c.call_tool("search_memory", {"query": "what does the user drink?"}),
                    "list": await c.call_tool("list_memories", {"limit": 1}),
                    "get": await c.call_tool("get_memory", {"id": "no-such-id"})}

    out = anyio.run(scenario)
    tools = out["tools"]
    for name, result in (("search_memory", out["search"]), ("list_memories", out["list"])):
        schema = tools[name].output_schema
        assert schema is not None and not result.is_error
        jsonschema.validate(result.structured_content, schema)
    search_schema = tools["search_memory"].output_schema
    hit = search_schema["$defs"]["SearchHitJSON"]["properties"]
    assert {"id", "text", "score", "scores", "conversation_id", "created_at"} <= set(hit)
    assert out["search"].structured_content["results"][0]["text"] == "I prefer green tea over coffee"
    page = out["list"].structured_content
    assert (len(page["memories"]), page["total"], page["has_more"], page["limit"]) == (1, 2, True, 1)
    assert "MemoryJSON" in str(tools["get_memory"].output_schema) and out["get"].is_error

    for name, tool in tools.items():  # all four hints, on every tool
        a = tool.annotations
        assert a is not None and None not in (a.read_only_hint, a.destructive_hint, a.idempotent_hint,
                                              a.open_world_hint), name
        assert a.open_world_hint is False  # memory stays on this machine
    assert tools["delete_memories"].annotations.destructive_hint
    assert tools["search_memory"].annotations.read_only_hint


def _answering(forget: bool | None, asked: list[str]) -> Any:
    async def elicit(_context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        if forget is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"forget": forget})
    return elicit


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_delete_asks_the_user_first_when_the_client_can_ask(tmp_path: Path, mode: str) -> None:
    """Elicitation: a request during the call (2025 revisions) or an input_required result the
    client answers and retries (2026-07-28). No or a decline deletes nothing; yes deletes."""
    store = tmp_path / "store"
    asked: list[str] = []

    async def scenario() -> list[Any]:
        results = []
        async with Client(_stdio(store), mode="legacy", client_info=CLAUDE) as c:
            added = (await c.call_tool("add_memories", {"text": "I have a cat named Tom"})).content[0].text
        memory_id = json.loads(added)["added"][0]["id"]
        for answer in (None, False, True):
            async with Client(_stdio(store), mode=mode, client_info=CLAUDE,
                              elicitation_callback=_answering(answer, asked)) as c:
                results.append((await c.call_tool("delete_memories", {"ids": [memory_id]})).structured_content
                               or {})
                results.append(_live_texts(store))
        return results

    declined, after_decline, said_no, after_no, said_yes, after_yes = anyio.run(scenario)
    assert len(asked) == 3 and "I have a cat named Tom" in asked[0] and "Claude Desktop" in asked[0]
    assert after_decline == after_no == {"I have a cat named Tom"}
    assert after_yes == set()


def test_a_client_that_cannot_ask_deletes_at_once_and_is_told_how_to_undo(tmp_path: Path) -> None:
    store = tmp_path / "store"

    async def scenario() -> dict[str, Any]:
        async with Client(_stdio(store), mode="legacy", client_info=CLAUDE) as c:
            added = await c.call_tool("add_memories", {"text": "I have a dog named Rex"})
            memory_id = json.loads(added.content[0].text)["added"][0]["id"]
            result = await c.call_tool("delete_memories", {"ids": [memory_id]})
            return dict(json.loads(result.content[0].text))

    out = anyio.run(scenario)
    assert len(out["deleted"]) == 1 and "restore_memory" in out["confirmed"]
    assert _live_texts(store) == set()


def test_resource_changes_are_notified_to_both_eras_whoever_makes_them(tmp_path: Path) -> None:
    """A 2025 client subscribed to a memory and a 2026-07-28 client listening both hear when
    another process changes it (here a second MCP client; the REST case is below)."""
    store = tmp_path / "store"
    legacy_got: list[Any] = []

    async def on_message(message: Any) -> None:
        legacy_got.append(message)

    async def scenario() -> list[Any]:
        async with Client(_stdio(store), mode="legacy", client_info=CLAUDE) as c:
            added = await c.call_tool("add_memories", {"text": "I live in Ghent"})
            memory_id = json.loads(added.content[0].text)["added"][0]["id"]
        uri = f"memory://memories/{memory_id}"
        modern_got: list[Any] = []
        async with (Client(_stdio(store), mode="legacy", message_handler=on_message) as legacy,
                    Client(_stdio(store), mode="2026-07-28") as modern):
            await legacy.session.subscribe_resource(uri)
            async with modern.listen(resources_list_changed=True, resource_subscriptions=[uri]) as sub:
                async with Client(_stdio(store), mode="legacy", client_info=CLAUDE) as other:
                    await other.call_tool("update_memory", {"id": memory_id, "text": "I live in Leuven"})
                with anyio.fail_after(20):
                    async for event in sub:
                        modern_got.append(event)
                        if len(modern_got) >= 2 and any(isinstance(e, ResourceUpdated) for e in modern_got):
                            break
            with anyio.fail_after(20):
                while not any(isinstance(m, ResourceUpdatedNotification) for m in legacy_got):
                    await anyio.sleep(0.1)
        return [uri, modern_got]

    uri, modern_got = anyio.run(scenario)
    assert any(isinstance(e, ResourceUpdated) and e.uri == uri for e in modern_got)
    assert any(isinstance(e, ResourcesListChanged) for e in modern_got)  # a new id replaced it
    assert any(isinstance(m, ResourceUpdatedNotification) and m.params.uri == uri for m in legacy_got)
    assert any(isinstance(m, ResourceListChangedNotification) for m in legacy_got)


def test_serve_notifies_mcp_clients_of_changes_made_through_rest(tmp_path: Path) -> None:
    store = tmp_path / "store"
    serve = ServeProcess(store, no_token=True).wait_ready()  # the SDK's Client(url) sends no header
    got: list[Any] = []

    async def on_message(message: Any) -> None:
        got.append(message)

    async def scenario() -> None:
        async with Client(f"{serve.url}/mcp", mode="legacy", message_handler=on_message) as c:
            await c.session.subscribe_resource("memory://memories")
            response = await anyio.to_thread.run_sync(lambda: httpx.post(
                f"{serve.url}/api/memories", json={"content": "I prefer window seats"}, timeout=60))
            assert response.status_code == 201, response.text
            with anyio.fail_after(20):
                while not any(isinstance(m, ResourceUpdatedNotification) for m in got):
                    await anyio.sleep(0.1)

    try:
        anyio.run(scenario)
    finally:
        serve.stop()
    assert any(isinstance(m, ResourceUpdatedNotification) and m.params.uri == "memory://memories"
               for m in got)


def test_the_protocol_revisions_served_on_stdio_and_http(tmp_path: Path) -> None:
    """What the README promises: 2026-07-28 (server/discover, no initialize) and the handshake
    revisions 2025-11-25 and 2025-06-18, over stdio and over serve's /mcp."""
    store = tmp_path / "store"
    serve = ServeProcess(store, no_token=True).wait_ready()  # the SDK's Client(url) sends no header

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for transport, server in (("stdio", _stdio(store)), ("http", f"{serve.url}/mcp")):
            for mode in ("auto", "legacy"):
                async with Client(server, mode=mode, client_info=CLAUDE) as c:
                    listed = await c.call_tool("list_memories", {})
                    seen[f"{transport}-{mode}"] = (c.protocol_version, listed.is_error)
        return seen

    try:
        seen = anyio.run(scenario)
        answered = {version: httpx.post(
            f"{serve.url}/mcp", headers={"Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": version, "capabilities": {},
                             "clientInfo": {"name": "old", "version": "1"}}},
            timeout=30).text.replace(" ", "")
            for version in ("2024-11-05", "2025-03-26", "2025-06-18")}
    finally:
        serve.stop()
    assert seen == {"stdio-auto": ("2026-07-28", False), "stdio-legacy": ("2025-11-25", False),
                    "http-auto": ("2026-07-28", False), "http-legacy": ("2025-11-25", False)}
    for version, text in answered.items():  # older clients get their own revision back
        assert f'"protocolVersion":"{version}"' in text, text
