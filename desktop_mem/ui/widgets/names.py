"""What the window calls things the engine names by id."""

from __future__ import annotations

from collections.abc import Mapping

from desktop_mem.engine.models import GLOBAL_CONVERSATION

YOUR_FACTS = "Your facts"  # the global scope, named once: the user's own facts, read everywhere


def scope_title(conversation_id: str | None, titles: Mapping[str, str]) -> str:
    """A conversation's title, "Your facts" for the user's own, else the id ("?" for none)."""
    if conversation_id == GLOBAL_CONVERSATION:
        return YOUR_FACTS
    return titles.get(conversation_id or "", conversation_id or "?")
