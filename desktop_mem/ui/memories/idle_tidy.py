"""Tidy-up when the user is away (`memory.tidy_when_idle_minutes`, off by default): after that many
minutes without a change to memory the window runs a tidy-up, which only proposes (Review).

A run's own commit (its proposals) does not restart the clock, so an idle window tidies once per
spell of changes, never in a loop.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Slot

from desktop_mem.engine.models import Operation, StoreChange


class IdleTidy(QObject):
    """Calls `run` once memory has been still for `minutes` (0: never)."""

    def __init__(self, minutes: int, run: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._run = run
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(max(int(minutes), 0) * 60_000)
        self._timer.timeout.connect(self._on_timer_timeout)
        self.enabled = minutes > 0
        self.runs = 0

    @Slot(object)
    def on_store_changed(self, change: StoreChange) -> None:
        """A change to memory (not a review proposal or answer) starts the clock again."""
        if self.enabled and change.operation != Operation.REVIEW:
            self._timer.start()

    def stop(self) -> None:
        """Never run again (the store this clock watched is closing)."""
        self.enabled = False
        self._timer.stop()

    @property
    def waiting(self) -> bool:
        return self._timer.isActive()

    @Slot()
    def _on_timer_timeout(self) -> None:
        self.runs += 1
        self._run()
