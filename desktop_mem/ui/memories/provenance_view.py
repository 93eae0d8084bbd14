"""“Why do I know this?”: a memory's source turns, the commit that wrote it, where it was sent.

Read on the read pool (engine.provenance); the dialog shows the snapshot it gets back. Picking a
source turn emits `turn_opened`, and the editor opens that turn.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QListWidgetItem, QPushButton, QWidget

from desktop_mem.engine.api import MemoryEngine, Provenance, sent_summary
from desktop_mem.engine.models import Memory
from desktop_mem.ui.memories.memory_model import first_line, when
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.list_dialog import ListDialog

TURN_ROLE = Qt.ItemDataRole.UserRole + 1


class ProvenanceDialog(ListDialog):
    """Shows where one memory came from; non-modal, deletes itself on close."""

    turn_opened = Signal(object)  # Memory: the source turn the user asked to open
    loaded = Signal(object)  # Provenance

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, memory_id: str,
                 parent: QWidget | None = None) -> None:
        super().__init__("Why do I know this?", parent)
        self._engine = engine
        self._runner = runner
        self._memory_id = memory_id
        self._setup_ui()
        self._connect_signals()
        self.summary_label.setText("Reading where this memory came from…")
        runner.submit(engine.provenance, memory_id, key=f"provenance-{id(self)}",
                      on_result=self._on_loaded, on_error=self._on_failed)

    def _setup_ui(self) -> None:
        self.summary_label, self.turns_list = self.note_label, self.list  # what they hold here
        self.summary_label.setTextFormat(Qt.TextFormat.PlainText)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.open_button = QPushButton("Open source turn", self)
        self.open_button.setEnabled(False)
        self._finish_layout(self.open_button, 560, 340)

    def _connect_signals(self) -> None:
        self.open_button.clicked.connect(self._on_open_button_clicked)
        self.turns_list.itemActivated.connect(self._on_turns_list_item_activated)
        self.turns_list.currentRowChanged.connect(self._on_turns_list_current_row_changed)

    def _on_loaded(self, found: Provenance) -> None:
        lines = [f"“{first_line(found.memory.text, 100)}”", f"How: {found.how}"]
        if found.commit is not None:
            c = found.commit
            lines.append(f"Written in commit {c.sha[:8]} · {when(c.committed_at)} · "
                         f"{first_line(c.subject, 80)}")
        else:
            lines.append("No commit records it (git versioning is off, or it was never committed)")
        if found.missing_turns:
            lines.append(f"{len(found.missing_turns)} source turn(s) no longer exist: "
                         + ", ".join(t[:8] for t in found.missing_turns))
        lines.append(sent_summary(list(found.sent_to)).capitalize())
        lines += [f"  {s.label()} · last {when(s.last)}" for s in found.sent_to]
        self.summary_label.setText("\n".join(lines))
        self.turns_list.clear()
        for turn in found.turns:
            item = QListWidgetItem(f"{when(turn.created_at)} · {turn.conversation_id} · "
                                   f"{first_line(turn.text, 160)}")
            item.setData(TURN_ROLE, turn)
            self.turns_list.addItem(item)
        if found.turns:
            self.turns_list.setCurrentRow(0)
        else:
            self.turns_list.addItem("No chat turn: " + found.how)
        self.loaded.emit(found)

    def _on_failed(self, error: BaseException) -> None:
        self.summary_label.setText(f"Could not read where this memory came from: {error}")

    @Slot(int)
    def _on_turns_list_current_row_changed(self, row: int) -> None:
        item = self.turns_list.item(row) if row >= 0 else None
        self.open_button.setEnabled(item is not None and isinstance(item.data(TURN_ROLE), Memory))

    @Slot(QListWidgetItem)
    def _on_turns_list_item_activated(self, item: QListWidgetItem) -> None:
        turn = item.data(TURN_ROLE)
        if isinstance(turn, Memory):
            self.turn_opened.emit(turn)

    @Slot()
    def _on_open_button_clicked(self) -> None:
        item = self.turns_list.currentItem()
        if item is not None:
            self._on_turns_list_item_activated(item)


def show_provenance_dialog(parent: QWidget | None, runner: TaskRunner, engine: MemoryEngine,
                           memory_id: str) -> ProvenanceDialog:
    """Open (non-modal) the provenance of `memory_id`; returns the dialog."""
    dialog = ProvenanceDialog(engine, runner, memory_id, parent)
    dialog.show()
    return dialog
