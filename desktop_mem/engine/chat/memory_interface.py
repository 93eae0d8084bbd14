"""The 004 ``read / store / appended`` message-memory interface and its three implementations.

This is the shape of in-session memory: a run starts from some initial messages, stores every
new user/assistant/tool message, reads what the model should see, and asks for the messages
appended during this run. It is the interface the chat path uses: the engine's strategies
(``context.py``: none, trimming, sliding_window, summarizing, compacting) implement it through
``StrategyMemory``, and a chat turn stores the user's message into one and builds the context
from its ``read()`` (chat/service.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from desktop_mem.engine.models import ChatMessage

Message = ChatMessage
MessageSummarizer = Callable[[list[Message]], str]
"""004 summarizer: the old messages -> a summary text."""


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


class SlidingWindowMemory(SimpleMemory):
    """004 ``SlidingWindowMemory``: ``read`` returns only the most recent ``window_size`` messages.

    Exactly the 004 slice: the window may start with a tool result. ``SlidingWindowStrategy`` in
    ``context.py`` is the turn-aware variant the app uses.
    """

    def __init__(self, initial: Iterable[Message] | None = None, window_size: int = 30) -> None:
        """Keep everything; show the last ``window_size`` (at least 1) messages."""
        if window_size < 1:
            raise ValueError(f"window_size must be at least 1, got {window_size}.")
        super().__init__(initial)
        self._window_size = window_size

    def read(self) -> list[Message]:
        """The newest ``window_size`` messages."""
        return self._messages[-self._window_size :]


class SummarizingMemory(SimpleMemory):
    """004 ``SummarizingMemory``: beyond ``max_messages``, older messages are read as one summary line."""

    def __init__(
        self,
        initial: Iterable[Message] | None = None,
        max_messages: int = 20,
        *,
        summarizer: MessageSummarizer,
    ) -> None:
        """Keep everything; ``read`` summarises all but the newest ``max_messages`` (at least 1)."""
        if max_messages < 1:
            raise ValueError(f"max_messages must be at least 1, got {max_messages}.")
        super().__init__(initial)
        self._max_messages = max_messages
        self._summarizer = summarizer
        # Messages are only ever appended, so a cutoff identifies its prefix; caching spares an
        # LLM call on every read within one step.
        self._cached: tuple[int, str] | None = None

    def read(self) -> list[Message]:
        """All messages if few enough, else a user message with the summary plus the recent ones."""
        if len(self._messages) <= self._max_messages:
            return list(self._messages)
        cutoff = len(self._messages) - self._max_messages
        if self._cached is None or self._cached[0] != cutoff:
            self._cached = (cutoff, self._summarizer(self._messages[:cutoff]))
        summary_line: Message = {
            "role": "user",
            "content": f"[Previous conversation summary: {self._cached[1]}]",
        }
        return [summary_line, *self._messages[cutoff:]]
