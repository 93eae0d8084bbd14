"""Item models of the memory browser: memories (a paged listing or a snapshot) and problems.

Both are read-only views over rows handed in by the GUI thread; `data()` never does I/O. A
listing holds only the pages fetched so far: canFetchMore/fetchMore ask the browser for the next
page (`more_requested`), which the engine reads on the task runner, and a sort asks for the
listing again in the new order (`sort_requested`), so a 100k store opens with one page of rows
and still sorts all of them (issue #25). Search results are a small snapshot, exposed in batches.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont

from desktop_mem.engine.models import Memory, Problem
from desktop_mem.ui.widgets.row_table_model import RowTableModel

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


def sort_key(column: int) -> Callable[[Memory], Any] | None:
    """What a listing sorted by this column is ordered by (None: the column does not sort)."""
    return COLUMNS[column][2] if 0 <= column < len(COLUMNS) else None


class MemoryTableModel(QAbstractTableModel):
    """Memories as rows; in search mode an extra ranked "Score" column."""

    more_requested = Signal(int)  # a paged listing needs the rows from this offset on
    sort_requested = Signal(int, object)  # a paged listing should be listed again: column, order

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[Memory] = []  # a listing: the pages fetched so far; a snapshot: all rows
        self._scores: dict[str, ScoreBreakdown] = {}
        self._loaded = 0
        self._total = 0  # rows in the whole listing or snapshot
        self._paged = False
        self._fetching = False
        self.page_size = FETCH_BATCH
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
        self._loaded = min(len(self._rows), self.page_size)
        self._total = len(self._rows)
        self._paged = self._fetching = False
        self.endResetModel()

    def set_listing(self, total: int, first_page: Sequence[Memory]) -> None:
        """Show a listing of `total` rows of which the first page is here; the rest is asked for
        page by page (`more_requested`) as the view scrolls."""
        self.beginResetModel()
        self._rows = list(first_page)
        self._scores = {}
        self._loaded = len(self._rows)
        self._total = max(total, len(self._rows))
        self._paged = True
        self._fetching = False
        self.endResetModel()

    def add_page(self, offset: int, memories: Sequence[Memory]) -> None:
        """The page asked for by `more_requested(offset)`; a page for an older listing (another
        offset) is ignored."""
        if not self._paged or offset != len(self._rows):
            return
        self._fetching = False
        if not memories:
            self._total = len(self._rows)  # the listing shrank meanwhile: nothing more to fetch
            return
        self.beginInsertRows(QModelIndex(), self._loaded, self._loaded + len(memories) - 1)
        self._rows.extend(memories)
        self._loaded = len(self._rows)
        self.endInsertRows()

    @property
    def paged(self) -> bool:
        """True when the rows are a listing fetched page by page."""
        return self._paged

    def fetched(self) -> int:
        """Rows this model holds now (a listing: the pages fetched so far)."""
        return len(self._rows)

    @property
    def searching(self) -> bool:
        """True when the rows are search results (they carry scores)."""
        return bool(self._scores)

    def total(self) -> int:
        """All rows of the listing or snapshot, fetched or not."""
        return self._total

    def memory_at(self, row: int) -> Memory | None:
        """The memory shown in `row`, if any."""
        return self._rows[row] if 0 <= row < self._loaded else None

    def row_of(self, memory_id: str) -> int | None:
        """The row of a memory among the rows held (exposing rows up to it when needed)."""
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
        if parent.isValid():
            return False
        return self._loaded < len(self._rows) or (
            self._paged and not self._fetching and len(self._rows) < self._total)

    def fetchMore(self, parent: Index) -> None:  # noqa: N802
        if parent.isValid():
            return
        more = min(self.page_size, len(self._rows) - self._loaded)
        if more <= 0:
            if self._paged and not self._fetching and len(self._rows) < self._total:
                self._fetching = True
                self.more_requested.emit(len(self._rows))
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
        """Sort every row by a column: a snapshot here, a listing by asking for it again in that
        order (`sort_requested`: the engine sorts all of it, not just the pages fetched)."""
        if not 0 <= column <= SCORE_COLUMN:
            return
        if self._paged:
            self.sort_requested.emit(column, order)
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
