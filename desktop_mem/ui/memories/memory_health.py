"""The Memories pane's health line: likely duplicates, junk and stale facts, and when tidy-up
last ran, counted on a read thread (vectors and dates, no model) and refreshed after changes.
"Tidy up…" beside it asks for a clean-up that waits in Review.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from desktop_mem.ui.task_runner import TaskRunner

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine

REFRESH_DELAY_MS = 3000  # changes come in bursts (a chat turn, an import): count once after them


class MemoryHealthBar(QWidget):
    """One muted line of counts, with a Tidy up… button."""

    tidy_requested = Signal()

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REFRESH_DELAY_MS)
        self._stale = True  # not counted since the last change
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.label = QLabel("Memory health: counting…", self)
        self.label.setObjectName("mutedLabel")
        self.tidy_button = QPushButton("Tidy up…", self)
        self.tidy_button.setToolTip("Propose a clean-up of the whole memory: duplicates to merge, junk "
                                    "to drop, stale facts to retire. Nothing changes until you accept "
                                    "in Review; each accepted change is one commit you can undo.")
        self.tidy_button.setEnabled(not self._engine.read_only)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.tidy_button)

    def _connect_signals(self) -> None:
        self._timer.timeout.connect(self.refresh)
        self.tidy_button.clicked.connect(self.tidy_requested)

    @Slot()
    def refresh(self) -> None:
        """Count again on a read thread (latest wins)."""
        self._runner.submit(self._engine.memory_health, key="memory-health",
                            on_result=self._on_health, on_error=self._on_error)

    def on_store_changed(self, _change: object = None) -> None:
        """Count again soon if the line is on screen; else when it is shown next (the count
        compares every pair of facts: no CPU for it behind the chat while a local model runs)."""
        self._stale = True
        if self.isVisible():
            self._timer.start()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if self._stale:
            self._timer.start(0)

    def _on_health(self, health: object) -> None:
        self._stale = False
        lines = health.lines()  # type: ignore[attr-defined]  # engine.tidy.Health
        self.label.setText(f"Memory health: {lines[0]}")
        self.label.setToolTip("\n".join(lines) + "\nCounted from similar meanings, dates and the "
                              "turns each fact came from; Tidy up… asks the model to confirm.")

    def _on_error(self, error: BaseException) -> None:
        self.label.setText(f"Memory health: not counted ({error})")
