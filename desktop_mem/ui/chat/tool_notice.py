"""A non-modal notice when an AI tool changed memory through MCP: "Claude Desktop added 2
memories", with Undo. It is the window's counterpart of the chat pane's "Memory updated" line.

Changes from the same client that arrive close together are told as one notice; Undo reverses
them newest first on the writer pool (each undo is an ordinary commit of the app; an update's is
the engine's one undo, with its conflict check).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from desktop_mem.engine.models import Operation, Source

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine
    from desktop_mem.engine.models import StoreChange
    from desktop_mem.ui.task_runner import TaskRunner

SHOWN_MS = 15000  # how long a notice stays unless the user acts on it
_VERBS = {Operation.ADD: "added", Operation.UPDATE: "updated", Operation.DELETE: "deleted",
          Operation.RESTORE: "restored", Operation.EDIT: "edited"}


def notice_text(changes: Sequence[StoreChange]) -> str:
    """"Claude Desktop added 2 memories and deleted 1 memory"."""
    counts: dict[Operation, int] = {}
    for change in changes:
        n = 1 if change.operation in (Operation.UPDATE, Operation.EDIT) else len(change.memory_ids)
        counts[change.operation] = counts.get(change.operation, 0) + n
    parts = [f"{_VERBS.get(op, op)} {n} {'memory' if n == 1 else 'memories'}" for op, n in counts.items()]
    who = changes[-1].client or "An AI tool"
    said = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"{who} {said}"


def undo_changes(engine: MemoryEngine, changes: Sequence[StoreChange]) -> int:
    """Reverse MCP changes, newest first (runs on the writer pool); returns how many were undone.

    An update is undone by the engine's one undo (one commit, refused if either memory changed
    since); adds, deletes and restores by their opposite, skipping what is already so."""
    undone = 0
    for change in reversed(changes):
        if change.operation == Operation.UPDATE:
            engine.undo_update(change.memory_ids, change.commit)
            undone += 1
            continue
        for memory_id in change.memory_ids:
            deleted = engine.get(memory_id).deleted
            if change.operation in (Operation.ADD, Operation.RESTORE) and not deleted:
                engine.delete(memory_id)
                undone += 1
            elif change.operation == Operation.DELETE and deleted:
                engine.restore(memory_id)
                undone += 1
    return undone


class ToolNotice(QFrame):
    """"<client> added 2 memories  [Undo] [×]"; hidden until an MCP change arrives."""

    undone = Signal(int)  # how many changes Undo reversed
    undo_failed = Signal(str)

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._changes: list[StoreChange] = []
        self._setup_ui()
        self._connect_signals()
        self.hide()

    def _setup_ui(self) -> None:
        self.setObjectName("toolNotice")
        self.label = QLabel(self)
        self.undo_button = QToolButton(self)
        self.undo_button.setText("Undo")
        self.close_button = QToolButton(self)
        self.close_button.setText("×")
        self.close_button.setToolTip("Dismiss")
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(SHOWN_MS)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 0, 6, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.undo_button)
        layout.addWidget(self.close_button)

    def _connect_signals(self) -> None:
        self.undo_button.clicked.connect(self._on_undo_button_clicked)
        self.close_button.clicked.connect(self.dismiss)
        self._timer.timeout.connect(self.dismiss)

    @property
    def changes(self) -> tuple[StoreChange, ...]:
        """The changes the notice tells of (and Undo reverses)."""
        return tuple(self._changes)

    @Slot(object)
    def on_store_changed(self, change: StoreChange) -> None:
        """Show (or extend) the notice for a change an AI tool made."""
        if change.source != Source.MCP or change.operation not in _VERBS:
            return
        if not self.isVisible() or (self._changes and self._changes[-1].client != change.client):
            self._changes = []
        self._changes.append(change)
        self.label.setText(notice_text(self._changes))
        self.undo_button.setEnabled(True)
        self.show()
        self._timer.start()

    @Slot()
    def dismiss(self) -> None:
        self._timer.stop()
        self._changes = []
        self.hide()

    @Slot()
    def _on_undo_button_clicked(self) -> None:
        changes = list(self._changes)
        self.undo_button.setEnabled(False)
        self._runner.submit_write(undo_changes, self._engine, changes, on_result=self._on_undone,
                                  on_error=self._on_undo_failed)

    def _on_undone(self, count: int) -> None:
        self.dismiss()
        self.undone.emit(count)

    def _on_undo_failed(self, error: BaseException) -> None:
        self.undo_button.setEnabled(True)
        self.label.setText(f"Could not undo: {error}")
        self.undo_failed.emit(str(error))
