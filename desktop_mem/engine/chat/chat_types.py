"""Values of a chat turn: what memory was used, the reply, and what the write path changed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, NotRequired, TypedDict

from desktop_mem.engine.index.retrieval import SearchResult
from desktop_mem.engine.models import GLOBAL_CONVERSATION, Memory, StoredMessage
from desktop_mem.engine.store.transaction import clip

if TYPE_CHECKING:
    from desktop_mem.engine.chat.understanding import Understood

FROM_CONVERSATION: Final = "from_conversation"  # front matter of a user fact: the chat it was learned in


def scope_of(memory: Memory, conversation_id: str) -> str:
    """`user` for the user's own facts (the `global` scope), `conversation` for this chat's
    memories, `other` for another conversation's."""
    if memory.conversation_id == GLOBAL_CONVERSATION:
        return "user"
    return "conversation" if memory.conversation_id == conversation_id else "other"


def learned_in(memory: Memory) -> str | None:
    """The conversation a user fact was learned in (front matter `from_conversation`), if known."""
    value = memory.extra.get(FROM_CONVERSATION)
    return value if isinstance(value, str) and value else None


def stored_messages(turns: Iterable[Memory]) -> list[StoredMessage]:
    """Stored turns as chat messages (as the model is shown them), with their ids and times."""
    return [{"role": str(m.role), "content": m.text, "id": m.id, "created_at": m.created_at.isoformat()}
            for m in turns]


class UsedItem(TypedDict):
    """One memory put in front of the model, as a reply's `memory_used` records it."""

    id: str
    scope: str  # "user", "conversation" or "other" (scope_of)
    conversation_id: str
    role: str
    text: str
    score: float
    from_conversation: NotRequired[str]


class UsedRecord(TypedDict):
    """A reply's `memory_used` front matter (chat/turn_memory.py): what its context held."""

    version: int
    model: str
    strategy: str
    summary: str | None
    summary_stale: bool
    memories: list[UsedItem]
    other_conversations: list[str]


class ChangedItem(TypedDict):
    """One fact a turn added or deleted (`id`, `text`) or replaced (`old_*` / `new_*`)."""

    scope: str
    id: NotRequired[str]
    text: NotRequired[str]
    old_id: NotRequired[str]
    new_id: NotRequired[str]
    old_text: NotRequired[str]
    new_text: NotRequired[str]


class UpdatedRecord(TypedDict):
    """A turn's `memory_updated` front matter (chat/turn_memory.py): what its write path changed."""

    version: int
    added: list[ChangedItem]
    updated: list[ChangedItem]
    deleted: list[ChangedItem]
    summary_changed: bool
    notes: list[str]
    waiting: NotRequired[list[str]]  # what waits for review, described


@dataclass(frozen=True)
class TurnRecord:
    """The turns persisted on the reply path, handed to the write path.

    `notes` say what the reply path changed in them (redacted, cut); `written` are other files it
    wrote unpublished (the summarizing strategy's summary), committed with the turn.
    """

    conversation_id: str
    user: Memory
    assistant: Memory | None
    notes: tuple[str, ...] = ()
    written: tuple[Memory, ...] = ()
    # memory_used of the reply (turn_memory.py), for the user turn when no reply was stored
    used: UsedRecord | None = None
    # The facts a "forget ..." message names, by id, as the reply path found them (and told the
    # model whether any): the write path deletes these, without matching them again.
    forget: tuple[str, ...] = ()
    # What the message asks of memory, read once on the reply path (chat/understanding.py); None
    # when it was not read (the write path then reads it itself).
    understood: Understood | None = None
    # The facts a forget might mean when none is clearly named (asked about, never deleted).
    unclear: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryUsed:
    """What the read path put in front of the model for one turn."""

    conversation_id: str
    summary: Memory | None
    memories: tuple[SearchResult, ...]
    cross_session: tuple[tuple[str, str], ...]
    strategy: str
    tokens_before: int
    tokens_after: int
    system_prompt: str = field(repr=False, default="")
    # Recalled messages left out because the model reads them in the transcript itself: why the
    # injected memories' MMR ranks can skip numbers.
    in_transcript: int = 0
    # The summary was older than the facts it speaks for: `summary` holds the current facts sent
    # instead of its stale text (chat/summary_state.py).
    summary_stale: bool = False
    # Transcript messages sent with what was forgotten or replaced masked (chat/forgetting.py).
    masked: int = 0
    # The facts this message asks to forget, by id (found by search, chat/named_facts.py; empty
    # when it asks for nothing or nothing matched).
    forget: tuple[str, ...] = ()
    understood: Understood | None = field(default=None, repr=False)
    unclear: tuple[str, ...] = ()  # the facts a forget might mean, when none is clearly named

    def origin(self, result: SearchResult) -> str:
        """Where an injected memory came from: "user" (the user's own facts, read in every
        conversation), "conversation" (this one) or "other" (another conversation's)."""
        return scope_of(result.memory, self.conversation_id)

    @property
    def tokens_freed(self) -> int:
        """Context freed by the in-session strategy this turn."""
        return max(self.tokens_before - self.tokens_after, 0)


@dataclass(frozen=True)
class WriteOutcome:
    """What the background write path changed after a turn ("Memory updated")."""

    conversation_id: str
    turns: tuple[Memory, ...] = ()
    added: tuple[Memory, ...] = ()
    updated: tuple[tuple[Memory, Memory], ...] = ()  # (tombstone of the old, the new memory)
    deleted: tuple[Memory, ...] = ()
    evicted: tuple[Memory, ...] = ()
    expired: tuple[Memory, ...] = ()
    summary_changed: bool = False
    summary: Memory | None = None
    commit: str | None = None
    notes: tuple[str, ...] = ()
    turn_id: str | None = None  # the user turn's id: ties this outcome to its ChatReply
    waiting: tuple[str, ...] = ()  # what waits for the user's review, described ("Add: ...")

    @property
    def changed_memory(self) -> bool:
        """True when facts or the summary changed (not just turns recorded)."""
        return bool(self.added or self.updated or self.deleted or self.evicted or self.expired
                    or self.summary_changed)

    def describe(self) -> str:
        """One line for the chat pane, e.g. 'Memory updated: added 1 · updated "A" → "B"'."""
        parts: list[str] = []
        if self.added:
            parts.append("added " + "; ".join(f"“{clip(m.text, 48)}”" for m in self.added))
        for old, new in self.updated:
            parts.append(f"updated “{clip(old.text, 48)}” → “{clip(new.text, 48)}”")
        if self.deleted:
            parts.append("deleted " + "; ".join(f"“{clip(m.text, 48)}”" for m in self.deleted))
        if self.evicted:
            parts.append(f"evicted {len(self.evicted)} oldest")
        if self.expired:
            parts.append(f"dropped {len(self.expired)} expired")
        if self.summary_changed:
            parts.append("summary updated")
        return updated_line(parts, self.waiting)


def updated_line(parts: Sequence[str], waiting: Sequence[str]) -> str:
    """'Memory updated: …' (or 'Memory unchanged'), then what waits for review, each named."""
    line = "Memory updated: " + " · ".join(parts) if parts else "Memory unchanged"
    if waiting:
        line += " · waits for your review (Review pane): " + "; ".join(clip(w, 90) for w in waiting)
    return line


@dataclass(frozen=True)
class ChatReply:
    """The assistant's reply to one user message (the write path may still be running)."""

    conversation_id: str
    text: str
    used: MemoryUsed
    error: str | None = None
    error_kind: str | None = None
    cancelled: bool = False
    turn_id: str | None = None  # the stored user turn's id; its WriteOutcome carries the same
    temporary: bool = False  # a temporary turn: nothing of it was stored (ChatService.chat)

    @property
    def ok(self) -> bool:
        """True when a complete reply arrived."""
        return self.error is None and not self.cancelled
