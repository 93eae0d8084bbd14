"""Current beats stale on the read path: what a replaced or deleted fact came from no longer
speaks for it.

Facts record the user turn(s) they were taken from (front matter ``from_turns``). When a fact is
replaced (tombstone with ``replaced_by``) or deleted, the turn it came from, and the reply to
that turn, still say the old thing ("Hi! I'm Mara, I live in Ghent"). A small model given that
turn next to "The user lives in Leuven" with nothing to tell them apart answers "Ghent". So such
turns are moved after everything else, the current fact is brought in when it was not found,
and the injected text says which is current and what was superseded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from desktop_mem.engine.index.retrieval import SearchResult
from desktop_mem.engine.models import TURN_ROLES, Memory, Role

FROM_TURNS = "from_turns"
MAX_CHAIN = 50


class FactReads(Protocol):
    """Where replaced facts are looked up (chat/snapshot.py's ConversationSnapshot)."""

    def list_memories(
        self, *, conversation_id: str | None = None, role: str | None = None, only_deleted: bool = False
    ) -> list[Memory]: ...

    def lookup(self, memory_id: str) -> Memory | None: ...


@dataclass(frozen=True)
class Superseded:
    """A fact that is no longer true, and the live fact that replaced it (None: deleted)."""

    old: str
    current: Memory | None


@dataclass(frozen=True)
class CurrentView:
    """Results with current facts first and superseded turns last, and a note per memory id."""

    results: list[SearchResult]
    notes: dict[str, str]
    brought_in: frozenset[str] = frozenset()  # current facts added because a stale turn was found


def from_turns(memory: Memory) -> list[str]:
    """The ids of the user turns a fact was taken from (its provenance)."""
    value = memory.extra.get(FROM_TURNS)
    return [str(v) for v in value] if isinstance(value, list) else []


def superseded_by_turn(engine: FactReads, conversations: Iterable[str]) -> dict[str, list[Superseded]]:
    """For each user turn that a replaced or deleted fact came from: what it said that is stale."""
    stale: dict[str, list[Superseded]] = {}
    for conv in dict.fromkeys(conversations):
        for tomb in engine.list_memories(conversation_id=conv, role="memory", only_deleted=True):
            turns = from_turns(tomb)
            if not turns:
                continue
            entry = Superseded(tomb.text, _live_end(engine, tomb))
            for turn_id in turns:
                stale.setdefault(turn_id, []).append(entry)
    return stale


def _live_end(engine: FactReads, memory: Memory) -> Memory | None:
    """The live memory at the end of a ``replaced_by`` chain, None if the chain ends deleted."""
    current: Memory | None = memory
    for _ in range(MAX_CHAIN):
        if current is None or current.replaced_by is None:
            break
        current = engine.lookup(current.replaced_by)
    return current if current is not None and not current.deleted else None


def prefer_current(
    results: Sequence[SearchResult],
    stale: dict[str, list[Superseded]],
    replies_to: dict[str, str],
) -> CurrentView:
    """Stale turns after everything else, each with a note; their current facts brought in.

    ``replies_to`` maps an assistant turn id to the user turn it answered: a reply to a stale
    message repeats it ("Glad you're in Ghent!").
    """
    fresh: list[SearchResult] = []
    old: list[SearchResult] = []
    notes: dict[str, str] = {}
    wanted: list[tuple[Memory, SearchResult]] = []
    for result in results:
        entries = _entries(result.memory, stale, replies_to)
        if not entries:
            fresh.append(result)
            continue
        old.append(result)
        notes[result.memory.id] = _stale_note(result.memory.role, entries)
        wanted += [(e.current, result) for e in entries if e.current is not None]
    shown = {r.memory.id for r in results}
    brought_in: set[str] = set()
    for current, because in wanted:
        if current.id not in shown:
            shown.add(current.id)
            brought_in.add(current.id)
            fresh.append(SearchResult(current, replace(because.scores, mmr_rank=None)))
    for entries in stale.values():
        for entry in entries:
            if entry.current is not None and entry.current.id in shown:
                notes.setdefault(entry.current.id, f"current; replaces: {entry.old}")
    return CurrentView(fresh + old, notes, frozenset(brought_in))


def stale_notes(
    memories: Iterable[Memory], stale: dict[str, list[Superseded]], replies_to: dict[str, str]
) -> dict[str, str]:
    """A note per user turn (or reply to one) that a replaced or deleted fact came from."""
    notes: dict[str, str] = {}
    for memory in memories:
        entries = _entries(memory, stale, replies_to)
        if entries:
            notes[memory.id] = _stale_note(memory.role, entries)
    return notes


def _entries(
    memory: Memory, stale: dict[str, list[Superseded]], replies_to: dict[str, str]
) -> list[Superseded]:
    if memory.role not in TURN_ROLES:
        return []
    return stale.get(memory.id) or stale.get(replies_to.get(memory.id, ""), [])


def _stale_note(role: str, entries: Sequence[Superseded]) -> str:
    what = "earlier message" if role == Role.USER else "earlier reply"
    # A deleted fact is never quoted: it was forgotten at the user's request (chat/forgetting.py).
    parts = [f"{e.old} -> now: {e.current.text}" for e in entries if e.current is not None]
    if len(parts) < len(entries):
        parts.append("something in it was forgotten at the user's request")
    return f"{what}, out of date: " + "; ".join(dict.fromkeys(parts))
