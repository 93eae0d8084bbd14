"""What the parts above the store read from it: the narrow views each part is given instead of
the whole MemoryEngine. Protocols only: no concrete class of the store leaks through them
(MarkdownStore, StoreWriter and MemoryReads satisfy them structurally)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from typing_extensions import Unpack

from desktop_mem.engine.models import ListFilters, Memory, Operation, Problem

if TYPE_CHECKING:
    from collections.abc import Mapping

    from desktop_mem.engine.store.secrets_scan import Finding
    from desktop_mem.engine.store.transaction import Transaction


class StoreFiles(Protocol):
    """The Markdown files themselves (store/markdown_store.py)."""

    @property
    def entries(self) -> Path: ...

    @property
    def max_file_bytes(self) -> int: ...

    def abspath(self, rel: str) -> Path: ...

    def read(self, rel: str) -> Memory: ...

    def memory_from_bytes(self, rel: str, raw: bytes) -> Memory: ...

    def conversations(self) -> list[str]: ...

    def conversation_meta(self, conversation_id: str) -> dict[str, Any]: ...

    def odd_folders(self) -> list[Problem]: ...

    def links(self) -> list[Problem]: ...


class WriterLock(Protocol):
    """The writer's reentrant lock (store/transaction.py: taken once the catalog may be read)."""

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool: ...

    def release(self) -> None: ...

    def __enter__(self) -> bool: ...

    def __exit__(self, *exc: object) -> None: ...


class Writer(Protocol):
    """The one way to change the store (store/transaction.py's StoreWriter)."""

    @property
    def lock(self) -> WriterLock: ...

    @property
    def store(self) -> StoreFiles: ...

    def require_writer(self) -> None: ...

    def transaction(
        self,
        operation: Operation,
        subject: str = "",
        conversation: str | None = None,
        *,
        trailers: Mapping[str, str] | None = None,
        turn_id: str | None = None,
        publish: bool = True,
    ) -> AbstractContextManager[Transaction]: ...

    def redact(self, text: str) -> tuple[str, tuple[Finding, ...]]: ...

    def check_secrets(self, text: str, choice: str | None) -> str: ...

    def check_not_held(self, memory: Memory) -> None: ...


class MemoryView(Protocol):
    """Reads of the catalog (store/reads.py): shared by default, or the raw files."""

    def get(self, memory_id: str) -> Memory: ...

    def lookup(self, memory_id: str) -> Memory | None: ...

    def summary(self, conversation_id: str) -> Memory | None: ...

    def transcript(self, conversation_id: str) -> list[Memory]: ...

    def list_memories(self, **filters: Unpack[ListFilters]) -> list[Memory]: ...


class MemorySource(MemoryView, Protocol):
    """Read the catalog (the shared view: held-back hand edits left out) and change the store
    through its writer (review mode's accept and reject). History, transfer and doctor have views
    of their own (their ports.py), each with only what it uses."""

    @property
    def root(self) -> Path: ...
    @property
    def writer(self) -> Writer: ...
