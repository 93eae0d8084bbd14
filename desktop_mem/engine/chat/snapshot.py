"""One read of the catalog per chat path: the conversation as it was when the path began.

A chat turn asks many questions of the store: its transcript, its summary, the global facts,
other chats' summaries, what replaced facts came from; the write path asks for the live facts,
what expired and what is beyond `memory.max_entries`. Each used to be its own scan and sort of
the whole catalog (about 7 per turn). A snapshot is one scan (every memory, live and deleted,
oldest first, with the held-back ids of that moment); every question is then answered from it.

The snapshot is the shared view by default (held-back hand edits left out), like the engine's
reads; only `transcript` keeps a held-back turn in its place (positions count turns), and
`for_prompt` redacts its likely secrets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from typing_extensions import Unpack

from desktop_mem.engine.models import ListFilters, Memory, select_memories
from desktop_mem.engine.store.layout import summary_path
from desktop_mem.engine.store.reads import for_prompt, transcript_order


class WholeCatalog(Protocol):
    """The raw view of the catalog (store/reads.py's MemoryReads without a held-back filter)."""

    def list_memories(self, *, include_deleted: bool = False) -> list[Memory]: ...


class ConversationSnapshot:
    """Every memory of the store as one scan found it; the read questions of one chat path.

    Taking it copies the catalog's list (oldest first) and nothing more: a conversation's
    memories and the lookup by id are sorted out when first asked. At 100,000 memories, grouping
    all of them up front cost 55-60 ms of the interpreter lock per snapshot (now 14-15 ms), two
    per chat turn, while the window streamed the reply (issue #25); a turn asks about two or
    three conversations."""

    def __init__(self, memories: Iterable[Memory], held: frozenset[str]) -> None:
        self.held = held
        self._all: list[Memory] = list(memories)
        self._groups: dict[str, list[Memory]] = {}  # conversation -> its memories, when asked
        self._ids: dict[str, Memory] | None = None  # id -> memory, when first looked up

    @classmethod
    def take(cls, catalog: WholeCatalog, held: frozenset[str]) -> ConversationSnapshot:
        """The one scan: every memory, live and deleted, oldest first."""
        return cls(catalog.list_memories(include_deleted=True), held)

    def including(self, *memories: Memory | None) -> ConversationSnapshot:
        """This snapshot with files the path itself just wrote (its user turn), newest last; a new
        version of a file it holds takes that file's place."""
        for memory in memories:
            if memory is None:
                continue
            every = self._all
            at = next((i for i in range(len(every) - 1, -1, -1) if every[i].path == memory.path), None)
            if at is None:
                self._all.append(memory)
            else:
                self._all[at] = memory
            self._groups.pop(memory.conversation_id, None)
            if self._ids is not None:
                _index(self._ids, memory)
        return self

    def _group(self, conversation_id: str) -> list[Memory]:
        group = self._groups.get(conversation_id)
        if group is None:
            group = [m for m in self._all if m.conversation_id == conversation_id]
            self._groups[conversation_id] = group
        return group

    # ------------------------------------------------------------ questions

    def list_memories(self, **filters: Unpack[ListFilters]) -> list[Memory]:
        """As the engine's `list_memories` (shared view): matching memories, oldest first."""
        conversation_id = filters.get("conversation_id")
        pool: Sequence[Memory] = self._all if conversation_id is None else self._group(conversation_id)
        return [m for m in select_memories(pool, filters) if m.id not in self.held]

    def lookup(self, memory_id: str) -> Memory | None:
        """Exactly this id (its live copy when it has a tombstone too), or None; None when held back."""
        if memory_id in self.held:
            return None
        if self._ids is None:
            self._ids = {}
            for memory in self._all:
                _index(self._ids, memory)
        return self._ids.get(memory_id)

    def transcript(self, conversation_id: str) -> list[Memory]:
        """The conversation's live turns, oldest first (the order the model saw them); a held-back
        turn keeps its place (`for_prompt` redacts it)."""
        return transcript_order(self._group(conversation_id))

    def summary(self, conversation_id: str) -> Memory | None:
        """The conversation's rolling summary, if any; a held-back one kept, redacted as
        `for_prompt` does (as the shared reads' `summary`)."""
        path = summary_path(conversation_id)
        found = next((m for m in self._group(conversation_id) if m.path == path), None)
        return self.for_prompt(found) if found is not None else None

    def for_prompt(self, memory: Memory) -> Memory:
        """The memory as a prompt may show it: held back, with its likely secrets redacted."""
        return for_prompt(memory, self.held)


def _index(ids: dict[str, Memory], memory: Memory) -> None:
    """Record a memory by id, later ones first, except that a live copy wins over its tombstone."""
    old = ids.get(memory.id)
    if old is None or old.deleted or not memory.deleted:
        ids[memory.id] = memory
