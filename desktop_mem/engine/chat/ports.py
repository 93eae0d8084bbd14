"""The view of a store that chat and the write path work on (MemoryEngine satisfies it)."""

from __future__ import annotations

from typing import Protocol

from desktop_mem.engine.index.retrieval import RetrievalOverrides, SearchFilters, SearchResult
from desktop_mem.engine.store.ports import MemorySource


class ChatSource(MemorySource, Protocol):
    """A store with its read path."""

    def search(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        top_k: int | None = None,
        filters: SearchFilters | None = None,
        use_mmr: bool = True,
        overrides: RetrievalOverrides | None = None,
        rerank: bool = False,
    ) -> list[SearchResult]: ...

    def held_back_ids(self) -> frozenset[str]:
        """Memories whose hand-edited file holds a likely secret not answered for yet: never put
        into a prompt, never moved by the write path."""
        ...
