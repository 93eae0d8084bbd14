"""Provenance of writes made for MCP clients: front matter, trailers, the timeline's source filter
and the change events the app's notice is built from (engine level; the SDK tests are in test_mcp)."""

from __future__ import annotations

from typing import Any

from desktop_mem.api.mcp_tools import add, delete, restore, update
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.history.timeline import commit_source
from desktop_mem.engine.history.timeline_query import TimelineQuery, timeline_page
from desktop_mem.engine.models import EventType, StoreChange


def test_mcp_writes_carry_source_and_client_and_filter_on_the_timeline(engine: MemoryEngine) -> None:
    changes: list[StoreChange] = []
    engine.subscribe(changes.append)
    engine.add("Typed in the app")
    added = add(engine, ["Likes hiking", "Uses a\nsneaky\x1b name"], None, None, "Claude\nDesktop\x07")
    first = added["added"][0]
    assert first["source"] == "mcp" and first["client"] == "Claude Desktop"
    new = update(engine, first["id"], "Likes hiking and climbing", "Cursor")["updated"]
    delete(engine, [new["id"]], "Cursor")
    restore(engine, new["id"], "Cursor")

    assert [(c.operation, c.source, c.client) for c in changes] == [
        ("add", None, None), ("add", "mcp", "Claude Desktop"),  # the batch: one commit (issue #22)
        ("update", "mcp", "Cursor"), ("delete", "mcp", "Cursor"), ("restore", "mcp", "Cursor")]

    page = timeline_page(engine._parts, TimelineQuery(source="mcp"))
    assert [[e.type for e in c.events] for c in page.commits] == [
        [EventType.RESTORE], [EventType.DELETE], [EventType.UPDATE], [EventType.ADD, EventType.ADD]]
    assert {commit_source(c.trailers) for c in page.commits} == {"mcp"}
    app_only = timeline_page(engine._parts, TimelineQuery(source="app"))
    assert [c.subject for c in app_only.commits] == ["Add fact: Typed in the app"]
    assert TimelineQuery(source="mcp").filtered


def test_commit_source_of_plain_git_commits() -> None:
    trailers: dict[str, Any] = {}
    assert commit_source(trailers) == "git"
    assert commit_source({"Operation": "add"}) == "app"
    assert commit_source({"Operation": "add", "Source": "MCP"}) == "mcp"


def test_add_with_reconcile_updates_a_stored_fact_like_the_chat_write_path(chat_engine: MemoryEngine,
                                                                           scripted_llm: Any) -> None:
    from tests.llm_roles import RECONCILE

    old = chat_engine.add("The user lives in Berlin")
    scripted_llm.script(RECONCILE, '[{"event": "UPDATE", "id": "0", "text": "The user lives in Munich"}]')
    out = add(chat_engine, ["The user lives in Munich"], None, None, "Claude Desktop", reconcile=True)
    assert out["added"] == [] and out["updated"][0]["replaced"] == old.id
    new = chat_engine.get(out["updated"][0]["updated"]["id"])
    assert new.text == "The user lives in Munich" and new.source == "mcp"
    assert chat_engine.get(old.id).replaced_by == new.id
    assert chat_engine.history(limit=1)[0].trailers["Client"] == "Claude Desktop"
    assert any(RECONCILE in str(r.body) for r in scripted_llm.requests)


def test_a_reconciled_add_lands_as_one_commit(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    """An MCP add whose reconciliation adds, updates and deletes is ONE commit (the chat write
    path's apply step), so the user undoes it in one step and the timeline shows one change."""
    from tests.llm_roles import RECONCILE

    berlin = chat_engine.add("The user lives in Berlin")
    cat = chat_engine.add("The user has a cat named Tom")
    before = len(chat_engine.history(limit=50))
    scripted_llm.script(RECONCILE, '[{"event": "UPDATE", "id": "0", "text": "The user lives in Munich"},'
                                   ' {"event": "DELETE", "id": "1", "text": "The user has a cat named Tom"},'
                                   ' {"event": "ADD", "text": "The user plays chess"}]')
    out = add(chat_engine, ["The user lives in Munich", "The user gave away the cat", "The user plays chess"],
              None, None, "Claude Desktop", reconcile=True)

    # (a new fact no decision mentions is added: deletes alone never drop new facts, 001 §4.3)
    assert {m["text"] for m in out["added"]} == {"The user plays chess", "The user gave away the cat"}
    assert (len(out["updated"]), len(out["deleted"])) == (1, 1)
    commits = chat_engine.history(limit=50)
    assert len(commits) == before + 1, [c.subject for c in commits]
    head = commits[0]
    assert head.sha == out["commit"]
    assert head.trailers["Source"] == "mcp" and head.trailers["Client"] == "Claude Desktop"
    assert {berlin.id, cat.id} <= set(head.trailers["Ids"].split(", "))
    assert {m.text for m in chat_engine.list_memories()} == {
        "The user lives in Munich", "The user plays chess", "The user gave away the cat"}
    assert all(m.source == "mcp" for m in chat_engine.list_memories())
