"""A non-modal warning above the transcript (the LLM did not answer, the store is read-only,
...), with a link to Settings when a setting can fix it, closed with ✕."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget


class ProblemBanner(QFrame):
    """One problem at a time; hidden until `show_problem`."""

    settings_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("warningBanner")
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        row = QHBoxLayout(self)
        row.addWidget(self.label, 1)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()
        self.close_button.clicked.connect(self.hide)
        self.label.linkActivated.connect(self._on_label_link_activated)

    def show_problem(self, message: str, *, settings: bool = True) -> None:
        """Say `message` (plain text); with a link to Settings when a setting can fix it."""
        safe = message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        link = ' &nbsp;<a href="settings">Open Settings…</a>' if settings else ""
        self.label.setText(f"{safe}{link}")
        self.show()

    @Slot(str)
    def _on_label_link_activated(self, _link: str) -> None:
        self.settings_requested.emit()
