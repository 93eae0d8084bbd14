"""The chat pipeline end to end over the real engine and the scripted OpenAI-compatible server."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EventType
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat
from tests.scripted_llm import Fault


def test_a_told_fact_is_stored_committed_and_injected_later(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '["The user lives in Berlin"]', times=1)
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(SUMMARY, "The user lives in Berlin.")
    scripted_llm.script(is_chat, "Nice, Berlin is great!")
    tokens: list[str] = []
    used: list[Any] = []
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    reply = chat_engine.chat("trip", "I live in Berlin.", on_token=tokens.append, on_used=used.append)
    assert reply.ok and reply.text == "Nice, Berlin is great!" and "".join(tokens) == reply.text
    assert len(tokens) > 1, "the reply streams in pieces"
    assert used and used[0].conversation_id == "trip"
    assert chat_engine.wait_idle(30)
    [outcome] = outcomes
    assert [m.text for m in outcome.added] == ["The user lives in Berlin"]
    assert outcome.describe().startswith("Memory updated: added")
    fact = outcome.added[0]
    assert (chat_engine.root / fact.path).read_text().endswith("The user lives in Berlin\n")
    top = chat_engine.history(limit=1)[0]
    kinds = {e.type for e in top.events}
    assert top.sha == outcome.commit and {EventType.TURN, EventType.ADD} <= kinds

    reply2 = chat_engine.chat("trip", "Where do I live?")
    assert reply2.ok
    injected = [r.memory.text for r in reply2.used.memories]
    assert "The user lives in Berlin" in injected
    chat_request = [r.body for r in scripted_llm.chat_requests if is_chat(r.body)][-1]
    assert "The user lives in Berlin" in chat_request["messages"][0]["content"]
    memory = reply2.used.memories[injected.index("The user lives in Berlin")]
    assert memory.scores.final > 0 and memory.scores.mmr_rank is not None


def test_a_contradiction_becomes_an_update_tombstone(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    old = chat_engine.add("The user lives in Berlin", conversation_id="trip")
    scripted_llm.script(FACTS, '["The user lives in Munich"]')
    scripted_llm.script(RECONCILE, '[{"event": "UPDATE", "id": "0", "text": "The user lives in Munich"}]')
    scripted_llm.script(SUMMARY, "The user lives in Munich.")
    scripted_llm.default_reply = "Munich, lovely."
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    chat_engine.chat("trip", "Actually I moved to Munich.")
    assert chat_engine.wait_idle(30)
    [(tomb, new)] = outcomes[0].updated
    assert tomb.id == old.id and tomb.deleted and tomb.replaced_by == new.id
    assert new.text == "The user lives in Munich"
    assert "replaced_by: " + new.id in (chat_engine.root / tomb.path).read_text()
    events = chat_engine.history(limit=1)[0].events
    [update] = [e for e in events if e.type == EventType.UPDATE]
    assert update.old_text == "The user lives in Berlin" and update.new_text == "The user lives in Munich"
    assert "Berlin" not in [
        r.memory.text for r in chat_engine.search("where does the user live", conversation_id="trip")
    ]


def test_unreachable_llm_fails_clearly_and_keeps_the_turn_and_pattern_facts(
    make_config: Callable[..., Any],
) -> None:
    eng = MemoryEngine(make_config(**{"llm.base_url": "http://127.0.0.1:9/v1", "llm.timeout": 2}))
    try:
        reply = eng.chat("c1", "My name is Alice and I prefer dark mode.")
        assert not reply.ok and reply.error_kind == "unreachable" and "127.0.0.1:9" in (reply.error or "")
        assert eng.wait_idle(30)
        texts = [m.text for m in eng.list_memories(conversation_id="c1")]
        assert "My name is Alice and I prefer dark mode." in texts
        facts = eng.list_memories(role="memory")
        assert {m.source for m in facts} == {"pattern"}
        assert any("Alice" in m.text for m in facts) and any("dark mode" in m.text for m in facts)
        assert eng._parts.git.dirty_paths() == []
    finally:
        eng.close()


@pytest.mark.parametrize(
    ("fault", "kind"),
    [
        (Fault.status(500, "boom"), "server_error"),
        (Fault.status(401, "bad key"), "auth"),
        (Fault.malformed_json(), "bad_response|cut_stream"),
        (Fault.cut_stream(2), "cut_stream"),
        (Fault.delay(8), "timeout"),
    ],
)
def test_reply_faults_lose_no_turn(
    chat_engine: MemoryEngine, scripted_llm: Any, fault: Fault, kind: str
) -> None:
    scripted_llm.script(is_chat, fault)
    scripted_llm.script(FACTS, '["The user has a cat"]')
    reply = chat_engine.chat("c2", "I have a cat.")
    assert reply.error_kind in kind.split("|") and reply.error
    assert chat_engine.wait_idle(30)
    turns = [m for m in chat_engine.list_memories(conversation_id="c2") if m.role == "user"]
    assert [t.text for t in turns] == ["I have a cat."]
    assert [m.text for m in chat_engine.list_memories(role="memory")] == [
        "The user has a cat"
    ]
    if kind == "cut_stream":
        [assistant] = [m for m in chat_engine.list_memories(conversation_id="c2") if m.role == "assistant"]
        assert assistant.extra.get("interrupted") is True and reply.text == assistant.text


@pytest.mark.parametrize(
    "reply",
    [
        "not json at all",
        Fault.status(500),
        '[{"event": "DELETE", "id": "0"}]',
        '[{"event": "UPDATE", "id": "99", "text": "The user lives in Rome"}]',
    ],
)
def test_reconciliation_faults_keep_the_new_fact(
    chat_engine: MemoryEngine, scripted_llm: Any, reply: Any
) -> None:
    chat_engine.add("The user lives in Berlin", conversation_id="c3")
    scripted_llm.script(FACTS, '["The user lives in Rome"]')
    scripted_llm.script(RECONCILE, reply)
    scripted_llm.script(SUMMARY, Fault.status(500))
    chat_engine.chat("c3", "I live in Rome now.")
    assert chat_engine.wait_idle(30)
    texts = [m.text for m in chat_engine.list_memories(role="memory")]
    assert "The user lives in Rome" in texts


def test_summary_failure_keeps_the_old_summary(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    chat_engine._parts.store.write_summary("c4", "Old summary.", 0)
    chat_engine.refresh()
    scripted_llm.script(FACTS, '["The user plays chess"]')
    scripted_llm.script(SUMMARY, Fault.malformed_json())
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    chat_engine.chat("c4", "I play chess.")
    assert chat_engine.wait_idle(30)
    assert chat_engine.summary("c4").text == "Old summary."
    assert any("previous summary was kept" in n for n in outcomes[0].notes)


def test_stop_button_cancels_and_keeps_partial_text(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    scripted_llm.script(is_chat, "word " * 200)
    cancel = threading.Event()
    seen: list[str] = []

    def on_token(t: str) -> None:
        seen.append(t)
        if len(seen) == 3:
            cancel.set()

    reply = chat_engine.chat("c5", "Tell me a long story.", on_token=on_token, cancel=cancel)
    assert reply.cancelled and 0 < len(reply.text) < len("word " * 200)
    assert chat_engine.wait_idle(30)


def test_eviction_and_ttl(make_config: Callable[..., Any], scripted_llm: Any) -> None:
    from datetime import timedelta

    from desktop_mem.engine.models import utc_now

    eng = MemoryEngine(
        make_config(
            **{
                "llm.base_url": scripted_llm.base_url,
                "llm.model": "test-model",
                "memory.max_entries": 4,
                "memory.extract_facts": False,
            }
        )
    )
    try:
        eng.add("old fact", conversation_id="c6")
        eng.add("short-lived", conversation_id="c6", expires_at=utc_now() - timedelta(seconds=1))
        eng._parts.store.write_summary("c6", "A summary.", 0)
        eng.refresh()
        outcomes: list[Any] = []
        eng.subscribe_outcomes(outcomes.append)
        for i in range(3):
            eng.chat("c6", f"message {i}")
        assert eng.wait_idle(30)
        live = [m for m in eng.list_memories(conversation_id="c6") if m.role != "summary"]
        assert len(live) == 4 and eng.summary("c6") is not None
        assert [m.text for o in outcomes for m in o.expired] == ["short-lived"]
        evicted = [m.text for o in outcomes for m in o.evicted]
        # the oldest turns go; a fact the user told the app is never evicted (issue #37)
        assert evicted[0] == "message 0" and "old fact" not in evicted
        assert any("left memory (beyond memory.max_entries)" in n for o in outcomes for n in o.notes)
        assert "old fact" in [m.text for m in live]
        assert any(e.type == EventType.EVICT for c in eng.history(limit=5) for e in c.events)
    finally:
        eng.close()


def _subjects(root: Any) -> list[str]:
    import subprocess

    return subprocess.run(["git", "-C", str(root), "log", "--format=%s"],
                          capture_output=True, text=True, check=True).stdout.splitlines()


def test_a_new_stores_first_commit_says_what_it_is(make_config: Callable[..., Any]) -> None:
    config = make_config()
    root = config.store_path.expanduser()
    root.mkdir(parents=True, exist_ok=True)
    facts = root / "entries" / "global" / "facts"  # a fact written by hand before the app first ran
    facts.mkdir(parents=True)
    (facts / "f-1.md").write_text("---\nid: f-1\nrole: memory\nconversation_id: global\n"
                                  "created_at: 2026-11-01T10:00:00+00:00\n---\nThe user likes tea\n", "utf-8")
    with MemoryEngine(config) as engine:
        assert _subjects(engine.root)[-1] == "Create the memory store"  # not "Record changes made while ..."


def test_commits_name_the_conversation_by_its_title(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    def subjects() -> list[str]:
        return _subjects(chat_engine.root)

    conv = chat_engine.new_conversation("Weekend plans")
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(is_chat, "Sounds fun!")
    chat_engine.chat(conv, "We go hiking on Saturday")
    assert chat_engine.wait_idle(30)
    assert subjects()[0].startswith("Chat turn in “Weekend plans”")
