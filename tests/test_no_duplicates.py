"""Issue #22: no exact duplicates from any write path, even when the model's reconciliation is
unusable (3 identical facts piled up after 3 turns, 29 after a kill loop of retried adds)."""

from __future__ import annotations

from typing import Any

from desktop_mem.engine.facade import MemoryEngine
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat
from tests.scripted_llm import ScriptedLLM


def _facts(engine: MemoryEngine) -> list[str]:
    return [m.text for m in engine.list_memories(role="memory")]


def test_adding_the_same_fact_again_returns_the_one_already_stored(engine: MemoryEngine) -> None:
    first = engine.add("The user lives in Ghent")
    commits = engine._parts.git.count()
    again = engine.add("the user  lives in Ghent")  # a retry, differently spaced and cased
    assert again.id == first.id
    assert _facts(engine) == ["The user lives in Ghent"]
    assert engine._parts.git.count() == commits, "a repeated add makes no commit"
    other = engine.add("The user lives in Ghent", conversation_id="trip")  # another conversation: its own
    assert other.id != first.id


def test_turns_with_unusable_reconciliation_store_a_repeated_fact_once(
    chat_engine: MemoryEngine, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.script(FACTS, '["The user lives in Ghent"]')
    scripted_llm.script(RECONCILE, "this is not JSON at all")
    scripted_llm.script(SUMMARY, "The user lives in Ghent.")
    scripted_llm.script(is_chat, "Nice!")
    for _ in range(3):
        assert chat_engine.chat("home", "I live in Ghent.").ok
        assert chat_engine.wait_idle(30)
    facts: list[Any] = [(m.conversation_id, m.text) for m in chat_engine.list_memories(role="memory")]
    assert len(facts) == len(set(facts)), facts
