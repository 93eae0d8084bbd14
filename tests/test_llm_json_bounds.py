"""Bounded work on a model's answer (issue #34): JSON nested deeper, or holding more values, than a
fact list or a reconciliation can be is refused before it is parsed, and the write path's
documented fallbacks run. A deep answer raised RecursionError, past every `except ValueError`."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_mem.engine.chat.llm_json import LLMJSONError, parse_decisions, parse_string_list
from desktop_mem.engine.facade import MemoryEngine
from tests.llm_roles import FACTS, RECONCILE, SUMMARY
from tests.scripted_llm import ScriptedLLM

DEEP = "[" * 5_000 + '"The user lives in Berlin"' + "]" * 5_000
FLOOD = "[" + ",".join(['"x"'] * 50_000) + "]"


@pytest.mark.parametrize("answer", [DEEP, "```json\n" + DEEP + "\n```", FLOOD, '{"facts": ' + DEEP + "}"],
                         ids=["deep", "deep-fenced", "flood", "deep-wrapped"])
def test_a_deep_or_flooding_answer_is_an_llm_json_error_never_a_recursion_error(answer: str) -> None:
    with pytest.raises(LLMJSONError, match="over the limit"):
        parse_string_list(answer, 3)
    with pytest.raises(LLMJSONError, match="over the limit"):
        parse_decisions(answer)


def test_a_deep_fact_list_falls_back_to_pattern_rules_and_a_deep_reconciliation_adds_the_facts(
    chat_engine: MemoryEngine, scripted_llm: ScriptedLLM,
) -> None:
    """Through the real chat turn: extraction answered 5,000 levels deep -> the pattern rules store
    the fact and a note says so; reconciliation answered so -> the facts are added, as for any
    unusable answer. The turn is stored either way."""
    scripted_llm.script(FACTS, DEEP, times=1)
    scripted_llm.script(SUMMARY, "The user lives in Berlin.")
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    assert chat_engine.chat("deep", "I live in Berlin.").ok
    assert chat_engine.wait_idle(30)
    assert [(m.text, m.source) for m in chat_engine.list_memories(role="memory")] == [
        ("The user lives in Berlin", "pattern")]
    assert any("pattern rules" in note for note in outcomes[0].notes), outcomes[0].notes

    scripted_llm.script(FACTS, '["The user has a cat named Tom"]')
    scripted_llm.script(RECONCILE, DEEP)
    assert chat_engine.chat("deep", "My cat is Tom.").ok
    assert chat_engine.wait_idle(30)
    assert "The user has a cat named Tom" in {m.text for m in chat_engine.list_memories(role="memory")}
    assert any("reconciliation failed" in note for note in outcomes[1].notes), outcomes[1].notes
