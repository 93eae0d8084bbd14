"""Compatibility with agent-cli's memory proxy (`agent-cli[memory]==0.112.0`), the reference
implementation of the store layout: a store its own code wrote opens in desktop-mem in place.

The store is written by the real package's store writers (files, tombstones, summary, its chroma
collection, its git commits), with embeddings from the scripted OpenAI-compatible server. The
package is a test dependency without its `[memory]` extra: that extra adds transformers,
huggingface-hub and pydantic-ai for its LLM extraction and reranker download, which these
writers do not import; chromadb, PyYAML and openai come with desktop-mem itself.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EventType
from tests.scripted_llm import ScriptedLLM

agent_cli = pytest.importorskip("agent_cli.memory._persistence", reason="agent-cli==0.112.0 (test extra)")


def _write_agent_cli_store(store: Path, llm: ScriptedLLM) -> dict[str, str]:
    """What agent-cli's proxy leaves after two turns, an UPDATE of a fact and a summary."""
    from agent_cli.memory._files import load_memory_files
    from agent_cli.memory._git import commit_changes, init_repo
    from agent_cli.memory._persistence import delete_memory_files, persist_entries, persist_summary
    from agent_cli.memory._store import init_memory_collection
    from agent_cli.memory.entities import Fact, Summary, Turn

    store.mkdir(parents=True)
    init_repo(store)
    collection = init_memory_collection(store, embedding_model="test-model", openai_base_url=llm.base_url,
                                        openai_api_key="test")
    t0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    ids = {name: str(uuid.uuid4()) for name in ("user", "assistant", "city", "job", "city2")}
    conv = "travel"
    persist_entries(collection, memory_root=store, conversation_id=conv, entries=[
        Turn(id=ids["user"], conversation_id=conv, role="user", created_at=t0,
             content="I live in Berlin and work as a pastry chef."),
        Turn(id=ids["assistant"], conversation_id=conv, role="assistant",
             created_at=t0 + timedelta(seconds=2), content="Nice, Berlin has great bakeries!"),
        Fact(id=ids["city"], conversation_id=conv, source_id=ids["user"], created_at=t0,
             content="The user lives in Berlin."),
        Fact(id=ids["job"], conversation_id=conv, source_id=ids["user"], created_at=t0,
             content="The user works as a pastry chef."),
    ])
    asyncio.run(commit_changes(store, "Add 2 turns and 2 facts"))
    # An UPDATE as agent-cli's reconciliation does it: new fact, old one tombstoned with replaced_by.
    persist_entries(collection, memory_root=store, conversation_id=conv, entries=[
        Fact(id=ids["city2"], conversation_id=conv, source_id=ids["user"],
             created_at=t0 + timedelta(days=1), content="The user moved to Munich."),
    ])
    from agent_cli.memory._files import write_snapshot

    write_snapshot(store / "memory_index.json", load_memory_files(store))
    delete_memory_files(store, conv, [ids["city"]], replacement_map={ids["city"]: ids["city2"]})
    persist_summary(collection, memory_root=store, summary=Summary(
        conversation_id=conv, created_at=t0 + timedelta(days=1),
        content="The user, a pastry chef, moved from Berlin to Munich."))
    asyncio.run(commit_changes(store, "Update fact and summary"))
    assert collection.count() == 6  # agent-cli's own index holds what it wrote
    return ids


def test_agent_cli_written_store_opens_in_place(
    make_config: Callable[..., Any], scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    from agent_cli.memory._files import load_memory_files

    store = tmp_path / "agent-store"
    ids = _write_agent_cli_store(store, scripted_llm)

    with MemoryEngine(make_config(store=store)) as engine:
        assert engine.problems() == []
        facts = {m.id: m for m in engine.list_memories(role="memory", include_deleted=True)}
        assert facts[ids["job"]].text == "The user works as a pastry chef."
        assert facts[ids["city"]].deleted and facts[ids["city"]].replaced_by == ids["city2"]
        assert facts[ids["city"]].conversation_id == "travel"
        # Facts about the user move to the user scope on open (issue 21), which agent-cli reads
        # in every conversation too; they remember the conversation they came from.
        live = [m for c in ("travel", "global")
                for m in engine.list_memories(conversation_id=c, role="memory")]
        assert sorted(m.text for m in live) == ["The user moved to Munich.",
                                                "The user works as a pastry chef."]
        assert {m.extra.get("from_conversation", m.conversation_id) for m in live} == {"travel"}
        turns = engine.messages("travel")
        assert [t["role"] for t in turns] == ["user", "assistant"]
        assert engine.summary("travel") is not None
        assert "Munich" in engine.summary("travel").text  # type: ignore[union-attr]

        hits = engine.search("Where does the user live now?", conversation_id="travel", top_k=3)
        assert hits and hits[0].memory.id == ids["city2"]

        # agent-cli's plain commits are classified from their diffs alone.
        events = [e for c in engine.history(limit=10) for e in c.events]
        types = {(e.type, e.memory_id) for e in events}
        assert (EventType.ADD, ids["job"]) in types
        assert (EventType.TURN, ids["user"]) in types
        assert any(e.type == EventType.UPDATE and e.memory_id == ids["city"] and e.new_id == ids["city2"]
                   for e in events)
        assert any(e.type == EventType.SUMMARY for e in events)

        # agent-cli's tombstone (entries/deleted/<conv>/...) restores to its live place.
        restored = engine.restore(ids["city"])
        assert restored.path.startswith("entries/travel/facts/") and restored.conversation_id == "travel"
        engine.delete(ids["city"])

        edited = engine.edit(ids["job"], text="The user works as a head pastry chef.")
        assert engine.history(limit=1)[0].events[0].type == EventType.EDIT
        assert edited.path == facts[ids["job"]].path  # edited in place, same file

    # ... and agent-cli still reads the store desktop-mem changed.
    records = {r.id: r for r in load_memory_files(store)}
    assert records[ids["job"]].content == "The user works as a head pastry chef."
    assert ids["city"] not in records and ids["city2"] in records


def _agent_cli_health_keys() -> set[str]:
    """The keys agent-cli's own proxy answers GET /health with, read from its source."""
    import ast
    import inspect

    from agent_cli.memory import api

    tree = ast.parse(inspect.getsource(api.create_app))
    health = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "health")
    returned = next(n.value for n in ast.walk(health) if isinstance(n, ast.Return))
    assert isinstance(returned, ast.Dict)
    return {k.value for k in returned.keys if isinstance(k, ast.Constant)}


def test_serve_accepts_agent_cli_proxy_requests_and_health(
    make_config: Callable[..., Any], scripted_llm: ScriptedLLM, tmp_path: Path
) -> None:
    """Requests built with agent-cli's own ChatRequest model; the knobs change what is injected."""
    import httpx
    from agent_cli.memory.models import ChatRequest, Message

    from desktop_mem.api.rest import create_app
    from tests.test_server import start_server
    from tests.tiny_cross_encoder import write_cross_encoder

    scripted_llm.script(lambda body: True, "Noted.")
    folder = write_cross_encoder(tmp_path / "cross-encoder")
    config = make_config(**{"llm.base_url": scripted_llm.base_url, "llm.model": "test-model",
                            "llm.api_key": "test", "retrieval.reranker_path": str(folder),
                            "retrieval.score_threshold": 0.0})
    engine = MemoryEngine(config)
    for text in ("The user has a dog named Biscuit", "The user has a cat named Miso",
                 "The user lives in Berlin", "The user works as a nurse at the hospital"):
        engine.add(text)
    engine.open_index()
    server, thread, url = start_server(create_app(engine, None))
    try:
        def injected(**knobs: Any) -> list[dict[str, Any]]:
            request = ChatRequest(model="test-model", memory_id="pets",
                                  messages=[Message(role="user", content="which pet does the user have")],
                                  **knobs)
            reply = httpx.post(f"{url}/v1/chat/completions", json=request.model_dump(exclude_none=True),
                               timeout=60)
            assert reply.status_code == 200, reply.text
            assert reply.json()["choices"][0]["message"]["content"] == "Noted."
            memories: list[dict[str, Any]] = reply.json()["x_memory"]["memories"]
            return memories

        assert len(injected()) >= 3
        assert len(injected(memory_top_k=1)) == 1
        # The tiny cross-encoder scores at most sigmoid(2) ~ 0.88: a 0.95 threshold prunes all.
        assert injected(memory_score_threshold=0.95) == []
        assert len(injected(memory_score_threshold=0.6)) < len(injected(memory_score_threshold=0.0))
        # Recency weight 1: the final score is recency alone (~1 for memories made seconds ago).
        assert all(m["score"] > 0.99 for m in injected(memory_recency_weight=1.0))
        # Recency weight 0: relevance alone, 0.8 * cross-encoder (<= 0.88) + 0.2 * fused (<= 1).
        assert all(m["score"] < 0.91 for m in injected(memory_recency_weight=0.0))
        bad = httpx.post(f"{url}/v1/chat/completions", timeout=30, json=ChatRequest(
            model="test-model", messages=[Message(role="user", content="hi")],
            memory_recency_weight=2.0).model_dump(exclude_none=True))
        assert bad.status_code == 400 and "memory_recency_weight" in bad.json()["error"]["message"]

        health = httpx.get(f"{url}/health").json()
        keys = _agent_cli_health_keys()
        assert keys == {"status", "memory_store", "openai_base_url", "default_top_k"}
        assert keys <= set(health) and all(isinstance(health[k], str) for k in keys)
        assert health["status"] == "ok" and health["memory_store"] == str(engine.root)
        assert health["default_top_k"] == "5"
    finally:
        server.should_exit = True
        thread.join(30)
        engine.wait_idle(30)
        engine.close()
