"""A chat turn's data on both sides of the GUI thread: the stored turns a conversation opens on,
and the reply being streamed (its locked token buffer, cancel switch and widget)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from desktop_mem.engine.api import MemoryEngine, TurnMemory, turn_records
from desktop_mem.engine.models import Role
from desktop_mem.ui.chat.chat_message import ChatMessage


@dataclass(frozen=True)
class StoredTurn:
    """One stored turn as the pane shows it."""

    role: str
    text: str
    interrupted: bool
    record: TurnMemory | None = None  # a reply's Memory used / updated, kept with its turn


def load_history(engine: MemoryEngine, conversation_id: str) -> list[StoredTurn]:
    """Run in a worker: the stored turns, oldest first, each reply with its memory record."""
    turns = engine.transcript(conversation_id)
    records = turn_records(turns)
    shown: list[StoredTurn] = []
    user_id: str | None = None
    for m in turns:
        user_id = m.id if m.role == Role.USER else user_id
        record = records.get(user_id) if m.role == Role.ASSISTANT and user_id else None
        shown.append(StoredTurn(m.role, m.text, bool(m.extra.get("interrupted")), record))
    return shown


def unanswered(turns: list[StoredTurn]) -> StoredTurn | None:
    """The last user message, when nothing but interrupted replies came after it: the engine
    reuses its stored turn when it is sent again (retry), so it must be sent as a retry."""
    last = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].role == Role.USER), None)
    if last is None or any(not t.interrupted for t in turns[last + 1:]):
        return None
    return turns[last]


class TokenBuffer:
    """Tokens from the chat thread, drained by the GUI thread's repaint timer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self.count = 0  # tokens received in this reply (how a user sees streaming happen)

    def push(self, token: str) -> None:
        """Called on the chat thread for every streamed token."""
        with self._lock:
            self._parts.append(token)
            self.count += 1

    def drain(self) -> str:
        """Everything received since the last drain."""
        with self._lock:
            text = "".join(self._parts)
            self._parts.clear()
        return text


@dataclass
class StreamedTurn:
    """The reply being streamed: its widget, buffer and cancel switch."""

    conversation_id: str
    user_text: str
    message: ChatMessage | None
    buffer: TokenBuffer = field(default_factory=TokenBuffer)
    cancel: threading.Event = field(default_factory=threading.Event)
    released: bool = False  # stopped by the user: the pane no longer waits for it
    answered: bool = False  # its first words arrived
    started: float = field(default_factory=time.monotonic)
    waited: int = -1  # the whole seconds its waiting text last said
