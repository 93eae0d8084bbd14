"""Item models of the timeline pane: commits (paged as the view scrolls) and one commit's events.

The commit model holds a snapshot of the pages loaded so far; `data()` never reads git. When the
view scrolls to the end, Qt calls `fetchMore`, which only asks (signal `more_requested`); the
pane reads the next page on the read pool and hands it back with `append_page`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from desktop_mem.engine.api import (
    SOURCE_APP,
    SOURCE_OUTSIDE,
    TimelineCursor,
    TimelinePage,
    TimelineQuery,
    commit_source,
)
from desktop_mem.engine.models import CommitInfo, EventType, TimelineEvent
from desktop_mem.ui.memories.memory_model import first_line, when
from desktop_mem.ui.widgets.names import scope_title

Index = QModelIndex | QPersistentModelIndex
COMMIT_ROLE = Qt.ItemDataRole.UserRole + 1
CHIPS_ROLE = Qt.ItemDataRole.UserRole + 2  # [(type name, count)] in EventType order
BY_HAND_ROLE = Qt.ItemDataRole.UserRole + 3  # True for changes made outside the app
EVENT_ROLE = Qt.ItemDataRole.UserRole + 4
SOURCE_ROLE = Qt.ItemDataRole.UserRole + 5  # "Claude Desktop · MCP" for a change an AI tool made
BY_HAND = "by hand"
CHIP_COLOURS: dict[EventType, str] = {
    EventType.ADD: "#2e7d32", EventType.UPDATE: "#1565c0", EventType.DELETE: "#c62828",
    EventType.RESTORE: "#6a1b9a", EventType.EDIT: "#ef6c00", EventType.SUMMARY: "#00838f",
    EventType.EVICT: "#6d4c41", EventType.TURN: "#78909c",
}


# Commits the app made only to record edits done elsewhere (external editor, while closed).
_RECORDED_OPERATIONS = frozenset({"external-edit", "sync"})


def by_hand(commit: CommitInfo) -> str | None:
    """Why the commit counts as made by hand (None for the app's own changes)."""
    if not commit.made_by_app:
        return "committed outside desktop-mem (plain git)"
    if commit.trailers.get("Operation", "").lower() in _RECORDED_OPERATIONS:
        return "files edited outside desktop-mem, recorded by it"
    return None


def source_chip(commit: CommitInfo) -> str | None:
    """The source chip of a commit made for another tool (MCP): its client's name and the source."""
    source = commit_source(commit.trailers)
    if source in (SOURCE_APP, SOURCE_OUTSIDE):
        return None
    client = commit.trailers.get("Client")
    return f"{client} · {source.upper()}" if client else source.upper()


def chips(commit: CommitInfo) -> list[tuple[str, int]]:
    """The commit's event types with their counts, in EventType order (what the row shows)."""
    counts = commit.type_counts()  # a bulk commit's are counted without building its events
    return [(t.value, counts[t]) for t in EventType if t in counts]


class CommitTimelineModel(QAbstractListModel):
    """Commits of the (filtered) timeline, newest first, grown page by page."""

    more_requested = Signal()  # the view wants the next page; the pane loads it

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[CommitInfo] = []
        self._cursor: TimelineCursor | None = None
        self._loading = False
        self.query = TimelineQuery()
        # Chips by sha, counted once: a bulk commit has tens of thousands of events, and every
        # repaint of its row counted them again on the GUI thread.
        self._chips: dict[str, list[tuple[str, int]]] = {}

    # ------------------------------------------------------------ snapshot

    def reset(self, query: TimelineQuery) -> None:
        """Forget every row (new filters); the first page is being loaded."""
        self.beginResetModel()
        self._rows = []
        self._chips = {}
        self._cursor = None
        self.query = query
        self._loading = True
        self.endResetModel()

    def set_page(self, page: TimelinePage) -> None:
        """Show the first page (replacing whatever was shown)."""
        self.beginResetModel()
        self._rows = list(page.commits)
        self._cursor = page.next_cursor
        self._loading = False
        self.endResetModel()

    def append_page(self, page: TimelinePage) -> None:
        """Add an older page at the end."""
        self._loading = False
        self._cursor = page.next_cursor
        known = {c.sha for c in self._rows}
        commits = [c for c in page.commits if c.sha not in known]
        if not commits:
            return
        self.beginInsertRows(QModelIndex(), len(self._rows), len(self._rows) + len(commits) - 1)
        self._rows.extend(commits)
        self.endInsertRows()

    def prepend_newer(self, page: TimelinePage) -> bool:
        """Put commits newer than the top row above it; False when the top row is not in `page`

        (more new commits than a page, or history rewritten): the caller then reloads.
        """
        if not self._rows:
            self.set_page(page)
            return True
        top = self._rows[0].sha
        shas = [c.sha for c in page.commits]
        if top not in shas:
            return False
        newer = page.commits[: shas.index(top)]
        if newer:
            self.beginInsertRows(QModelIndex(), 0, len(newer) - 1)
            self._rows[:0] = newer
            self.endInsertRows()
        return True

    def failed(self) -> None:
        """A page could not be read: stop asking for more until the next reload."""
        self._loading = False
        self._cursor = None

    # ------------------------------------------------------------ access

    @property
    def loading(self) -> bool:
        """True while a page is being read."""
        return self._loading

    @property
    def cursor(self) -> TimelineCursor | None:
        """Where the next page starts (None: history has ended)."""
        return self._cursor

    def commit_at(self, row: int) -> CommitInfo | None:
        """The commit in `row`, if any."""
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def chips_of(self, commit: CommitInfo) -> list[tuple[str, int]]:
        """`chips(commit)`, counted once per commit."""
        found = self._chips.get(commit.sha)
        if found is None:
            found = self._chips[commit.sha] = chips(commit)
        return found

    def row_of(self, sha: str) -> int:
        """The row showing commit `sha`, or -1."""
        return next((i for i, c in enumerate(self._rows) if c.sha == sha), -1)

    # ------------------------------------------------------------ Qt model

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def canFetchMore(self, parent: Index) -> bool:  # noqa: N802
        return not parent.isValid() and not self._loading and self._cursor is not None

    def fetchMore(self, parent: Index) -> None:  # noqa: N802
        if self.canFetchMore(parent):
            self._loading = True  # one request at a time; append_page clears it
            self.more_requested.emit()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        commit = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return commit.subject
        if role == Qt.ItemDataRole.ToolTipRole:
            why = by_hand(commit)
            origin = f"\n{BY_HAND}: {why}" if why else ""
            return f"{commit.sha[:10]} · {commit.author} · {when(commit.committed_at)}{origin}"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            kinds = " ".join(t for t, _ in self.chips_of(commit))
            tool = source_chip(commit)
            return f"{when(commit.committed_at)} {commit.subject} {kinds}" + (
                f" {BY_HAND}" if by_hand(commit) else "") + (f" by {tool}" if tool else "")
        if role == COMMIT_ROLE:
            return commit
        if role == CHIPS_ROLE:
            return self.chips_of(commit)
        if role == BY_HAND_ROLE:
            return by_hand(commit) is not None
        if role == SOURCE_ROLE:
            return source_chip(commit)
        return None


class EventListModel(QAbstractListModel):
    """The events of the selected commit; events the filters leave out are dimmed."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._events: Sequence[TimelineEvent] = ()
        self._matching: frozenset[int] | None = None  # positions the filters keep; None: all
        self.titles: dict[str, str] = {}  # conversation id -> title, shown instead of the slug

    def set_commit(self, commit: CommitInfo | None, query: TimelineQuery) -> None:
        """Show the events of `commit` (None clears), read here: for small commits (a bulk
        commit's rows are read off the GUI thread, `TimelineQuery.rows`, and given to `show`)."""
        if commit is None:
            self.show((), None)
        else:
            self.show(*query.rows(commit))

    def show(self, events: Sequence[TimelineEvent], kept: frozenset[int] | None) -> None:
        """Show `events` (as `TimelineQuery.rows` gave them), dimming those not in `kept`."""
        self.beginResetModel()
        # A bulk commit's events are built as rows are drawn (history.timeline.PathEvents, its
        # own unpacked copy: they go with it when another commit is shown). By position, not
        # `e in kept`: that compared every event with every kept one (an import's 1,741 events
        # froze the GUI thread for seconds).
        self._events = events
        self._matching = kept
        self.endResetModel()

    def first_kept(self) -> int:
        """The first row the filters keep (0 when none, or without filters)."""
        return min(self._matching, default=0) if self._matching is not None else 0

    def event_at(self, row: int) -> TimelineEvent | None:
        """The event in `row`, if any."""
        return self._events[row] if 0 <= row < len(self._events) else None

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._events)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._events):
            return None
        event = self._events[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            conversation = scope_title(event.conversation_id, self.titles)
            return f"{event.type.value}  ·  {conversation}  ·  {describe(event)}"
        if role == Qt.ItemDataRole.DecorationRole:
            return QColor(CHIP_COLOURS[event.type])
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{event.path}\nmemory {event.memory_id or '?'}"
        left_out = self._matching is not None and index.row() not in self._matching
        if role == Qt.ItemDataRole.ForegroundRole and left_out:
            return QColor("#9e9e9e")
        if role == EVENT_ROLE:
            return event
        return None


def describe(event: TimelineEvent) -> str:
    """One line saying what the event did to which text."""
    old = first_line(event.old_text or "", 80)
    new = first_line(event.new_text or "", 80)
    if event.type == EventType.UPDATE:
        given = event.valid_to if event.valid_to and "T" not in event.valid_to else None
        return f"{old} → {new}" + (f" (from {given})" if given else "")
    if event.type == EventType.EDIT and event.validity_changed and old == new:
        since, until = event.valid_from or "?", event.valid_to or "now"
        return f"{new} (true {since[:10]} – {until[:10]})"
    if event.type == EventType.EDIT and old != new:
        return f"{old} → {new}"
    if event.type == EventType.ADD and event.valid_from and "T" not in event.valid_from:
        return f"{new} (true since {event.valid_from})"
    if event.type == EventType.DELETE and event.hard_delete:
        return f"{old} (file removed)"
    # An event of a bulk commit (CommitInfo.events_from_paths) has no texts: name its file.
    return new or old or event.path.rpartition("/")[2]


SELECTED_FILL = QColor("#dbe6fb")  # as QListView::item:selected in style.qss


class CommitDelegate(QStyledItemDelegate):
    """Paints a commit row: coloured event chips and the subject, then time, sha and "by hand"."""

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:  # noqa: N802
        return QSize(200, QFontMetrics(option.font).height() * 2 + 14)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        commit = index.data(COMMIT_ROLE)
        if not isinstance(commit, CommitInfo):
            super().paint(painter, option, index)
            return
        painter.save()
        widget = option.widget
        if widget is not None:
            style = widget.style()
            style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, option, painter, widget)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        if selected:
            # The light selection of style.qss, with dark text on it (the palette's
            # HighlightedText is white: unreadable on light blue).
            painter.fillRect(option.rect, SELECTED_FILL)
        text_role = QPalette.ColorRole.Text
        palette = option.palette
        rect = option.rect.adjusted(8, 5, -8, -5)
        font = option.font
        metrics = QFontMetrics(font)
        line = metrics.height()
        counted = index.data(CHIPS_ROLE)
        x = self._paint_chips(painter, font, counted if isinstance(counted, list) else chips(commit),
                              rect.left(), rect.top() + 1, line - 2)
        painter.setFont(font)
        painter.setPen(palette.color(text_role))
        subject = QRect(x + 4, rect.top(), max(rect.right() - x - 4, 0), line)
        painter.drawText(subject, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(commit.subject, Qt.TextElideMode.ElideRight, subject.width()))
        detail = f"{when(commit.committed_at)} · {commit.sha[:8]} · {commit.author}"
        second = QRect(rect.left(), rect.top() + line + 2, rect.width(), line)
        if by_hand(commit):
            x = self._paint_chip(painter, font, BY_HAND, QColor("#ffb300"), QColor("black"),
                                 second.left(), second.top() + 1, line - 2)
            second.setLeft(x + 4)
        tool = source_chip(commit)
        if tool:
            x = self._paint_chip(painter, font, tool, QColor("#37474f"), QColor("white"),
                                 second.left(), second.top() + 1, line - 2)
            second.setLeft(x + 4)
        muted = palette.color(text_role)
        muted.setAlpha(150)
        painter.setFont(font)
        painter.setPen(muted)
        painter.drawText(second, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, detail)
        painter.restore()

    def _paint_chips(self, painter: QPainter, font: QFont, items: list[tuple[str, int]],
                     x: int, y: int, height: int) -> int:
        for label, count in items:
            text = label if count == 1 else f"{label} ×{count}"
            x = self._paint_chip(painter, font, text, QColor(CHIP_COLOURS[EventType(label)]),
                                 QColor("white"), x, y, height) + 4
        return x

    @staticmethod
    def _paint_chip(painter: QPainter, font: QFont, text: str, fill: QColor, ink: QColor,
                    x: int, y: int, height: int) -> int:
        """Draw one rounded chip at (x, y); returns its right edge."""
        chip_font = QFont(font)
        chip_font.setPointSizeF(max(font.pointSizeF() - 1.5, 6.0))
        chip_font.setBold(True)
        width = QFontMetrics(chip_font).horizontalAdvance(text) + 10
        chip = QRect(x, y, width, height)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(fill)
        painter.drawRoundedRect(chip, 4, 4)
        painter.setPen(ink)
        painter.setFont(chip_font)
        painter.drawText(chip, Qt.AlignmentFlag.AlignCenter, text)
        return x + width
