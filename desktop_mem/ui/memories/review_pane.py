"""Review mode in the window: a badge with the number of waiting changes, and the review list.

`ReviewBadge` sits in the status bar and shows "Review (N)" while N proposals wait (hidden at 0);
it re-counts after every store change (a proposal arrives with its turn's commit). Clicking it
opens `ReviewDialog`: one row per proposal, Accept / Edit & accept / Reject, each one commit on
the writer thread. Reads run on the read pool; nothing here touches the engine on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QInputDialog, QListWidgetItem, QPushButton, QWidget

from desktop_mem.engine.api import MemoryEngine, Proposal
from desktop_mem.engine.models import Decision, StoreChange
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.list_dialog import ListDialog

PROPOSAL_ROLE = Qt.ItemDataRole.UserRole + 1


def _load(engine: MemoryEngine) -> tuple[list[Proposal], list[str]]:
    return engine.proposals()


class ReviewBadge(QPushButton):
    """"Review (N)": hidden while nothing waits; opens the review list."""

    counted = Signal(int)

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self.count = 0
        self.dialog: ReviewDialog | None = None
        self.setObjectName("reviewBadge")
        self.setFlat(True)
        self.setToolTip("Proposed changes to memory wait for you (review mode, tidy-up)")
        self.hide()
        self.clicked.connect(self.open_review)
        self.refresh()

    def refresh(self) -> None:
        """Count the waiting proposals (on the read pool)."""
        self._runner.submit(_load, self._engine, key=f"review-count-{id(self)}",
                            on_result=self._on_loaded, on_error=lambda _e: None)

    def on_store_changed(self, _change: StoreChange) -> None:
        """Any commit may bring or settle a proposal (a turn, an accept, a sync)."""
        self.refresh()

    def _on_loaded(self, loaded: tuple[list[Proposal], list[str]]) -> None:
        found, broken = loaded
        self.count = len(found)
        self.setText(f"Review ({self.count})" + (" ⚠" if broken else ""))
        self.setVisible(bool(found or broken))
        self.counted.emit(self.count)

    @Slot()
    def open_review(self) -> None:
        """Open (or raise) the review list."""
        if self.dialog is None:
            self.dialog = ReviewDialog(self._engine, self._runner, self.window())
            self.dialog.changed.connect(self.refresh)
            self.dialog.finished.connect(self._on_dialog_finished)
        self.dialog.show()

    def close_review(self) -> None:
        """Close the review list, if open (its store is closing: an answer would go nowhere)."""
        if self.dialog is not None:
            dialog, self.dialog = self.dialog, None
            dialog.close()  # deletes it (WA_DeleteOnClose)

    def _on_dialog_finished(self, _result: int) -> None:
        self.dialog = None


class ReviewDialog(ListDialog):
    """The waiting proposals; accept, edit & accept, or reject one at a time (one commit each)."""

    changed = Signal()  # a proposal was accepted or rejected
    loaded = Signal(int)

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__("Review memory changes", parent)
        self._engine = engine
        self._runner = runner
        self._setup_ui()
        self._connect_signals()
        self.reload()

    def _setup_ui(self) -> None:
        self.accept_button = QPushButton("Accept", self)
        self.edit_button = QPushButton("Edit && accept…", self)
        self.reject_button = QPushButton("Reject", self)
        row = QHBoxLayout()
        row.addWidget(self.accept_button)
        row.addWidget(self.edit_button)
        row.addWidget(self.reject_button)
        row.addStretch(1)
        self._finish_layout(row, 640, 360)
        self._set_busy(True)

    def _connect_signals(self) -> None:
        self.accept_button.clicked.connect(self._on_accept_button_clicked)
        self.edit_button.clicked.connect(self._on_edit_button_clicked)
        self.reject_button.clicked.connect(self._on_reject_button_clicked)
        self.list.currentRowChanged.connect(lambda _row: self._set_busy(False))

    def reload(self) -> None:
        """Read the proposals again (read pool)."""
        self.note_label.setText("Reading what waits for review…")
        self._runner.submit(_load, self._engine, key=f"review-list-{id(self)}",
                            on_result=self._on_loaded, on_error=self._on_failed)

    def current(self) -> Proposal | None:
        """The selected proposal."""
        item = self.list.currentItem()
        value = item.data(PROPOSAL_ROLE) if item is not None else None
        return value if isinstance(value, Proposal) else None

    def _on_loaded(self, loaded: tuple[list[Proposal], list[str]]) -> None:
        found, broken = loaded
        self.list.clear()
        for proposal in found:
            item = QListWidgetItem(f"{proposal.describe()}\n    {proposal.created_at[:16]} · "
                                   f"{proposal.conversation_id}")
            item.setData(PROPOSAL_ROLE, proposal)
            self.list.addItem(item)
        notes = [f"{len(found)} proposed change(s) wait for you. Each answer is one commit."
                 if found else "Nothing waits for review."]
        notes += [f"Unreadable (left as it is): {b}" for b in broken]
        self.note_label.setText("\n".join(notes))
        if found:
            self.list.setCurrentRow(0)
        self._set_busy(False)
        self.loaded.emit(len(found))

    def _on_failed(self, error: BaseException) -> None:
        self.note_label.setText(f"Could not read the review list: {error}")

    def _set_busy(self, busy: bool) -> None:
        chosen = self.current()
        for button in (self.accept_button, self.reject_button):
            button.setEnabled(not busy and chosen is not None and not self._engine.read_only)
        self.edit_button.setEnabled(not busy and chosen is not None and chosen.event != Decision.DELETE
                                    and not self._engine.read_only)

    @Slot()
    def _on_accept_button_clicked(self) -> None:
        if (chosen := self.current()) is not None:
            self._answer(self._engine.accept_proposal, chosen.id)

    @Slot()
    def _on_edit_button_clicked(self) -> None:
        chosen = self.current()
        if chosen is None:
            return
        text, ok = QInputDialog.getMultiLineText(self, "Edit and accept", chosen.describe(), chosen.text)
        if ok and text.strip():
            self._answer(self._engine.accept_proposal, chosen.id, text)

    @Slot()
    def _on_reject_button_clicked(self) -> None:
        if (chosen := self.current()) is not None:
            self._answer(self._engine.reject_proposal, chosen.id)

    def _answer(self, action: Callable[..., object], *args: object) -> None:
        self._set_busy(True)
        self.note_label.setText("Saving…")
        self._runner.submit_write(action, *args, on_result=self._on_answered, on_error=self._on_answer_failed)

    def _on_answered(self, _result: object) -> None:
        self.changed.emit()
        self.reload()

    def _on_answer_failed(self, error: BaseException) -> None:
        self.note_label.setText(f"Not applied: {error}")
        self._set_busy(False)
