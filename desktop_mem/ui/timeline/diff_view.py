"""Old vs new of one timeline event: word-level highlights, front-matter changes, the raw patch.

Texts are memory contents (untrusted): they are HTML-escaped into a document built here, and the
browsers never load a resource, so nothing in a memory can make the app fetch anything.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Literal

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, QUrl, Signal, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTableView,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.api import (
    DiffOp,
    FieldChange,
    FrontMatterError,
    MemoryEngine,
    event_texts,
    front_matter_changes,
    word_diff,
)
from desktop_mem.engine.models import CommitInfo, EventType, TimelineEvent
from desktop_mem.ui.memories.memory_model import when
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.names import scope_title
from desktop_mem.ui.widgets.row_table_model import RowTableModel

Index = QModelIndex | QPersistentModelIndex
_DELETED_STYLE = "background-color:#ffcdd2; color:#b71c1c; text-decoration:line-through;"
_INSERTED_STYLE = "background-color:#c8e6c9; color:#1b5e20;"
_BLOCK_STYLE = "white-space:pre-wrap;"
FIELD_ROWS = 5  # changed front-matter keys shown without scrolling


@dataclass(frozen=True)
class EventDetails:
    """What the diff view shows for one event, read off the GUI thread."""

    event: TimelineEvent
    old_text: str
    new_text: str
    fields: tuple[FieldChange, ...]
    fields_error: str | None
    summary_hash: str | None  # the summary as it is now (SUMMARY events): the restore's guard


def load_event_details(engine: MemoryEngine, event: TimelineEvent) -> EventDetails:
    """Read both sides of an event and compare their front matter (runs on the read pool)."""
    old_raw, new_raw = engine.timeline.event_bytes(event)
    fields: tuple[FieldChange, ...] = ()
    error = None
    try:
        fields = tuple(front_matter_changes(old_raw, new_raw))
    except FrontMatterError as exc:
        error = f"The front matter could not be read ({exc}); the raw git diff shows the change."
    summary_hash = None
    if event.type == EventType.SUMMARY and event.conversation_id:
        current = engine.summary(event.conversation_id)
        summary_hash = current.content_hash if current else None
    # A bulk commit's events carry no texts (they are classified from paths): the files read above do.
    old_text, new_text = event_texts(event, old_raw, new_raw)
    return EventDetails(event, old_text, new_text, fields, error, summary_hash)


def inline_html(ops: list[tuple[DiffOp, str]]) -> str:
    """One block: deletions struck through in red, insertions in green, the rest as is."""
    return _block(ops, {"equal", "delete", "insert"})


def side_html(ops: list[tuple[DiffOp, str]], side: Literal["old", "new"]) -> str:
    """One side of a side-by-side diff: the old text with its deletions, or the new one with insertions."""
    return _block(ops, {"equal", "delete"} if side == "old" else {"equal", "insert"})


def _block(ops: list[tuple[DiffOp, str]], keep: set[str]) -> str:
    parts = []
    for op, text in ops:
        if op not in keep:
            continue
        escaped = html.escape(text)
        if op == "delete":
            parts.append(f'<span style="{_DELETED_STYLE}">{escaped}</span>')
        elif op == "insert":
            parts.append(f'<span style="{_INSERTED_STYLE}">{escaped}</span>')
        else:
            parts.append(escaped)
    return f'<div style="{_BLOCK_STYLE}">{"".join(parts)}</div>'


class InertBrowser(QTextBrowser):
    """A read-only rich-text view that never loads an image, style sheet or link target."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)

    def loadResource(self, type: int, name: QUrl | str) -> Any:  # noqa: A002, N802
        """Nothing is ever fetched (see the module docstring)."""
        return None


class FieldChangeModel(RowTableModel[FieldChange]):
    """Front-matter keys that changed: field, how, value before, value after."""

    HEADERS = ("Field", "Change", "Before", "After")

    def set_changes(self, changes: tuple[FieldChange, ...]) -> None:
        """Replace the rows."""
        self.set_rows(changes)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        change = self._rows[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            values = (change.key, change.change, change.old or "—", change.new or "—")
            return values[index.column()] if 0 <= index.column() < len(values) else None
        return None


class DiffView(QWidget):
    """Old vs new of the selected event (inline or side by side), plus the raw git diff."""

    details_loaded = Signal(object)  # EventDetails, once shown
    raw_diff_loaded = Signal(str)

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self.titles: dict[str, str] = {}  # conversation id -> title (the timeline pane's)
        self._commit: CommitInfo | None = None
        self._details: EventDetails | None = None
        self._raw_sha: str | None = None
        self.html: dict[str, str] = {}  # what each browser was given: "inline", "old", "new"
        self._setup_ui()
        self._connect_signals()
        self.clear()

    def _setup_ui(self) -> None:
        self.title_label = QLabel(self)
        self.title_label.setWordWrap(True)
        self.title_label.setTextFormat(Qt.TextFormat.PlainText)
        self.side_check = QCheckBox("Side by side", self)
        self.raw_button = QPushButton("Show raw git diff", self)
        self.raw_button.setCheckable(True)
        self.inline_view = InertBrowser(self)
        self.old_view = InertBrowser(self)
        self.new_view = InertBrowser(self)
        self.sides = QSplitter(Qt.Orientation.Horizontal, self)
        self.sides.addWidget(self.old_view)
        self.sides.addWidget(self.new_view)
        self.text_stack = QStackedWidget(self)
        self.text_stack.addWidget(self.inline_view)
        self.text_stack.addWidget(self.sides)
        self.fields_model = FieldChangeModel(self)
        self.fields_table = QTableView(self)
        self.fields_table.setModel(self.fields_model)
        self.fields_table.verticalHeader().hide()
        self.fields_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.fields_table.horizontalHeader().setStretchLastSection(True)
        self.fields_label = QLabel(self)
        self.fields_label.setWordWrap(True)
        self.fields_label.setTextFormat(Qt.TextFormat.PlainText)
        readable = QWidget(self)
        readable_layout = QVBoxLayout(readable)
        readable_layout.setContentsMargins(0, 0, 0, 0)
        text_and_fields = QSplitter(Qt.Orientation.Vertical, readable)
        self._text_and_fields = text_and_fields
        text_and_fields.addWidget(self.text_stack)
        fields_box = QWidget(readable)
        fields_layout = QVBoxLayout(fields_box)
        self._fields_layout = fields_layout
        fields_layout.setContentsMargins(0, 0, 0, 0)
        fields_layout.addWidget(self.fields_label)
        fields_layout.addWidget(self.fields_table, 1)
        text_and_fields.addWidget(fields_box)
        text_and_fields.setSizes([260, 140])
        text_and_fields.setStretchFactor(0, 1)
        text_and_fields.setStretchFactor(1, 0)
        readable_layout.addWidget(text_and_fields)
        self.raw_view = QPlainTextEdit(self)
        self.raw_view.setReadOnly(True)
        self.raw_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.raw_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.stack = QStackedWidget(self)
        self.stack.addWidget(readable)
        self.stack.addWidget(self.raw_view)
        bar = QHBoxLayout()
        bar.addWidget(self.title_label, 1)
        bar.addWidget(self.side_check)
        bar.addWidget(self.raw_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.stack, 1)

    def _connect_signals(self) -> None:
        self.side_check.toggled.connect(self._on_side_check_toggled)
        self.raw_button.toggled.connect(self._on_raw_button_toggled)

    # ---------------------------------------------------------------- public

    @property
    def details(self) -> EventDetails | None:
        """What is shown now (None while loading or when nothing is selected)."""
        return self._details

    def clear(self) -> None:
        """Show nothing (no event selected)."""
        self._commit = None
        self._details = None
        self.title_label.setText("Select an event to see what changed")
        self._show_ops([])
        self.fields_model.set_changes(())
        self.fields_label.setText("")
        self.raw_button.setEnabled(False)
        self.raw_view.clear()
        self._raw_sha = None

    def show_event(self, commit: CommitInfo, event: TimelineEvent) -> None:
        """Load and show the event's old and new versions."""
        self._commit = commit
        self._details = None
        self.raw_button.setEnabled(True)
        self.title_label.setText(f"{event.type.value} in {scope_title(event.conversation_id, self.titles)} · "
                                 f"{commit.sha[:8]} · {when(commit.committed_at)}")
        self.title_label.setToolTip(event.path)
        self._runner.submit(load_event_details, self._engine, event, key=f"diff-{id(self)}",
                            on_result=self._on_details, on_error=self._on_details_failed)
        if self.raw_button.isChecked():
            self._load_raw()

    # ---------------------------------------------------------------- slots

    def _on_details(self, details: EventDetails) -> None:
        self._details = details
        self._show_ops(word_diff(details.old_text, details.new_text))
        self.fields_model.set_changes(details.fields)
        if details.fields_error:
            self.fields_label.setText(details.fields_error)
        else:
            self.fields_label.setText("Front matter: no changes" if not details.fields else "Front matter")
        self._fit_fields_table()
        self.details_loaded.emit(details)

    def _fit_fields_table(self) -> None:
        """Room for the changed keys, up to FIELD_ROWS of them, taken from the text above (the
        splitter's share alone showed about one row under a short text and a wide empty one)."""
        table = self.fields_table
        rows = min(self.fields_model.rowCount(), FIELD_ROWS)
        height = sum(table.rowHeight(r) or table.sizeHintForRow(r) for r in range(rows))
        header = table.horizontalHeader()
        wide = header.length() > table.viewport().width()  # a long value: a scroll bar under the rows
        scroll_bar = table.horizontalScrollBar().sizeHint().height() if wide else 0
        spacing = max(self._fields_layout.spacing(), 0)
        needed = (self.fields_label.sizeHint().height() + spacing + header.sizeHint().height() + height
                  + 2 * table.frameWidth() + scroll_bar)
        # a share of the splitter, not a minimum: a short window may still squeeze both
        splitter = self._text_and_fields
        total = sum(splitter.sizes())
        if total > 0 and splitter.sizes()[1] < needed:
            splitter.setSizes([max(total - needed, total // 3), min(needed, total - total // 3)])

    def _on_details_failed(self, error: BaseException) -> None:
        self.fields_label.setText(f"Could not read this change: {error}")

    def _show_ops(self, ops: list[tuple[DiffOp, str]]) -> None:
        self.html = {"inline": inline_html(ops), "old": side_html(ops, "old"), "new": side_html(ops, "new")}
        self.inline_view.setHtml(self.html["inline"])
        self.old_view.setHtml(self.html["old"])
        self.new_view.setHtml(self.html["new"])

    @Slot(bool)
    def _on_side_check_toggled(self, on: bool) -> None:
        self.text_stack.setCurrentIndex(1 if on else 0)

    @Slot(bool)
    def _on_raw_button_toggled(self, on: bool) -> None:
        self.raw_button.setText("Show readable diff" if on else "Show raw git diff")
        self.stack.setCurrentIndex(1 if on else 0)
        if on:
            self._load_raw()

    def _load_raw(self) -> None:
        if self._commit is None or self._raw_sha == self._commit.sha:
            return
        sha = self._commit.sha
        self._runner.submit(self._engine.diff, sha, key=f"raw-diff-{id(self)}",
                            on_result=lambda patch: self._on_raw(sha, patch),
                            on_error=self._on_raw_failed)

    def _on_raw_failed(self, error: BaseException) -> None:
        self.raw_view.setPlainText(f"Could not read the diff: {error}")

    def _on_raw(self, sha: str, patch: str) -> None:
        self._raw_sha = sha
        self.raw_view.setPlainText(patch)
        self.raw_diff_loaded.emit(patch)
