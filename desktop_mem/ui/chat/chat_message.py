"""One message of the chat transcript: who, the Markdown text, and for replies what memory did."""

from __future__ import annotations

import re

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from desktop_mem.engine.api import ChatReply, MemoryUsed, TurnMemory
from desktop_mem.engine.models import Role
from desktop_mem.ui.chat.memory_used_panel import MemoryUsedPanel, describe_record_update
from desktop_mem.ui.chat.reply_status import failure_text, stopped_text
from desktop_mem.ui.widgets.markdown_view import MarkdownView

_FENCE = re.compile(r"^\s*(```|~~~)")


def keep_line_breaks(text: str) -> str:
    """Markdown whose single line breaks stay line breaks, as a chat reader expects them.

    Plain Markdown joins a line break inside a paragraph into a space, which ran a streamed
    reply's lines (an address, a short list without markers) together. Every line break outside
    a code block becomes a hard break; blank lines, lists and code blocks render as before.
    """
    lines = text.split("\n")
    fenced = False
    for i, line in enumerate(lines[:-1]):
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and line.strip() and lines[i + 1].strip() and not line.endswith("  "):
            lines[i] = line + "  "
    return "\n".join(lines)


class ChatMessage(QFrame):
    """A user message or an assistant reply (which may still be streaming)."""

    memory_requested = Signal(str)  # memory id, from the "memory used" panel
    retry_requested = Signal()  # the Retry button under a failed reply
    cancel_update_requested = Signal()  # the Cancel beside "Updating memory…"

    def __init__(self, role: str, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self._text = text
        self.used_panel: MemoryUsedPanel | None = None
        self.setObjectName("userMessage" if role == Role.USER else "assistantMessage")
        self.who = QLabel("You" if role == Role.USER else "Assistant", self)
        self.who.setObjectName("messageAuthor")
        self.view = MarkdownView(self, auto_height=True)
        self.view.set_markdown(keep_line_breaks(text))
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
        self.cancel_update_button = QPushButton("Cancel", self)
        self.cancel_update_button.setToolTip("Stop updating memory from this turn; nothing of it is saved")
        self.cancel_update_button.hide()
        self.cancel_update_button.clicked.connect(self.cancel_update_requested)
        outcome_row = QHBoxLayout()
        outcome_row.setContentsMargins(0, 0, 0, 0)
        outcome_row.addWidget(self.outcome_label, 1)
        outcome_row.addWidget(self.cancel_update_button)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(10, 6, 10, 6)
        self._layout.setSpacing(2)
        self._layout.addWidget(self.who)
        self._layout.addWidget(self.view)
        self._layout.addLayout(status_row)
        self._layout.addLayout(outcome_row)

    @property
    def text(self) -> str:
        """The message text as shown so far."""
        return self._text

    def set_text(self, text: str) -> None:
        """Replace the text (a finished reply)."""
        self._text = text
        self.view.set_markdown(keep_line_breaks(text))

    def append_text(self, chunk: str) -> None:
        """Add streamed tokens and repaint once (the caller coalesces tokens)."""
        if chunk:
            self.set_text(self._text + chunk)

    def set_used(self, used: MemoryUsed, titles: dict[str, str] | None = None) -> None:
        """Attach the "memory used" panel (once, before the first token)."""
        if self.used_panel is not None:
            return
        self.used_panel = MemoryUsedPanel(used, self, titles=titles)
        self.used_panel.memory_requested.connect(self.memory_requested)
        self._layout.insertWidget(1, self.used_panel)

    def set_record(self, record: TurnMemory, titles: dict[str, str] | None = None) -> None:
        """An older reply: the Memory used / Memory updated record kept with its turn."""
        if self.used_panel is None:
            self.used_panel = MemoryUsedPanel(record=record, parent=self, titles=titles)
            self.used_panel.memory_requested.connect(self.memory_requested)
            self._layout.insertWidget(1, self.used_panel)
        if (updated := describe_record_update(record)):
            self.set_outcome(updated)

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

    def show_stopped(self) -> None:
        """The user stopped this reply: what arrived stays, marked interrupted, without Retry."""
        self.set_interrupted(retry=False)
        self.set_status(stopped_text(len(self.text)))

    def show_failed(self, why: str) -> None:
        """This reply failed: marked interrupted, `why` under it, with Retry."""
        self.set_interrupted(retry=True)
        self.set_status(why)

    def show_reply(self, reply: ChatReply, *, stopped: bool, titles: dict[str, str]) -> None:
        """The finished reply as the engine returned it: its whole text, its Memory used, and
        whether it was stopped or failed."""
        if reply.text != self.text:
            self.set_text(reply.text)
        if self.used_panel is None:
            self.set_used(reply.used, titles)
        if stopped:
            self.show_stopped()
        elif reply.error:
            self.show_failed(failure_text(reply))

    def set_outcome(self, text: str) -> None:
        """The "Memory updated: ..." line once the background write path finished."""
        self.outcome_label.setProperty("updating", False)
        self.outcome_label.setText(text)
        self.outcome_label.show()
        self.cancel_update_button.hide()

    def set_updating(self, seconds: int, cancellable: bool, stage: str = "") -> None:
        """The write path runs for this reply: say so, with its step and the time so far."""
        self.outcome_label.setProperty("updating", True)
        step = f" ({stage})" if stage else ""
        self.outcome_label.setText(f"Updating memory…{step} {seconds} s")
        self.outcome_label.show()
        self.cancel_update_button.setVisible(cancellable)

    @property
    def updating(self) -> bool:
        """True while "Updating memory…" is shown under this reply."""
        return bool(self.outcome_label.property("updating")) and self.outcome_label.isVisible()
