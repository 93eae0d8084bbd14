"""The memory browser: search (keywords + meaning), filters, a sortable table, and problems.

An empty search box lists memories a page at a time (engine.list_page: the first page and the
total, then the next page as the table scrolls, sorted by the engine over every memory); typed
text runs the read path (engine.search, keyword and dense fused) keyed "latest wins", so only the
newest query's results reach the table. All engine calls go through the TaskRunner; what they
run is in browser_loader.py, the filter row in browser_filters.py.

A store that opens on the last session's first page (store_session.open_store) shows that page at
once, marked "loading", while the first listing waits in the read pool for the catalog; a sort,
filter, search or scroll meanwhile waits the same way, with the same note, and the answer over the
whole store replaces the page (issue #36).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from PySide6.QtCore import QDate, QDateTime, QModelIndex, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLineEdit,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.api import MemoryEngine, MemoryPage
from desktop_mem.engine.models import Memory, StoreChange
from desktop_mem.ui.memories.browser_filters import BrowserFilters
from desktop_mem.ui.memories.browser_loader import (
    DEFAULT_LISTING,
    BrowserPage,
    BrowserQuery,
    load_more,
    load_page,
    same_listing,
)
from desktop_mem.ui.memories.memory_model import (
    SCORE_COLUMN,
    STATUS_COLUMN,
    MemoryTableModel,
    ProblemsModel,
)
from desktop_mem.ui.task_runner import TaskRunner

SEARCH_DELAY_MS = 250
LOADING_NOTE = "loading the store…"  # while a page from the last session is shown
# Fixed widths of the short columns (Conversation, Type, Created, Status, Score): the Text
# column stretches over the rest and so keeps most of the table at 1280 px.
# Narrow enough that with "Include deleted" (the Status column) Text keeps ~half at 1280 px: at
# 130/90/90/64 it fell to 41% of the table (issue #39).
COLUMN_WIDTHS = ((1, 112), (2, 80), (3, 84), (4, 58), (5, 56))


class MemoryBrowser(QWidget):
    """Search, filter and pick memories; shows files that failed to parse."""

    memory_activated = Signal(object)  # Memory: the user picked a row
    selection_cleared = Signal()  # the selected memory is not among the rows shown any more
    problem_activated = Signal(object)  # Problem
    page_loaded = Signal(int)  # rows in the new snapshot (not emitted for a provisional page)

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self.last_lineage_dialog: QWidget | None = None  # the dialog "Show lineage" opened last
        self._model = MemoryTableModel(self)
        self._problems = ProblemsModel(self)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._selected_id: str | None = None
        self._listed: BrowserQuery | None = None  # the query the shown listing answers
        self._provisional = False  # the rows are the last session's first page (`refresh_over`)
        self._first_page: MemoryPage | None = None
        self._setup_ui()
        self._connect_signals()

    # ---------------------------------------------------------------- setup

    def _setup_ui(self) -> None:
        self.search_edit = QLineEdit(self)
        self.search_edit.setPlaceholderText("Search memories by meaning and keywords (Ctrl+F)")
        self.search_edit.setClearButtonEnabled(True)
        self.filters = BrowserFilters(self)
        # the row's controls, as the pane's own (the window and tests reach them by these names)
        f = self.filters
        self.conversation_combo, self.role_combo, self.kind_combo = (
            f.conversation_combo, f.role_combo, f.kind_combo)
        self.date_check, self.since_edit, self.until_edit = f.date_check, f.since_edit, f.until_edit
        self.deleted_check, self.as_of_check, self.as_of_edit = f.deleted_check, f.as_of_check, f.as_of_edit
        self.all_ranked_check, self.count_label = f.all_ranked_check, f.count_label

        self.table = QTableView(self)
        self.table.setModel(self._model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setSortingEnabled(True)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        # Fixed row heights: the view never measures 100k rows.
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(24)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSortIndicatorShown(True)
        # No arrow until the user sorts: a list is newest first and search results are in rank
        # order, neither of which is a column's order.
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        for column, width in COLUMN_WIDTHS:
            self.table.setColumnWidth(column, width)
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnHidden(STATUS_COLUMN, True)  # shown with "Include deleted"

        self.problems_table = QTableView(self)
        self.problems_table.setModel(self._problems)
        self.problems_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.problems_table.verticalHeader().hide()
        self.problems_table.horizontalHeader().setStretchLastSection(True)
        self.problems_table.setColumnWidth(0, 360)

        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.table, "Memories")
        # Right-click a memory: its replaced_by chain, both ways (the timeline's lineage view).
        self.lineage_action = QAction("Show lineage", self.table)
        self.table.addAction(self.lineage_action)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.tabs.addTab(self.problems_table, "Problems")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.search_edit)
        layout.addWidget(self.filters)
        layout.addWidget(self.tabs, 1)
        from desktop_mem.ui.memories.memory_health import MemoryHealthBar

        self.health_bar = MemoryHealthBar(self._engine, self._runner, self)
        layout.addWidget(self.health_bar)

    def _connect_signals(self) -> None:
        self.search_edit.textChanged.connect(self._on_search_edit_text_changed)
        self.search_edit.returnPressed.connect(self.refresh)
        self._search_timer.timeout.connect(self.refresh)
        for combo in (self.conversation_combo, self.role_combo, self.kind_combo):
            combo.currentIndexChanged.connect(self.refresh)
        self.date_check.toggled.connect(self._on_date_check_toggled)
        self.since_edit.dateChanged.connect(self.refresh)
        self.until_edit.dateChanged.connect(self.refresh)
        self.deleted_check.toggled.connect(self.refresh)
        self.as_of_check.toggled.connect(self._on_as_of_check_toggled)
        self.as_of_edit.dateTimeChanged.connect(self.refresh)
        self.all_ranked_check.toggled.connect(self.refresh)
        self.table.selectionModel().currentRowChanged.connect(self._on_table_current_row_changed)
        self.problems_table.doubleClicked.connect(self._on_problems_table_double_clicked)
        self.lineage_action.triggered.connect(self._on_lineage_action_triggered)
        self._model.more_requested.connect(self._on_model_more_requested)
        self._model.sort_requested.connect(self._on_model_sort_requested)

    @Slot()
    def _on_lineage_action_triggered(self) -> None:
        from desktop_mem.ui.timeline.lineage_view import show_lineage_dialog

        memory = self._model.memory_at(self.table.currentIndex().row())
        if memory is not None:
            self.last_lineage_dialog = show_lineage_dialog(self, self._runner, self._engine, memory.id)

    # --------------------------------------------------------------- public

    @property
    def model(self) -> MemoryTableModel:
        """The table's model (tests and the window read it)."""
        return self._model

    @property
    def problems_model(self) -> ProblemsModel:
        """The problems table's model."""
        return self._problems

    def focus_search(self) -> None:
        """Ctrl+F: put the cursor in the search box."""
        self.search_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_edit.selectAll()

    def set_conversations(self, conversations: Sequence[str | tuple[str, str]]) -> None:
        """Offer these conversations, (id, title) or ids, in the filter by title (keeps the current
        choice if still there); the table shows their titles too."""
        rows = [c if isinstance(c, tuple) else (c, c) for c in conversations]
        self._model.set_titles(dict(rows))
        self.filters.set_conversations(rows)

    def select_memory(self, memory_id: str) -> None:
        """Select a memory's row when it is in the current snapshot."""
        self._selected_id = memory_id
        row = self._model.row_of(memory_id)
        if row is not None:
            self.table.selectRow(row)
            self.table.scrollTo(self._model.index(row, 0))

    def view_state(self) -> tuple[BrowserQuery, str | None]:
        """What the pane shows (search, filters, sort) and the selected memory: kept across a
        Settings save, which reopens the store (restore_view)."""
        return self.query(), self._selected_id

    def restore_view(self, state: tuple[BrowserQuery, str | None]) -> None:
        """Show a view_state() again: the same search, filters and selection."""
        query, selected = state
        widgets = (self.search_edit, self.conversation_combo, self.role_combo, self.kind_combo,
                   self.deleted_check, self.all_ranked_check, self.date_check, self.as_of_check)
        for widget in widgets:
            widget.blockSignals(True)
        try:
            self.search_edit.setText(query.text)
            conv = query.conversation_id
            if conv is not None and self.conversation_combo.findData(conv) < 0:
                # its title comes with set_conversations, which keeps this choice
                self.conversation_combo.addItem(conv, conv)
            for combo, value in ((self.conversation_combo, query.conversation_id),
                                 (self.role_combo, query.role), (self.kind_combo, query.kind)):
                combo.setCurrentIndex(max(combo.findData(value), 0))
            self.deleted_check.setChecked(query.include_deleted)
            self.all_ranked_check.setChecked(query.show_all_ranked)
            self.date_check.setChecked(query.since is not None)
            self._on_date_check_toggled(query.since is not None)
            if query.since is not None and query.until is not None:
                self.since_edit.setDate(QDate(query.since.astimezone().date()))
                self.until_edit.setDate(QDate(query.until.astimezone().date()))
            self.as_of_check.setChecked(query.as_of is not None)
            self._on_as_of_check_toggled(query.as_of is not None)
            if query.as_of is not None:
                self.as_of_edit.setDateTime(QDateTime.fromSecsSinceEpoch(int(query.as_of.timestamp())))
        finally:
            for widget in widgets:
                widget.blockSignals(False)
        if query.sort_column >= 0:
            order = Qt.SortOrder.DescendingOrder if query.descending else Qt.SortOrder.AscendingOrder
            self.table.horizontalHeader().setSortIndicator(query.sort_column, order)
        self._selected_id = selected
        self.refresh()

    def query(self) -> BrowserQuery:
        """The search text and filters as shown."""
        since, until = self.filters.dates()
        return BrowserQuery(
            text=self.search_edit.text().strip(),
            conversation_id=self.conversation_combo.currentData(),
            role=self.role_combo.currentData(),
            kind=self.kind_combo.currentData(),
            since=since, until=until,
            include_deleted=self.deleted_check.isChecked(),
            show_all_ranked=self.all_ranked_check.isChecked(),
            as_of=self.filters.as_of(),
            sort_column=self.table.horizontalHeader().sortIndicatorSection(),
            descending=self.table.horizontalHeader().sortIndicatorOrder() == Qt.SortOrder.DescendingOrder,
            page_size=self._model.page_size,
        )

    @property
    def provisional(self) -> bool:
        """True while the rows are the last session's first page, until the store's own listing."""
        return self._provisional

    def refresh_over(self, first_page: MemoryPage) -> None:
        """`refresh`, showing `first_page` (the last session's, while the catalog loads) until the
        answer comes, if the pane lists everything newest first: what it is a page of."""
        self._first_page = first_page
        self.refresh()

    @Slot()
    def refresh(self) -> None:
        """Ask for a new snapshot; only the newest request's answer is shown."""
        self._search_timer.stop()
        first_page, self._first_page = self._first_page, None
        query = self.query()
        if self._listed is not None and same_listing(query, self._listed):
            query = replace(query, keep=self._model.fetched())  # a change: stay where the reader is
        if first_page is not None and same_listing(query, DEFAULT_LISTING):
            self._on_page_loaded(BrowserPage(first_page.memories, {}, (), total=first_page.total), query,
                                 provisional=True)
        self.count_label.setText(LOADING_NOTE if self._provisional
                                 else "searching…" if query.text else "loading…")
        self._runner.submit(load_page, self._engine, query, key="browser-page",
                            on_result=lambda page: self._on_page_loaded(page, query),
                            on_error=self._on_page_failed)

    def on_store_changed(self, change: StoreChange) -> None:
        """Something changed in the store (this app or an outside editor): reload soon."""
        self._search_timer.start()
        self.health_bar.on_store_changed(change)

    # ---------------------------------------------------------------- slots

    @Slot(str)
    def _on_search_edit_text_changed(self, _text: str) -> None:
        self._search_timer.start()  # search-as-you-type, debounced

    @Slot(bool)
    def _on_date_check_toggled(self, on: bool) -> None:
        self.since_edit.setEnabled(on)
        self.until_edit.setEnabled(on)
        self.refresh()

    @Slot(bool)
    def _on_as_of_check_toggled(self, on: bool) -> None:
        self.as_of_edit.setEnabled(on)
        self.deleted_check.setEnabled(not on)  # as of a moment, a tombstone shows when it was live
        self.refresh()

    def _on_page_loaded(self, page: BrowserPage, query: BrowserQuery | None = None, *,
                        provisional: bool = False) -> None:
        self._provisional = provisional
        header = self.table.horizontalHeader()
        paged = page.total >= 0
        same = paged and query is not None and self._listed is not None and same_listing(query, self._listed)
        place = self.table.verticalScrollBar().value()
        self._listed = query if paged else None
        if paged:
            self._model.set_listing(page.total, page.memories)  # already in the header's order
            # the same listing read again after a change keeps its place; another order or
            # filter starts at its first rows
            self.table.verticalScrollBar().setValue(place if same else 0)
        else:
            self._model.set_memories(page.memories, page.scores)
        if page.searched:
            header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # rank order
        elif not paged and header.sortIndicatorSection() >= 0:
            self._model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
        self.table.setColumnHidden(SCORE_COLUMN, not page.searched)
        any_deleted = page.any_deleted or any(m.deleted for m in page.memories)
        self.table.setColumnHidden(STATUS_COLUMN, not any_deleted)
        self._problems.set_problems(page.problems)
        self.tabs.setTabText(1, f"Problems ({len(page.problems)})" if page.problems else "Problems")
        searching = page.searched
        noun = "match" if searching else "memory"
        plural = "matches" if searching else "memories"
        total = page.total if paged else len(page.memories)
        more = f" · {page.below_cutoff:,} more ranked below the cut-off" if page.below_cutoff else ""
        if provisional:
            more = f" · {LOADING_NOTE}"
        self.count_label.setText(f"{total:,} {noun if total == 1 else plural}{more}")
        self.all_ranked_check.setVisible(searching)
        if self._selected_id is not None:
            self.select_memory(self._selected_id)
            if self._model.row_of(self._selected_id) is None and not paged:
                # a search or an as-of list without it: the editor shows nothing, not a memory
                # the list does not hold (a paged listing may hold it further down)
                self._selected_id = None
                self.table.clearSelection()
                self.selection_cleared.emit()
        if not provisional:
            self.page_loaded.emit(total)

    @Slot(int)
    def _on_model_more_requested(self, offset: int) -> None:
        query = self._listed
        if query is None:
            return

        def arrived(rows: tuple[Memory, ...]) -> None:
            if self._listed is query:  # not a page of a listing replaced meanwhile
                self._model.add_page(offset, rows)
                if self._selected_id is not None and self.table.currentIndex().row() < 0:
                    self.select_memory(self._selected_id)

        self._runner.submit(load_more, self._engine, query, offset, key="browser-more",
                            on_result=arrived, on_error=self._on_page_failed)

    @Slot(int, object)
    def _on_model_sort_requested(self, _column: int, _order: object) -> None:
        self.refresh()  # the header shows the new order; the engine sorts the whole listing

    def _on_page_failed(self, error: BaseException) -> None:
        self.count_label.setText(f"Search failed: {error}")

    @Slot(QModelIndex, QModelIndex)
    def _on_table_current_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        memory = self._model.memory_at(current.row())
        if memory is not None:
            self._selected_id = memory.id
            self.memory_activated.emit(memory)

    @Slot(QModelIndex)
    def _on_problems_table_double_clicked(self, index: QModelIndex) -> None:
        problem = self._problems.problem_at(index.row())
        if problem is not None:
            self.problem_activated.emit(problem)
