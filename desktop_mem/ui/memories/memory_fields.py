"""The memory editor's front matter fields: kind, source, expiry, when it was true, other keys.

A form over one memory's values (`show_memory` fills it, `values` reads it back); the editor owns
the body text, validation and saving (memory_form.py checks what `values` returns).
"""

from __future__ import annotations

from datetime import UTC, datetime

import yaml
from PySide6.QtCore import QDateTime, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDateTimeEdit,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from desktop_mem.engine.models import KINDS, SOURCES, Memory, Role
from desktop_mem.ui.memories.memory_form import FormValues


class MemoryFields(QWidget):
    """The front matter a user may edit, and the keys desktop-mem keeps without knowing them."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.kind_combo = QComboBox(self)
        self.kind_combo.addItems(list(KINDS))
        self.source_combo = QComboBox(self)
        self.source_combo.setEditable(True)
        self.source_combo.addItems(["", *SOURCES])
        self.expires_check = QCheckBox("Expires", self)
        self.expires_edit = QDateTimeEdit(self)
        self.expires_edit.setCalendarPopup(True)
        self.expires_edit.setDisplayFormat("yyyy-MM-dd HH:mm")
        self.expires_edit.setSpecialValueText("never")  # unchecked: no date shown, none saved
        expires = QHBoxLayout()
        expires.addWidget(self.expires_check)
        expires.addWidget(self.expires_edit, 1)
        self.valid_from_edit = QLineEdit(self)
        self.valid_to_edit = QLineEdit(self)
        for edit in (self.valid_from_edit, self.valid_to_edit):
            edit.setPlaceholderText("2024, 2024-03, 2024-03-15 or a date-time; empty: unknown")
        self.valid_from_edit.setToolTip("When this became true (valid_from). Empty: when it was said.")
        self.valid_to_edit.setToolTip("When this stopped being true (valid_to). Empty: still true.")
        self.extra_view = QPlainTextEdit(self)
        self.extra_view.setReadOnly(True)
        self.extra_view.setMaximumHeight(70)
        self.extra_view.setToolTip("Front matter keys desktop-mem does not know; kept as they are.")
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)  # as a row of the editor's column, not a box in it
        self._form = form
        form.addRow("Kind", self.kind_combo)
        form.addRow("Source", self.source_combo)
        form.addRow("", expires)
        form.addRow("True from", self.valid_from_edit)
        form.addRow("True until", self.valid_to_edit)
        form.addRow("Other keys", self.extra_view)

    def _connect_signals(self) -> None:
        self.expires_check.toggled.connect(self._on_expires_check_toggled)

    def values(self, text: str) -> FormValues:
        """The form's values, with `text` as the body."""
        expires = None
        if self.expires_check.isChecked():
            expires = datetime.fromtimestamp(self.expires_edit.dateTime().toSecsSinceEpoch(), UTC)
        source = self.source_combo.currentText().strip() or None
        return FormValues(text, self.kind_combo.currentText() or None, source, expires,
                          self.valid_from_edit.text().strip(), self.valid_to_edit.text().strip())

    def show_memory(self, memory: Memory | None, *, writable: bool, fact_form: bool) -> None:
        """Fill the fields from `memory` (a new fact's defaults for None); `fact_form`: the form
        edits a fact (an existing one, or a new one), which has a kind."""
        self.kind_combo.setCurrentText(memory.kind if memory and memory.kind else "fact")
        self.kind_combo.setEnabled(writable and fact_form)
        self.source_combo.setCurrentText(memory.source or "" if memory else "manual")
        self.source_combo.setEnabled(writable)
        has_expiry = memory is not None and memory.expires_at is not None
        self.expires_check.setChecked(has_expiry)
        self.expires_check.setEnabled(writable)
        self.expires_edit.setEnabled(writable and has_expiry)
        self.expires_edit.setDateTime(
            QDateTime.fromSecsSinceEpoch(int(memory.expires_at.timestamp())) if memory and memory.expires_at
            else self.expires_edit.minimumDateTime())
        is_fact = memory is not None and memory.role == Role.MEMORY
        self.valid_from_edit.setText(memory.valid_from or "" if memory else "")
        self.valid_to_edit.setText(memory.valid_to or "" if memory else "")
        for edit in (self.valid_from_edit, self.valid_to_edit):
            edit.setEnabled(writable and is_fact)
            self._form.setRowVisible(edit, is_fact)
        extra = dict(memory.extra) if memory else {}
        self.extra_view.setPlainText(yaml.safe_dump(extra, allow_unicode=True, sort_keys=False,
                                                    default_flow_style=False) if extra else "")
        self._form.setRowVisible(self.extra_view, bool(extra))
        self._form.setRowVisible(self.kind_combo, fact_form)

    @Slot()
    @Slot(bool)
    def _on_expires_check_toggled(self, on: bool) -> None:
        """Unchecked shows "never"; checking it offers a date 30 days ahead."""
        self.expires_edit.setEnabled(on)
        if not on:
            self.expires_edit.setDateTime(self.expires_edit.minimumDateTime())
        elif self.expires_edit.dateTime() == self.expires_edit.minimumDateTime():
            self.expires_edit.setDateTime(QDateTime.currentDateTime().addDays(30))
