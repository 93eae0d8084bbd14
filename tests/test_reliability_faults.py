"""Regression tests for defects found by reliability/llm_faults.py and tests/test_fuzz.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desktop_mem.engine.facade import MemoryEngine
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat
from tests.scripted_llm import Fault, ScriptedLLM


def test_an_enormous_reply_is_shown_whole_stored_cut_and_committed(
    chat_engine: MemoryEngine, scripted_llm: ScriptedLLM
) -> None:
    # Before the fix: ValidationError out of chat(), the reply lost and the user turn never committed.
    scripted_llm.script(is_chat, Fault.huge(3_000_000))
    scripted_llm.script(FACTS, "[]")
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    reply = chat_engine.chat("big", "Write me a very long story.")
    assert reply.ok and len(reply.text) == 3_000_000
    assert chat_engine.wait_idle(60)
    [assistant] = chat_engine.list_memories(conversation_id="big", role="assistant")
    assert assistant.extra.get("truncated") is True and reply.text.startswith(assistant.text)
    assert len(assistant.text) > 1_000_000
    assert [m.text for m in chat_engine.list_memories(conversation_id="big", role="user")] == [
        "Write me a very long story."]
    assert any("only the first" in note for note in outcomes[0].notes)
    assert chat_engine._parts.git.dirty_paths() == [] and chat_engine.problems() == []


def test_a_fact_list_cut_off_before_its_first_item_falls_back_to_pattern_rules(
    chat_engine: MemoryEngine, scripted_llm: ScriptedLLM
) -> None:
    # Before the fix: read as "no facts" - nothing stored, no note.
    scripted_llm.script(FACTS, '["The user lives in Ber')
    scripted_llm.script(SUMMARY, "The user lives in Berlin.")
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    assert chat_engine.chat("cut", "I live in Berlin.").ok
    assert chat_engine.wait_idle(30)
    facts = chat_engine.list_memories(role="memory")
    assert [(m.text, m.source) for m in facts] == [("The user lives in Berlin", "pattern")]
    assert any("cut off" in note and "pattern rules" in note for note in outcomes[0].notes)


def test_a_reconciliation_answer_cut_off_adds_the_facts_and_says_so(
    chat_engine: MemoryEngine, scripted_llm: ScriptedLLM
) -> None:
    old = chat_engine.add("The user has a dog", conversation_id="rc")
    scripted_llm.script(FACTS, '["The user lives in Berlin"]')
    scripted_llm.script(RECONCILE, '[{"event": "DELETE", "te')
    scripted_llm.script(SUMMARY, "The user has a dog and lives in Berlin.")
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    chat_engine.chat("rc", "I live in Berlin.")
    assert chat_engine.wait_idle(30)
    texts = {m.text for m in chat_engine.list_memories(role="memory")}
    assert texts == {"The user has a dog", "The user lives in Berlin"}
    assert chat_engine.get(old.id).deleted is False
    assert any("reconciliation failed" in note for note in outcomes[0].notes)


def test_a_year_zero_timestamp_in_a_hand_edited_file_does_not_stop_the_app(
    make_config: Callable[..., Any]
) -> None:
    # Before the fix: PyYAML's ValueError escaped the listing and MemoryEngine() could not open.
    config = make_config()
    with MemoryEngine(config) as eng:
        eng.add("The user likes tea")
        bad = eng.root / "entries" / "global" / "facts" / "20250101T000000Z__bad.md"
        raw = b"---\nid: bad\ncreated_at: 0000-0-0T0:00:00\n---\n\nThe user likes coffee\n"
        bad.write_bytes(raw)
        conv_meta = eng.root / "entries" / "global" / "conversation.yaml"
        conv_meta.write_bytes(b"title: 0000-0-0T0:00:00\n")
    with MemoryEngine(config) as eng:
        [problem] = eng.problems()
        assert problem.path.endswith("__bad.md") and "YAML cannot read" in problem.reason
        assert [m.text for m in eng.list_memories()] == ["The user likes tea"]
        assert eng.conversations() == ["global"] and eng.conversation_title("global") == "global"
    assert bad.read_bytes() == raw


def test_a_flow_style_front_matter_can_be_edited_keeping_its_keys(engine: MemoryEngine) -> None:
    # Before the fix: FrontMatterError on every edit, delete or eviction of such a file.
    path = engine.root / "entries" / "global" / "facts" / "20250101T000000Z__flow.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"---\n{id: flow, mood: happy, tags: [a, b]}\n---\n\nThe user likes tea\n")
    engine.refresh()
    edited = engine.edit("flow", text="The user likes green tea")
    assert edited.text == "The user likes green tea" and edited.extra == {"mood": "happy", "tags": ["a", "b"]}
    tomb = engine.delete("flow")
    assert tomb.deleted and engine.problems() == []
