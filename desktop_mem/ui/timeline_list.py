"""A simple timeline: recent commits of the store with coloured event chips (ADD, UPDATE, ...).

A working list until the full timeline pane replaces it: newest first, "Load more" pages back
through history, selecting a commit shows its patch. Commits are read off the GUI thread.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Slot
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QListView,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.facade import MemoryEngine, StoreChange
from desktop_mem.engine.models import CommitInfo, EventType
from desktop_mem.ui.memory_model import when
from desktop_mem.ui.task_runner import TaskRunner

Index = QModelIndex | QPersistentModelIndex
COMMIT_ROLE = Qt.ItemDataRole.UserRole + 1
PAGE = 100
CHIP_COLOURS = {
    EventType.ADD: "#2e7d32", EventType.UPDATE: "#1565c0", EventType.DELETE: "#c62828",
    EventType.RESTORE: "#6a1b9a", EventType.EDIT: "#ef6c00", EventType.SUMMARY: "#00838f",
    EventType.EVICT: "#6d4c41", EventType.TURN: "#78909c",
}


def chips(commit: CommitInfo) -> list[tuple[str, int]]:
    """The commit's event types with counts, in a stable order."""
    counts: dict[EventType, int] = {}
    for event in commit.events:
        counts[event.type] = counts.get(event.type, 0) + 1
    return [(t.value, counts[t]) for t in EventType if t in counts]


class CommitListModel(QAbstractListModel):
    """Commits, newest first."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[CommitInfo] = []

    def set_commits(self, commits: list[CommitInfo]) -> None:
        """Replace the list."""
        self.beginResetModel()
        self._rows = list(commits)
        self.endResetModel()

    def append_commits(self, commits: list[CommitInfo]) -> None:
        """Add an older page at the end."""
        if not commits:
            return
        self.beginInsertRows(QModelIndex(), len(self._rows), len(self._rows) + len(commits) - 1)
        self._rows.extend(commits)
        self.endInsertRows()

    def commit_at(self, row: int) -> CommitInfo | None:
        """The commit in `row`, if any."""
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        commit = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return commit.subject
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{commit.sha[:10]} · {commit.author} · {when(commit.committed_at)}"
        if role == COMMIT_ROLE:
            return commit
        return None


class CommitDelegate(QStyledItemDelegate):
    """Paints a commit as: chips, subject, then time and short sha in muted text."""

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:  # noqa: N802
        return QSize(200, QFontMetrics(option.font).height() * 2 + 14)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        commit = index.data(COMMIT_ROLE)
        if not isinstance(commit, CommitInfo):
            super().paint(painter, option, index)
            return
        painter.save()
        style = option.widget.style() if option.widget else None
        if style is not None:
            style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, option, painter, option.widget)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        text_role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        rect = option.rect.adjusted(8, 5, -8, -5)
        metrics = QFontMetrics(option.font)
        line = metrics.height()
        x = rect.left()
        chip_font = QFont(option.font)
        chip_font.setPointSizeF(max(option.font.pointSizeF() - 1.5, 6.0))
        chip_font.setBold(True)
        chip_metrics = QFontMetrics(chip_font)
        for label, count in chips(commit):
            text = label if count == 1 else f"{label} ×{count}"
            width = chip_metrics.horizontalAdvance(text) + 10
            chip = QRect(x, rect.top() + 1, width, line - 2)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(CHIP_COLOURS.get(EventType(label), "#607d8b")))
            painter.drawRoundedRect(chip, 4, 4)
            painter.setPen(QColor("white"))
            painter.setFont(chip_font)
            painter.drawText(chip, Qt.AlignmentFlag.AlignCenter, text)
            x += width + 4
        painter.setFont(option.font)
        painter.setPen(option.palette.color(text_role))
        subject = QRect(x + 4, rect.top(), rect.right() - x - 4, line)
        painter.drawText(subject, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(commit.subject, Qt.TextElideMode.ElideRight, subject.width()))
        muted = option.palette.color(text_role)
        muted.setAlpha(150)
        painter.setPen(muted)
        origin = "" if commit.made_by_app else " · outside the app"
        detail = f"{when(commit.committed_at)} · {commit.sha[:8]}{origin}"
        painter.drawText(QRect(rect.left(), rect.top() + line + 2, rect.width(), line),
                         Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, detail)
        painter.restore()


class TimelineList(QWidget):
    """Recent commits (with chips) on the left, the selected commit's patch on the right."""

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._model = CommitListModel(self)
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.view = QListView(self)
        self.view.setModel(self._model)
        self.view.setItemDelegate(CommitDelegate(self.view))
        self.view.setUniformItemSizes(True)
        self.more_button = QPushButton("Load more", self)
        self.count_label = QLabel(self)
        self.count_label.setObjectName("mutedLabel")
        self.patch_view = QPlainTextEdit(self)
        self.patch_view.setReadOnly(True)
        self.patch_view.setObjectName("patchView")
        self.patch_view.setPlaceholderText("Select a change to see its diff")
        left = QWidget(self)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.view, 1)
        row = QHBoxLayout()
        row.addWidget(self.count_label, 1)
        row.addWidget(self.more_button)
        left_layout.addLayout(row)
        splitter = QSplitter(self)
        splitter.addWidget(left)
        splitter.addWidget(self.patch_view)
        splitter.setSizes([420, 480])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    def _connect_signals(self) -> None:
        self.more_button.clicked.connect(self.load_more)
        self.view.selectionModel().currentRowChanged.connect(self._on_view_current_row_changed)

    @property
    def model(self) -> CommitListModel:
        """The list's model."""
        return self._model

    def reload(self) -> None:
        """Read the newest page of history."""
        self._runner.submit(self._engine.history, PAGE, 0, key="timeline", serial=True,
                            on_result=self._on_first_page)

    @Slot()
    def load_more(self) -> None:
        """Append the next older page."""
        self._runner.submit(self._engine.history, PAGE, self._model.rowCount(), key="timeline", serial=True,
                            on_result=self._on_older_page)

    def on_store_changed(self, _change: StoreChange) -> None:
        """A new commit may exist: show it."""
        self.reload()

    def _on_first_page(self, commits: list[CommitInfo]) -> None:
        self._model.set_commits(commits)
        self._after_page(len(commits))

    def _on_older_page(self, commits: list[CommitInfo]) -> None:
        self._model.append_commits(commits)
        self._after_page(len(commits))

    def _after_page(self, got: int) -> None:
        self.more_button.setEnabled(got == PAGE)
        self.count_label.setText(f"{self._model.rowCount()} changes shown")

    @Slot(QModelIndex, QModelIndex)
    def _on_view_current_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        commit = self._model.commit_at(current.row())
        if commit is not None:
            self._runner.submit(self._engine.diff, commit.sha, key="timeline-diff", serial=True,
                                on_result=self.patch_view.setPlainText)
