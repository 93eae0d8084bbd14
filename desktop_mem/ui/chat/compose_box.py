"""Where a chat message is written: the message box, Send and Stop, the Temporary toggle with
its marker, and the note that a message sent during a reply waits for it."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from desktop_mem.ui.chat.temporary_chat import TemporaryMarker, TemporaryToggle

QUEUED_TEXT = "Sends when this reply finishes (Esc stops the reply)."


class ComposeBox(QWidget):
    """The message box and its buttons; Send (or Ctrl+Enter) and Stop are the pane's to answer."""

    send_requested = Signal()
    stop_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.input = QPlainTextEdit(self)
        self.input.setObjectName("chatInput")
        self.input.setPlaceholderText("Message (Ctrl+Enter to send)")
        self.input.setMaximumHeight(96)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("primaryButton")
        self.send_button.setToolTip("Send (Ctrl+Enter)")
        self.stop_button = QPushButton("Stop", self)
        self.stop_button.setToolTip("Stop the reply; what arrived so far is kept")
        self.queued_label = QLabel(QUEUED_TEXT, self)
        self.queued_label.setObjectName("mutedLabel")
        self.queued_label.setWordWrap(True)
        self.queued_label.hide()
        self.temporary_toggle = TemporaryToggle(self)
        self.temporary_marker = TemporaryMarker(self)
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        buttons.addWidget(self.temporary_toggle)
        buttons.addStretch(1)
        compose = QHBoxLayout()
        compose.setContentsMargins(0, 0, 6, 6)
        compose.addWidget(self.input, 1)
        compose.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.queued_label)
        layout.addWidget(self.temporary_marker)
        layout.addLayout(compose)
        self.send_shortcut = QShortcut(QKeySequence("Ctrl+Return"), self.input)
        self.send_shortcut_enter = QShortcut(QKeySequence("Ctrl+Enter"), self.input)

    def _connect_signals(self) -> None:
        self.send_button.clicked.connect(self.send_requested)
        self.stop_button.clicked.connect(self.stop_requested)
        self.send_shortcut.activated.connect(self.send_requested)
        self.send_shortcut_enter.activated.connect(self.send_requested)
        self.temporary_toggle.toggled.connect(self.temporary_marker.setVisible)
