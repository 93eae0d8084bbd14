"""The main window's menu bar: File, Memories, Edit, Chat, View and Help, and what each item does
(mostly handing on to the workspace, the store actions or the Help menu's windows). The actions
others enable or press are kept on the window under their names (`window.sync_action`, ...).
The menus know the window only as a `MenuHost`, what they use of it, so this module does not
import main_window.py, which builds them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import QMenu, QMenuBar, QStackedWidget, QWidget

from desktop_mem.ui.help_menu import show_about, show_connect, show_shortcuts

if TYPE_CHECKING:
    from desktop_mem.engine.config import Config
    from desktop_mem.ui.store_actions import StoreActions
    from desktop_mem.ui.task_runner import TaskRunner
    from desktop_mem.ui.workspace import Workspace

CHAT_TAB, MEMORIES_TAB, SUMMARY_TAB, TIMELINE_TAB = range(4)  # as in workspace.py


class MenuHost(Protocol):
    """What the menus use of the window they are built on (main_window.py's MainWindow)."""

    # the actions others enable or press, set by WindowMenus
    new_conversation_action: QAction
    settings_action: QAction
    sync_action: QAction
    import_action: QAction
    reindex_action: QAction
    tidy_action: QAction
    find_action: QAction
    shortcuts_action: QAction

    @property
    def config(self) -> Config: ...
    @property
    def runner(self) -> TaskRunner: ...
    @property
    def store_actions(self) -> StoreActions: ...
    @property
    def stack(self) -> QStackedWidget: ...
    @property
    def workspace(self) -> Workspace | None: ...

    def window(self) -> QWidget:
        """The window as a widget (a top-level widget's window() is itself): the menus' parent."""
        ...

    def menuBar(self) -> QMenuBar: ...
    def close(self) -> bool: ...
    def show_tab(self, tab: int) -> None: ...
    def open_settings(self, group: str | None = None, prefill: Mapping[str, str] | None = None) -> None: ...


class WindowMenus(QObject):
    """Builds the window's menus and answers their items."""

    def __init__(self, window: MenuHost) -> None:
        widget = window.window()
        super().__init__(widget)
        self._widget = widget
        self._window = window
        self._build()

    def _build(self) -> None:
        w = self._window
        actions = w.store_actions
        bar = w.menuBar()
        file_menu = bar.addMenu("&File")
        w.new_conversation_action = self._action(
            file_menu, "&New conversation", QKeySequence.StandardKey.New, self._on_new_conversation_triggered)
        self._action(file_menu, "New &memory", "Ctrl+Shift+N", self._on_new_memory_triggered)
        file_menu.addSeparator()
        w.settings_action = self._action(file_menu, "&Settings…", "Ctrl+,", w.open_settings)
        self._action(file_menu, "Open store &folder", None, self._on_open_folder_triggered)
        w.sync_action = self._action(file_menu, "S&ync with remote", "Ctrl+Shift+Y", actions.sync)
        w.import_action = self._action(file_menu, "&Import memories…", None, actions.choose_import)
        w.reindex_action = self._action(file_menu, "&Rebuild index", None, actions.reindex)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.StandardKey.Quit, w.close)
        memories_menu = bar.addMenu("&Memories")
        w.tidy_action = self._action(memories_menu, "&Tidy up…", None, actions.tidy_up)
        w.tidy_action.setStatusTip("Propose merging duplicates, dropping junk and retiring stale facts; "
                                   "nothing changes until you accept in Review")
        edit_menu = bar.addMenu("&Edit")
        w.find_action = self._action(edit_menu, "&Find memories", QKeySequence.StandardKey.Find,
                                     self._on_find_triggered)
        chat_menu = bar.addMenu("&Chat")
        # Ctrl+Enter belongs to the message box's own shortcut; a second binding would be ambiguous.
        self._action(chat_menu, "&Send message\tCtrl+Enter", None, self._on_send_triggered)
        self._action(chat_menu, "S&top reply", "Esc", self._on_stop_triggered)
        view_menu = bar.addMenu("&View")
        for tab, name in ((CHAT_TAB, "&Chat"), (MEMORIES_TAB, "&Memories"), (SUMMARY_TAB, "S&ummary"),
                          (TIMELINE_TAB, "&Timeline")):
            self._action(view_menu, name, f"Ctrl+{tab + 1}", lambda _=False, t=tab: w.show_tab(t))
        help_menu = bar.addMenu("&Help")
        w.shortcuts_action = self._action(help_menu, "&Keyboard shortcuts", "F1",
                                          self._on_shortcuts_triggered)
        self._action(help_menu, "C&onnect an AI tool…", None, self._on_connect_triggered)
        self._action(help_menu, "&About desktop-mem", None, self._on_about_triggered)

    def _action(self, menu: QMenu, text: str, shortcut: QKeySequence.StandardKey | str | None,
                slot: object) -> QAction:
        action = QAction(text, self._widget)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    @Slot()
    def _on_new_conversation_triggered(self) -> None:
        w = self._window
        if w.workspace is not None:
            w.show_tab(CHAT_TAB)
            w.workspace.new_conversation()

    @Slot()
    def _on_new_memory_triggered(self) -> None:
        w = self._window
        if w.workspace is not None:
            w.stack.setCurrentWidget(w.workspace)
            w.workspace.new_memory()

    @Slot()
    def _on_find_triggered(self) -> None:
        w = self._window
        if w.workspace is not None:
            w.stack.setCurrentWidget(w.workspace)
            w.workspace.focus_search()

    @Slot()
    def _on_send_triggered(self) -> None:
        if self._window.workspace is not None:
            self._window.workspace.chat.send()

    @Slot()
    def _on_stop_triggered(self) -> None:
        if self._window.workspace is not None:
            self._window.workspace.chat.stop()

    @Slot()
    def _on_shortcuts_triggered(self) -> None:
        show_shortcuts(self._widget, self._window.menuBar())

    @Slot()
    def _on_connect_triggered(self) -> None:
        show_connect(self._widget, self._window.config.store_path, self._window.runner)

    @Slot()
    def _on_about_triggered(self) -> None:
        show_about(self._widget, str(self._window.config.store_path))

    @Slot()
    def _on_open_folder_triggered(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self._window.config.store_path)))
