"""The temporary-chat toggle and its markers: while it is on, turns read memory and nothing of
them is stored (no turn, fact, summary or commit: `MemoryEngine.chat(temporary=True)`)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QToolButton, QWidget

from desktop_mem.ui.chat.chat_message import ChatMessage

TOGGLE_TEXT = "Temporary"
TOGGLE_TIP = ("Temporary chat: replies read your memory, but nothing you send while this is on is "
              "stored (no messages, facts, summary or history entry)")
MARKER_TEXT = ("Temporary chat — memory is read, nothing you send here is stored. Turn off "
               "“Temporary” to chat normally.")
MESSAGE_MARK = "temporary · not stored"
TEMPORARY_CONVERSATION = "temporary"  # read scope when no conversation is selected; never created


class TemporaryToggle(QToolButton):
    """A checkable button beside Send; `toggled(bool)` says when it changes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("temporaryToggle")
        self.setText(TOGGLE_TEXT)
        self.setToolTip(TOGGLE_TIP)
        self.setCheckable(True)
        self.setAccessibleName("Temporary chat")


class TemporaryMarker(QLabel):
    """The line above the message box that says the chat is temporary (hidden when it is not)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(MARKER_TEXT, parent)
        self.setObjectName("temporaryMarker")
        self.setWordWrap(True)
        self.hide()


def mark_temporary(message: ChatMessage) -> None:
    """Say on a message that it was sent in a temporary chat, so it is gone once left."""
    message.who.setText(f"{message.who.text()} · {MESSAGE_MARK}")
