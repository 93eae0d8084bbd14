"""A memory's past: its `replaced_by` chain both ways (LineageView), and one version as it was.

Reachable from the timeline, the memory browser and the editor through `show_lineage_dialog`.
The chain is read on the read pool; the view only shows the snapshot it gets back.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.api import Lineage, LineageStep, MemoryEngine
from desktop_mem.engine.models import CommitInfo, Memory
from desktop_mem.ui.memories.memory_model import first_line, when
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.row_table_model import RowTableModel

Index = QModelIndex | QPersistentModelIndex
STEP_ROLE = Qt.ItemDataRole.UserRole + 1
HISTORY_SHOWN = 4  # commits named in the note, newest first
HISTORY_READ = 20


def _commit_label(commit: CommitInfo | None) -> str:
    return f"{commit.sha[:8]} · {when(commit.committed_at)}" if commit else "—"


def _state(step: LineageStep) -> str:
    if step.missing:
        return "missing"
    return "live" if step.live else "replaced" if step.memory and step.memory.replaced_by else "deleted"


def _step_label(depth: int) -> str:
    if depth == 0:
        return "this memory"
    return f"replaced by it ({depth})" if depth < 0 else f"replaced it (+{depth})"


class LineageModel(RowTableModel[LineageStep]):
    """The steps of a chain, oldest first: the text first, then its step, state and commits; the
    memory's id is in the tooltip (ids first pushed the text behind a sideways scroll)."""

    HEADERS = ("Text", "Step", "State", "Created")

    def set_lineage(self, chain: Lineage | None) -> None:
        """Show `chain` (None clears)."""
        self.set_rows(chain.chain if chain else ())

    def step_at(self, row: int) -> LineageStep | None:
        """The step in `row`, if any."""
        return self.row_at(row)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        step = self._rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            created = when(step.created_in.committed_at) if step.created_in else "—"
            values = (first_line(step.text or "(text unknown)", 200), _step_label(step.depth), _state(step),
                      created)
            return values[column] if 0 <= column < len(values) else None
        if role == Qt.ItemDataRole.ToolTipRole:
            return (f"{step.text or '(text unknown)'}\n\nmemory {step.memory_id}\n"
                    f"created in {_commit_label(step.created_in)}\n"
                    f"replaced in {_commit_label(step.replaced_in)}")
        if role == Qt.ItemDataRole.FontRole and step.depth == 0:
            bold = QFont()
            bold.setBold(True)
            return bold
        if role == Qt.ItemDataRole.ForegroundRole and step.missing:
            return QColor("#9e9e9e")
        if role == STEP_ROLE:
            return step
        return None


class LineageView(QWidget):
    """The `replaced_by` chain through one memory, with the commit of each step."""

    loaded = Signal(object)  # Lineage

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._memory_id: str | None = None
        self._lineage: Lineage | None = None
        self._setup_ui()

    def _setup_ui(self) -> None:
        self.note_label = QLabel("Select an event to see its memory's lineage", self)
        self.note_label.setWordWrap(True)
        self.note_label.setTextFormat(Qt.TextFormat.PlainText)
        self.model = LineageModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.verticalHeader().hide()
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        # The text takes what the short columns leave and wraps there, its row as tall as it needs
        # (a chain has a few rows and the pane room below them): cut to "…" on one line, a fact
        # was unreadable while the pane stood empty (issue #39). Never a sideways scroll.
        self.table.setWordWrap(True)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(40)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.note_label)
        layout.addWidget(self.table, 1)

    @property
    def lineage(self) -> Lineage | None:
        """The chain shown now."""
        return self._lineage

    def show_memory(self, memory_id: str) -> None:
        """Load and show the chain through `memory_id`."""
        if memory_id == self._memory_id and self._lineage is not None:
            return
        self._memory_id = memory_id
        self._lineage = None
        self.model.set_lineage(None)
        self.note_label.setText(f"Reading the lineage of {memory_id[:12]}…")
        # Keyed per view: the pane's view and an open dialog never supersede each other.
        self._runner.submit(load_story, self._engine, memory_id, key=f"lineage-{id(self)}",
                            on_result=self._on_story_loaded, on_error=self._on_failed)

    def clear(self, note: str = "Select an event to see its memory's lineage") -> None:
        """Show no chain."""
        self._memory_id = None
        self._lineage = None
        self.model.set_lineage(None)
        self.note_label.setText(note)

    def reload(self) -> None:
        """Read the chain again (the store changed)."""
        memory_id, self._memory_id = self._memory_id, None
        if memory_id:
            self.show_memory(memory_id)

    def _on_story_loaded(self, story: tuple[Lineage, list[CommitInfo]]) -> None:
        chain, history = story
        self._on_loaded(chain, history)

    def _on_loaded(self, chain: Lineage, history: list[CommitInfo] | None = None) -> None:
        self._lineage = chain
        self.model.set_lineage(chain)
        changed = history is not None and len(history) > 1
        notes = [f"{len(chain.earlier)} earlier, {len(chain.later)} later" if chain.earlier or chain.later
                 else "Not replaced now" if changed else "Never replaced, and replaced nothing"]
        if history and changed:
            # the whole story, reverts and restores included (a revert undoes a replacement, so
            # the chain alone showed nothing beside the Timeline's UPDATE and Revert rows)
            steps = [f"{first_line(c.subject, 60)} ({when(c.committed_at)})" for c in history[:HISTORY_SHOWN]]
            more = f" ← {len(history) - HISTORY_SHOWN} earlier" if len(history) > HISTORY_SHOWN else ""
            notes.append("its history, newest first: " + " ← ".join(steps) + more)
        if chain.cycle:
            notes.append("the chain loops back on itself (edited by hand?)")
        if chain.dangling:
            notes.append("replaced_by names a memory that no longer exists: " + ", ".join(chain.dangling))
        self.note_label.setText("; ".join(notes))
        self.loaded.emit(chain)

    def _on_failed(self, error: BaseException) -> None:
        self.model.set_lineage(None)
        self.note_label.setText(f"No lineage: {error}")


def load_story(engine: MemoryEngine, memory_id: str) -> tuple[Lineage, list[CommitInfo]]:
    """Run in a worker: the chain through a memory and the commits that touched its file."""
    return engine.timeline.lineage(memory_id), engine.memory_history(memory_id, limit=HISTORY_READ)


def show_lineage_dialog(parent: QWidget | None, runner: TaskRunner, engine: MemoryEngine,
                        memory_id: str) -> QDialog:
    """Open (non-modal) a dialog with the lineage of `memory_id`; returns it (it deletes itself on close)."""
    dialog = QDialog(parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.setWindowTitle(f"Lineage of {memory_id[:12]}")
    view = LineageView(engine, runner, dialog)
    view.setObjectName("lineageView")
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, dialog)
    buttons.rejected.connect(dialog.reject)
    layout = QVBoxLayout(dialog)
    layout.addWidget(view, 1)
    layout.addWidget(buttons)
    dialog.resize(820, 320)
    view.show_memory(memory_id)
    dialog.show()
    return dialog


def show_memory_at_dialog(parent: QWidget | None, memory: Memory, sha: str) -> QDialog:
    """Show (read-only, non-modal) a memory as it was at commit `sha`."""
    dialog = QDialog(parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.setWindowTitle(f"{memory.id[:12]} as it was at {sha[:8]}")
    facts = [f"path: {memory.path}", f"conversation: {memory.conversation_id}",
             f"created: {when(memory.created_at)}"]
    facts += [f"{label}: {value}" for label, value in (
        ("kind", memory.kind), ("source", memory.source), ("updated", when(memory.updated_at)),
        ("deleted", when(memory.deleted_at)), ("replaced by", memory.replaced_by)) if value]
    header = QLabel("\n".join(facts), dialog)
    header.setTextFormat(Qt.TextFormat.PlainText)
    text = QPlainTextEdit(dialog)
    text.setObjectName("memoryAtText")
    text.setReadOnly(True)
    text.setPlainText(memory.text)
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, dialog)
    buttons.rejected.connect(dialog.reject)
    layout = QVBoxLayout(dialog)
    layout.addWidget(header)
    layout.addWidget(text, 1)
    layout.addWidget(buttons)
    dialog.resize(560, 360)
    dialog.show()
    return dialog
