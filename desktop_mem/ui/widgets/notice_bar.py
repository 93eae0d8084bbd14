"""A non-modal notice at the top of the window that any part of the app can post to.

For news the user should see without being interrupted ("Claude Desktop added 2 memories —
Undo"): one line, an optional action button, a close button; it hides itself after a while.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QWidget

NOTICE_MS = 20_000


class NoticeBar(QFrame):
    """Shows the latest notice; a newer one replaces it."""

    action_triggered = Signal(str)  # the notice's text, when its action button was pressed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("noticeBar")
        self._action: Callable[[], None] | None = None
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.action_button = QPushButton(self)
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 4, 6, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.action_button)
        layout.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self.action_button.clicked.connect(self._on_action_button_clicked)
        self.close_button.clicked.connect(self.hide)
        self.hide()

    def post(self, text: str, action_text: str | None = None, action: Callable[[], None] | None = None,
             timeout_ms: int = NOTICE_MS) -> None:
        """Show `text` (with a button running `action`, e.g. "Undo") until closed or timed out."""
        self.label.setText(text)
        self._action = action
        self.action_button.setText(action_text or "")
        self.action_button.setVisible(bool(action_text and action))
        self.show()
        self._timer.start(timeout_ms)

    @Slot()
    def _on_action_button_clicked(self) -> None:
        action, self._action = self._action, None
        self.hide()
        if action is not None:
            action()
            self.action_triggered.emit(self.label.text())
