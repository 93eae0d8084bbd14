"""The window's widgets that belong to one open store, beside the workspace: the AI tools' notice,
the review badge ("Review (N)"), the idle tidy-up's clock and the held-back secrets notice.

Each holds its engine, so all are built when a store opens and all go when it closes (a Settings
save reopens the store): one left behind showed a second "Review (N)" badge beside the new one,
and an old clock started a tidy-up the user had just turned off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QBoxLayout, QWidget

from desktop_mem.ui.chat.tool_notice import ToolNotice
from desktop_mem.ui.engine_bridge import EngineBridge
from desktop_mem.ui.held_back_notice import HeldBackNotice
from desktop_mem.ui.memories.idle_tidy import IdleTidy
from desktop_mem.ui.memories.review_pane import ReviewBadge
from desktop_mem.ui.status_bar import StatusBar
from desktop_mem.ui.task_runner import TaskRunner

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine


class StoreWidgets:
    """Builds one store's widgets into the window, wired to its bridge; `close()` removes them all."""

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, bridge: EngineBridge, *, window: QWidget,
                 status: StatusBar, column: QBoxLayout, tidy_up: Callable[[], None]) -> None:
        self._bridge = bridge
        self._status = status
        self._column = column
        self.tool_notice = ToolNotice(engine, runner, window)  # AI tools' (MCP) changes + Undo
        status.addWidget(self.tool_notice)
        self.review_badge = ReviewBadge(engine, runner, window)  # review mode: "Review (N)"
        status.addPermanentWidget(self.review_badge)
        minutes = 0 if engine.read_only else int(engine.config["memory.tidy_when_idle_minutes"])
        self.idle_tidy = IdleTidy(minutes, tidy_up, window)  # off by default
        # "Redact or keep?" for hand edits holding a likely secret, those found at start first.
        self.held_back_notice = HeldBackNotice(engine, runner, window)
        column.insertWidget(1, self.held_back_notice)
        self._connect_signals()

    def _links(self) -> tuple[tuple[SignalInstance, Callable[[Any], None]], ...]:
        """Each bridge signal and the slot here it feeds: connected at open, cut at close."""
        changed = self._bridge.store_changed
        return ((changed, self.tool_notice.on_store_changed), (changed, self.review_badge.on_store_changed),
                (changed, self.idle_tidy.on_store_changed), (changed, self.held_back_notice.on_store_changed),
                (self._bridge.secret_held_back, self.held_back_notice.on_held_back))

    def _connect_signals(self) -> None:
        for signal, slot in self._links():
            signal.connect(slot)

    def close(self) -> None:
        """The store closes: stop the clock, close the review list, take every widget away."""
        self.idle_tidy.stop()
        for signal, slot in self._links():
            signal.disconnect(slot)
        self.review_badge.close_review()
        self._status.removeWidget(self.tool_notice)
        self._status.removeWidget(self.review_badge)
        self._column.removeWidget(self.held_back_notice)
        for widget in (self.tool_notice, self.review_badge, self.held_back_notice):
            widget.hide()
            widget.deleteLater()
        self.idle_tidy.deleteLater()
