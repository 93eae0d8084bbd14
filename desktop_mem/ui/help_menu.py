"""The Help menu's windows: every keyboard shortcut, connecting an AI tool, and About."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu, QMenuBar, QMessageBox, QWidget

from desktop_mem import __version__

if TYPE_CHECKING:
    from desktop_mem.ui.task_runner import TaskRunner

# Shortcuts that belong to a widget rather than to a menu action.
WIDGET_SHORTCUTS = (("Send message (in the message box)", "Ctrl+Enter"),
                    ("Save the memory (in the editor)", "Ctrl+S"))


def shortcuts_text(bar: QMenuBar) -> str:
    """Every shortcut of the menus (read from the actions, so it cannot go stale), one a line."""
    rows = [(a.text().replace("&", "").split("\t")[0], a.shortcut().toString())
            for menu in bar.findChildren(QMenu) for a in menu.actions()
            if not a.isSeparator() and not a.shortcut().isEmpty()]
    rows += WIDGET_SHORTCUTS
    return "\n".join(f"{keys:<16} {name}" for name, keys in rows)


def show_shortcuts(parent: QWidget, bar: QMenuBar) -> None:
    """A non-modal list of the shortcuts."""
    box = QMessageBox(QMessageBox.Icon.NoIcon, "Keyboard shortcuts", shortcuts_text(bar),
                      QMessageBox.StandardButton.Close, parent)
    box.setStyleSheet("QLabel { font-family: monospace; }")
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.open()


def show_about(parent: QWidget, store_path: str) -> None:
    """Version, where the store is, and the other ways to reach it."""
    QMessageBox.about(parent, "About desktop-mem", (
        f"<b>desktop-mem {__version__}</b><p>Chat with an LLM that remembers. Memory is plain "
        f"Markdown in git, in <code>{store_path}</code>.</p><p>The same store from a terminal: "
        "<code>desktop-mem --help</code>; as an OpenAI-compatible endpoint: "
        "<code>desktop-mem serve</code>.</p>"))


def show_connect(parent: QWidget, store_path: Path, runner: TaskRunner) -> None:
    """Help → Connect an AI tool…: add desktop-mem to an MCP client's settings (connect_dialog.py)."""
    from desktop_mem.ui.settings.connect_dialog import ConnectDialog

    dialog = ConnectDialog(store_path, runner, parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
