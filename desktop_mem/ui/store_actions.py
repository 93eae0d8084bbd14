"""The File menu's actions on the whole store: sync with the remote, import, rebuild the index.

Each runs on the writer as a long operation (progress in the status bar, Cancel where it can stop)
and says in one line what it did. The window builds the menu and owns this; its `sync_finished` and
`operation_finished` repeat the signals here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from desktop_mem.ui.long_operations import (
    LongOperations,
    describe_import,
    describe_tidy,
    import_file,
    rebuild_index,
    sync_store,
    tidy_memory,
)
from desktop_mem.ui.status_bar import StatusBar
from desktop_mem.ui.widgets.progress import Cancelled, ProgressReporter

if TYPE_CHECKING:
    # Imported where first used: the engine pulls in chromadb (about a second), which must load on
    # the writer thread after the window is on screen, not before it.
    from desktop_mem.engine.api import MemoryEngine, SyncResult, TidyReport


class StoreActions(QObject):
    """Sync, Import and Rebuild index for the window's current engine (none while no store is open)."""

    sync_finished = Signal(str)  # what a sync did (or why it failed), as shown to the user
    operation_finished = Signal(str)  # what an import or index rebuild did, as shown to the user
    tidy_proposed = Signal(int)  # how many tidy-up proposals now wait in Review

    def __init__(self, operations: LongOperations, status: StatusBar,
                 engine: Callable[[], MemoryEngine | None],
                 index_failed: Callable[[BaseException], None], window: QWidget) -> None:
        super().__init__(window)
        self._operations = operations
        self._status = status
        self._engine = engine  # the window's engine at the time of asking: it changes on a reopen
        self._index_failed = index_failed  # the window's "Index unavailable / incomplete"
        self._window = window  # the dialogs' parent

    @Slot()
    def sync(self) -> None:
        """Pull, merge (conflicts kept side by side), push: on the writer; the answer is non-modal."""
        engine = self._engine()
        if engine is None or engine.read_only:
            return
        self._operations.run("Syncing with the remote", sync_store, engine, cancellable=False,
                             on_result=self._on_synced, on_error=self._on_sync_failed)

    @Slot()
    def choose_import(self) -> None:
        """Import a ChatGPT or Claude data export, a mem0 / OpenMemory export, a JSON list, a
        desktop-mem export or Markdown (all or nothing)."""
        engine = self._engine()
        if engine is None or engine.read_only:
            return
        path, _filter = QFileDialog.getOpenFileName(
            self._window, "Import memories", "",
            "Exports and memories (*.zip *.json *.md *.markdown *.txt);;All files (*)")
        if path:
            self.import_file(Path(path))

    def import_file(self, path: Path) -> ProgressReporter | None:
        """Import a file on the writer, with progress and Cancel (returns the operation's reporter)."""
        engine = self._engine()
        if engine is None:
            return None
        return self._operations.run(f"Importing {path.name}", import_file, engine, path,
                                    on_result=lambda r: self._tell(describe_import(r)),
                                    on_error=lambda e: self._tell(f"Nothing was imported: {e}"))

    @Slot()
    def tidy_up(self) -> None:
        """Propose a clean-up of the whole memory (on the writer, with progress and Cancel); the
        proposals wait in Review and nothing else changes."""
        engine = self._engine()
        if engine is None or engine.read_only:
            return
        self._operations.run("Tidying up memory (proposals only)", tidy_memory, engine,
                             on_result=self._on_tidied, on_error=self._on_tidy_failed)

    def _on_tidied(self, report: TidyReport) -> None:
        self._tell(describe_tidy(report))
        self.tidy_proposed.emit(len(report.proposals))

    def _on_tidy_failed(self, error: BaseException) -> None:
        self._tell("Tidy-up cancelled: nothing was proposed." if isinstance(error, Cancelled)
                   else f"Tidy-up failed: {error}")

    @Slot()
    def reindex(self) -> None:
        """Drop the derived indexes and rebuild them from the files (progress and Cancel)."""
        engine = self._engine()
        if engine is None or engine.read_only:
            return
        self._status.set_index_state("Rebuilding index…")
        self._operations.run("Rebuilding the index", rebuild_index, engine,
                             on_result=self._on_reindexed, on_error=self._on_reindex_failed)

    def _on_reindexed(self, count: int) -> None:
        self._status.set_index_state("Index ready")
        self._tell(f"Index rebuilt: {count:,} memories embedded.")

    def _on_reindex_failed(self, error: BaseException) -> None:
        self._index_failed(error)
        self._tell("Index rebuild cancelled: it continues at the next start." if isinstance(error, Cancelled)
                   else f"Index rebuild failed: {error}")

    def _tell(self, text: str) -> None:
        self.last_message = text
        self._status.showMessage(text, 15000)
        self.operation_finished.emit(text)

    def _on_synced(self, result: SyncResult) -> None:
        lines = [f"Synced with {result.remote} ({result.branch}): {result.incoming_commits} commit(s) in, "
                 f"{result.outgoing_commits} out{'' if result.pushed else ', not pushed'}."]
        for conflict in result.conflicts:
            lines.append(f"Changed on both machines: {conflict.path} — yours kept; theirs saved as "
                         f"{conflict.their_copy_path or 'a separate memory'} ({conflict.note}).")
        self._show_sync_message("\n".join(lines), bool(result.conflicts))

    def _on_sync_failed(self, error: BaseException) -> None:
        self._show_sync_message(f"Sync failed: {error}", True)

    def _show_sync_message(self, text: str, warn: bool) -> None:
        self.last_sync_message = text
        self._status.showMessage(text.splitlines()[0], 15000)
        self.sync_finished.emit(text)
        if warn:
            box = QMessageBox(QMessageBox.Icon.Warning, "Sync", text, QMessageBox.StandardButton.Ok,
                              self._window)
            box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            box.open()  # non-modal: the window stays usable
