"""Fact extraction: the facts a user message states, for callers that want facts alone.

The model reads the message (chat/understanding.py, the one LLM call that reads a message for
memory); when no model answers, the pattern rules (chat/pattern_rules.py) do. An importer reading
old turns and the engine's `extract_facts` use this; the chat write path asks understanding
itself, which also reads what the user asks to forget. Nothing here touches the store.
"""

from __future__ import annotations

from dataclasses import dataclass

from desktop_mem.engine.chat.fact_types import ChatModel, ExtractedFact
from desktop_mem.engine.chat.understanding import understand


@dataclass(frozen=True)
class ExtractionResult:
    """Facts found in a user message; ``error`` is set when the LLM step failed."""

    facts: tuple[ExtractedFact, ...]
    error: str | None = None
    rejected: tuple[tuple[str, str], ...] = ()  # (fact, why) dropped by the grounding guards


def extract_facts(llm: ChatModel, user_message: str) -> ExtractionResult:
    """The facts a user message states (chat/understanding.py reads it; pattern rules if the LLM
    step fails). For callers that want facts alone: an importer reading old turns."""
    understood = understand(llm, user_message)
    return ExtractionResult(understood.facts, understood.error, understood.rejected)
