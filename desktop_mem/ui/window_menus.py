"""The main window's menu bar: File, Memories, Edit, Chat, View and Help, and what each item does
(mostly handing on to the workspace, the store actions or the Help menu's windows). The actions
others enable or press are kept on the window under their names (`window.sync_action`, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import QMenu

from desktop_mem.ui.help_menu import show_about, show_connect, show_shortcuts

if TYPE_CHECKING:
    from desktop_mem.ui.main_window import MainWindow

CHAT_TAB, MEMORIES_TAB, SUMMARY_TAB, TIMELINE_TAB = range(4)  # as in workspace.py


class WindowMenus(QObject):
    """Builds the window's menus and answers their items."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
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
        action = QAction(text, self._window)
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
        show_shortcuts(self._window, self._window.menuBar())

    @Slot()
    def _on_connect_triggered(self) -> None:
        show_connect(self._window, self._window.config.store_path, self._window.runner)

    @Slot()
    def _on_about_triggered(self) -> None:
        show_about(self._window, str(self._window.config.store_path))

    @Slot()
    def _on_open_folder_triggered(self) -> None:
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self._window.config.store_path)))
