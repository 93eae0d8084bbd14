"""What each step of a chat turn hands the next (chat/service.py runs them, top to bottom):

    TurnAsk --accept--> Accepted --prepare--> Prepared --stream--> Streamed --record--> TurnRecord
    (checked)  (the user turn stored)  (read path, context)  (the reply)   (the reply stored) -> write path

Each value is frozen; a step reads the values before it and returns its own. The pure questions a
step asks of the turn's snapshot live here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from desktop_mem.engine.chat import forgetting, summary_state
from desktop_mem.engine.chat.chat_types import ChatReply, MemoryUsed
from desktop_mem.engine.chat.context import INCOMPLETE, MESSAGE_ID, ContextResult
from desktop_mem.engine.chat.currency import Superseded, superseded_by_turn
from desktop_mem.engine.chat.memory_interface import MessageMemory
from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.index.retrieval import RetrievalOverrides
from desktop_mem.engine.models import GLOBAL_CONVERSATION, ChatMessage, Memory, Role, StrategyName
from desktop_mem.engine.store.secrets_scan import Finding, describe

CLIENT_TURN_ID = "client_turn_id"  # front matter of a user turn: the sender's id for the message


@dataclass(frozen=True)
class TurnAsk:
    """What the caller asks, checked before anything is written; the strategy read once."""

    conversation_id: str
    message: str  # as the user wrote it (what the model reads)
    strategy: StrategyName
    history: tuple[ChatMessage, ...] | None = None  # an API client's messages instead of the transcript
    retrieval: RetrievalOverrides | None = None


@dataclass(frozen=True)
class Accepted:
    """Step 1: the message's user turn in the store (redacted once), or found there again."""

    snapshot: ConversationSnapshot  # the turn's one read of the store, its user turn included
    user: Memory
    skipped: frozenset[str]  # the message's own stored turns: neither recalled nor replayed
    answered: Memory | None = None  # its complete reply, when this very message was answered already
    notes: tuple[str, ...] = ()  # what storing it changed (a secret redacted)


@dataclass(frozen=True)
class ConversationRead:
    """What the snapshot says of the conversation for this turn."""

    own: tuple[Memory, ...]  # its stored turns, oldest first, the message's own left out
    prompt_turns: tuple[Memory, ...]  # the same, as a prompt may show them
    live: tuple[Memory, ...]  # the live facts it reads: its own and the user's
    summary: Memory | None  # as injected: when stale, the current facts instead (or None)
    summary_stale: bool
    gone: Mapping[str, list[Superseded]]  # what replaced or deleted facts said, by the turn it came from
    masked: Mapping[str, str]  # a turn's text with that masked, by turn id


@dataclass(frozen=True)
class Prepared:
    """Step 2: what memory the reply uses, what is sent, and the turn's in-session memory (the
    004 interface: this message stored in it; step 4 stores the reply and records what it
    ``appended()``)."""

    used: MemoryUsed
    context: ContextResult
    memory: MessageMemory


@dataclass(frozen=True)
class Streamed:
    """Step 3: the reply as it streamed, and how it ended."""

    conversation_id: str
    text: str
    error: str | None = None
    kind: str | None = None
    cancelled: bool = False

    def reply(self, prepared: Prepared, turn_id: str | None, *, temporary: bool = False) -> ChatReply:
        return ChatReply(self.conversation_id, self.text, prepared.used, self.error, self.kind,
                         self.cancelled, turn_id=turn_id, temporary=temporary)


def read_conversation(
    snap: ConversationSnapshot, conv: str, exclude: frozenset[str], project: str | None = None,
) -> ConversationRead:
    """The conversation as this turn reads it (with the facts of the ``project`` it is bound to:
    they are its own too). Forgetting is immediate, and a summary older than the facts it speaks
    for is not injected as it is (chat/forgetting.py, chat/summary_state.py)."""
    summary = snap.summary(conv)  # shared: a held-back one comes redacted
    own = [m for m in snap.transcript(conv) if m.id not in exclude]
    facts = [m for c in dict.fromkeys([conv, *([project] if project else []), GLOBAL_CONVERSATION])
             for m in snap.list_memories(conversation_id=c, role="memory", include_deleted=True)]
    live = [m for m in facts if not m.deleted]
    summary_stale = False
    if summary is not None:
        shown_summary = summary_state.view(summary, facts, conv)
        summary_stale = shown_summary.stale
        if summary_stale:
            summary = replace(summary, text=shown_summary.text) if shown_summary.text else None
    gone = superseded_by_turn(snap, [conv, GLOBAL_CONVERSATION])
    prompt_turns = [snap.for_prompt(m) for m in own]
    replies_to = replies_to_user(own)
    masked = forgetting.mask_transcript(prompt_turns, gone, replies_to, live) if gone else {}
    masked.update(forgetting.restored_asks(prompt_turns, live, replies_to))
    return ConversationRead(tuple(own), tuple(prompt_turns), tuple(live), summary, summary_stale, gone,
                            masked)


def past_messages(
    ask: TurnAsk, read: ConversationRead, session_notes: Mapping[str, str]
) -> list[ChatMessage]:
    """The conversation so far as the strategy gets it: the stored turns (what was forgotten
    masked, what is out of date noted), or an API client's messages."""
    if ask.history is not None:
        return [m.copy() for m in ask.history if m.get("role") != "system"]
    return [_as_message(replace(m, text=read.masked[m.id])) if m.id in read.masked
            else _as_message(m, session_notes.get(m.id)) for m in read.prompt_turns]


def resent_turn(
    turns: Sequence[Memory], text: str, client_turn_id: str | None
) -> tuple[list[Memory], Memory | None]:
    """A message sent again: (its stored user turn and the replies to it that did not complete,
    its complete reply or None); ([], None) for a new message.

    `turns`: the conversation's transcript; `text`: the message as it is stored (redacted). With
    `client_turn_id`, the user turn that carries it, wherever it is; without, the conversation's
    last user turn if it holds the message and no complete reply followed it.
    """
    users = [i for i, m in enumerate(turns) if m.role == Role.USER]
    if client_turn_id:
        at = next((i for i in users if turns[i].extra.get(CLIENT_TURN_ID) == client_turn_id), None)
    else:
        at = users[-1] if users and turns[users[-1]].text == text else None
    if at is None:
        return [], None
    end = next((i for i in users if i > at), len(turns))
    after = turns[at + 1:end]
    answered = next((m for m in after if not m.interrupted), None)
    if answered is not None and not client_turn_id:
        return [], None  # it was answered: the same words again are a new question
    return [turns[at], *(m for m in after if m.interrupted)], answered


def redacted_note(found: tuple[Finding, ...], role: str) -> str:
    """The note a turn stored with a likely secret redacted carries."""
    return f"A likely secret ({describe(found)}) was redacted from the stored {role} turn (security.secrets)."


def replies_to_user(turns: Sequence[Memory]) -> dict[str, str]:
    """Assistant turn id -> the user turn it answers."""
    replies: dict[str, str] = {}
    previous_user = ""
    for turn in turns:
        if turn.role == Role.USER:
            previous_user = turn.id
        else:
            replies[turn.id] = previous_user
    return replies


def _as_message(m: Memory, note: str | None = None) -> ChatMessage:
    """A stored turn as a chat message; ``note`` says what in it is out of date (not stored)."""
    text = f"{m.text}\n\n[Memory note: {note}]" if note else m.text
    message: ChatMessage = {"role": str(m.role), "content": text, MESSAGE_ID: m.id}
    if not m.complete:
        message[INCOMPLETE] = True  # never summarised; context_from drops the key before sending
    return message
