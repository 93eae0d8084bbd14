"""The view of a store that imports, exports and sync work on: protocols only (no concrete
class of another part leaks through); engine/compose.py's parts satisfy it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from desktop_mem.engine.chat.extraction import ChatModel
from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.models import Operation, StoreChange


class TransferSource(HistorySource, Protocol):
    """A store with its history, the memory model, and the ways outside changes are recorded."""

    @property
    def memory_llm(self) -> ChatModel:
        """The summary/memory model (imports extract facts with it)."""
        ...

    def apply_external_changes(self, paths: Iterable[str]) -> StoreChange | None: ...

    def refresh(self) -> None: ...

    def commit_all(
        self, subject: str, operation: Operation, trailers: Mapping[str, str] | None = None
    ) -> str | None: ...
