"""Tell the engine's LLM calls apart in scripted-server rules (by their system prompts)."""

from __future__ import annotations

from typing import Any

from desktop_mem.engine.chat import prompts

FACTS = prompts.FACT_SYSTEM_PROMPT.splitlines()[0].rstrip(".")
RECONCILE = prompts.UPDATE_MEMORY_PROMPT.splitlines()[0].rstrip(".")
SUMMARY = prompts.SUMMARY_PROMPT.splitlines()[0].rstrip(".")
TRANSLATE = prompts.TRANSLATE_PROMPT.splitlines()[0].rstrip(".")
# (the two one-letter checks share their first line: each is told apart by its first letter's)
TOLD_AS_TRUE = prompts.TOLD_AS_TRUE_PROMPT.splitlines()[1]
FORGET_ASKED = prompts.FORGET_ASKED_PROMPT.splitlines()[1]
PASSING = prompts.PASSING_PROMPT.splitlines()[1]


def is_chat(body: dict[str, Any]) -> bool:
    """True for the chat reply call (not extraction, reconciliation or summary)."""
    system = " ".join(str(m.get("content", "")) for m in body["messages"] if m["role"] == "system")
    return all(role not in system for role in (FACTS, RECONCILE, SUMMARY, TRANSLATE, TOLD_AS_TRUE,
                                                      FORGET_ASKED, PASSING))
