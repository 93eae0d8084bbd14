"""The views of a store that imports, exports and sync work on: protocols only, each with just
what its part uses (no concrete class of another part leaks through); engine/compose.py's Parts
satisfies them (front ends reach transfer through engine.transfer, transfer/transfer_facade.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Protocol

from desktop_mem.engine.chat.fact_types import ChatModel
from desktop_mem.engine.history.ports import GitStore
from desktop_mem.engine.models import Memory, Operation, SecretHeldBack, StoreChange
from desktop_mem.engine.store.ports import StoreFiles


class TransferSource(GitStore, Protocol):
    """Imports and sync: the git store, the memory model (imports extract facts with it), and
    the ways outside changes are recorded (sync)."""

    @property
    def memory_llm(self) -> ChatModel:
        """The summary/memory model (imports extract facts with it)."""
        ...

    def apply_external_changes(self, paths: Iterable[str]) -> StoreChange | None: ...

    def refresh(self) -> None: ...

    def commit_all(
        self, subject: str, operation: Operation, trailers: Mapping[str, str] | None = None
    ) -> str | None: ...


class ExportSource(Protocol):
    """Exports: the shared reads (held-back hand edits left out), which files are held back, the
    files and the conversations' titles."""

    @property
    def root(self) -> Path: ...
    @property
    def store(self) -> StoreFiles: ...

    def list_memories(self, *, conversation_id: str | None = None, include_deleted: bool = False,
                      include_summaries: bool = True) -> list[Memory]: ...

    def held_back_files(self) -> tuple[SecretHeldBack, ...]: ...

    def conversation_title(self, conversation_id: str) -> str: ...
