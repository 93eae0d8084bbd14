"""Why the app knows a fact (its turn and commit) and which model it was sent to (the sent log)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from desktop_mem.engine.chat import sent_log
from desktop_mem.engine.chat.sent_log import SentLog
from desktop_mem.engine.facade import MemoryEngine
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat


def _teach_ghent(engine: MemoryEngine, llm: Any) -> Any:
    llm.script(FACTS, '["The user lives in Ghent"]', times=1)
    llm.script(FACTS, "[]")
    llm.script(RECONCILE, "[]")
    llm.script(SUMMARY, "The user lives in Ghent.")
    llm.script(is_chat, "Nice!")
    reply = engine.chat("intro", "Hi, I live in Ghent")
    assert engine.wait_idle(30)
    [fact] = [m for m in engine.list_memories(role="memory") if "Ghent" in m.text]
    return reply, fact


def test_a_fact_names_the_turn_and_commit_it_came_from(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    reply, fact = _teach_ghent(chat_engine, scripted_llm)
    found = chat_engine.provenance(fact.id)
    assert [t.text for t in found.turns] == ["Hi, I live in Ghent"]
    assert found.turns[0].id == reply.turn_id and found.missing_turns == ()
    assert found.commit is not None and found.commit.trailers.get("Turn") == reply.turn_id
    assert found.how == "said in chat “intro”"

    typed = chat_engine.add("The user plays the cello")
    by_hand = chat_engine.provenance(typed.id)
    assert by_hand.turns == () and by_hand.how == "added by hand" and by_hand.sent_to == ()
    assert by_hand.commit is not None and by_hand.commit.subject.startswith("Add fact")


def test_each_reply_notes_where_its_memories_were_sent(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    _reply, fact = _teach_ghent(chat_engine, scripted_llm)
    for _ in range(2):
        used = chat_engine.chat("later", "Where do I live?")
        assert chat_engine.wait_idle(30)
        assert fact.id in [r.memory.id for r in used.used.memories]
    [sent] = chat_engine.provenance(fact.id).sent_to
    host = scripted_llm.base_url.split("//")[1].split("/")[0]
    assert (sent.endpoint, sent.model, sent.count) == (host, "test-model", 2)
    assert sent_log.summary([sent]) == f"sent to: test-model @ {host} 2×"
    # the log is the user's data in the store folder, and never committed
    log = chat_engine.root / sent_log.LOG_NAME
    assert log.exists()
    tracked = subprocess.run(["git", "-C", str(chat_engine.root), "log", "--all", "--name-only",
                              "--format="], capture_output=True, text=True, check=True).stdout
    assert sent_log.LOG_NAME not in tracked


def test_the_sent_log_stays_bounded_and_skips_lines_it_cannot_read(tmp_path: Any) -> None:
    log = SentLog(tmp_path)
    log.path.write_text("not json\n{\"at\": 5}\n", encoding="utf-8")  # a hand edit gone wrong
    for i in range(sent_log.MAX_LINES + 10):
        log.record([f"m{i % 3}"], "127.0.0.1:8765", "local")
    lines = log.path.read_text("utf-8").splitlines()
    assert len(lines) <= sent_log.MAX_LINES
    assert all(json.loads(line)["model"] == "local" for line in lines)
    [m0] = log.sent_to("m0")
    assert m0.count == sum(1 for line in lines if "m0" in json.loads(line)["ids"])
    assert log.sent_to("never") == []


def test_endpoint_labels_never_carry_credentials_or_paths() -> None:
    assert sent_log.endpoint_label("https://user:secret@api.openai.com/v1?key=x") == "api.openai.com"
    assert sent_log.endpoint_label("http://127.0.0.1:8765/v1") == "127.0.0.1:8765"


def test_what_an_ai_tool_searched_up_is_in_the_sent_log(make_config: Any) -> None:
    import anyio

    from tests.mcp_clients import CLAUDE, call, stdio_session

    with MemoryEngine(make_config()) as engine:
        fact = engine.add("The user prefers green tea")
        root = engine.root

    async def scenario() -> dict[str, Any]:
        async with stdio_session(root, CLAUDE) as s:
            return await call(s, "search_memory", query="what does the user drink?")

    found = anyio.run(scenario)
    assert fact.id in [h["id"] for h in found["results"]]
    with MemoryEngine(make_config()) as engine:
        [sent] = engine.provenance(fact.id).sent_to
    assert (sent.endpoint, sent.model, sent.count) == ("MCP", "Claude Desktop", 1)
