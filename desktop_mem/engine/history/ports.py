"""The view of a store that history and the timeline work on (MemoryEngine satisfies it)."""

from __future__ import annotations

from typing import Protocol

from desktop_mem.engine.history.git_history import GitHistory
from desktop_mem.engine.store.ports import MemorySource


class HistorySource(MemorySource, Protocol):
    """A store with its git history."""

    @property
    def git(self) -> GitHistory: ...
