"""Project scopes: one memory per project, read by every conversation, agent and MCP client
working in it, beside their own and the global facts; the CLI, MCP and REST name it. Real
store, real index, real git."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from mcp.types import TextContent
from starlette.testclient import TestClient

from desktop_mem.api.mcp_server import EngineBackend, build_server
from desktop_mem.api.rest import create_app
from desktop_mem.engine.api import SearchFilters, project_of_folder, project_scope
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import ValidationError
from tests.mcp_clients import cli_env

pytestmark = pytest.mark.timeout(400)


def _engine(store: Path) -> MemoryEngine:
    return MemoryEngine(load_config(flags={"store.path": str(store)}))


def test_a_project_is_named_by_the_user_or_by_its_folder(tmp_path: Path) -> None:
    assert project_scope("desktop-mem") == "project-desktop-mem"
    assert project_scope("project-desktop-mem") == "project-desktop-mem"
    assert project_scope("My App / v2") == "project-My-App-v2"
    assert project_scope("../x") == "project-x"  # a name, never a path
    for bad in ("", "   ", "../..", "///"):
        with pytest.raises(ValidationError):
            project_scope(bad)
    one, two = tmp_path / "a" / "app", tmp_path / "b" / "app"
    for repo in (one, two):
        (repo / ".git").mkdir(parents=True)
        (repo / "src" / "deep").mkdir(parents=True)
    # the git root names it, wherever in the checkout the agent runs; two checkouts named alike differ
    assert project_of_folder(one / "src" / "deep") == project_of_folder(one)
    assert project_of_folder(one).startswith("project-app-")
    assert project_of_folder(one) != project_of_folder(two)


def test_conversations_in_a_project_read_it_and_no_other(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shop, blog = project_scope("shop"), project_scope("blog")
    with _engine(store) as engine:
        engine.add("The shop's API uses PostgreSQL 16 for orders", conversation_id=shop)
        engine.add("The blog's database is SQLite", conversation_id=blog)
        engine.add("The user prefers tabs over spaces in every database script")
        engine.add("In this chat the database is MongoDB", conversation_id="elsewhere")
        engine.set_conversation_project("fix-orders", shop)
        assert engine.conversation_project("fix-orders") == shop

        def found(**kw: Any) -> set[str]:
            return {r.memory.conversation_id for r in engine.search("which database", top_k=10, **kw)}

        assert found(conversation_id="fix-orders") == {shop, "global"}  # the project + global
        assert found(filters=SearchFilters(project=blog)) == {blog, "global"}  # an agent naming it
        assert found(conversation_id="other-chat") == {"global"}  # not in a project: neither
        engine.set_conversation_project("fix-orders", None)
        assert found(conversation_id="fix-orders") == {"global"}


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *args],
                          capture_output=True, text=True, timeout=180, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    return proc


def test_cli_project_on_add_list_and_search(tmp_path: Path) -> None:
    store, repo = tmp_path / "store", tmp_path / "checkout" / "shop"
    (repo / ".git").mkdir(parents=True)
    _cli(store, "add", "Orders are stored in PostgreSQL", "--project", str(repo))
    _cli(store, "add", "The blog runs on SQLite", "--project", "blog")
    listed = json.loads(_cli(store, "list", "--project", str(repo), "--json").stdout)["memories"]
    assert [(m["text"], m["conversation_id"]) for m in listed] == [
        ("Orders are stored in PostgreSQL", project_of_folder(repo))]
    hits = json.loads(_cli(store, "search", "database", "--project", "blog", "--json").stdout)
    assert [h["memory"]["text"] for h in hits] == ["The blog runs on SQLite"]
    both = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "add", "x",
                           "--project", "blog", "--conversation", "c"], capture_output=True, text=True,
                          timeout=120, env=cli_env())
    assert both.returncode != 0 and "not both" in both.stderr


def test_mcp_and_rest_name_the_project(tmp_path: Path) -> None:
    store = tmp_path / "store"
    engine = _engine(store)
    try:
        async def scenario() -> dict[str, Any]:
            out: dict[str, Any] = {}
            async with Client(build_server(EngineBackend(engine))) as client:
                async def call(tool: str, **arguments: Any) -> Any:
                    result = await client.call_tool(tool, arguments)
                    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
                    assert not result.is_error, text
                    return json.loads(text)

                out["added"] = await call("add_memories", texts=["Deploys go through GitHub Actions"],
                                          project="shop")
                await call("add_memories", texts=["The blog deploys by rsync"], project="blog")
                out["search"] = await call("search_memory", query="how do deploys work", project="shop")
                out["list"] = await call("list_memories", project="blog")
            return out

        out = anyio.run(scenario)
        assert out["added"]["added"][0]["conversation_id"] == "project-shop"
        assert [r["text"] for r in out["search"]["results"]] == ["Deploys go through GitHub Actions"]
        assert [m["text"] for m in out["list"]["memories"]] == ["The blog deploys by rsync"]

        with TestClient(create_app(engine, None), base_url="http://127.0.0.1") as client:
            made = client.post("/api/memories",
                               json={"content": "The shop's CDN is Fastly", "project": "shop"})
            assert made.status_code == 201 and made.json()["conversation_id"] == "project-shop"
            found = client.get("/api/search", params={"q": "CDN or deploys", "project": "shop"}).json()
            assert {h["memory"]["conversation_id"] for h in found["data"]} == {"project-shop"}
            assert client.get("/api/search", params={"q": "CDN", "project": "///"}).status_code == 400
    finally:
        engine.close()
    assert os.path.isdir(store / "entries" / "project-shop")


def test_conversation_commits_name_the_title_people_chose(tmp_path: Path) -> None:
    """Issue #39 item 8: the Timeline showed "Conversation work-notes in project
    project-invoice-tool"; a commit names the conversation's title and the project's name."""
    from desktop_mem.engine.api import MemoryEngine, project_scope
    from desktop_mem.engine.config import load_config

    config = load_config(flags={"store.path": str(tmp_path / "store"), "watcher.enabled": False})
    engine = MemoryEngine.open(config)
    try:
        conv = engine.new_conversation("Work notes")
        engine.set_conversation_project(conv, project_scope("invoice-tool"))
        engine.rename_conversation(conv, "Invoice notes")
        subjects = [c.subject for c in engine.history(limit=3)]
    finally:
        engine.close()
    assert subjects[:2] == ["Rename conversation “Work notes” to “Invoice notes”",
                            "“Work notes” in project invoice-tool"]


def test_an_mcp_client_names_its_project_by_its_roots(tmp_path: Path) -> None:
    """project "." is the project of the folder the client works in, from its MCP roots; a client
    without roots is told to give the name."""
    from mcp.types import ListRootsResult, Root

    repo = tmp_path / "checkout" / "shop"
    (repo / ".git").mkdir(parents=True)

    async def roots(_context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=repo.as_uri(), name="shop")])

    engine = _engine(tmp_path / "store")
    try:
        async def scenario() -> tuple[Any, Any, Any]:
            server = build_server(EngineBackend(engine))
            async with Client(server, mode="legacy", list_roots_callback=roots) as client:
                added = await client.call_tool("add_memories",
                                               {"texts": ["Deploys use Fly.io"], "project": "."})
                listed = await client.call_tool("list_memories", {"project": "."})
            async with Client(server) as bare:
                refused = await bare.call_tool("search_memory", {"query": "deploys", "project": "."})
            return added, listed, refused

        added, listed, refused = anyio.run(scenario)
        text = "".join(c.text for c in added.content if isinstance(c, TextContent))
        assert not added.is_error, text
        assert json.loads(text)["added"][0]["conversation_id"] == project_of_folder(repo)
        listed_text = "".join(c.text for c in listed.content if isinstance(c, TextContent))
        assert [m["text"] for m in json.loads(listed_text)["memories"]] == ["Deploys use Fly.io"]
        assert refused.is_error and "roots" in refused.content[0].text
    finally:
        engine.close()


def test_a_chat_in_a_project_files_its_work_in_the_project(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """Issue #38: a fact about the work of a conversation bound to a project is the project's,
    read by every conversation in it; a fact about the user stays the user's; a forget in
    another conversation of the project finds the project's fact."""
    from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat

    shop = project_scope("shop")
    for conv in ("orders", "billing"):
        chat_engine.set_conversation_project(conv, shop)
    task = "The user is migrating the shop's orders table to PostgreSQL 16"
    answers = {"Postgres": {"facts": [{"text": "The user lives in Ghent", "about": "user", "relation": "",
                                       "replaces": ""}], "task": [task]},
               "Forget": {"asks_to_forget": True, "forget": ["the orders table migration"]}}
    for words, answer in answers.items():
        full = {"language": "en", "asks_to_forget": False, "forget": [], "facts": [], "task": [], **answer}
        scripted_llm.script(lambda body, w=words: FACTS in json.dumps(body["messages"][0])
                            and w in body["messages"][-1]["content"].rsplit("LAST message:", 1)[-1],
                            json.dumps(full))
    scripted_llm.script(RECONCILE, "[]")
    scripted_llm.script(SUMMARY, "The user works on the shop.")
    scripted_llm.script(is_chat, "Noted.")
    chat_engine.chat("orders", "I live in Ghent; today I'm moving the orders table to Postgres 16.")
    assert chat_engine.wait_idle(30)
    # the memory model is told the chat is in the project, so the work it hears of is the project's
    reads = [r for r in scripted_llm.chat_requests if FACTS in json.dumps(r.body["messages"][0])]
    assert 'the project "shop"' in reads[0].body["messages"][-1]["content"]
    placed = {m.text: m.conversation_id for m in chat_engine.list_memories(role="memory")}
    assert placed == {task: shop, "The user lives in Ghent": "global"}
    assert task in {r.memory.text for r in chat_engine.search("orders table", conversation_id="billing")}
    chat_engine.chat("billing", "Forget the orders table migration, it was cancelled.")
    assert chat_engine.wait_idle(30)
    assert [m.text for m in chat_engine.list_memories(role="memory")] == ["The user lives in Ghent"]
