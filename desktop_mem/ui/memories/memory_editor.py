"""The memory editor: body and front matter, validated, saved without overwriting outside edits.

Saves go to the writer with the content hash the form was loaded from; if the file changed on
disk meanwhile (ConflictError, or a store change for the open memory while the form has edits),
the editor says so and offers Reload or Keep mine. Keep mine is the answer (no second question):
it saves against the new hash, so nothing is overwritten without that choice, and the overwritten
text stays in git. The front matter fields are a widget of their own (memory_fields.py).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.api import (
    MemoryEngine,
    Provenance,
    SecretDetectedError,
    sent_summary,
)
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    ConflictError,
    Memory,
    Role,
    StoreChange,
)
from desktop_mem.ui.memories.memory_fields import MemoryFields
from desktop_mem.ui.memories.memory_form import (
    FormValues,
    editor_title,
    form_changes,
    form_errors,
    memory_info,
)
from desktop_mem.ui.memories.provenance_view import show_provenance_dialog
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.timeline.lineage_view import show_lineage_dialog
from desktop_mem.ui.widgets.dialogs import Confirm, SecretChoice, ask, ask_secret
from desktop_mem.ui.widgets.flow_layout import ElidedLabel, FlowLayout, group


class MemoryEditor(QWidget):
    """Edit one memory (or write a new one)."""

    saved = Signal(object)  # Memory as written
    conflict_shown = Signal(str)  # the message shown in the conflict banner

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, confirm: Confirm = ask,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._confirm = confirm
        self._ask_secret: SecretChoice = ask_secret
        self._secrets: str | None = None  # the user's answer for the save in progress
        self._memory: Memory | None = None
        self._new_conversation: str | None = None
        self._base_hash: str | None = None
        self._saving = False
        self._busy_button: tuple[QPushButton, str] | None = None  # the button showing "Saving…"
        self.titles: dict[str, str] = {}  # conversation id -> title (the window sets them)
        self.last_provenance_dialog: QWidget | None = None  # the "Why do I know this?" opened last
        self._setup_ui()
        self._connect_signals()
        self._show(None)

    # ---------------------------------------------------------------- setup

    def _setup_ui(self) -> None:
        self.title_label = ElidedLabel("", self)
        self.title_label.setObjectName("paneTitle")
        self.banner = QFrame(self)
        self.banner.setObjectName("warningBanner")
        self.banner_label = QLabel(self.banner)
        self.banner_label.setWordWrap(True)
        self.reload_button = QPushButton("Reload", self.banner)
        self.keep_button = QPushButton("Keep mine", self.banner)
        banner_layout = QHBoxLayout(self.banner)
        banner_layout.addWidget(self.banner_label, 1)
        banner_layout.addWidget(self.reload_button)
        banner_layout.addWidget(self.keep_button)

        self.fields = MemoryFields(self)
        # its fields, as the editor's own (tests reach them by these names)
        f = self.fields
        self.kind_combo, self.source_combo, self.expires_check, self.expires_edit = (
            f.kind_combo, f.source_combo, f.expires_check, f.expires_edit)
        self.valid_from_edit, self.valid_to_edit, self.extra_view = (
            f.valid_from_edit, f.valid_to_edit, f.extra_view)
        self.info_label = QLabel(self)
        self.info_label.setObjectName("mutedLabel")
        self.info_label.setWordWrap(True)
        self.info_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.body_edit = QPlainTextEdit(self)
        self.body_edit.setPlaceholderText("The memory, in Markdown")
        self.error_label = QLabel(self)
        self.error_label.setObjectName("errorLabel")
        self.error_label.setWordWrap(True)

        self.new_button = QPushButton("New", self)
        self.save_button = QPushButton("Save", self)
        self.save_button.setDefault(True)
        self.delete_button = QPushButton("Delete", self)
        self.external_button = QPushButton("Open in external editor", self)
        self.lineage_button = QPushButton("Show lineage", self)
        self.why_button = QPushButton("Why do I know this?", self)
        self.why_button.setToolTip("The chat turn and commit this came from, and which models it was sent to")
        self.sent_label = QLabel(self)  # "said in chat “trip” · sent to: local @ 127.0.0.1:8765 3×"
        self.sent_label.setObjectName("mutedLabel")
        self.sent_label.setWordWrap(True)
        buttons = FlowLayout()  # wraps when the editor is narrow
        buttons.addWidget(self.new_button)
        buttons.addWidget(self.external_button)
        buttons.addWidget(self.lineage_button)
        buttons.addWidget(self.why_button)
        # Delete and Save wrap together: Save never ends up alone on a row of its own.
        buttons.addWidget(group(self, self.delete_button, self.save_button))

        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 0, 0, 0)
        layout.addWidget(self.title_label)
        layout.addWidget(self.banner)
        layout.addWidget(self.info_label)
        layout.addWidget(self.sent_label)
        layout.addWidget(self.fields)
        body_label = QLabel("Text", self)
        body_label.setObjectName("mutedLabel")
        layout.addWidget(body_label)
        layout.addWidget(self.body_edit, 1)
        layout.addWidget(self.error_label)
        layout.addLayout(buttons)
        self._save_shortcut = QShortcut(QKeySequence.StandardKey.Save, self)

    def _connect_signals(self) -> None:
        self.save_button.clicked.connect(self.save)
        self._save_shortcut.activated.connect(self.save)
        self.new_button.clicked.connect(self._on_new_button_clicked)
        self.delete_button.clicked.connect(self._on_delete_button_clicked)
        self.external_button.clicked.connect(self.open_external)
        self.lineage_button.clicked.connect(self._on_lineage_button_clicked)
        self.why_button.clicked.connect(self._on_why_button_clicked)
        self.reload_button.clicked.connect(self.reload)
        self.keep_button.clicked.connect(self.keep_mine)

    # --------------------------------------------------------------- public

    @property
    def memory(self) -> Memory | None:
        """The memory as last loaded or saved (None for a new or empty form)."""
        return self._memory

    def open_memory(self, memory: Memory) -> bool:
        """Show a memory; asks before dropping unsaved edits. Returns False if the user kept them."""
        if self._memory is not None and memory.id == self._memory.id and self.is_dirty():
            return True
        if self.is_dirty() and not self._confirm(
                self, "Discard changes?", "The open memory has unsaved changes. Discard them?"):
            return False
        self._show(memory)
        return True

    def close_memory(self) -> None:
        """Nothing is selected any more: an empty form (unsaved edits stay until saved or dropped)."""
        if self._memory is not None and not self.is_dirty():
            self._show(None)

    def new_memory(self, conversation_id: str = GLOBAL_CONVERSATION) -> None:
        """Start a new fact in a conversation."""
        if self.is_dirty() and not self._confirm(
                self, "Discard changes?", "The open memory has unsaved changes. Discard them?"):
            return
        self._show(None, new_conversation=conversation_id)
        self.body_edit.setFocus()

    def values(self) -> FormValues:
        """The form's current values."""
        return self.fields.values(self.body_edit.toPlainText())

    def validate(self) -> list[str]:
        """Reasons the form cannot be saved (empty when it can)."""
        return form_errors(self.values(), self._memory, self._is_fact())

    def changes(self) -> tuple[str | None, dict[str, Any]]:
        """(new text or None, changed front matter keys) against the loaded memory."""
        if self._memory is None:
            return None, {}
        return form_changes(self.values(), self._memory, self._is_fact())

    def is_dirty(self) -> bool:
        """True when the form holds edits that are not saved."""
        if self._new_conversation is not None:
            return bool(self.body_edit.toPlainText().strip())
        text, meta = self.changes()
        return text is not None or bool(meta)

    @Slot()
    def save(self) -> None:
        """Validate, then write on the writer thread (add, or edit against the loaded hash)."""
        if self._engine.read_only or self._saving:
            return
        errors = self.validate()
        self.error_label.setText("\n".join(errors))
        if errors:
            return
        values = self.values()
        if self._new_conversation is not None:
            self._begin_write(self.save_button, "Saving…")
            self._runner.submit_write(
                self._engine.add, values.text, conversation_id=self._new_conversation,
                kind=values.kind or "fact", source=values.source or "manual", expires_at=values.expires_at,
                secrets=self._secrets, on_result=self._on_saved, on_error=self._on_save_failed)
            return
        assert self._memory is not None
        text, meta = self.changes()
        if text is None and not meta:
            return
        self._begin_write(self.save_button, "Saving…")
        self._runner.submit_write(self._engine.edit, self._memory.id, text=text, meta=meta or None,
                                  expected_hash=self._base_hash, secrets=self._secrets,
                                  on_result=self._on_saved, on_error=self._on_save_failed)

    @Slot()
    def reload(self) -> None:
        """Drop the form's edits and show the file as it is on disk now."""
        if self._memory is None:
            return
        self._runner.submit(self._engine.get_raw, self._memory.id, key="editor-load",
                            on_result=self._show, on_error=self._on_failed)

    @Slot()
    def keep_mine(self) -> None:
        """Save the form over the changed file: the banner was the question, so no second one.

        The banner goes at once; the save is made against the file as it is now (the other
        version stays in git and can be restored from the timeline).
        """
        if self._memory is None:
            return
        self.banner.hide()
        self._begin_write(self.save_button, "Saving…")
        self._runner.submit(self._engine.get_raw, self._memory.id, key="editor-load",
                            on_result=self._on_keep_mine_loaded, on_error=self._on_keep_mine_failed)

    @Slot()
    def open_external(self) -> None:
        """Open the Markdown file in the desktop's editor; the watcher brings the edit back."""
        if self._memory is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self._engine.root / self._memory.path)))

    def _on_lineage_button_clicked(self) -> None:
        if self._memory is not None:
            show_lineage_dialog(self, self._runner, self._engine, self._memory.id)

    def _on_why_button_clicked(self) -> None:
        if self._memory is not None:
            dialog = show_provenance_dialog(self, self._runner, self._engine, self._memory.id)
            dialog.turn_opened.connect(self.open_memory)
            self.last_provenance_dialog = dialog

    def _on_provenance_loaded(self, found: Provenance) -> None:
        if self._memory is not None and found.memory.id == self._memory.id:
            self.sent_label.setText(f"{found.how} · {sent_summary(list(found.sent_to))}")

    def on_store_changed(self, change: StoreChange) -> None:
        """Reload the open memory when it changed elsewhere, or flag a conflict if edited here."""
        memory = self._memory
        if memory is None or self._saving:
            return
        if memory.id not in change.memory_ids and memory.path not in change.paths:
            return
        if self.is_dirty():
            self._show_conflict("This memory changed on disk while you were editing it. Your edits "
                                "are still here: reload to see the other version, or keep yours.")
        else:
            self.reload()

    # -------------------------------------------------------------- private

    def _is_fact(self) -> bool:
        return self._new_conversation is not None or (self._memory is not None
                                                      and self._memory.role == Role.MEMORY)

    def _show(self, memory: Memory | None, new_conversation: str | None = None) -> None:
        self._memory = memory
        self._new_conversation = new_conversation
        self._base_hash = memory.content_hash if memory else None
        self.banner.hide()
        self.error_label.clear()
        editing = memory is not None or new_conversation is not None
        writable = editing and not self._engine.read_only
        self.body_edit.setPlainText(memory.text if memory else "")
        self.body_edit.setEnabled(editing)
        self.fields.show_memory(memory, writable=writable, fact_form=self._is_fact())
        self.save_button.setEnabled(writable)
        self.delete_button.setEnabled(writable and memory is not None)
        self.delete_button.setText("Restore" if memory and memory.deleted else "Delete")
        self.external_button.setEnabled(memory is not None)
        self.lineage_button.setEnabled(memory is not None)
        self.why_button.setEnabled(memory is not None and memory.role == Role.MEMORY)
        self.sent_label.clear()
        if memory is not None and memory.role == Role.MEMORY:  # read on the pool: git and the sent log
            self._runner.submit(self._engine.provenance, memory.id, key="editor-provenance",
                                on_result=self._on_provenance_loaded, on_error=lambda _exc: None)
        self.new_button.setEnabled(not self._engine.read_only)
        self.title_label.setText(editor_title(memory, new_conversation, self.titles))
        self.info_label.setText(memory_info(memory))

    def _show_conflict(self, message: str) -> None:
        if not self.banner.isHidden() and self.banner_label.text() == message:
            return  # already asking (a watcher event and the save's own check can both tell)
        self.banner_label.setText(message)
        self.banner.show()
        self.conflict_shown.emit(message)

    def _begin_write(self, button: QPushButton, text: str) -> None:
        """A write is under way: say so on its button until the writer answers."""
        self._saving = True
        self._busy_button = (button, button.text())
        button.setText(text)
        for other in (self.save_button, self.delete_button):
            other.setEnabled(False)

    def _end_write(self) -> None:
        self._saving = False
        if self._busy_button is not None:
            button, text = self._busy_button
            button.setText(text)
            self._busy_button = None
        self.save_button.setEnabled(not self._engine.read_only)
        self.delete_button.setEnabled(not self._engine.read_only and self._memory is not None)

    def _on_saved(self, memory: Memory) -> None:
        self._end_write()
        self._show(memory)
        self.saved.emit(memory)

    def _on_save_failed(self, error: BaseException) -> None:
        self._end_write()
        if isinstance(error, SecretDetectedError) and self._secrets is None:
            listed = "\n".join(f"• {f.kind}: {f.masked}" for f in error.findings)
            self._secrets = self._ask_secret(self, listed)
            if self._secrets is not None:
                self.save()
                self._secrets = None
            else:
                self.error_label.setText("Not saved: the text looks like it contains a secret.")
            return
        if isinstance(error, ConflictError):
            self._show_conflict("This memory changed on disk since you opened it; nothing was "
                                "overwritten. Reload to see the other version, or keep yours.")
        else:
            self.error_label.setText(f"Could not save: {error}")

    def _on_keep_mine_loaded(self, current: Memory) -> None:
        # Diff the form against the file as it is now, so every difference is written.
        self._end_write()
        self._memory = current
        self._base_hash = current.content_hash
        self.save()

    def _on_keep_mine_failed(self, error: BaseException) -> None:
        self._end_write()
        self._on_failed(error)

    def _on_failed(self, error: BaseException) -> None:
        self.error_label.setText(str(error))

    @Slot()
    def _on_new_button_clicked(self) -> None:
        conversation = self._memory.conversation_id if self._memory else GLOBAL_CONVERSATION
        self.new_memory(conversation)

    @Slot()
    def _on_delete_button_clicked(self) -> None:
        memory = self._memory
        if memory is None or self._saving:
            return
        action = self._engine.restore if memory.deleted else self._engine.delete
        self._begin_write(self.delete_button, "Restoring…" if memory.deleted else "Deleting…")
        self._runner.submit_write(action, memory.id, on_result=self._on_saved, on_error=self._on_save_failed)
