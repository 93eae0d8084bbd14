"""As-of reads: what the store held as true at a moment, from validity and the git history."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.retrieval import SearchFilters

JAN_2025 = datetime(2025, 1, 1, tzinfo=UTC)
JUNE_2025 = datetime(2025, 6, 1, tzinfo=UTC)


def _in_2025(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commits made now carry a date in January 2025 (as if the app had run then)."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2025-01-01T00:00:00+00:00")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2025-01-01T00:00:00+00:00")


def _back_to_now(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    monkeypatch.delenv("GIT_AUTHOR_DATE")


def _texts(memories: list[Any]) -> list[str]:
    return [m.text for m in memories]


def test_a_listing_as_of_a_moment_follows_validity_not_todays_files(engine: MemoryEngine) -> None:
    ghent = engine.add("The user lives in Ghent", created_at=JAN_2025)
    engine.replace(ghent.id, "The user lives in Leuven")
    engine.add("The user has played the cello since March 2024")
    facts = {"role": "memory"}
    assert _texts(engine.list_as_of(JUNE_2025, **facts)) == [
        "The user lives in Ghent", "The user has played the cello since March 2024"]
    assert _texts(engine.list_as_of(datetime(2024, 12, 31, tzinfo=UTC), **facts)) == [
        "The user has played the cello since March 2024"]
    today = engine.list_as_of(datetime.now(UTC), **facts)
    assert sorted(_texts(today)) == sorted(_texts(engine.list_memories(**facts)))


def test_a_forgotten_fact_was_live_until_it_was_forgotten(engine: MemoryEngine) -> None:
    fact = engine.add("The user works at Acme", created_at=JAN_2025)
    gone = engine.delete(fact.id)
    assert gone.deleted_at is not None
    assert _texts(engine.list_as_of(JUNE_2025, role="memory")) == ["The user works at Acme"]
    assert engine.list_as_of(datetime.now(UTC), role="memory") == []


def test_text_edited_since_and_files_removed_by_hand_come_from_history(
        engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    _in_2025(monkeypatch)
    edited = engine.add("The user drives a Fiat", created_at=JAN_2025)
    removed = engine.add("The user has a dog called Rex", created_at=JAN_2025)
    _back_to_now(monkeypatch)
    engine.edit(edited.id, text="The user drives a Volvo")
    (engine.root / removed.path).unlink()  # removed outright, outside the app
    engine.apply_external_changes([removed.path])
    assert engine.lookup(removed.id) is None

    then = engine.list_as_of(JUNE_2025, role="memory")
    assert sorted(_texts(then)) == ["The user drives a Fiat", "The user has a dog called Rex"]
    assert _texts(engine.list_as_of(datetime.now(UTC), role="memory")) == ["The user drives a Volvo"]


def test_a_search_as_of_a_moment_finds_what_was_true_then(chat_engine: MemoryEngine) -> None:
    ghent = chat_engine.add("The user lives in Ghent", created_at=JAN_2025)
    chat_engine.replace(ghent.id, "The user lives in Leuven")
    chat_engine.add("The user likes green tea", created_at=JAN_2025)
    facts = ("memory",)
    then = chat_engine.search_as_of("Which city does the user live in?", JUNE_2025, roles=facts)
    assert then and then[0].memory.text == "The user lives in Ghent"
    assert "The user lives in Leuven" not in _texts([r.memory for r in then])
    now = chat_engine.search("Which city does the user live in?", filters=SearchFilters(roles=facts))
    assert now[0].memory.text == "The user lives in Leuven"
    assert chat_engine.search_as_of("city", datetime(2020, 1, 1, tzinfo=UTC), roles=facts) == []


def _cli(store: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *args],
                          capture_output=True, text=True, timeout=120)


def test_the_cli_lists_as_of_a_date_and_refuses_a_bad_one(make_config: Callable[..., Any]) -> None:
    import json

    with MemoryEngine(make_config()) as eng:
        ghent = eng.add("The user lives in Ghent", created_at=JAN_2025)
        eng.replace(ghent.id, "The user lives in Leuven")
        store = eng.root
    listed = _cli(store, "list", "--as-of", "2025-06-01", "--json")
    assert listed.returncode == 0, listed.stderr
    memories = json.loads(listed.stdout)["memories"]
    assert [m["text"] for m in memories] == ["The user lives in Ghent"]
    assert memories[0]["valid_to"] is not None
    bad = _cli(store, "list", "--as-of", "last summer")
    assert bad.returncode != 0 and "as-of date 'last summer'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_cli_searches_as_of_a_date(make_config: Callable[..., Any]) -> None:
    import json

    with MemoryEngine(make_config()) as eng:
        ghent = eng.add("The user lives in Ghent", created_at=JAN_2025)
        eng.replace(ghent.id, "The user lives in Leuven")
        store = eng.root
    found = _cli(store, "search", "Which city does the user live in?", "--as-of", "2025-06-01", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert [h["memory"]["text"] for h in hits][:1] == ["The user lives in Ghent"]
    assert all(h["memory"]["text"] != "The user lives in Leuven" for h in hits)


def test_rest_lists_as_of_a_date_and_answers_400_for_a_bad_one(make_config: Callable[..., Any]) -> None:
    import httpx

    from desktop_mem.api.rest import create_app
    from tests.test_server import start_server

    with MemoryEngine(make_config()) as eng:
        ghent = eng.add("The user lives in Ghent", created_at=JAN_2025)
        eng.replace(ghent.id, "The user lives in Leuven")
        server, thread, url = start_server(create_app(eng, None))
        try:
            then = httpx.get(f"{url}/api/memories", params={"as_of": "2025-06-01"}, timeout=30)
            now = httpx.get(f"{url}/api/memories", timeout=30)
            bad = httpx.get(f"{url}/api/memories", params={"as_of": "soon"}, timeout=30)
        finally:
            server.should_exit = True
            thread.join(30)
    assert [m["content"] for m in then.json()["data"]] == ["The user lives in Ghent"]
    assert then.json()["data"][0]["valid_to"] is not None
    assert [m["content"] for m in now.json()["data"]] == ["The user lives in Leuven"]
    assert bad.status_code == 400 and "as-of date 'soon'" in bad.json()["error"]["message"]


def test_mcp_search_and_list_answer_as_of_a_date(tmp_path: Any) -> None:
    import anyio

    from tests.mcp_clients import call, stdio_session

    store = tmp_path / "store"
    from desktop_mem.engine.config import load_config

    with MemoryEngine(load_config(flags={"store.path": str(store), "watcher.enabled": False})) as eng:
        ghent = eng.add("The user lives in Ghent", created_at=JAN_2025)
        eng.replace(ghent.id, "The user lives in Leuven")

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with stdio_session(store) as s:
            listed = await call(s, "list_memories", as_of="2025-06-01")
            found = await call(s, "search_memory", query="Which city does the user live in?",
                               as_of="2025-06-01T12:00:00Z")
            bad = await s.call_tool("list_memories", {"as_of": "next week"})
        return listed, found, bad

    listed, found, bad = anyio.run(scenario)
    assert [m["text"] for m in listed["memories"]] == ["The user lives in Ghent"]
    assert [h["text"] for h in found["results"]][:1] == ["The user lives in Ghent"]
    assert "The user lives in Leuven" not in [h["text"] for h in found["results"]]
    assert bad.is_error and "as-of date 'next week'" in bad.content[0].text
