"""A non-modal dialog over a list: a note above it, the dialog's own controls under it, and Close."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLayout, QListWidget, QVBoxLayout, QWidget


class ListDialog(QDialog):
    """Deletes itself on close. A subclass builds its controls, then hands them to `_finish_layout`
    (so the focus order runs note, list, its controls, Close)."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle(title)
        self.note_label = QLabel(self)
        self.note_label.setWordWrap(True)
        self.list = QListWidget(self)
        self.list.setWordWrap(True)

    def _finish_layout(self, controls: QWidget | QLayout, width: int, height: int) -> None:
        """Put `controls` under the list and Close (which closes the dialog) at the bottom."""
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.note_label)
        layout.addWidget(self.list, 1)
        if isinstance(controls, QLayout):
            layout.addLayout(controls)
        else:
            layout.addWidget(controls)
        layout.addWidget(self.buttons)
        self.resize(width, height)
