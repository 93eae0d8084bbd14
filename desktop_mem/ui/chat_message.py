"""One message of the chat transcript: who, the Markdown text, and for replies what memory did."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from desktop_mem.engine.api import MemoryUsed
from desktop_mem.ui.markdown_view import MarkdownView
from desktop_mem.ui.memory_used_panel import MemoryUsedPanel


class ChatMessage(QFrame):
    """A user message or an assistant reply (which may still be streaming)."""

    memory_requested = Signal(str)  # memory id, from the "memory used" panel
    retry_requested = Signal()  # the Retry button under a failed reply

    def __init__(self, role: str, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self._text = text
        self.used_panel: MemoryUsedPanel | None = None
        self.setObjectName("userMessage" if role == "user" else "assistantMessage")
        self.who = QLabel("You" if role == "user" else "Assistant", self)
        self.who.setObjectName("messageAuthor")
        self.view = MarkdownView(self, auto_height=True)
        self.view.set_markdown(text)
        self.status_label = QLabel(self)
        self.status_label.setObjectName("errorLabel")
        self.status_label.setWordWrap(True)
        self.retry_button = QPushButton("Retry", self)
        self.retry_button.setToolTip("Send the same message again")
        self.retry_button.hide()
        self.retry_button.clicked.connect(self.retry_requested)
        status_row = QHBoxLayout()
        status_row.setContentsMargins(0, 0, 0, 0)
        status_row.addWidget(self.status_label, 1)
        status_row.addWidget(self.retry_button)
        self.status_label.hide()
        self.outcome_label = QLabel(self)
        self.outcome_label.setObjectName("outcomeLabel")
        self.outcome_label.setWordWrap(True)
        self.outcome_label.hide()
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(10, 6, 10, 6)
        self._layout.setSpacing(2)
        self._layout.addWidget(self.who)
        self._layout.addWidget(self.view)
        self._layout.addLayout(status_row)
        self._layout.addWidget(self.outcome_label)

    @property
    def text(self) -> str:
        """The message text as shown so far."""
        return self._text

    def set_text(self, text: str) -> None:
        """Replace the text (a finished reply)."""
        self._text = text
        self.view.set_markdown(text)

    def append_text(self, chunk: str) -> None:
        """Add streamed tokens and repaint once (the caller coalesces tokens)."""
        if chunk:
            self.set_text(self._text + chunk)

    def set_used(self, used: MemoryUsed) -> None:
        """Attach the "memory used" panel (once, before the first token)."""
        if self.used_panel is not None:
            return
        self.used_panel = MemoryUsedPanel(used, self)
        self.used_panel.memory_requested.connect(self.memory_requested)
        self._layout.insertWidget(1, self.used_panel)

    def set_status(self, text: str) -> None:
        """A problem with this reply (stopped, failed), shown under it."""
        self.status_label.setText(text)
        self.status_label.setVisible(bool(text))

    def set_waiting(self, text: str) -> None:
        """What the reply is waiting for, shown until its first words arrive."""
        self.view.setPlaceholderText(text)

    def set_interrupted(self, retry: bool) -> None:
        """Mark a reply that did not complete; `retry` offers to send the message again."""
        self.who.setText("Assistant · interrupted")
        self.view.setPlaceholderText("")
        self.retry_button.setVisible(retry)

    def set_outcome(self, text: str) -> None:
        """The "Memory updated: ..." line once the background write path finished."""
        self.outcome_label.setText(text)
        self.outcome_label.show()
