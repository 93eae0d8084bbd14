"""The MCP server as MCP client apps use it: the official SDK client over stdio (`desktop-mem mcp`)
and over streamable HTTP (`serve` → /mcp), against real stores, real git and a real `serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EventType
from desktop_mem.engine.store.front_matter import parse
from desktop_mem.engine.store.store_lock import StoreLock, read_holder
from tests.mcp_clients import CLAUDE, CURSOR, ServeProcess, call, git, http_session, stdio_session
from tests.private_sockets import dead_private_socket

pytestmark = pytest.mark.timeout(400)

READ_ONLY = {"search_memory", "list_memories", "get_memory", "memory_history", "search", "fetch"}
DESTRUCTIVE = {"update_memory", "delete_memories"}


def _front_matter(store: Path, rel: str) -> dict[str, Any]:
    return dict(parse((store / rel).read_text(encoding="utf-8")).meta)


def _trailers(store: Path, rev: str = "HEAD") -> str:
    return git(store, "log", "-1", "--format=%B", rev)


def test_stdio_tools_add_search_update_delete_restore_with_provenance(tmp_path: Path) -> None:
    store = tmp_path / "store"

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with stdio_session(store, CLAUDE) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            out["tools"] = tools
            added = await call(s, "add_memories", texts=["I prefer green tea over coffee",
                                                          "I work at Acme Robotics in Lyon"])
            out["added"] = added["added"]
            # Between calls the lock is free: the desktop app could open the store now.
            out["locked_between_calls"] = StoreLock(store).is_locked_elsewhere()
            out["search"] = await call(s, "search_memory", query="what does the user drink?", top_k=3)
            tea = out["added"][0]["id"]
            out["updated"] = await call(s, "update_memory", id=tea, text="I prefer jasmine tea")
            new_id = out["updated"]["updated"]["id"]
            out["deleted"] = await call(s, "delete_memories", ids=[new_id, "no-such-id"])
            out["listed"] = await call(s, "list_memories")
            out["restored"] = await call(s, "restore_memory", id=new_id)
            out["got"] = await call(s, "get_memory", id=new_id)
            out["history"] = await call(s, "memory_history", limit=10)
            resource = await s.read_resource(f"memory://memories/{new_id}")
            out["resource"] = resource.contents[0]
        return out

    out = anyio.run(scenario)
    tools = out["tools"]
    assert {"search_memory", "add_memories", "list_memories", "get_memory", "update_memory",
            "delete_memories", "restore_memory", "memory_history"} <= set(tools)
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 40, name
        assert tool.input_schema["type"] == "object"
        assert tool.annotations is not None and tool.annotations.read_only_hint == (name in READ_ONLY)
        if name in DESTRUCTIVE:
            assert tool.annotations.destructive_hint
    assert tools["delete_memories"].input_schema["required"] == ["ids"]

    # Each add: a Markdown file with source: mcp + the client's name, and its own commit.
    assert not out["locked_between_calls"]
    for item in (out["added"][1], out["got"]):  # (the first one was replaced since)
        meta = _front_matter(store, item["path"])
        assert meta["source"] == "mcp" and meta["client"] == "Claude Desktop"
    assert out["search"]["results"][0]["text"] == "I prefer green tea over coffee"
    assert set(out["search"]["results"][0]["scores"]) >= {"final", "keyword", "dense", "recency"}
    assert out["updated"]["replaced"] == out["added"][0]["id"]
    assert out["deleted"]["skipped"][0]["id"] == "no-such-id" and len(out["deleted"]["deleted"]) == 1
    assert "I prefer jasmine tea" not in [m["text"] for m in out["listed"]["memories"]]
    assert out["got"]["text"] == "I prefer jasmine tea" and not out["got"]["deleted"]
    assert "jasmine" in out["resource"].text

    kinds = [e["type"] for c in out["history"]["commits"] for e in c["events"]]
    assert kinds[:4] == ["RESTORE", "DELETE", "UPDATE", "ADD"]
    assert {c["client"] for c in out["history"]["commits"]} == {"Claude Desktop"}
    assert {c["source"] for c in out["history"]["commits"]} == {"mcp"}
    update = next(e for c in out["history"]["commits"] for e in c["events"] if e["type"] == "UPDATE")
    assert "-I prefer green tea over coffee" in update["diff"] and "+I prefer jasmine tea" in update["diff"]

    # The same events on the engine's timeline, with the trailers the timeline shows as a chip.
    with MemoryEngine(load_config(flags={"store.path": str(store)}), read_only=True) as engine:
        commits = engine.history(limit=10)
    # the batch of two adds is one commit of two ADD events (all or nothing, issue #22)
    assert [[e.type for e in c.events] for c in commits[:4]] == [
        [EventType.RESTORE], [EventType.DELETE], [EventType.UPDATE], [EventType.ADD, EventType.ADD]]
    assert all(c.trailers["Source"] == "mcp" and c.trailers["Client"] == "Claude Desktop"
               for c in commits[:4])
    assert git(store, "status", "--porcelain").strip() == ""


def test_tool_errors_are_reported_to_the_client(tmp_path: Path) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async with stdio_session(tmp_path / "store") as s:
            return (await s.call_tool("get_memory", {"id": "missing"}),
                    await s.call_tool("add_memories", {"texts": []}),
                    await s.call_tool("restore_memory", {"id": "missing"}))

    for result in anyio.run(scenario):
        assert result.is_error
    assert "no memory with id 'missing'" in anyio.run(scenario)[0].content[0].text


def test_stdio_forwards_writes_to_serve_holding_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    serve = ServeProcess(store).wait_ready()
    try:
        # forwarders reach serve over its private Unix socket (issue #22), never the TCP port
        assert read_holder(store)["endpoint"].startswith("unix:")
        # A web page must not reach the tools: cross-origin requests are refused before MCP.
        cross = httpx.post(f"{serve.url}/mcp", json={}, headers={"Origin": "https://evil.example"})
        assert cross.status_code == 401  # a page cannot know the token serve requires (issue #22)

        async def scenario() -> dict[str, Any]:
            out: dict[str, Any] = {}
            async with stdio_session(store, CURSOR) as s:
                added = await call(s, "add_memories", text="The user's cat is called Miso")
                out["added"] = added["added"][0]
                out["found"] = await call(s, "search_memory", query="cat name")
                out["listed"] = await call(s, "list_memories")  # read directly from the files
                mid = out["added"]["id"]
                out["updated"] = await call(s, "update_memory", id=mid,
                                           text="The user's cat is called Mochi")
                new_id = out["updated"]["updated"]["id"]
                out["deleted"] = await call(s, "delete_memories", ids=[new_id])
                out["restored"] = await call(s, "restore_memory", id=new_id)
                out["history"] = await call(s, "memory_history", id=new_id)
            return out

        out = anyio.run(scenario)
        memory = out["added"]
        assert memory["client"] == "cursor-vscode" and memory["source"] == "mcp"
        assert out["found"]["results"][0]["id"] == memory["id"]
        assert [m["id"] for m in out["listed"]["memories"]] == [memory["id"]]
        new_id = out["updated"]["updated"]["id"]
        assert out["deleted"]["deleted"][0]["id"] == new_id
        assert out["restored"]["restored"]["text"] == "The user's cat is called Mochi"
        # The new version's own file history: made by the update, deleted, restored.
        assert [e["type"] for c in out["history"]["commits"] for e in c["events"]] == [
            "RESTORE", "DELETE", "ADD"]
        assert out["history"]["commits"][2]["subject"].startswith("Update fact:")
        # serve wrote it all (it holds the lock) and knows it at once.
        api = httpx.get(f"{serve.url}/api/memories/{new_id}", headers=serve.headers).json()
        assert api["content"] == "The user's cat is called Mochi" and api["source"] == "mcp"
        log = git(store, "log", "--format=%(trailers:key=Desktop-Mem-Client,valueonly,separator=)", "-4")
        assert log.split() == ["cursor-vscode"] * 4
        assert StoreLock(store).is_locked_elsewhere()  # serve kept the store all along
    finally:
        serve.stop()


def test_streamable_http_on_serve_with_a_token(tmp_path: Path) -> None:
    store = tmp_path / "store"
    serve = ServeProcess(store, token="tok-123").wait_ready()
    try:
        url = f"{serve.url}/mcp"
        refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        auth = {"Authorization": "Bearer tok-123"}

        async def scenario() -> dict[str, Any]:
            async with http_session(url, CLAUDE, auth) as s:
                added = await call(s, "add_memories", texts=["Allergic to peanuts"], kind="fact")
                mid = added["added"][0]["id"]
                updated = await call(s, "update_memory", id=mid, text="Allergic to peanuts and cashews")
                new_id = updated["updated"]["id"]
                found = await call(s, "search_memory", query="allergies")
                deleted = await call(s, "delete_memories", ids=[new_id])
                restored = await call(s, "restore_memory", id=new_id)
                return {"found": found, "deleted": deleted, "restored": restored, "new_id": new_id}

        out = anyio.run(scenario)
        assert out["found"]["results"][0]["text"] == "Allergic to peanuts and cashews"
        assert out["deleted"]["deleted"][0]["deleted"] and not out["restored"]["restored"]["deleted"]
        log = git(store, "log", "--format=%s|%(trailers:key=Desktop-Mem-Client,valueonly,separator=)", "-4")
        assert log.splitlines() == [
            "Restore fact: Allergic to peanuts and cashews|Claude Desktop",
            "Delete fact: Allergic to peanuts and cashews|Claude Desktop",
            "Update fact: Allergic to peanuts -> Allergic to peanuts and cashews|Claude Desktop",
            "Add fact: Allergic to peanuts|Claude Desktop",
        ]
        meta = _front_matter(store, out["restored"]["restored"]["path"])
        assert meta["source"] == "mcp" and meta["client"] == "Claude Desktop"
    finally:
        serve.stop()


def test_no_lost_or_interleaved_writes_serve_and_two_mcp_clients(tmp_path: Path) -> None:
    """serve writes (REST) while two MCP client processes write through it, all at once."""
    store = tmp_path / "store"
    serve = ServeProcess(store).wait_ready()
    per_writer = 6
    try:
        async def mcp_writer(client: Any, tag: str) -> None:
            async with stdio_session(store, client) as s:
                for i in range(per_writer):
                    await call(s, "add_memories", text=f"{tag} fact number {i}")

        async def rest_writer() -> None:
            async with httpx.AsyncClient(base_url=serve.url, timeout=60, headers=serve.headers) as http:
                for i in range(per_writer):
                    r = await http.post("/api/memories", json={"content": f"rest fact number {i}"})
                    assert r.status_code == 201, r.text

        async def scenario() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(mcp_writer, CLAUDE, "claude")
                tg.start_soon(mcp_writer, CURSOR, "cursor")
                tg.start_soon(rest_writer)

        anyio.run(scenario)
    finally:
        serve.stop()

    with MemoryEngine(load_config(flags={"store.path": str(store)}), read_only=True) as engine:
        texts = sorted(m.text for m in engine.list_memories(role="memory"))
    expected = sorted(f"{tag} fact number {i}" for tag in ("claude", "cursor", "rest")
                      for i in range(per_writer))
    assert texts == expected
    # Every add is its own commit holding exactly its own file, named in its trailers.
    shas = git(store, "log", "--format=%H", "--grep=^Add fact").split()
    assert len(shas) == 3 * per_writer
    clients = []
    for sha in shas:
        # (the store's first commit also carries the .gitignore that git init wrote)
        files = [f for f in git(store, "show", "--name-only", "--format=", sha).split() if f != ".gitignore"]
        body = _trailers(store, sha)
        assert len(files) == 1 and files[0].startswith("entries/global/facts/"), (sha, files)
        memory_id = body.split("Desktop-Mem-Ids: ")[1].split()[0]
        assert memory_id in files[0]
        clients.append(body.split("Desktop-Mem-Client: ")[1].split("\n")[0] if "Client:" in body else "rest")
    assert sorted(set(clients)) == ["Claude Desktop", "cursor-vscode", "rest"]
    assert git(store, "status", "--porcelain").strip() == ""


def test_reads_work_and_writes_fail_clearly_when_the_writer_does_not_answer(tmp_path: Path) -> None:
    store = tmp_path / "store"
    holder = MemoryEngine(load_config(flags={"store.path": str(store), "watcher.enabled": False}))
    try:
        holder.add("Already here")
        holder._parts.lock.publish(endpoint=dead_private_socket(tmp_path))  # nothing listens there

        async def scenario() -> tuple[dict[str, Any], Any]:
            async with stdio_session(store) as s:
                listed = await call(s, "list_memories")
                failed = await s.call_tool("add_memories", {"text": "Not stored"})
                return listed, failed

        listed, failed = anyio.run(scenario)
        assert [m["text"] for m in listed["memories"]] == ["Already here"]
        assert failed.is_error and "does not answer" in failed.content[0].text
        assert [m.text for m in holder.list_memories()] == ["Already here"]
    finally:
        holder.close()
