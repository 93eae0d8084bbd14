"""The Timeline tab: every commit of the store, what it did, old vs new, lineage, and put it back.

Commits are read page by page on the read pool as the list scrolls (`engine.timeline.page`, keyed so
the latest request wins); a store change loads only the commits newer than the top row. Actions
run on the single writer and make a new commit, which then shows at the top. An action on
something that changed since the event raises ConflictError: the pane says so and asks, and only
on Yes runs it again with the check off (the overwritten version stays in git).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, Qt, Signal, Slot
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QLabel,
    QListView,
    QPushButton,
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
from desktop_mem.engine.models import CommitInfo, ConflictError, EventType, Memory, StoreChange, TimelineEvent
from desktop_mem.ui.conversation_list import Conversation, load_conversations
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.timeline.diff_view import DiffView
from desktop_mem.ui.timeline.lineage_view import LineageView, show_memory_at_dialog
from desktop_mem.ui.timeline.timeline_filters import TimelineFilters
from desktop_mem.ui.timeline.timeline_model import CommitDelegate, CommitTimelineModel, EventListModel
from desktop_mem.ui.widgets.dialogs import Confirm, ask
from desktop_mem.ui.widgets.flow_layout import FlowLayout

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
        # Events an action was done for (Restore, Revert): their button stays off, so a second
        # press cannot ask a confusing "changed since" question about our own action.
        self._done: dict[tuple[str, str | None, EventType], str] = {}
        self.model = CommitTimelineModel(self)
        self.events_model = EventListModel(self)
        self.snapshot_dialog: Any = None  # the last "Open as it was" dialog
        self._setup_ui()
        self._connect_signals()
        self._update_actions(None)

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
        actions = FlowLayout()
        for button in (self.restore_button, self.revert_button, self.summary_button, self.open_button):
            actions.addWidget(button)
        self.diff_view = DiffView(self._engine, self._runner, self)
        self.lineage_view = LineageView(self._engine, self._runner, self)
        self.detail_tabs = QTabWidget(self)
        self.detail_tabs.addTab(self.diff_view, "Diff")
        self.detail_tabs.addTab(self.lineage_view, "Lineage")
        top_right = _WrappingColumn(self)
        top_layout = QVBoxLayout(top_right)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.event_view, 1)
        top_layout.addLayout(actions)
        top_layout.addWidget(self.status_label)
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
        self.restore_button.clicked.connect(self._on_restore_button_clicked)
        self.revert_button.clicked.connect(self._on_revert_button_clicked)
        self.summary_button.clicked.connect(self._on_summary_button_clicked)
        self.open_button.clicked.connect(self._on_open_button_clicked)

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
        self.status_label.clear()
        self._update_actions(event)
        if commit is not None and commit.events_from_paths and not self.status_label.text():
            self.status_label.setText(f"This commit changed {len(commit.events):,} memory files: they are "
                                      "listed by file name; the diff below shows the selected one.")
        if event is not None and event.memory_id and self.restore_button.isEnabled():
            # Restore only what is still deleted: a memory restored since is live again.
            self._runner.submit(self._engine.get, event.memory_id, key=f"{self._key}-live",
                                on_result=partial(self._on_event_memory_read, event),
                                on_error=lambda _exc: None)
        if commit is None or event is None:
            self.diff_view.clear()
            self.lineage_view.clear()
            return
        self.diff_view.show_event(commit, event)
        if event.memory_id and not event.hard_delete:
            self.lineage_view.show_memory(event.memory_id)
        else:
            self.lineage_view.clear("This memory's file was removed outright; it has no lineage now.")

    def _on_event_memory_read(self, event: TimelineEvent, memory: Memory) -> None:
        if event != self.current_event() or memory.deleted:
            return
        self.restore_button.setEnabled(False)
        self.restore_button.setToolTip("This memory is live now (it was restored since); nothing to restore.")

    def _update_actions(self, event: TimelineEvent | None) -> None:
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

    # ---------------------------------------------------------------- filters

    # ---------------------------------------------------------------- actions

    @Slot()
    def _on_restore_button_clicked(self) -> None:
        event = self.current_event()
        if event is not None:
            self._act("Restored", self._engine.timeline.restore_deleted, event, forced={"force": True})

    @Slot()
    def _on_revert_button_clicked(self) -> None:
        event = self.current_event()
        if event is not None:
            self._act("Reverted the replacement", self._engine.timeline.revert_replacement, event,
                      forced={"force": True})

    @Slot()
    def _on_summary_button_clicked(self) -> None:
        event, details = self.current_event(), self.diff_view.details
        if event is None or not event.conversation_id:
            return
        # Guard with the summary as it was when this event was shown; "do it anyway" drops the guard.
        shown_hash = details.summary_hash if details and details.event == event else None
        self._act("Restored the summary version", self._engine.timeline.restore_summary_version, event,
                  event.conversation_id, forced={"expected_hash": None}, expected_hash=shown_hash)

    @Slot()
    def _on_open_button_clicked(self) -> None:
        event = self.current_event()
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
        event = self.current_event()
        self._runner.submit_write(fn, *args, **kwargs,
                                  on_result=lambda _result: self._on_action_done(done, event),
                                  on_error=lambda exc: self._on_action_error(exc, retry))

    def _on_action_done(self, done: str, event: TimelineEvent | None = None) -> None:
        message = f"{done}."
        if event is not None and event.type in (EventType.DELETE, EventType.EVICT, EventType.UPDATE):
            self._done[_event_key(event)] = done
            if event == self.current_event():
                self._update_actions(event)
        self.status_label.setText(message)
        self.action_finished.emit(message)

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
        self.action_failed.emit(message)


def _event_key(event: TimelineEvent) -> tuple[str, str | None, EventType]:
    return event.commit, event.memory_id, event.type
