"""What memory one reply used and what its turn changed, kept WITH the turn (issue 21 item 6).

The record lives in the front matter of the turn that holds it: the assistant reply (or the user
turn when no reply was stored), under two keys, so it survives restarts, is committed with the
turn and is readable in any editor:

    memory_used:                       # written with the reply
      version: 1
      model: local                     # the chat model the context was sent to
      strategy: trimming
      summary: summary-trip            # the summary's id, or null
      summary_stale: false             # true: the summary was out of date and not injected as is
      memories:                        # in the order they were injected
      - {id: ..., scope: user, conversation_id: global, from_conversation: trip,
         role: memory, text: "The user works as a nurse", score: 0.71}
      other_conversations: [trip]      # summaries of other chats put in the system prompt
    memory_updated:                    # written by the write path, in the turn's own commit
      version: 1
      added: [{id: ..., scope: user, text: ...}]
      updated: [{old_id: ..., new_id: ..., old_text: ..., new_text: ...}]
      deleted: [{id: ..., text: ...}]
      summary_changed: true
      notes: [...]
      waiting: ["Add: The user lives in Utrecht"]   # held for review (memory.review)

`scope` says whose memory it is: `user` (the user's own facts, read in every conversation),
`conversation` (this conversation's), `other` (another conversation's turn or fact). The shape is
versioned; readers accept files written by hand or by older versions and never raise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# scope_of, learned_in and FROM_CONVERSATION live with the values they describe (chat_types,
# which so needs nothing from here); the record's readers find them here too.
from desktop_mem.engine.chat.chat_types import (
    FROM_CONVERSATION,
    MemoryUsed,
    UpdatedRecord,
    UsedItem,
    UsedRecord,
    WriteOutcome,
    learned_in,
    scope_of,
)
from desktop_mem.engine.models import Memory, Role
from desktop_mem.engine.store.ports import MemoryView

VERSION = 1
USED_KEY = "memory_used"
UPDATED_KEY = "memory_updated"
TEXT_CHARS = 240  # enough to read what was used; the memory itself has the rest
MAX_ITEMS = 50


@dataclass(frozen=True)
class UsedMemory:
    """One memory put in front of the model, and where it came from."""

    id: str
    scope: str
    conversation_id: str
    role: str
    text: str
    score: float | None = None
    from_conversation: str | None = None


@dataclass(frozen=True)
class ChangedMemory:
    """One fact the turn added, deleted, or (with `old_*`) replaced."""

    id: str
    text: str
    scope: str = "conversation"
    old_id: str | None = None
    old_text: str | None = None


@dataclass(frozen=True)
class TurnMemory:
    """A reply's Memory used and Memory updated, as stored with its turn."""

    turn_id: str  # the user turn's id (ChatReply.turn_id / WriteOutcome.turn_id)
    holder_id: str  # the turn file that holds the record (the reply, else the user turn)
    model: str = ""
    strategy: str = ""
    summary_id: str | None = None
    summary_stale: bool = False
    used: tuple[UsedMemory, ...] = ()
    other_conversations: tuple[str, ...] = ()
    updated: bool = False  # False: the write path has not recorded its outcome (yet)
    added: tuple[ChangedMemory, ...] = ()
    replaced: tuple[ChangedMemory, ...] = ()
    deleted: tuple[ChangedMemory, ...] = ()
    summary_changed: bool = False
    notes: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()  # what the turn left waiting for review, described


# -- writing ----------------------------------------------------------------------------------


def used_front_matter(used: MemoryUsed, model: str) -> UsedRecord:
    """The `memory_used` value for a reply (see the module docstring)."""
    conv = used.conversation_id
    items: list[UsedItem] = []
    for r in used.memories[:MAX_ITEMS]:
        m = r.memory
        item: UsedItem = {
            "id": m.id, "scope": scope_of(m, conv), "conversation_id": m.conversation_id, "role": str(m.role),
            "text": _clip(m.text), "score": round(float(r.scores.final), 4)}
        if (origin := learned_in(m)) is not None:
            item[FROM_CONVERSATION] = origin
        items.append(item)
    return {
        "version": VERSION, "model": model, "strategy": used.strategy,
        "summary": used.summary.id if used.summary is not None else None,
        "summary_stale": bool(getattr(used, "summary_stale", False)),
        "memories": items,
        "other_conversations": [c for c, _text in used.cross_session][:MAX_ITEMS],
    }


def updated_front_matter(outcome: WriteOutcome) -> UpdatedRecord:
    """The `memory_updated` value for a turn's write-path outcome."""
    conv = outcome.conversation_id
    return {
        "version": VERSION,
        "added": [{"id": m.id, "scope": scope_of(m, conv), "text": _clip(m.text)} for m in outcome.added],
        "updated": [{"old_id": old.id, "new_id": new.id, "scope": scope_of(new, conv),
                     "old_text": _clip(old.text), "new_text": _clip(new.text)}
                    for old, new in outcome.updated],
        "deleted": [{"id": m.id, "scope": scope_of(m, conv), "text": _clip(m.text)} for m in outcome.deleted],
        "summary_changed": outcome.summary_changed,
        "notes": [_clip(n, 400) for n in outcome.notes],
        "waiting": [_clip(w, 400) for w in outcome.waiting],
    }


def holder(user: Memory, assistant: Memory | None) -> Memory:
    """The turn file a record is kept in."""
    return assistant if assistant is not None else user


# -- reading (hostile input: hand-edited files, older versions) --------------------------------


def read(user_turn_id: str, holder_memory: Memory) -> TurnMemory | None:
    """The record held by `holder_memory`, or None when it holds none."""
    extra = holder_memory.extra
    used, updated = extra.get(USED_KEY), extra.get(UPDATED_KEY)
    if not isinstance(used, Mapping) and not isinstance(updated, Mapping):
        return None
    u: Mapping[str, Any] = used if isinstance(used, Mapping) else {}
    w: Mapping[str, Any] = updated if isinstance(updated, Mapping) else {}
    return TurnMemory(
        turn_id=user_turn_id, holder_id=holder_memory.id, model=_str(u.get("model")),
        strategy=_str(u.get("strategy")), summary_id=_str(u.get("summary")) or None,
        summary_stale=u.get("summary_stale") is True,
        used=tuple(_used(i) for i in _maps(u.get("memories"))),
        other_conversations=tuple(_str(c) for c in _list(u.get("other_conversations")) if _str(c)),
        updated=bool(w), added=tuple(_changed(i) for i in _maps(w.get("added"))),
        replaced=tuple(_changed(i, "new_") for i in _maps(w.get("updated"))),
        deleted=tuple(_changed(i) for i in _maps(w.get("deleted"))),
        summary_changed=w.get("summary_changed") is True,
        notes=tuple(_str(n) for n in _list(w.get("notes")) if _str(n)),
        waiting=tuple(_str(n) for n in _list(w.get("waiting")) if _str(n)),
    )


def record_for(reads: MemoryView, turn_id: str) -> TurnMemory | None:
    """What the reply to the user turn `turn_id` used and changed, as stored with it (None: no
    record yet); NotFoundError for an unknown turn."""
    return records(reads.transcript(reads.get(turn_id).conversation_id)).get(turn_id)


def records(transcript: Iterable[Memory]) -> dict[str, TurnMemory]:
    """Every record of a conversation's turns (oldest first), by user turn id."""
    found: dict[str, TurnMemory] = {}
    user: Memory | None = None
    for turn in transcript:
        if turn.role == Role.USER:
            user = turn
            record = read(turn.id, turn)
        elif user is not None:
            record = read(user.id, turn)
        else:
            continue
        if record is not None:
            found[record.turn_id] = record
    return found


def _used(item: Mapping[str, Any]) -> UsedMemory:
    score = item.get("score")
    return UsedMemory(
        id=_str(item.get("id")), scope=_str(item.get("scope")) or "other",
        conversation_id=_str(item.get("conversation_id")), role=_str(item.get("role")),
        text=_str(item.get("text")),
        score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
        from_conversation=_str(item.get(FROM_CONVERSATION)) or None,
    )


def _changed(item: Mapping[str, Any], prefix: str = "") -> ChangedMemory:
    return ChangedMemory(
        id=_str(item.get(f"{prefix}id")), text=_str(item.get(f"{prefix}text")),
        scope=_str(item.get("scope")) or "conversation",
        old_id=_str(item.get("old_id")) or None, old_text=_str(item.get("old_text")) or None,
    )


def _maps(value: object) -> list[Mapping[str, Any]]:
    return [v for v in _list(value) if isinstance(v, Mapping)]


def _list(value: object) -> Sequence[Any]:
    return value[:MAX_ITEMS] if isinstance(value, list) else []


def _str(value: object) -> str:
    return value[:2000] if isinstance(value, str) else ""


def _clip(text: str, n: int = TEXT_CHARS) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1] + "…"
