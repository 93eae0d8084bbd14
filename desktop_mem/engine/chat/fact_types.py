"""What the write path's steps share: a fact about the user, its limits, the chat model they ask.

Extraction (chat/understanding.py, chat/extraction.py), the pattern rules, reconciliation and the
summary all pass `ExtractedFact`s and texts between them, compare texts the same way (`fold`) and
ask the model through the same narrow `ChatModel`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from desktop_mem.engine.chat import scopes
from desktop_mem.engine.models import Message

FactKind = Literal["fact", "preference", "context"]
FactSource = Literal["llm", "pattern"]

MAX_FACTS = 5  # a compound message ("I live in Ghent and I work as a nurse ...") holds several
MAX_FACT_CHARS = 500
# Small local models have small context windows; longer inputs are cut, not sent whole.
MAX_MESSAGE_CHARS = 4000


class ChatModel(Protocol):
    """What the write path's steps need from an LLM client (``LLMClient`` fits)."""

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
        json_schema: Mapping[str, Any] | None = None,
    ) -> str: ...

    def odds(self, messages: Sequence[Message], answers: Sequence[str]) -> dict[str, float] | None: ...


@dataclass(frozen=True)
class ExtractedFact:
    """One fact about the user, in the third person, with how it was found."""

    text: str
    kind: FactKind
    source: FactSource
    scope: scopes.Scope = "user"  # whose fact: the user's (every chat) or this conversation's
    replaces: str = ""  # what it corrects or updates, in the user's words ("" for news)


_PREFERENCE = re.compile(
    r"\b(likes?|loves?|enjoys?|prefers?|hates?|dislikes?|favou?rite|fan of|can't stand)\b", re.I
)
_CONTEXT = re.compile(
    r"\b(currently|right now|at the moment|today|tonight|tomorrow|this (week|weekend|month))\b", re.I
)


def kind_of(text: str) -> FactKind:
    """Classify a third-person fact as preference, short-lived context or plain fact."""
    if _PREFERENCE.search(text):
        return "preference"
    if _CONTEXT.search(text):
        return "context"
    return "fact"


# -- comparing facts as text ---------------------------------------------------------------------


def clean(text: str) -> str:
    """``text`` on one line, its runs of white space one space."""
    return " ".join(text.split())


def fold(text: str) -> str:
    """``text`` as facts are compared: cleaned, without a final full stop, case folded."""
    return clean(text).rstrip(".").casefold()


def unique_clean(items: Sequence[str]) -> list[str]:
    """``items`` cleaned, without empty, over-long (MAX_FACT_CHARS) and repeated ones, in order."""
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        cleaned = clean(item)
        if cleaned and len(cleaned) <= MAX_FACT_CHARS and fold(cleaned) not in seen:
            seen.add(fold(cleaned))
            out.append(cleaned)
    return out
