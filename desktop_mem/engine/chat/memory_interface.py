"""The 004 ``read / store / appended`` message-memory interface and its simple implementation.

This is the shape of in-session memory: a run starts from some initial messages, stores every
new user/assistant/tool message, reads what the model should see, and asks for the messages
appended during this run. It is the interface the chat path uses: the engine's strategies
(``context.py``: none, trimming, sliding_window, summarizing, compacting) are its other
implementations, through ``StrategyMemory`` (``context.open_memory``: 004's sliding-window and
summarizing memories are the ``sliding_window`` and ``summarizing`` strategies, turn-aware), and
a chat turn stores the user's message into one and builds the context from its ``read()``
(chat/service.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from desktop_mem.engine.models import ChatMessage

Message = ChatMessage


class MessageMemory(Protocol):
    """The 004 ``Memory`` interface (renamed so it does not clash with the engine's ``Memory`` model)."""

    def read(self) -> list[Message]:
        """The messages to give the model (all of them, or a reduced view)."""
        ...

    def store(self, message: Message) -> None:
        """Keep a new user, assistant or tool message."""
        ...

    def appended(self) -> list[Message]:
        """Only the messages stored after construction (new in this run)."""
        ...


class SimpleMemory:
    """004 ``SimpleMemory``: every message in a list; ``read`` returns initial + appended."""

    def __init__(self, initial: Iterable[Message] | None = None) -> None:
        """Start from a copy of ``initial`` (prior conversation), remembering how many there were."""
        # Copies, so a caller mutating its own list or dicts cannot rewrite stored history.
        self._messages: list[Message] = [m.copy() for m in initial or ()]
        self._initial_count = len(self._messages)

    def read(self) -> list[Message]:
        """All messages, initial and appended."""
        return list(self._messages)

    def store(self, message: Message) -> None:
        """Append ``message``."""
        self._messages.append(message.copy())

    def appended(self) -> list[Message]:
        """Messages stored since construction."""
        return self._messages[self._initial_count :]
