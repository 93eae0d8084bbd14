"""How a chat call can fail, apart from the client that makes it: the HTTP servers and the CLI
name LLMError without loading the `openai` package (~21 MB a `serve` that is never asked to chat
does not need; issue #25)."""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal[
    "unreachable",
    "auth",
    "model_missing",
    "timeout",
    "rate_limited",
    "server_error",
    "bad_response",
    "cut_stream",
]


class LLMError(Exception):
    """A chat call failed; ``kind`` says how, ``message`` says what to do about it."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message

    def __repr__(self) -> str:
        return f"LLMError(kind={self.kind!r}, message={self.message!r})"
