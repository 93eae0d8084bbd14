"""Questions about the past are answered from memory; present questions keep the current fact."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from desktop_mem.engine.chat.temporal import about_the_past
from desktop_mem.engine.facade import MemoryEngine
from tests.llm_roles import FACTS, SUMMARY, is_chat


@pytest.mark.parametrize("question", [
    "Which city did I live in before Leuven?",
    "Where did I use to work?",
    "What did I use to drink in the morning?",
    "When did I change jobs?",
    "Since when do I live in Leuven?",
    "What did I tell you in March?",
    "Where was I living in 2024?",
    "What was my previous job?",
])
def test_questions_about_the_past_are_told_apart(question: str) -> None:
    assert about_the_past(question)


@pytest.mark.parametrize("question", [
    "Where do I live?",
    "Where do I live? Ghent?",
    "What is my job?",
    "Recommend a restaurant near my home",
    "What's my name?",
])
def test_questions_about_the_present_are_not(question: str) -> None:
    assert not about_the_past(question)


def _prompt(scripted_llm: Any) -> str:
    body = [r.body for r in scripted_llm.chat_requests if is_chat(r.body) and r.body.get("stream")][-1]
    return str(body["messages"][0]["content"])


def _moved(engine: MemoryEngine) -> tuple[Any, Any]:
    ghent = engine.add("The user lives in Ghent", created_at=datetime(2025, 1, 10, tzinfo=UTC))
    return engine.replace(ghent.id, "The user lives in Leuven")


def test_a_past_question_brings_the_replaced_fact_with_when_each_was_true(
        chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    tomb, leuven = _moved(chat_engine)
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(SUMMARY, "The user asked where they lived before.")
    scripted_llm.script(is_chat, "You lived in Ghent.")
    reply = chat_engine.chat("talk", "Which city did I live in before Leuven?")
    assert chat_engine.wait_idle(30)
    assert "The user lives in Ghent" in [r.memory.text for r in reply.used.memories]
    prompt = _prompt(scripted_llm)
    moved_on = leuven.valid_from[:10]
    assert (f"[memory; no longer true: 2025-01-10 – {tomb.valid_to[:10]}; replaced by: The user lives in "
            "Leuven] The user lives in Ghent") in prompt
    assert f"[memory; current: since {moved_on}] The user lives in Leuven" in prompt
    assert prompt.index("The user lives in Leuven") < prompt.index("The user lives in Ghent")


def test_a_present_question_keeps_only_the_current_fact(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    _moved(chat_engine)
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(SUMMARY, "The user asked where they live.")
    scripted_llm.script(is_chat, "In Leuven.")
    reply = chat_engine.chat("talk", "Where do I live?")
    assert chat_engine.wait_idle(30)
    assert "The user lives in Ghent" not in [r.memory.text for r in reply.used.memories]
    prompt = _prompt(scripted_llm)
    assert "The user lives in Ghent" not in prompt and "The user lives in Leuven" in prompt


def test_a_fact_whose_end_the_user_set_is_not_passed_off_as_current(
        chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    job = chat_engine.add("The user works at Acme")
    chat_engine.edit(job.id, meta={"valid_from": "2019", "valid_to": "2024-06"})
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(SUMMARY, "The user asked about work.")
    scripted_llm.script(is_chat, "You worked at Acme until June 2024.")
    chat_engine.chat("talk", "Where do I work?")
    assert chat_engine.wait_idle(30)
    assert "[memory; no longer true: 2019 – 2024-06] The user works at Acme" in _prompt(scripted_llm)
