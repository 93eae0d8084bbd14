"""Store files that failed to parse: their raw text for the problem editor, and the user's fix
saved and taken in like any edit (re-read, screened, indexed, one commit)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from desktop_mem.engine.models import NotFoundError, Problem, StoreChange
from desktop_mem.engine.store.markdown_store import atomic_write
from desktop_mem.engine.store.ports import StoreFiles, Writer


class ProblemFiles:
    """Read only the files `problems` names; save the user's fix of one."""

    def __init__(self, store: StoreFiles, writer: Writer, problems: Callable[[], list[Problem]],
                 take_in: Callable[[Iterable[str]], StoreChange | None]) -> None:
        self._store = store
        self._writer = writer
        self._problems = problems
        self._take_in = take_in  # outside_edits: re-read, screen for secrets, index, one commit

    def text(self, rel: str) -> str:
        """The raw text of a file that failed to parse, undecodable bytes replaced. Any other file
        is refused: a memory is read through the engine's reads."""
        if rel not in {p.path for p in self._problems()}:
            raise NotFoundError(f"{rel} is not a file that failed to read; `desktop-mem doctor` lists them")
        return self._store.abspath(rel).read_bytes().decode("utf-8", errors="replace")

    def save(self, rel: str, text: str) -> Problem | None:
        """Write the user's fix atomically under the writer lock, then take it in as an edit;
        returns the problem left, if any."""
        self._writer.require_writer()
        with self._writer.lock:
            atomic_write(self._store.abspath(rel), text.encode("utf-8"))
            self._take_in([rel])
        return next((p for p in self._problems() if p.path == rel), None)
