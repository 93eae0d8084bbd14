"""One message of the chat transcript: who, the Markdown text, and for replies what memory did."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QLabel, QVBoxLayout, QWidget

from desktop_mem.engine.chat.chat_types import MemoryUsed
from desktop_mem.ui.markdown_view import MarkdownView
from desktop_mem.ui.memory_used_panel import MemoryUsedPanel


class ChatMessage(QFrame):
    """A user message or an assistant reply (which may still be streaming)."""

    memory_requested = Signal(str)  # memory id, from the "memory used" panel

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
        self._layout.addWidget(self.status_label)
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

    def set_outcome(self, text: str) -> None:
        """The "Memory updated: ..." line once the background write path finished."""
        self.outcome_label.setText(text)
        self.outcome_label.show()
