"""The Timeline tab: every commit of the store, what it did, old vs new, lineage, and put it back.

Commits are read page by page on the read pool as the list scrolls (`engine.timeline.page`, keyed so
the latest request wins); a store change loads only the commits newer than the top row. Actions
(event_actions.py) run on the single writer and make a new commit, which then shows at the top.
An action on something that changed since the event raises ConflictError: the pane says so and
asks, and only on Yes runs it again with the check off (the overwritten version stays in git).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from PySide6.QtCore import QEvent, QModelIndex, Qt, Signal, Slot
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QLabel,
    QListView,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.api import (
    MemoryEngine,
    TimelinePage,
    TimelineQuery,
)
from desktop_mem.engine.models import CommitInfo, StoreChange, TimelineEvent
from desktop_mem.ui.conversation_list import Conversation, load_conversations
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.timeline.diff_view import DiffView
from desktop_mem.ui.timeline.event_actions import EventActions
from desktop_mem.ui.timeline.lineage_view import LineageView
from desktop_mem.ui.timeline.timeline_filters import TimelineFilters
from desktop_mem.ui.timeline.timeline_model import CommitDelegate, CommitTimelineModel, EventListModel
from desktop_mem.ui.widgets.dialogs import Confirm, ask

PAGE_SIZE = 50
EVENT_ROWS = 4  # the event list of a commit shows at least this many rows


class _WrappingColumn(QWidget):
    """A column whose minimum height follows its width: its row of actions (a FlowLayout) wraps
    to a second row on a narrow pane, and the splitter above it, which knows no height-for-width,
    gave it one row's room, so the buttons covered the event list's last row (seen under Xvfb at
    the default 1200x720 on a 1366x768 screen)."""

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit(event.size().width())

    def event(self, event: QEvent) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Type.LayoutRequest:  # a child's minimum changed (the event rows)
            self._fit(self.width())
        return handled

    def _fit(self, width: int) -> None:
        layout = self.layout()
        if layout is not None and layout.hasHeightForWidth():
            need = layout.minimumHeightForWidth(width)
            if need > 0 and need != self.minimumHeight():
                self.setMinimumHeight(need)  # the splitter gives it that much on its next layout

class TimelinePane(QWidget):
    """Commits (filtered, paged) | the selected commit's events, their diff, lineage and actions."""

    page_loaded = Signal(int)  # rows shown after a page arrived
    action_finished = Signal(str)  # what was done, as told to the user
    action_failed = Signal(str)  # why nothing was done

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None, *,
                 confirm: Confirm = ask, page_size: int = PAGE_SIZE) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._confirm = confirm
        self._page_size = page_size
        self._generation = 0  # bumped on every reload; older page results are dropped
        self._key = f"timeline-{id(self)}"
        self.model = CommitTimelineModel(self)
        self.events_model = EventListModel(self)
        self._setup_ui()
        self._connect_signals()
        self.event_actions.update_for(None)

    # ---------------------------------------------------------------- setup

    def _setup_ui(self) -> None:
        self.filters = TimelineFilters(self)
        # the bar's controls, as the pane's own (tests and the window set them by these names)
        f = self.filters
        self.conversation_combo, self.types_button, self.type_actions = (
            f.conversation_combo, f.types_button, f.type_actions)
        self.dates_check, self.since_edit, self.until_edit = f.dates_check, f.since_edit, f.until_edit
        self.search_edit, self.only_check, self.source_combo = f.search_edit, f.only_check, f.source_combo

        self.commit_view = QListView(self)
        self.commit_view.setModel(self.model)
        self.commit_view.setItemDelegate(CommitDelegate(self.commit_view))
        self.commit_view.setUniformItemSizes(True)
        self.count_label = QLabel(self)
        self.count_label.setObjectName("mutedLabel")
        left = QWidget(self)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.commit_view, 1)
        left_layout.addWidget(self.count_label)

        self.event_view = QListView(self)
        self.event_view.setModel(self.events_model)
        # Long "old → new" lines end in "…" (the whole line is in the diff below), no sideways scroll.
        self.event_view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.event_view.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.event_view.setUniformItemSizes(True)
        self._fit_event_rows(self.event_view.fontMetrics().height() + 6)  # until rows give their height
        self.event_actions = EventActions(self._engine, self._runner, self._confirm, self.current_event,
                                          lambda: self.diff_view.details, self)
        # its parts, as the pane's own (tests reach them by these names)
        a = self.event_actions
        self.restore_button, self.revert_button, self.summary_button, self.open_button = (
            a.restore_button, a.revert_button, a.summary_button, a.open_button)
        self.status_label = a.status_label
        self.diff_view = DiffView(self._engine, self._runner, self)
        self.lineage_view = LineageView(self._engine, self._runner, self)
        self.detail_tabs = QTabWidget(self)
        self.detail_tabs.addTab(self.diff_view, "Diff")
        self.detail_tabs.addTab(self.lineage_view, "Lineage")
        top_right = _WrappingColumn(self)
        top_layout = QVBoxLayout(top_right)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.event_view, 1)
        top_layout.addWidget(self.event_actions)
        right = QSplitter(Qt.Orientation.Vertical, self)
        right.addWidget(top_right)
        right.addWidget(self.detail_tabs)
        right.setChildrenCollapsible(False)  # the event list never shrinks below EVENT_ROWS
        right.setStretchFactor(0, 1)
        right.setStretchFactor(1, 2)
        right.setSizes([220, 440])
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setSizes([440, 560])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.filters)
        layout.addWidget(splitter, 1)

    def _connect_signals(self) -> None:
        self.model.more_requested.connect(self._on_model_more_requested)
        self.commit_view.selectionModel().currentRowChanged.connect(self._on_commit_view_current_row_changed)
        self.event_view.selectionModel().currentRowChanged.connect(self._on_event_view_current_row_changed)
        self.filters.changed.connect(self.reload)
        self.event_actions.finished.connect(self.action_finished)
        self.event_actions.failed.connect(self.action_failed)

    # ---------------------------------------------------------------- public

    def query(self) -> TimelineQuery:
        """The filters as set in the bar."""
        return self.filters.query()

    @Slot()
    def reload(self) -> None:
        """Show the first page for the current filters (and refresh the conversation list)."""
        self.filters.search_timer.stop()
        self._generation += 1
        generation, query = self._generation, self.query()
        self.model.reset(query)
        self.events_model.set_commit(None, query)
        self._show_event(None, None)
        self.count_label.setText("Reading history…")
        self._runner.submit(self._engine.timeline.page, query, None, self._page_size, key=self._key,
                            on_result=lambda page: self._on_page(generation, page, first=True),
                            on_error=self._on_page_failed)
        self._runner.submit(load_conversations, self._engine, key=f"{self._key}-conversations",
                            on_result=self._on_conversations)

    def on_store_changed(self, _change: StoreChange) -> None:
        """A new commit may exist: put it (and any other new one) at the top."""
        if self.model.rowCount() == 0:  # nothing shown yet (or the first page is on its way)
            self.reload()
            return
        generation = self._generation
        self._runner.submit(self._engine.timeline.page, self.model.query, None, self._page_size,
                            key=f"{self._key}-newer", on_result=lambda page: self._on_newer(generation, page))
        self.lineage_view.reload()

    @property
    def snapshot_dialog(self) -> QWidget | None:
        """The last "Open as it was" dialog."""
        return self.event_actions.snapshot_dialog

    def current_commit(self) -> CommitInfo | None:
        """The selected commit."""
        return self.model.commit_at(self.commit_view.currentIndex().row())

    def current_event(self) -> TimelineEvent | None:
        """The selected event."""
        return self.events_model.event_at(self.event_view.currentIndex().row())

    def select_commit(self, row: int) -> None:
        """Select the commit in `row` (its first matching event then shows)."""
        self.commit_view.setCurrentIndex(self.model.index(row, 0))

    def select_event(self, row: int) -> None:
        """Select the event in `row` of the selected commit."""
        self.event_view.setCurrentIndex(self.events_model.index(row, 0))

    # ---------------------------------------------------------------- pages

    def _on_page(self, generation: int, page: TimelinePage, *, first: bool) -> None:
        if generation != self._generation:
            return
        if first:
            self.model.set_page(page)
        else:
            self.model.append_page(page)
        self._show_count()
        self.page_loaded.emit(self.model.rowCount())

    def _on_newer(self, generation: int, page: TimelinePage) -> None:
        if generation != self._generation:
            return
        if not self.model.prepend_newer(page):
            self.reload()
            return
        self._show_count()
        self.page_loaded.emit(self.model.rowCount())

    def _on_page_failed(self, error: BaseException) -> None:
        self.model.failed()
        self.count_label.setText(f"Could not read the history: {error}")

    def _on_conversations(self, conversations: list[Conversation]) -> None:
        """Offer the conversations by title (the id is the item's data and tooltip)."""
        self.events_model.titles = {c.id: c.title for c in conversations}
        self.diff_view.titles = self.events_model.titles
        self.filters.set_conversations(conversations)

    def _show_count(self) -> None:
        more = " · scroll for older" if self.model.cursor is not None else " · start of history"
        self.count_label.setText(f"{self.model.rowCount()} commits shown{more}")

    @Slot()
    def _on_model_more_requested(self) -> None:
        generation, cursor = self._generation, self.model.cursor
        self._runner.submit(self._engine.timeline.page, self.model.query, cursor, self._page_size,
                            key=self._key,
                            on_result=lambda page: self._on_page(generation, page, first=False),
                            on_error=self._on_page_failed)

    # ---------------------------------------------------------------- selection

    @Slot(QModelIndex, QModelIndex)
    def _on_commit_view_current_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        commit, query = self.model.commit_at(current.row()), self.model.query
        if commit is not None and commit.events_from_paths:
            # An import's 100,000 events are unpacked (and a filter read) on the read pool.
            self.events_model.set_commit(None, query)
            self._show_event(None, None)
            self.status_label.setText(f"Reading the {len(commit.events):,} files of this commit…")
            self._runner.submit(query.rows, commit, key=f"{self._key}-rows",
                                on_result=partial(self._on_rows, commit, query))
            return
        self.events_model.set_commit(commit, query)
        if commit is None:
            self._show_event(None, None)
            return
        self._fit_event_rows(self.event_view.sizeHintForRow(0))
        self.select_event(self.events_model.first_kept())

    def _on_rows(self, commit: CommitInfo, query: TimelineQuery,
                 rows: tuple[Sequence[TimelineEvent], frozenset[int] | None]) -> None:
        if self.current_commit() is not commit or self.model.query != query:
            return  # another commit (or filter) was chosen meanwhile
        self.events_model.show(*rows)
        self._fit_event_rows(self.event_view.sizeHintForRow(0))
        self.select_event(self.events_model.first_kept())

    def _fit_event_rows(self, row: int) -> None:
        """Keep room for EVENT_ROWS rows of `row` pixels (a row's real height is known once rows
        are shown: its swatch and padding made it ~36 px against the font's ~22, so a bulk
        commit's list, squeezed by the note above the diff, showed two rows at 768 px)."""
        if row > 0:
            self.event_view.setMinimumHeight(row * EVENT_ROWS + 2 * self.event_view.frameWidth())

    @Slot(QModelIndex, QModelIndex)
    def _on_event_view_current_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self._show_event(self.current_commit(), self.events_model.event_at(current.row()))

    def _show_event(self, commit: CommitInfo | None, event: TimelineEvent | None) -> None:
        self.event_actions.show_event(event)
        if commit is not None and commit.events_from_paths and not self.status_label.text():
            self.status_label.setText(f"This commit changed {len(commit.events):,} memory files: they are "
                                      "listed by file name; the diff below shows the selected one.")
        if commit is None or event is None:
            self.diff_view.clear()
            self.lineage_view.clear()
            return
        self.diff_view.show_event(commit, event)
        if event.memory_id and not event.hard_delete:
            self.lineage_view.show_memory(event.memory_id)
        else:
            self.lineage_view.clear("This memory's file was removed outright; it has no lineage now.")
