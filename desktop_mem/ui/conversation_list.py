"""The conversations side bar: a list model over (id, title), New / Rename / Delete, and the
selected conversation's project (ui/project_picker.py).

Titles are read off the GUI thread (they live in conversation.yaml files); renames, creations
and deletions run on the writer. The list reloads on every store change that names a
conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractListModel, QDateTime, QModelIndex, QPersistentModelIndex, Qt, Signal, Slot
from PySide6.QtWidgets import (
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QListView,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.api import MemoryEngine, project_name
from desktop_mem.engine.models import GLOBAL_CONVERSATION
from desktop_mem.ui.project_picker import ProjectPicker, project_title
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.dialogs import Confirm, ask

Index = QModelIndex | QPersistentModelIndex
CONVERSATION_ROLE = Qt.ItemDataRole.UserRole + 1


@dataclass(frozen=True)
class Conversation:
    """One row of the side bar, or a project (listed after the chats, never in the side bar)."""

    id: str
    title: str
    project: str | None = None  # a chat's project scope; a project's own

    @property
    def is_project(self) -> bool:
        """A project's scope, not a chat."""
        return project_name(self.id) is not None


def load_conversations(engine: MemoryEngine) -> list[Conversation]:
    """Run in a worker: every conversation with its title and project, then every project (a
    scope holding memories or named by a conversation) as "Project: name". The user's own facts
    (the global scope) and the projects are no conversation to chat in."""
    chats: list[Conversation] = []
    projects: set[str] = set()
    for conv in engine.conversations():
        if conv == GLOBAL_CONVERSATION:
            continue
        if project_name(conv) is not None:
            projects.add(conv)
            continue
        bound = engine.conversation_project(conv)
        if bound is not None:
            projects.add(bound)
        chats.append(Conversation(conv, engine.conversation_title(conv), bound))
    return chats + [Conversation(p, project_title(p), p) for p in sorted(projects)]


class ConversationListModel(QAbstractListModel):
    """Conversations as a list (titles shown, ids as tooltip and CONVERSATION_ROLE)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[Conversation] = []

    def set_conversations(self, rows: list[Conversation]) -> None:
        """Replace the snapshot."""
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def conversation_at(self, row: int) -> Conversation | None:
        """The conversation in `row`, if any."""
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def row_of(self, conversation_id: str) -> int | None:
        """The row showing this conversation."""
        return next((r for r, c in enumerate(self._rows) if c.id == conversation_id), None)

    def rows(self) -> list[Conversation]:
        """Every conversation shown, in order."""
        return list(self._rows)

    def ids(self) -> list[str]:
        """Every conversation id shown, in order."""
        return [c.id for c in self._rows]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        conv = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return conv.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return conv.id
        if role == CONVERSATION_ROLE:
            return conv.id
        return None


class ConversationList(QWidget):
    """The side bar: pick, create, rename or delete conversations."""

    conversation_selected = Signal(str)
    loaded = Signal()

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, confirm: Confirm = ask,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._confirm = confirm
        self._model = ConversationListModel(self)
        self._current: str | None = None
        self._projects: list[Conversation] = []
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.setObjectName("sideBar")
        title = QLabel("Conversations", self)
        title.setObjectName("sideBarTitle")
        self.view = QListView(self)
        self.view.setModel(self._model)
        self.view.setUniformItemSizes(True)
        self.new_button = QPushButton("New", self)
        self.new_button.setToolTip("New conversation (Ctrl+N)")
        self.rename_button = QPushButton("Rename", self)
        self.delete_button = QPushButton("Delete", self)
        self.project_picker = ProjectPicker(self)
        self.project_picker.setEnabled(not self._engine.read_only)
        buttons = QHBoxLayout()
        buttons.setSpacing(4)
        for button in (self.new_button, self.rename_button, self.delete_button):
            buttons.addWidget(button)
        self.new_button.setEnabled(not self._engine.read_only)
        self._update_buttons(None)  # Rename and Delete need a conversation
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.addWidget(title)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.project_picker)
        layout.addLayout(buttons)

    def _connect_signals(self) -> None:
        self.view.selectionModel().currentRowChanged.connect(self._on_view_current_row_changed)
        self.new_button.clicked.connect(self._on_new_button_clicked)
        self.rename_button.clicked.connect(self._on_rename_button_clicked)
        self.delete_button.clicked.connect(self._on_delete_button_clicked)
        self.project_picker.project_chosen.connect(self._on_project_picker_project_chosen)

    # --------------------------------------------------------------- public

    @property
    def model(self) -> ConversationListModel:
        """The list's model."""
        return self._model

    @property
    def projects(self) -> list[Conversation]:
        """The projects known at the last reload, by name."""
        return list(self._projects)

    @property
    def current(self) -> str | None:
        """The selected conversation id."""
        return self._current

    def reload(self) -> None:
        """Re-read the conversations (off the GUI thread)."""
        self._runner.submit(load_conversations, self._engine, key="conversations",
                            on_result=self._on_loaded)

    def select(self, conversation_id: str) -> None:
        """Select a conversation (when it is listed)."""
        self._current = conversation_id
        row = self._model.row_of(conversation_id)
        if row is not None:
            self.view.setCurrentIndex(self._model.index(row, 0))

    def create_conversation(self, title: str) -> None:
        """Create a conversation with this title and select it."""
        self._runner.submit_write(self._engine.new_conversation, title, on_result=self._on_created)

    def show_created(self, conversation_id: str) -> None:
        """A conversation made elsewhere (the chat's first message): list and select it."""
        self._on_created(conversation_id)

    def rename(self, conversation_id: str, title: str) -> None:
        """Give a conversation a new title."""
        self._runner.submit_write(self._engine.rename_conversation, conversation_id, title,
                                  on_result=lambda _: self.reload())

    def delete(self, conversation_id: str) -> None:
        """Soft-delete every memory of a conversation (one commit; restorable)."""
        self._runner.submit_write(self._engine.delete_conversation, conversation_id,
                                  on_result=lambda _: self._after_delete(conversation_id))

    # -------------------------------------------------------------- private

    def _on_loaded(self, listed: list[Conversation]) -> None:
        rows = [c for c in listed if not c.is_project]
        self._projects = [c for c in listed if c.is_project]
        self._model.set_conversations(rows)
        self.project_picker.set_projects([p.id for p in self._projects])
        target = self._current if self._current in self._model.ids() else None
        if target is None and rows:
            target = next((c.id for c in rows if c.id != GLOBAL_CONVERSATION), rows[0].id)
        if target is not None:
            self.select(target)
            shown = next(c for c in rows if c.id == target)  # its project as stored now
            self.project_picker.show_conversation(target, shown.project)
        else:
            self._current = None
            self._update_buttons(None)
            self.project_picker.show_conversation(None, None)
        self.loaded.emit()

    def _update_buttons(self, conversation_id: str | None) -> None:
        """Rename and Delete act on the selected conversation: off with none (and for Global
        memory, which every conversation shares)."""
        editable = (conversation_id is not None and not self._engine.read_only
                    and conversation_id != GLOBAL_CONVERSATION)
        for button in (self.rename_button, self.delete_button):
            button.setEnabled(editable)
            button.setToolTip("" if editable else "Select a conversation first" if conversation_id is None
                              else "Global memory is shared by every conversation")

    def _on_created(self, conversation_id: str) -> None:
        self._current = conversation_id
        self.reload()

    def _after_delete(self, conversation_id: str) -> None:
        if self._current == conversation_id:
            self._current = None
        self.reload()

    @Slot(QModelIndex, QModelIndex)
    def _on_view_current_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        conv = self._model.conversation_at(current.row())
        if conv is not None:
            self._current = conv.id
            self._update_buttons(conv.id)
            self.project_picker.show_conversation(conv.id, conv.project)
            self.conversation_selected.emit(conv.id)

    @Slot(str, object)
    def _on_project_picker_project_chosen(self, conversation_id: str, project: str | None) -> None:
        self._runner.submit_write(self._engine.set_conversation_project, conversation_id, project,
                                  on_result=lambda _: self.reload(), on_error=self._on_project_failed)

    def _on_project_failed(self, error: BaseException) -> None:
        self.project_picker.show_failure(f"The project was not changed: {error}")
        self.reload()

    @Slot()
    def _on_new_button_clicked(self) -> None:
        # a title is offered and selected: Enter alone starts the conversation, and a title
        # cleared to nothing gets the offered one (it used to create nothing and say nothing)
        offered = f"Chat, {QDateTime.currentDateTime().toString('d MMM HH:mm')}"  # fits the list
        title, ok = QInputDialog.getText(self, "New conversation", "Title:", text=offered)
        if ok:
            self.create_conversation(title.strip() or offered)

    @Slot()
    def _on_rename_button_clicked(self) -> None:
        conv = self._model.conversation_at(self.view.currentIndex().row())
        if conv is None:
            return
        title, ok = QInputDialog.getText(self, "Rename conversation", "Title:", text=conv.title)
        if ok and title.strip():
            self.rename(conv.id, title.strip())

    @Slot()
    def _on_delete_button_clicked(self) -> None:
        conv = self._model.conversation_at(self.view.currentIndex().row())
        if conv is None or conv.id == GLOBAL_CONVERSATION:
            return
        if self._confirm(self, "Delete conversation?",
                         f"Delete “{conv.title}” and all its memories? They move to deleted/ and can "
                         "be restored from the Memories or Timeline pane."):
            self.delete(conv.id)
