"""What a turn tells the model about time (issue #35): recalled turns say who said them and on
which day, and the system prompt says what day it is today. Real store and index, scripted LLM."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from desktop_mem.engine.chat import prompts
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.retrieval import said_on
from desktop_mem.engine.models import utc_now
from tests.llm_roles import is_chat


def test_a_recalled_turn_says_when_it_was_said_and_the_prompt_says_today(
        chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    chat_engine.add("I went to the LGBTQ support group yesterday.", conversation_id="old", role="user",
                    created_at=said, source="import")
    chat_engine.add("The user likes tea", conversation_id="old")
    scripted_llm.script(is_chat, "On 7 May 2023.")
    reply = chat_engine.chat("old", "When did I go to the support group?", history=[], temporary=True)
    system = [r.body for r in scripted_llm.chat_requests if is_chat(r.body)][-1]["messages"][0]["content"]
    assert said_on(said) == datetime(2023, 5, 8, 13, 56, tzinfo=UTC).astimezone().strftime("%-d %B %Y")
    assert (f"[user; said {said_on(said)}] I went to the LGBTQ support group yesterday." in system)
    assert "[memory] The user likes tea" in system, "a fact's labels say when it was true, not a said-date"
    now = utc_now().astimezone()
    assert f"Today is {now:%A} {said_on(now)}." in system
    assert system.index("Today is") < system.index(prompts.MEMORY_DATA_PREAMBLE.splitlines()[0])
    assert reply.used.system_prompt == system
