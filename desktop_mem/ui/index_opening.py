"""The store's index, opened once the memory list is on screen, and what the status bar says of it.

Loading chromadb and the embedding model holds the GIL for about a second, so the window asks for
the index only after the first listing is shown (or the welcome page is). The modules load on the
read pool and the index opens on the writer as a long operation (progress, Cancel); the window
then refreshes the list, starts the loopback endpoint when the user pauses, and says "Index ready".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal, SignalInstance, Slot

from desktop_mem.ui.long_operations import LongOperations
from desktop_mem.ui.status_bar import StatusBar
from desktop_mem.ui.store_session import import_index_modules, open_index_and_watch, start_endpoint_when_idle
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.progress import Cancelled

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine
    from desktop_mem.ui.workspace import Workspace

log = logging.getLogger(__name__)


class IndexOpening(QObject):
    """Opens the window's current engine's index, once per engine."""

    opened = Signal()  # the index is ready (and the watcher started, if it is on)

    def __init__(self, runner: TaskRunner, operations: LongOperations, status: StatusBar,
                 engine: Callable[[], MemoryEngine | None], workspace: Callable[[], Workspace | None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._operations = operations
        self._status = status
        self._engine = engine  # the window's engine at the time of asking: it changes on a reopen
        self._workspace = workspace
        self._requested: MemoryEngine | None = None  # the engine whose index is opening

    def open_when_listed(self, listed: SignalInstance, *, now: bool = False) -> None:
        """Open the index once the memory list is on screen (`listed` fires), or `now` (the welcome
        page shows instead): loading chromadb and the model holds the GIL for about a second and
        would otherwise delay the first listing."""
        self._status.set_index_state("Indexing…")
        self._status.set_watcher(False, "starts once the index is ready")
        listed.connect(self.open_once)
        if now:
            self.open_once()

    @Slot()
    def open_once(self) -> None:
        """Open the current engine's index, unless it was asked for already."""
        if self._engine() is None or self._requested is self._engine():
            return
        self._requested = engine = self._engine()
        self._status.check_llm()  # the store is listed: now the probe may import openai
        self._runner.submit(import_index_modules, on_result=lambda _: self._open(engine),
                            on_error=lambda _e: self._open(engine))

    def failed(self, error: BaseException) -> None:
        """Opening (or rebuilding) the index failed or was cancelled: say what search covers."""
        if isinstance(error, Cancelled):
            self._status.set_index_state("Index incomplete")
            self._status.index_label.setToolTip("Indexing was cancelled: search by meaning covers part of "
                                                "the store. It continues at the next start.")
            return
        log.error("index failed to open", exc_info=error)
        self._status.set_index_state("Index unavailable")
        self._status.index_label.setToolTip(f"Search by meaning is off: {error}")

    def _open(self, engine: MemoryEngine | None) -> None:
        if engine is not self._engine():
            return  # the store was closed or reopened meanwhile
        self._operations.run("Indexing the store", open_index_and_watch, engine,
                             on_result=self._on_opened, on_error=self.failed)

    def _on_opened(self, watcher: str) -> None:
        self._status.set_index_state("Index ready")
        self._status.set_watcher(watcher == "on", "" if watcher == "on" else "watcher.enabled is off or "
                                 "the store is read-only")
        workspace = self._workspace()
        if workspace is not None:
            workspace.browser.refresh()
            start_endpoint_when_idle(workspace, self._runner, self._engine)
        self.opened.emit()
