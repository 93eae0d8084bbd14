"""The two views of the catalog: shared (the default) and raw (asked for by name).

The shared view is what any front end may show or send (MCP, REST, the CLI, an export, a prompt):
a hand edit held back for a likely secret is left out of lists, refused by `get`, not found by
`lookup`, and a held-back summary comes with its likely secrets redacted. The raw view is the
files as they are, for the editor the user fixes them in and for the engine's own writes.
Safety does not depend on a caller remembering a safe variant: the plain name is the safe one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from typing_extensions import Unpack

from desktop_mem.engine.models import ListFilters, Memory, Role
from desktop_mem.engine.store import layout, secrets_scan
from desktop_mem.engine.store.catalog import Catalog
from desktop_mem.engine.store.conversation_ids import validate_conversation_id


class HeldBack(Protocol):
    """Which memories are held back now (store/held_back.py's HeldBackFiles)."""

    @property
    def ids(self) -> frozenset[str]: ...

    def refuse_if_held(self, memory: Memory) -> None: ...


@dataclass(frozen=True)
class MemoryPage:
    """One page of a listing (MemoryReads.list_page): its rows, how many the whole listing has,
    and whether any of them is deleted (a list shows a Status column then)."""

    memories: tuple[Memory, ...]
    total: int
    any_deleted: bool = False


SortKey = Callable[[Memory], Any]


class MemoryReads:
    """Reads of the catalog; with `held`, the shared view (held-back hand edits kept out)."""

    def __init__(self, catalog: Catalog, held: HeldBack | None = None) -> None:
        self._catalog = catalog
        self._held = held
        # The last listing's order (one list of references), reused for its next pages until the
        # catalog or the held-back set changes: a page of a 100k listing costs a slice, not a sort.
        self._listing_lock = threading.Lock()
        self._listing: tuple[tuple[Any, ...], list[Memory], bool] | None = None

    @property
    def is_raw(self) -> bool:
        """True for the raw view (the files as they are, held-back hand edits included)."""
        return self._held is None

    def get(self, memory_id: str) -> Memory:
        """By id or unique prefix (live or deleted); NotFoundError if none. Shared: HeldBackError
        for a held-back hand edit, naming its file and how to answer for it."""
        memory = self._catalog.get(memory_id)
        if self._held is not None:
            self._held.refuse_if_held(memory)
        return memory

    def lookup(self, memory_id: str) -> Memory | None:
        """Exactly this id, or None. Shared: None for a held-back hand edit."""
        if self._held is not None and memory_id in self._held.ids:
            return None
        return self._catalog.lookup(memory_id)

    def list_memories(self, **filters: Unpack[ListFilters]) -> list[Memory]:
        """Memories matching the filters, oldest first. Shared: held-back hand edits left out."""
        found = self._catalog.select(**filters)
        held = self._held.ids if self._held is not None else frozenset()
        return [m for m in found if m.id not in held] if held else found

    def list_page(self, offset: int, limit: int, *, key: SortKey | None = None, descending: bool = False,
                  **filters: Any) -> MemoryPage:
        """Rows offset..offset+limit of list_memories(**filters) newest first, or sorted by `key`
        (`descending` for the reverse; ties stay newest first), with the listing's total. The
        memory browser lists a 100k store this way, one page at a time (issue #25)."""
        held = self._held.ids if self._held is not None else frozenset()
        signature = (self._catalog.generation, held, key, descending, tuple(sorted(filters.items())))
        with self._listing_lock:
            if self._listing is None or self._listing[0] != signature:
                rows = self.list_memories(**filters)
                rows.reverse()
                if key is not None:
                    rows.sort(key=key, reverse=descending)
                self._listing = (signature, rows, any(m.deleted for m in rows))
            _sig, rows, any_deleted = self._listing
        start = max(offset, 0)
        return MemoryPage(tuple(rows[start:start + max(limit, 0)]), len(rows), any_deleted)

    def summary(self, conversation_id: str) -> Memory | None:
        """The conversation's rolling summary, if any. Shared: a held-back one (kept in place, as
        the prompt needs it) with its likely secrets redacted."""
        validate_conversation_id(conversation_id)
        memory = self._catalog.at_path(layout.summary_path(conversation_id))
        return self.for_prompt(memory) if memory is not None else None

    def transcript(self, conversation_id: str) -> list[Memory]:
        """The conversation's live turns, oldest first (the order the model saw them). Shared: a
        held-back turn keeps its place (positions count turns), its likely secrets redacted."""
        turns = transcript_order(self._catalog.select(conversation_id=conversation_id))
        return [self.for_prompt(m) for m in turns]

    def for_prompt(self, memory: Memory) -> Memory:
        """The memory as it may be shown or sent where it must stay in place (a turn of the
        transcript, a summary): held back, its likely secrets are redacted. Raw: as it is."""
        return for_prompt(memory, self._held.ids if self._held is not None else frozenset())


def transcript_order(memories: Iterable[Memory]) -> list[Memory]:
    """The live turns among `memories`, oldest first (the order the model saw them: a user turn
    before the reply stamped the same instant)."""
    turns = [m for m in memories if m.is_turn and not m.deleted]
    turns.sort(key=lambda m: (m.created_at, 0 if m.role == Role.USER else 1, m.path))
    return turns


def for_prompt(memory: Memory, held: frozenset[str]) -> Memory:
    """`memory` as a prompt may show it: held back (`held`), its likely secrets redacted."""
    if memory.id not in held:
        return memory
    return replace(memory, text=secrets_scan.redact(memory.text))
