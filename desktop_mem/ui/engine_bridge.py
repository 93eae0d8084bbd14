"""Engine events (from any thread) as Qt signals on the GUI thread.

The engine calls its listeners from whatever thread wrote: the writer pool, the chat write path,
or the file watcher. The bridge lives on the GUI thread and re-emits each event through a queued
connection, so every slot connected to `store_changed` / `outcome_ready` / `secret_held_back` runs
on the GUI thread, after the engine call that caused it has returned.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal, Slot

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine, WriteOutcome
    from desktop_mem.engine.models import SecretHeldBack, StoreChange


class EngineBridge(QObject):
    """Subscribes to one engine; re-emits its changes and write outcomes on the GUI thread."""

    store_changed = Signal(object)  # StoreChange
    outcome_ready = Signal(object)  # WriteOutcome
    secret_held_back = Signal(object)  # SecretHeldBack: a hand edit with a likely secret awaits an answer
    write_progressed = Signal(object)  # WriteProgress: a reply's memory update started, moved on or ended

    _change_posted = Signal(object)
    _outcome_posted = Signal(object)
    _held_back_posted = Signal(object)
    _progress_posted = Signal(object)

    def __init__(self, engine: MemoryEngine, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._unsubscribe: list[Callable[[], None]] = []
        queued = Qt.ConnectionType.QueuedConnection
        self._change_posted.connect(self._on_change_posted, queued)
        self._outcome_posted.connect(self._on_outcome_posted, queued)
        self._held_back_posted.connect(self._on_held_back_posted, queued)
        self._progress_posted.connect(self.write_progressed, queued)
        self._unsubscribe.append(engine.subscribe(self._change_posted.emit))
        self._unsubscribe.append(engine.subscribe_outcomes(self._outcome_posted.emit))
        self._unsubscribe.append(engine.subscribe_held_back(self._held_back_posted.emit))
        self._unsubscribe.append(engine.subscribe_write_progress(self._progress_posted.emit))

    def close(self) -> None:
        """Stop listening (the engine is about to close). Events the engine posted before are
        still queued for this thread: they are dropped, not handed to the closing store's widgets."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        self.blockSignals(True)

    @Slot(object)
    def _on_change_posted(self, change: StoreChange) -> None:
        self.store_changed.emit(change)

    @Slot(object)
    def _on_outcome_posted(self, outcome: WriteOutcome) -> None:
        self.outcome_ready.emit(outcome)

    @Slot(object)
    def _on_held_back_posted(self, held: SecretHeldBack) -> None:
        self.secret_held_back.emit(held)
