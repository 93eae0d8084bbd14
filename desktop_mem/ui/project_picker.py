"""The project a conversation works in, picked under the conversations side bar.

A project is a scope of its own between a conversation and the user's facts (engine
store/projects.py): a conversation bound to it reads its memories, as every agent and MCP client
naming the project does. The picker shows the selected conversation's project from the side bar's
snapshot (no reading on the GUI thread) and says which one the user chose; the side bar binds it
on the writer.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QInputDialog, QLabel, QVBoxLayout, QWidget

from desktop_mem.engine.api import project_name, project_scope
from desktop_mem.engine.models import ValidationError

NO_PROJECT = "No project"
NEW_PROJECT = "New project…"
_NEW = "\x00new"  # the "New project…" item's data: no scope can be this


def project_title(scope: str) -> str:
    """How a project scope is named in lists and filters: "Project: shop"."""
    return f"Project: {project_name(scope) or scope}"


class ProjectPicker(QWidget):
    """"Project: [No project | shop | … | New project…]" for the selected conversation."""

    project_chosen = Signal(str, object)  # conversation id, project scope or None

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._conversation: str | None = None
        self._project: str | None = None
        self._projects: list[str] = []
        self._setup_ui()
        self._connect_signals()
        self.show_conversation(None, None)

    def _setup_ui(self) -> None:
        self.combo = QComboBox(self)
        self.combo.setToolTip("The project this conversation works in: it reads the project's "
                              "memories, as every agent and AI tool working in that project does")
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(8)
        self.error_label = QLabel(self)
        self.error_label.setObjectName("errorLabel")
        self.error_label.setWordWrap(True)
        self.error_label.hide()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Project", self))
        row.addWidget(self.combo, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.error_label)

    def _connect_signals(self) -> None:
        self.combo.activated.connect(self._on_combo_activated)

    # ---------------------------------------------------------------- public

    @property
    def project(self) -> str | None:
        """The project scope shown for the conversation (None: no project)."""
        return self._project

    def set_projects(self, projects: list[str]) -> None:
        """The project scopes to offer (kept in this order)."""
        self._projects = list(projects)
        self._fill()

    def show_conversation(self, conversation_id: str | None, project: str | None) -> None:
        """Show `conversation_id`'s project (None: no conversation selected, the picker is off)."""
        if conversation_id != self._conversation:
            self.error_label.hide()  # a failure is said for the conversation it happened in
        self._conversation, self._project = conversation_id, project
        self._fill()

    def show_failure(self, message: str) -> None:
        """Say why the last choice did not hold (the list reloads with what is stored)."""
        self.error_label.setText(message)
        self.error_label.show()

    def choose(self, project: str | None) -> None:
        """Bind the conversation to `project` (a name or a scope; None: no project)."""
        if self._conversation is None:
            return
        try:
            scope = project_scope(project) if project is not None else None
        except ValidationError as exc:
            self.error_label.setText(str(exc))
            self.error_label.show()
            self._fill()
            return
        self.error_label.hide()
        self._project = scope
        if scope is not None and scope not in self._projects:
            self._projects.append(scope)
        self._fill()
        self.project_chosen.emit(self._conversation, scope)

    # --------------------------------------------------------------- private

    def _fill(self) -> None:
        combo = self.combo
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(NO_PROJECT, None)
        shown = list(self._projects)
        if self._project is not None and self._project not in shown:
            shown.append(self._project)
        for scope in shown:
            combo.addItem(project_name(scope) or scope, scope)
            combo.setItemData(combo.count() - 1, scope, Qt.ItemDataRole.ToolTipRole)
        combo.addItem(NEW_PROJECT, _NEW)
        combo.setCurrentIndex(max(combo.findData(self._project), 0))
        combo.setEnabled(self._conversation is not None)
        combo.blockSignals(False)

    @Slot(int)
    def _on_combo_activated(self, index: int) -> None:
        data = self.combo.itemData(index)
        if data == _NEW:
            name, ok = QInputDialog.getText(self, "New project", "Project name (a repository, a client, …):")
            if ok and name.strip():
                self.choose(name.strip())
            else:
                self._fill()
            return
        if data != self._project:
            self.choose(data)
