"""`run_app(config)`: the QApplication, icon and style sheet, and the main window."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from PySide6.QtCore import QDir
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from desktop_mem.engine.config import Config
from desktop_mem.resources import resource_path

APP_ID = "desktop-mem"


def application(argv: Sequence[str] | None = None) -> QApplication:
    """The one QApplication, named (for QSettings) and styled."""
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(list(argv or sys.argv))
    app.setApplicationName(APP_ID)
    app.setOrganizationName(APP_ID)
    app.setApplicationDisplayName("desktop-mem")
    app.setDesktopFileName(APP_ID)
    icon = resource_path("icons/desktop-mem.svg")
    if icon.exists():
        app.setWindowIcon(QIcon(str(icon)))
    apply_style(app)
    return app


def apply_style(app: QApplication) -> None:
    """The app's style sheet, with the `icons:` search path its arrow images are named by."""
    QDir.setSearchPaths("icons", [str(resource_path("icons"))])
    style = resource_path("style.qss")
    if style.exists():
        app.setStyleSheet(style.read_text(encoding="utf-8"))


def run_app(config: Config, argv: Sequence[str] | None = None) -> int:
    """Show the window at once and open the store behind it; returns the exit code: 0 once the
    window is closed, 143 once SIGTERM or SIGHUP closed it, 130 once Ctrl+C (SIGINT) did."""
    from desktop_mem.ui.main_window import MainWindow
    from desktop_mem.ui.stop_signal_wakeup import close_on_stop_signals, exit_status

    app = application(argv)
    window = MainWindow(config)
    window.show()
    with close_on_stop_signals(window.close_without_asking) as stopped:  # before the lock is taken
        window.open_store()
        status = app.exec()
    return exit_status(stopped) if stopped else status
