"""The timeline's actions on the selected event: Restore, Revert replacement, Restore this summary
version and Open as it was, with the line that says what they did.

Actions run on the single writer and make a new commit. An action on something that changed
since the event raises ConflictError: the row asks, and only on Yes runs it again with the check
off (the overwritten version stays in git).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QDialog, QLabel, QPushButton, QVBoxLayout, QWidget

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.models import ConflictError, EventType, Memory, TimelineEvent
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.timeline.diff_view import EventDetails
from desktop_mem.ui.timeline.lineage_view import show_memory_at_dialog
from desktop_mem.ui.widgets.dialogs import Confirm
from desktop_mem.ui.widgets.flow_layout import FlowLayout


class EventActions(QWidget):
    """The buttons for one timeline event, enabled for what it allows, and their outcome line."""

    finished = Signal(str)  # what was done, as told to the user
    failed = Signal(str)  # why nothing was done

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, confirm: Confirm,
                 current_event: Callable[[], TimelineEvent | None],
                 shown_details: Callable[[], EventDetails | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._confirm = confirm
        self._current_event = current_event
        self._shown_details = shown_details  # the diff below: the summary version shown
        self._key = f"timeline-actions-{id(self)}"
        # Events an action was done for (Restore, Revert): their button stays off, so a second
        # press cannot ask a confusing "changed since" question about our own action.
        self._done: dict[tuple[str, str | None, EventType], str] = {}
        self.snapshot_dialog: QDialog | None = None  # the last "Open as it was" dialog
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.restore_button = QPushButton("Restore", self)
        self.revert_button = QPushButton("Revert replacement", self)
        self.summary_button = QPushButton("Restore this summary version", self)
        self.open_button = QPushButton("Open as it was", self)
        self.status_label = QLabel(self)
        self.status_label.setWordWrap(True)
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)
        # a line is kept for the action's message: the Diff/Lineage tabs below no longer jump
        # when "Restored." comes or goes
        self.status_label.setText("Restored.")
        self.status_label.setMinimumHeight(self.status_label.minimumSizeHint().height())
        self.status_label.clear()
        buttons = FlowLayout()
        for button in (self.restore_button, self.revert_button, self.summary_button, self.open_button):
            buttons.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(buttons)
        layout.addWidget(self.status_label)

    def _connect_signals(self) -> None:
        self.restore_button.clicked.connect(self._on_restore_button_clicked)
        self.revert_button.clicked.connect(self._on_revert_button_clicked)
        self.summary_button.clicked.connect(self._on_summary_button_clicked)
        self.open_button.clicked.connect(self._on_open_button_clicked)

    def show_event(self, event: TimelineEvent | None) -> None:
        """Offer what `event` allows (nothing for None); a deleted memory is checked to be still
        deleted on the read pool before Restore stays on."""
        self.status_label.clear()
        self.update_for(event)
        if event is not None and event.memory_id and self.restore_button.isEnabled():
            # Restore only what is still deleted: a memory restored since is live again.
            self._runner.submit(self._engine.get, event.memory_id, key=f"{self._key}-live",
                                on_result=partial(self._on_event_memory_read, event),
                                on_error=lambda _exc: None)

    def update_for(self, event: TimelineEvent | None) -> None:
        """Enable the buttons `event` allows; an action already done for it stays off."""
        self.restore_button.setToolTip("")
        self.revert_button.setToolTip("")
        kind = event.type if event else None
        writable = not self._engine.read_only
        self.restore_button.setEnabled(writable and kind in (EventType.DELETE, EventType.EVICT))
        self.revert_button.setEnabled(writable and kind == EventType.UPDATE)
        self.summary_button.setEnabled(writable and kind == EventType.SUMMARY)
        self.open_button.setEnabled(event is not None and bool(event.memory_id))
        done = self._done.get(_event_key(event)) if event is not None else None
        if done is not None:
            for button in (self.restore_button, self.revert_button):
                if button.isEnabled():
                    button.setEnabled(False)
                    button.setToolTip(f"{done} already (see the newest commit).")
            self.status_label.setText(f"{done} already.")

    def _on_event_memory_read(self, event: TimelineEvent, memory: Memory) -> None:
        if event != self._current_event() or memory.deleted:
            return
        self.restore_button.setEnabled(False)
        self.restore_button.setToolTip("This memory is live now (it was restored since); nothing to restore.")

    @Slot()
    def _on_restore_button_clicked(self) -> None:
        event = self._current_event()
        if event is not None:
            self._act("Restored", self._engine.timeline.restore_deleted, event, forced={"force": True})

    @Slot()
    def _on_revert_button_clicked(self) -> None:
        event = self._current_event()
        if event is not None:
            self._act("Reverted the replacement", self._engine.timeline.revert_replacement, event,
                      forced={"force": True})

    @Slot()
    def _on_summary_button_clicked(self) -> None:
        event, details = self._current_event(), self._shown_details()
        if event is None or not event.conversation_id:
            return
        # Guard with the summary as it was when this event was shown; "do it anyway" drops the guard.
        shown_hash = details.summary_hash if details and details.event == event else None
        self._act("Restored the summary version", self._engine.timeline.restore_summary_version, event,
                  event.conversation_id, forced={"expected_hash": None}, expected_hash=shown_hash)

    @Slot()
    def _on_open_button_clicked(self) -> None:
        event = self._current_event()
        if event is None or not event.memory_id:
            return
        # A file removed outright is not in its own commit: show it as it was just before.
        sha = f"{event.commit}^" if event.hard_delete else event.commit
        self._runner.submit(self._engine.timeline.memory_at, event.memory_id, sha,
                            key=f"{self._key}-memory-at",
                            on_result=lambda memory: self._on_memory_at(memory, sha),
                            on_error=lambda exc: self.status_label.setText(f"Could not open it: {exc}"))

    def _on_memory_at(self, memory: Memory, sha: str) -> None:
        self.snapshot_dialog = show_memory_at_dialog(self, memory, sha)

    def _act(self, done: str, fn: Callable[..., Any], *args: Any, forced: dict[str, Any] | None,
             **kwargs: Any) -> None:
        """Run an action on the writer. `forced` are the arguments that switch its check off:
        on ConflictError the user is asked, and on Yes the action runs again with them."""
        retry: Callable[[], None] | None = None
        if forced is not None:
            retry = lambda: self._act(done, fn, *args, forced=None, **{**kwargs, **forced})  # noqa: E731

        self.status_label.setText("Working…")
        event = self._current_event()
        self._runner.submit_write(fn, *args, **kwargs,
                                  on_result=lambda _result: self._on_action_done(done, event),
                                  on_error=lambda exc: self._on_action_error(exc, retry))

    def _on_action_done(self, done: str, event: TimelineEvent | None = None) -> None:
        message = f"{done}."
        if event is not None and event.type in (EventType.DELETE, EventType.EVICT, EventType.UPDATE):
            self._done[_event_key(event)] = done
            if event == self._current_event():
                self.update_for(event)
        self.status_label.setText(message)
        self.finished.emit(message)

    def _on_action_error(self, error: BaseException, retry: Callable[[], None] | None = None) -> None:
        if isinstance(error, ConflictError) and retry is not None:
            if self._confirm(self, "Changed since", f"{error}\n\nIt changed since this commit. "
                             "Do it anyway? (The current version stays in the history.)"):
                retry()
                return
            message = "Nothing was changed."
        else:
            message = f"Nothing was changed: {error}"
        self.status_label.setText(message)
        self.failed.emit(message)


def _event_key(event: TimelineEvent) -> tuple[str, str | None, EventType]:
    return event.commit, event.memory_id, event.type
