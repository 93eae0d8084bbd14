"""The view of a store that imports, exports and sync work on (MemoryEngine satisfies it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from desktop_mem.engine.chat.ports import ChatSource
from desktop_mem.engine.chat.service import ChatService
from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.models import Operation, StoreChange


class TransferSource(HistorySource, ChatSource, Protocol):
    """A store with history, read path and chat service."""

    @property
    def chat_service(self) -> ChatService: ...

    def apply_external_changes(self, paths: Iterable[str]) -> StoreChange | None: ...

    def refresh(self) -> None: ...

    def commit_all(
        self, subject: str, operation: Operation, trailers: Mapping[str, str] | None = None
    ) -> str | None: ...
