"""What the chat path is given instead of the engine: narrow views that engine/compose.py
assembles from the parts (no part of chat/ calls back into the facade)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.config import Config
from desktop_mem.engine.index.retrieval import RetrievalOverrides, SearchFilters, SearchResult
from desktop_mem.engine.models import Memory
from desktop_mem.engine.store.ports import MemoryView, Writer


class Search(Protocol):
    """The read path (index/read_path.py's SearchIndex.search)."""

    def __call__(
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


@dataclass(frozen=True)
class ChatPorts:
    """Everything a chat turn and its write path use: the settings, the shared and raw reads, the
    writer (transactions, redaction), the read path, which memories are held back now, and a
    conversation's saved strategy."""

    config: Config
    reads: MemoryView
    raw: MemoryView
    writer: Writer
    search: Search
    held_back_ids: Callable[[], frozenset[str]]
    conversation_strategy: Callable[[str], str | None]
    conversation_title: Callable[[str], str] = str  # the title the user chose (its id when none)
    # the project scope a conversation is bound to (store/projects.py), None when it is in none
    conversation_project: Callable[[str], str | None] = lambda _conversation: None

    def snapshot(self) -> ConversationSnapshot:
        """One scan of the catalog: what a chat path reads the store from (chat/snapshot.py)."""
        return ConversationSnapshot.take(self.raw, self.held_back_ids())

    def get(self, memory_id: str) -> Memory:
        """Shared: HeldBackError for a held-back hand edit."""
        return self.reads.get(memory_id)

    def lookup(self, memory_id: str) -> Memory | None:
        """Shared: None for a held-back hand edit."""
        return self.reads.lookup(memory_id)

    def summary(self, conversation_id: str) -> Memory | None:
        """The conversation's summary now (shared: a held-back one redacted)."""
        return self.reads.summary(conversation_id)
