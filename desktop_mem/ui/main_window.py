"""The main window: opens the store off the GUI thread, then shows the welcome page or the panes.

The window appears at once with "Loading store…"; the engine is built on the writer thread (lock,
git, catalog) and the index opens after the panes are shown, so the list is usable while the
embedder loads. A second instance on the same store gets a dialog offering read-only. The work
it sends to threads to open, index and close the store is in store_session.py; opening the index
in index_opening.py; the File menu's Sync, Import and Rebuild index in store_actions.py; the
first run's welcome in welcome_page.py.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QRect, QSettings, QSize, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import QLabel, QMainWindow, QStackedWidget, QVBoxLayout, QWidget

from desktop_mem.engine.config import Config
from desktop_mem.engine.models import StoreLockedError
from desktop_mem.ui.app_overrides import apply_app_overrides
from desktop_mem.ui.engine_bridge import EngineBridge
from desktop_mem.ui.help_menu import shortcuts_text
from desktop_mem.ui.index_opening import IndexOpening
from desktop_mem.ui.long_operations import LongOperations
from desktop_mem.ui.status_bar import StatusBar
from desktop_mem.ui.store_actions import StoreActions
from desktop_mem.ui.store_session import (
    FinishedOpen,
    KeptView,
    OpenedStore,
    StoreOpening,
    close_engine,
    close_opened,
    finish_open,
    import_panes,
)
from desktop_mem.ui.store_widgets import StoreWidgets
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.welcome_page import WelcomePage, welcome_page
from desktop_mem.ui.widgets.dialogs import Confirm, ask
from desktop_mem.ui.widgets.notice_bar import NoticeBar
from desktop_mem.ui.widgets.progress import ProgressReporter
from desktop_mem.ui.window_menus import CHAT_TAB, WindowMenus

if TYPE_CHECKING:
    # Imported where first used: the engine pulls in chromadb (about a second), which must load on
    # the writer thread after the window is on screen, not before it.
    from desktop_mem.engine.api import MemoryEngine, MemoryPage
    from desktop_mem.ui.chat.tool_notice import ToolNotice
    from desktop_mem.ui.held_back_notice import HeldBackNotice
    from desktop_mem.ui.memories.idle_tidy import IdleTidy
    from desktop_mem.ui.memories.review_pane import ReviewBadge
    from desktop_mem.ui.workspace import Workspace

DEFAULT_SIZE = QSize(1200, 780)
# Room for a desktop's title bar and borders, which are not known before the window is shown.
FRAME_ALLOWANCE = QSize(16, 48)

log = logging.getLogger(__name__)


def initial_size(available: QRect) -> QSize:
    """The window's first size: DEFAULT_SIZE, smaller on a small screen, so that the whole frame
    (title bar to status bar) fits the screen's free area, which leaves desktop panels out
    (1366×768 with a panel: 780 px high would push the status bar off the bottom edge)."""
    return DEFAULT_SIZE.boundedTo(available.size() - FRAME_ALLOWANCE)


class MainWindow(QMainWindow):
    """desktop-mem's window."""

    store_opened = Signal()  # panes or welcome page are shown
    index_ready = Signal()
    sync_finished = Signal(str)  # what a sync did (or why it failed), as shown to the user
    operation_finished = Signal(str)  # what an import or index rebuild did, as shown to the user

    # menu actions others enable or press, set by WindowMenus (window_menus.py)
    new_conversation_action: QAction
    settings_action: QAction
    sync_action: QAction
    import_action: QAction
    reindex_action: QAction
    tidy_action: QAction
    find_action: QAction
    shortcuts_action: QAction

    def __init__(self, config: Config, runner: TaskRunner | None = None, *,
                 settings: QSettings | None = None, confirm: Confirm = ask) -> None:
        super().__init__()
        self.runner = runner or TaskRunner(self)
        self._settings = settings or QSettings()
        self.config = apply_app_overrides(config, self._settings)
        self._confirm = confirm
        self.engine: MemoryEngine | None = None
        self.bridge: EngineBridge | None = None
        self.workspace: Workspace | None = None
        self.store_widgets: StoreWidgets | None = None  # the badge, notices and clock of the open store
        self.welcome: WelcomePage | None = None
        self._opening: StoreOpening | None = None  # the open under way, until it is delivered
        self._kept_view: KeptView | None = None  # what to show again after settings reopen the store
        self._first_page: MemoryPage | None = None  # the last session's, shown by the next workspace
        self._page_shown = threading.Event()  # set: the catalog's load need not wait for it
        self._page_shown.set()
        self._closing_unasked = False  # a stop signal (SIGTERM, SIGHUP) closes without a question
        self._setup_ui()
        self.menus = WindowMenus(self)
        self._restore_state()

    # ---------------------------------------------------------------- setup

    def _setup_ui(self) -> None:
        self.setWindowTitle("desktop-mem")
        self.resize(initial_size(self.screen().availableGeometry()))
        self.stack = QStackedWidget(self)
        self.loading_label = QLabel("Loading store…", self)
        self.loading_label.setObjectName("loadingLabel")
        self.loading_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.loading_label.setWordWrap(True)
        self.stack.addWidget(self.loading_label)
        # Notices anyone can post (post_notice): e.g. memories another app added, with Undo.
        self.notices = NoticeBar(self)
        central = QWidget(self)
        self._column = column = QVBoxLayout(central)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.notices)
        column.addWidget(self.stack, 1)
        self.setCentralWidget(central)
        self.status = StatusBar(self.runner, self)
        self.setStatusBar(self.status)
        self.operations = LongOperations(self.runner, self.status.progress, self)
        self.index_opening = IndexOpening(self.runner, self.operations, self.status, lambda: self.engine,
                                          lambda: self.workspace, self)
        self.index_opening.opened.connect(self.index_ready)
        # Sync, Import and Rebuild index; their outcomes are the window's signals too.
        self.store_actions = StoreActions(self.operations, self.status, lambda: self.engine,
                                          self.index_opening.failed, self)
        self.store_actions.sync_finished.connect(self.sync_finished)
        self.store_actions.operation_finished.connect(self.operation_finished)
        self.store_actions.tidy_proposed.connect(self._on_store_actions_tidy_proposed)

    @Slot(int)
    def _on_store_actions_tidy_proposed(self, count: int) -> None:
        if count and self.review_badge is not None:
            self.review_badge.refresh()
            self.review_badge.open_review()

    # The open store's widgets (None while no store is open): store_widgets.py.
    @property
    def review_badge(self) -> ReviewBadge | None:
        return self.store_widgets.review_badge if self.store_widgets is not None else None

    @property
    def idle_tidy(self) -> IdleTidy | None:
        return self.store_widgets.idle_tidy if self.store_widgets is not None else None

    @property
    def tool_notice(self) -> ToolNotice | None:
        return self.store_widgets.tool_notice if self.store_widgets is not None else None

    @property
    def held_back_notice(self) -> HeldBackNotice | None:
        return self.store_widgets.held_back_notice if self.store_widgets is not None else None

    def _restore_state(self) -> None:
        geometry = self._settings.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        state = self._settings.value("window/state")
        if isinstance(state, QByteArray):
            self.restoreState(state)

    # ------------------------------------------------------------ lifecycle

    def open_store(self, read_only: bool = False) -> None:
        """Open the configured store on the writer thread; the window stays responsive."""
        self.loading_label.setText(f"Loading store…\n{self.config.store_path}")
        self.stack.setCurrentWidget(self.loading_label)
        self._opening = opening = StoreOpening(self.config, read_only)
        self.runner.submit_write(opening.open, quiet=True, on_result=partial(self._on_store_opened, opening),
                                 on_error=partial(self._on_store_failed, opening))
        # The panes' modules load while the store opens: the opening thread spends part of its
        # time outside the interpreter (SQLite, git, waiting for the file scan), and this thread
        # is idle until it is done (~0.2 s of imports off the path to the listed store at 100k).
        QTimer.singleShot(0, import_panes)

    def post_notice(self, text: str, action_text: str | None = None,
                    action: Callable[[], None] | None = None) -> None:
        """A non-modal one-line notice at the top of the window, with an optional action."""
        self.notices.post(text, action_text, action)

    def show_tab(self, tab: int) -> None:
        """Switch to a pane (Ctrl+1..4)."""
        if self.workspace is not None:
            self.stack.setCurrentWidget(self.workspace)
            self.workspace.tabs.setCurrentIndex(tab)

    def import_file(self, path: Path) -> ProgressReporter | None:
        """Import a file on the writer, with progress and Cancel (returns the operation's reporter)."""
        return self.store_actions.import_file(path)

    @Slot()
    def open_settings(self, group: str | None = None, prefill: Mapping[str, str] | None = None) -> None:
        """Ctrl+,: the settings dialog (on `group`'s tab); saving reopens the store with the new
        settings and shows the same conversation, tab and typed message again."""
        from desktop_mem.ui.settings.settings_dialog import (
            SettingsDialog,  # openai loads with it: not at start
        )

        if not isinstance(group, str) and self.status.llm_label.property("state") == "bad":
            group = "llm"  # the status bar says the LLM is unreachable: that is what to fix
        self.settings_dialog = SettingsDialog(self.config, self.runner, self, app_settings=self._settings,
                                              group=group if isinstance(group, str) else None,
                                              prefill=prefill)
        self.settings_dialog.saved.connect(self._on_settings_saved)
        self.settings_dialog.open()

    def shutdown(self) -> None:
        """Save window state, stop a running reply, close the engine (waits for the writer)."""
        self._settings.setValue("window/geometry", self.saveGeometry())
        self._settings.setValue("window/state", self.saveState())
        if self.workspace is not None:
            self._settings.setValue("window/splitter", self.workspace.splitter.saveState())
            self._settings.setValue("window/tab", self.workspace.tabs.currentIndex())
            self.workspace.chat.stop()
        self._settings.sync()
        self._close_engine()
        self.runner.wait_for_done()

    def close_without_asking(self) -> None:
        """Close as the close button does, but never ask about unsaved edits: nobody may be there
        to answer (SIGTERM at a logout or shutdown). The edits are lost, as on a crash."""
        self._closing_unasked = True
        self.close()  # inside a close that is asking already, a no-op: that close reads the flag

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if not self._may_close():
            event.ignore()
            return
        self.shutdown()
        event.accept()

    # -------------------------------------------------------------- private

    def _may_close(self) -> bool:
        """False when the user keeps the editor's unsaved edits. A stop signal never asks, and one
        that came while the question was open answers it."""
        if self._closing_unasked or self.workspace is None or not self.workspace.editor.is_dirty():
            return True
        quit_anyway = self._confirm(self, "Quit?",
                                    "The memory in the editor has unsaved changes. Quit anyway?")
        return quit_anyway or self._closing_unasked

    def _on_store_opened(self, opening: StoreOpening, opened: OpenedStore) -> None:
        from desktop_mem.ui.workspace import Workspace

        if opening is not self._opening:
            return  # the window closed or reopened before this came: close_opened closes the engine
        self._opening = None
        engine = opened.engine
        self.engine = engine
        if opened.first_page is not None:
            # handed over before its catalog: loading it is the writer's first task (a write queued
            # before it would wait for it on the one writer thread), and every read waits for it
            self._page_shown = threading.Event()  # the load starts once the page is on screen
            self.runner.submit_write(finish_open, engine, self._page_shown, quiet=True,
                                     on_result=partial(self._on_open_finished, engine),
                                     on_error=partial(self._on_open_unfinished, engine))
        self.bridge = EngineBridge(engine, self)
        self.workspace = Workspace(engine, self.runner, self.bridge, self._confirm, self)
        # The chat asks for Settings only about the endpoint: open on that tab.
        self.workspace.settings_requested.connect(lambda: self.open_settings("llm"))
        self.workspace.llm_problem.connect(self.status.show_llm_problem)
        self.workspace.llm_answered.connect(self.status.on_llm_answered)
        self.workspace.reply_ended.connect(self.status.on_reply_ended)
        self.workspace.memory_activity.connect(self.status.set_memory_activity)
        self.status.cancel_memory_update_requested.connect(self.workspace.chat.cancel_memory_updates)
        self.bridge.store_changed.connect(self.status.on_store_changed)
        self.workspace.browser.health_bar.tidy_requested.connect(self.store_actions.tidy_up)
        self.store_widgets = widgets = StoreWidgets(engine, self.runner, self.bridge, window=self,
                                                    status=self.status, column=self._column,
                                                    tidy_up=self.store_actions.tidy_up)
        for held in opened.held_back:
            widgets.held_back_notice.on_held_back(held)
        self.stack.addWidget(self.workspace)
        splitter = self._settings.value("window/splitter")
        if isinstance(splitter, QByteArray):
            self.workspace.splitter.restoreState(splitter)
        tab = self._settings.value("window/tab")
        self.workspace.tabs.setCurrentIndex(int(tab) if tab is not None else CHAT_TAB)
        mode = " (read-only)" if engine.read_only else ""
        # the application's display name ("desktop-mem") is added by Qt: once, not twice
        self.setWindowTitle(f"{engine.root}{mode}")
        self._first_page = opened.first_page  # the Memories pane shows it until its own listing
        kept, self._kept_view = self._kept_view, None
        if kept is not None:
            kept.restore(self.workspace)
        if opened.empty and not engine.read_only and kept is None:
            self._show_welcome()
        else:
            self._show_workspace()
        self.status.set_engine(engine)
        self.status.set_last_commit(opened.last_commit)
        welcome = self.welcome is not None and self.stack.currentWidget() is self.welcome
        self.index_opening.open_when_listed(self.workspace.browser.page_loaded, now=welcome)
        self.store_opened.emit()

    def _on_open_finished(self, engine: MemoryEngine, finished: FinishedOpen) -> None:
        if engine is not self.engine:
            return  # closed or reopened meanwhile
        self.status.set_last_commit(finished.last_commit)
        if self.held_back_notice is not None:
            for held in finished.held_back:
                self.held_back_notice.on_held_back(held)

    def _on_open_unfinished(self, engine: MemoryEngine, error: BaseException) -> None:
        if engine is not self.engine:
            return
        log.error("the store's catalog failed to load", exc_info=error)
        self._close_engine()
        self._drop_pages()
        self.stack.setCurrentWidget(self.loading_label)
        self.loading_label.setText(f"Could not open the store {self.config.store_path}:\n{error}\n\n"
                                   "Fix the problem (or pick another store in Settings, Ctrl+,) and restart.")

    def _on_store_failed(self, opening: StoreOpening, error: BaseException) -> None:
        if opening is not self._opening:
            return  # the window closed meanwhile: nobody to ask, nothing to show
        self._opening = None
        if isinstance(error, StoreLockedError) and self._confirm(
                self, "Store in use",
                f"{error}\n\nOpen it read-only? You can read and search, but not chat or edit."):
            self.open_store(read_only=True)
            return
        self.loading_label.setText(f"Could not open the store {self.config.store_path}:\n{error}\n\n"
                                   "Fix the problem (or pick another store in Settings, Ctrl+,) and restart.")

    def _show_welcome(self) -> None:
        self.welcome = welcome_page(lambda: self.engine, self.runner, self.config, parent=self,
                                    open_settings=self.open_settings, started=self._show_workspace)
        self.stack.addWidget(self.welcome)
        self.stack.setCurrentWidget(self.welcome)

    @Slot()
    def _show_workspace(self) -> None:
        if self.workspace is None:
            return
        self.stack.setCurrentWidget(self.workspace)
        first_page, self._first_page = self._first_page, None
        self.workspace.start(first_page)
        QTimer.singleShot(0, self._page_shown.set)  # after the page's layout and paint events

    def _close_engine(self) -> None:
        self._page_shown.set()  # a load still waiting for the page goes on, to be closed after
        opening, self._opening = self._opening, None
        if opening is not None:  # its engine, if it opens, is closed right after on the writer
            self.runner.submit_write(close_opened, opening, quiet=True)
        engine = self.engine
        if engine is None:
            return
        if self.bridge is not None:
            self.bridge.close()
        if self.store_widgets is not None:
            self.store_widgets.close()
            self.store_widgets = None
        self.status.set_engine(None)
        self.runner.submit_write(close_engine, engine, quiet=True)
        self.engine = None

    def _drop_pages(self) -> None:
        self.runner.drop_callbacks()  # results still under way must not reach the deleted panes
        if self.workspace is not None:  # the status bar stays: its Cancel must not reach the old chat
            self.status.cancel_memory_update_requested.disconnect(self.workspace.chat.cancel_memory_updates)
        for page in (self.workspace, self.welcome):
            if page is not None:
                self.stack.removeWidget(page)
                page.deleteLater()
        self.workspace = self.welcome = None
        if self.bridge is not None:
            self.bridge.deleteLater()
            self.bridge = None

    def _on_settings_saved(self, config: Config) -> None:
        self.config = config
        if self.workspace is not None:
            self._kept_view = KeptView.of(self.workspace)
            self.workspace.chat.stop()
        self._close_engine()
        self._drop_pages()
        self.open_store()

    def shortcuts_text(self) -> str:
        """Every shortcut of the window (Help > Keyboard shortcuts)."""
        return shortcuts_text(self.menuBar())
