"""Token counting for context budgets: a cheap chars/4 estimate or a real tokenizer.json count."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from tokenizers import Tokenizer

# Role, separators and end-of-message tokens that chat templates add around every message.
MESSAGE_OVERHEAD = 4


class TokenCounter(Protocol):
    """Counts the tokens of a text; ``name`` says how (shown next to the numbers in the UI)."""

    @property
    def name(self) -> str:
        """Short label of the counting method."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


class EstimateCounter:
    """The 003 estimate: one token per four characters, rounded up; needs no model files."""

    @property
    def name(self) -> str:
        """Label shown next to estimated numbers."""
        return "estimate (chars/4)"

    def count(self, text: str) -> int:
        """Characters divided by four, rounded up (an empty text is 0 tokens)."""
        return math.ceil(len(text) / 4)


class TokenizerCounter:
    """Exact counts from a Hugging Face ``tokenizer.json`` (e.g. the user's chat model's tokenizer)."""

    def __init__(self, tokenizer_json: Path) -> None:
        """Load ``tokenizer_json``; raise ``ValueError`` saying which file and what to do if it fails."""
        if not tokenizer_json.is_file():
            raise ValueError(
                f"Tokenizer file not found: {tokenizer_json}. Point the tokenizer setting at the "
                "tokenizer.json of your model, or clear it to use the chars/4 estimate."
            )
        try:
            tokenizer = Tokenizer.from_file(str(tokenizer_json))
        except Exception as exc:  # tokenizers raises a bare Exception for any malformed file
            raise ValueError(
                f"Cannot read tokenizer file {tokenizer_json}: {exc}. It must be a Hugging Face "
                "tokenizer.json; clear the setting to use the chars/4 estimate."
            ) from exc
        # Shipped tokenizer.json files often pad/truncate to a fixed length (MiniLM: 128),
        # which would make every count 128; counting needs the raw length.
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self._path = tokenizer_json

    @property
    def name(self) -> str:
        """Label naming the tokenizer file's folder (usually the model name)."""
        return f"tokenizer ({self._path.parent.name}/{self._path.name})"

    def count(self, text: str) -> int:
        """Tokens the model would see for ``text`` (without BOS/CLS-style special tokens)."""
        if not text:
            return 0
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a chat message: string content, or the text parts of a list content."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _tool_calls_text(message: Mapping[str, Any]) -> str:
    """Function names and argument strings of an assistant message's tool calls."""
    calls = message.get("tool_calls") or []
    pieces: list[str] = []
    for call in calls:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        pieces.append(str(function.get("name", "")))
        arguments = function.get("arguments", "")
        pieces.append(arguments if isinstance(arguments, str) else json.dumps(arguments))
    return " ".join(pieces)


def count_messages(counter: TokenCounter, messages: Iterable[Mapping[str, Any]]) -> int:
    """Tokens of a message list: content, tool calls and names plus a fixed per-message overhead."""
    total = 0
    for message in messages:
        total += MESSAGE_OVERHEAD + counter.count(message_text(message))
        if message.get("tool_calls"):
            total += counter.count(_tool_calls_text(message))
        name = message.get("name")
        if isinstance(name, str) and name:
            total += counter.count(name)
    return total


def make_counter(tokenizer_path: Path | None) -> TokenCounter:
    """A real tokenizer counter when a path is configured, else the chars/4 estimate."""
    if tokenizer_path is None:
        return EstimateCounter()
    return TokenizerCounter(tokenizer_path)
