"""The view of a store that history and the timeline work on: only what they use (compose.Parts
satisfies it; front ends reach history through engine.timeline, history/timeline_facade.py).
Protocols only; GitHistory is history's own."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from desktop_mem.engine.config import Config
from desktop_mem.engine.history.git_history import GitHistory
from desktop_mem.engine.models import SecretHeldBack
from desktop_mem.engine.store.ports import MemoryView, StoreFiles, Writer


class GitStore(Protocol):
    """A store with its git history: settings and root, the files (a version read back from
    git), the writer, the raw reads. What history/ and transfer/ both build on."""

    @property
    def root(self) -> Path: ...
    @property
    def config(self) -> Config: ...
    @property
    def git(self) -> GitHistory: ...
    @property
    def store(self) -> StoreFiles: ...
    @property
    def writer(self) -> Writer: ...
    @property
    def raw(self) -> MemoryView: ...


class HistorySource(GitStore, MemoryView, Protocol):
    """What history and the timeline use: the git store, the shared reads (get, lookup,
    list_memories ...) and which hand edits are held back (never committed as they are)."""

    def held_back_files(self) -> tuple[SecretHeldBack, ...]: ...
