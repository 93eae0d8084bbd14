"""Item models of the memory browser: memories (a lazily exposed snapshot) and problems.

Both are read-only views over lists handed in by the GUI thread; `data()` never does I/O. The
memory model exposes rows in batches through canFetchMore/fetchMore so a 100k-row store opens
and scrolls without building 100k rows of view state at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor, QFont

from desktop_mem.engine.models import Memory, Problem
from desktop_mem.ui.row_table_model import RowTableModel

if TYPE_CHECKING:
    from desktop_mem.engine.api import ScoreBreakdown

Index = QModelIndex | QPersistentModelIndex
MEMORY_ROLE = Qt.ItemDataRole.UserRole + 1  # data(index, MEMORY_ROLE) -> Memory
FETCH_BATCH = 500
_DELETED_BRUSH = QBrush(QColor("#8a8f98"))


def when(value: datetime | None) -> str:
    """A timestamp in local time, minute precision (what a reader needs in a list)."""
    return value.astimezone().strftime("%Y-%m-%d %H:%M") if value is not None else ""


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# `_` only doubled and at word edges: snake_case_names keep their underscores.
_EMPHASIS = re.compile(r"(\*\*|(?<!\w)__|\*|~~|`)(?=\S)(.+?)(?<=\S)\1")
_LINE_MARK = re.compile(r"^(#{1,6}\s+|>\s*|[-*+]\s+(\[[ xX]\]\s+)?|\d+[.)]\s+)")


def plain(line: str) -> str:
    """One line of Markdown as a reader sees it: no **, `, #, list marks or link targets."""
    line = _LINE_MARK.sub("", line.strip())
    line = _LINK.sub(r"\1", line)
    for _ in range(3):  # nested emphasis, e.g. ***both***
        line = _EMPHASIS.sub(r"\2", line)
    return line


def first_line(text: str, limit: int = 160) -> str:
    """The first non-empty line of a memory as plain text, clipped for one table cell."""
    for line in text.splitlines():
        if line.strip():
            line = plain(line)
            return line if len(line) <= limit else line[: limit - 1] + "…"
    return ""


_TURN_TYPES = {"user": "your message", "assistant": "reply", "summary": "summary"}


def type_label(m: Memory) -> str:
    """One word for what a row is: a fact's kind (fact, preference, context), or the kind of
    turn ("your message", "reply") or "summary" (one column: the Text column keeps the width)."""
    return _TURN_TYPES.get(m.role, m.kind or "fact")


def day(value: datetime | None) -> str:
    """The date alone (the table's Created column; the minute is in its tooltip)."""
    return value.astimezone().strftime("%Y-%m-%d") if value is not None else ""


_Column = tuple[str, Callable[[Memory], str], Callable[[Memory], Any]]
COLUMNS: tuple[_Column, ...] = (
    ("Text", lambda m: first_line(m.text), lambda m: m.text.lower()),
    ("Conversation", lambda m: m.conversation_id, lambda m: m.conversation_id),
    ("Type", type_label, type_label),
    ("Created", lambda m: day(m.created_at), lambda m: m.created_at),
    ("Status", lambda m: "deleted" if m.deleted else "", lambda m: m.deleted),
)
CONVERSATION_COLUMN, CREATED_COLUMN, STATUS_COLUMN = 1, 3, 4
SCORE_COLUMN = len(COLUMNS)


class MemoryTableModel(QAbstractTableModel):
    """Memories as rows; in search mode an extra ranked "Score" column."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[Memory] = []
        self._scores: dict[str, ScoreBreakdown] = {}
        self._loaded = 0
        self._titles: dict[str, str] = {}  # conversation id -> title, shown instead of the slug

    # ------------------------------------------------------------- content

    def set_titles(self, titles: Mapping[str, str]) -> None:
        """Show these conversation titles in the Conversation column."""
        self._titles = dict(titles)
        if self._loaded:
            self.dataChanged.emit(self.index(0, CONVERSATION_COLUMN),
                                  self.index(self._loaded - 1, CONVERSATION_COLUMN))

    def set_memories(self, memories: Sequence[Memory],
                     scores: Mapping[str, ScoreBreakdown] | None = None) -> None:
        """Replace the snapshot (a list result or search results in rank order)."""
        self.beginResetModel()
        self._rows = list(memories)
        self._scores = dict(scores or {})
        self._loaded = min(len(self._rows), FETCH_BATCH)
        self.endResetModel()

    @property
    def searching(self) -> bool:
        """True when the rows are search results (they carry scores)."""
        return bool(self._scores)

    def total(self) -> int:
        """All rows of the snapshot, fetched or not."""
        return len(self._rows)

    def memory_at(self, row: int) -> Memory | None:
        """The memory shown in `row`, if any."""
        return self._rows[row] if 0 <= row < self._loaded else None

    def row_of(self, memory_id: str) -> int | None:
        """The row of a memory (fetching rows up to it when needed)."""
        for row, memory in enumerate(self._rows):
            if memory.id == memory_id:
                if row >= self._loaded:
                    self.beginInsertRows(QModelIndex(), self._loaded, row)
                    self._loaded = row + 1
                    self.endInsertRows()
                return row
        return None

    # ------------------------------------------------------ the model API

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else self._loaded

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(COLUMNS) + 1

    def canFetchMore(self, parent: Index) -> bool:  # noqa: N802
        return not parent.isValid() and self._loaded < len(self._rows)

    def fetchMore(self, parent: Index) -> None:  # noqa: N802
        if parent.isValid():
            return
        more = min(FETCH_BATCH, len(self._rows) - self._loaded)
        if more <= 0:
            return
        self.beginInsertRows(QModelIndex(), self._loaded, self._loaded + more - 1)
        self._loaded += more
        self.endInsertRows()

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or role != Qt.ItemDataRole.DisplayRole:
            return None
        if section == SCORE_COLUMN:
            return "Score"
        return COLUMNS[section][0] if 0 <= section < len(COLUMNS) else None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= self._loaded or index.column() > SCORE_COLUMN:
            return None
        memory = self._rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == SCORE_COLUMN:
                score = self._scores.get(memory.id)
                return f"{score.final:.3f}" if score is not None else ""
            if column == CONVERSATION_COLUMN:
                return self._titles.get(memory.conversation_id, memory.conversation_id)
            return COLUMNS[column][1](memory)
        if role == Qt.ItemDataRole.ToolTipRole and column == 0:
            text = memory.text
            return text if len(text) <= 600 else text[:599] + "…"
        if role == Qt.ItemDataRole.ToolTipRole and column == CONVERSATION_COLUMN:
            return memory.conversation_id
        if role == Qt.ItemDataRole.ToolTipRole and column == CREATED_COLUMN:
            return when(memory.created_at)
        if role == Qt.ItemDataRole.ForegroundRole and memory.deleted:
            return _DELETED_BRUSH
        if role == Qt.ItemDataRole.FontRole and memory.deleted:
            font = QFont()
            font.setItalic(True)
            return font
        if role == MEMORY_ROLE:
            return memory
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort the whole snapshot (not just the fetched rows) by a column."""
        if not 0 <= column <= SCORE_COLUMN:
            return
        reverse = order == Qt.SortOrder.DescendingOrder
        scores = self._scores
        key: Callable[[Memory], Any] = (
            (lambda m: scores[m.id].final if m.id in scores else -1.0) if column == SCORE_COLUMN
            else COLUMNS[column][2])
        self.layoutAboutToBeChanged.emit()
        old = self.persistentIndexList()
        old_ids = [self._rows[i.row()].id if i.row() < len(self._rows) else None for i in old]
        self._rows.sort(key=key, reverse=reverse)
        position = {m.id: row for row, m in enumerate(self._rows[: self._loaded])}
        new = [self.index(position[i], o.column()) if i in position else QModelIndex()
               for i, o in zip(old_ids, old, strict=True)]
        self.changePersistentIndexList(old, new)
        self.layoutChanged.emit()


class ProblemsModel(RowTableModel[Problem]):
    """Files that failed to parse: path and reason."""

    HEADERS = ("File", "Reason")

    def set_problems(self, problems: Sequence[Problem]) -> None:
        """Replace the list."""
        self.set_rows(problems)

    def problem_at(self, row: int) -> Problem | None:
        """The problem in `row`, if any."""
        return self.row_at(row)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        problem = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return problem.path if index.column() == 0 else problem.reason
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{problem.reason}\n\n{problem.hint}"
        return None
