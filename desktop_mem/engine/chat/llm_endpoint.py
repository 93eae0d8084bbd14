"""Where and how to reach an OpenAI-compatible chat server: a value, apart from the client that
talks to it (chat/llm_client.py loads openai; a settings dialog names an endpoint without it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, repr=False)
class LLMEndpoint:
    """Where and how to reach an OpenAI-compatible chat server."""

    base_url: str
    api_key: str
    model: str
    timeout: float = 60.0

    def __repr__(self) -> str:
        # The key must never reach logs, tracebacks or the UI.
        key = "***" if self.api_key else "''"
        return (
            f"LLMEndpoint(base_url={self.base_url!r}, api_key={key}, "
            f"model={self.model!r}, timeout={self.timeout!r})"
        )
