"""What the parts above the store read from it: the narrow view each part is given instead of
the whole MemoryEngine (which satisfies these structurally), so no part imports the facade."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Protocol

from desktop_mem.engine.config import Config
from desktop_mem.engine.models import Memory, SecretHeldBack
from desktop_mem.engine.store.markdown_store import MarkdownStore
from desktop_mem.engine.store.reads import MemoryReads
from desktop_mem.engine.store.transaction import StoreWriter


class MemorySource(Protocol):
    """Read the catalog and change the store through its writer."""

    @property
    def root(self) -> Path: ...
    @property
    def config(self) -> Config: ...
    @property
    def store(self) -> MarkdownStore: ...
    @property
    def writer(self) -> StoreWriter: ...

    def get(self, memory_id: str) -> Memory: ...

    def lookup(self, memory_id: str) -> Memory | None: ...

    def summary(self, conversation_id: str) -> Memory | None: ...

    def conversation_strategy(self, conversation_id: str) -> str | None: ...

    def conversation_title(self, conversation_id: str) -> str: ...

    def list_memories(
        self,
        *,
        conversation_id: str | None = None,
        role: str | None = None,
        kind: str | None = None,
        include_deleted: bool = False,
        only_deleted: bool = False,
        include_summaries: bool = True,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Memory]: ...

    @property
    def raw(self) -> MemoryReads:
        """The files as they are, held-back hand edits included (the plain reads leave them out)."""
        ...

    def held_back_files(self) -> tuple[SecretHeldBack, ...]: ...
