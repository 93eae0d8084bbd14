"""Help → Connect an AI tool…: add desktop-mem to Claude Desktop, Cursor, VS Code or Codex.

The same merge as `desktop-mem mcp setup CLIENT` (cli/mcp_setup.py): the snippet to paste by hand
is shown at once; reading the client's config and working out the change run on the task
runner's read pool, writing it (with a backup) on its writer thread. The GUI thread only shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Slot
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.cli.mcp_setup import (
    CLIENT_TITLES,
    CLIENTS,
    SetupPlan,
    apply,
    config_path,
    plan,
    server_command,
    snippet_for,
)

if TYPE_CHECKING:
    from desktop_mem.ui.task_runner import TaskRunner


class ConnectDialog(QDialog):
    """Pick a client, see the snippet, add it to that client's config with one click."""

    def __init__(self, store_path: Path, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._command, self._args = server_command(store_path)
        self._plan: SetupPlan | None = None
        self._setup_ui()
        self._connect_signals()
        self._on_client_changed()

    def _setup_ui(self) -> None:
        self.setWindowTitle("Connect an AI tool")
        self.resize(720, 440)
        layout = QVBoxLayout(self)
        intro = QLabel("Let an AI tool read and add to your memory through MCP. desktop-mem adds "
                       "itself to the tool's own settings file, keeping every other server there and "
                       "a backup of the old file. Restart the tool afterwards.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        form = QFormLayout()
        self.client_box = QComboBox()
        for client in CLIENTS:
            self.client_box.addItem(CLIENT_TITLES[client], client)
        form.addRow("AI tool:", self.client_box)
        self.path_label = QLabel()
        self.path_label.setWordWrap(True)
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow("Settings file:", self.path_label)
        layout.addLayout(form)
        layout.addWidget(QLabel("What it adds (to paste by hand instead):"))
        self.snippet = QPlainTextEdit()
        self.snippet.setReadOnly(True)
        self.snippet.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        layout.addWidget(self.snippet, 1)
        self.status = QLabel()
        self.status.setWordWrap(True)
        layout.addWidget(self.status)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.copy_button = QPushButton("Copy snippet")
        self.add_button = QPushButton("Add to settings file")
        self.add_button.setEnabled(False)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.add_button, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.rejected.connect(self.reject)
        self._buttons = buttons
        layout.addWidget(buttons)

    def _connect_signals(self) -> None:
        self.client_box.currentIndexChanged.connect(self._on_client_changed)
        self.copy_button.clicked.connect(self._on_copy_button_clicked)
        self.add_button.clicked.connect(self._on_add_button_clicked)

    @property
    def client(self) -> str:
        return str(self.client_box.currentData())

    @Slot()
    def _on_client_changed(self) -> None:
        self._plan = None
        self.add_button.setEnabled(False)
        self.path_label.setText(str(config_path(self.client)))
        self.snippet.setPlainText(snippet_for(self.client, self._command, self._args))
        self.status.setText("Reading the settings file…")
        self._runner.submit(plan, self.client, self._command, self._args, key="connect-dialog-plan",
                            on_result=self._on_plan_ready, on_error=self._on_plan_failed)

    def _on_plan_ready(self, ready: SetupPlan) -> None:
        if ready.client != self.client:
            return
        self._plan = ready
        if not ready.changed:
            self.status.setText(f"{CLIENT_TITLES[ready.client]} already runs desktop-mem this way.")
            return
        self.status.setText("The file does not exist yet: adding creates it." if ready.before is None else
                            "Adding puts desktop-mem beside the servers and settings already in this "
                            "file; none of them change.")
        self.add_button.setEnabled(True)

    def _on_plan_failed(self, error: BaseException) -> None:
        self.status.setText(f"Cannot add it automatically: {error}\nPaste the snippet by hand instead.")

    @Slot()
    def _on_copy_button_clicked(self) -> None:
        QGuiApplication.clipboard().setText(self.snippet.toPlainText())
        self.status.setText("Copied. Paste it into the settings file above and restart the tool.")

    @Slot()
    def _on_add_button_clicked(self) -> None:
        if self._plan is None:
            return
        self.add_button.setEnabled(False)
        self.status.setText("Writing…")
        chosen = self._plan
        self._runner.submit_write(apply, chosen, quiet=True,
                                  on_result=lambda backup: self._on_added(chosen, backup),
                                  on_error=self._on_plan_failed)

    def _on_added(self, done: SetupPlan, backup: Path | None) -> None:
        kept = f" The old file is kept as {backup.name}." if backup else ""
        self.status.setText(f"Added to {done.path}.{kept} Restart {CLIENT_TITLES[done.client]} to use it.")
