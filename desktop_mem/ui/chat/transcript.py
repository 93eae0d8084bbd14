"""The chat's transcript: its messages in a scroll area that follows the newest text, a
conversation's latest turns first and older ones a page at a time above what is being read."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QLabel, QPushButton, QScrollArea, QVBoxLayout, QWidget
from shiboken6 import isValid

from desktop_mem.ui.chat.chat_message import ChatMessage
from desktop_mem.ui.chat.turns import StoredTurn

# Messages built when a conversation opens, and per "Show earlier messages": each is a widget made
# on the GUI thread (~3 ms), so a conversation of thousands of turns would freeze the window for
# seconds; its latest turns are what the user reads first (issue #25: 129 turns held a start 0.4 s).
HISTORY_PAGE = 40


class Transcript(QScrollArea):
    """The messages of the conversation shown, oldest first."""

    memory_requested = Signal(str)  # a message's Memory used panel asks to open this memory

    def __init__(self, empty_hint: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.titles: dict[str, str] = {}  # conversation id -> title, for the Memory used panels
        self._earlier: list[StoredTurn] = []  # older turns of the shown conversation, not built yet
        self._keep_from_bottom: int | None = None  # earlier messages went in above: stay in place
        self._setup_ui(empty_hint)
        self._connect_signals()

    def _setup_ui(self, empty_hint: str) -> None:
        self.body = QWidget(self)
        self.body.setObjectName("transcript")
        self._messages = QVBoxLayout(self.body)
        self._messages.setContentsMargins(12, 12, 12, 12)
        self._messages.setSpacing(10)
        self._messages.addStretch(1)
        self.setWidgetResizable(True)
        self.setWidget(self.body)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.empty_label = QLabel(empty_hint, self.body)
        self.empty_label.setObjectName("mutedLabel")
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._messages.insertWidget(0, self.empty_label)
        self.earlier_button = QPushButton(self.body)
        self.earlier_button.setObjectName("earlierMessages")
        self.earlier_button.setToolTip("This conversation's older messages, a page at a time")
        self.earlier_button.hide()
        self._messages.insertWidget(1, self.earlier_button, 0, Qt.AlignmentFlag.AlignHCenter)

    def _connect_signals(self) -> None:
        self.earlier_button.clicked.connect(self.show_earlier)
        self.verticalScrollBar().rangeChanged.connect(self._on_scroll_range_changed)

    def messages(self) -> list[ChatMessage]:
        """The message widgets, oldest first."""
        items = (self._messages.itemAt(i) for i in range(self._messages.count()))
        widgets = (item.widget() for item in items if item is not None)
        return [w for w in widgets if isinstance(w, ChatMessage)]

    def add_message(self, role: str, text: str, at: int | None = None) -> ChatMessage:
        """A message at the end (the view follows it), or at layout index `at` (earlier ones)."""
        self.empty_label.hide()
        message = ChatMessage(role, text, self.body)
        message.memory_requested.connect(self.memory_requested)
        if at is None:
            self._keep_from_bottom = None
        self._messages.insertWidget(self._messages.count() - 1 if at is None else at, message)
        return message

    def remove_message(self, message: ChatMessage) -> None:
        """Take a message out of the transcript."""
        self._messages.removeWidget(message)
        message.setParent(None)
        message.deleteLater()

    def set_aside(self, message: ChatMessage | None) -> None:
        """A retry replaces this failed reply: gone if nothing of it arrived (nothing was stored),
        else kept as it is stored (marked interrupted) without its Retry button."""
        if message is None or not isValid(message):
            return
        if message.text:
            message.retry_button.hide()
            return
        self.remove_message(message)

    def show_turn(self, turn: StoredTurn, at: int | None = None) -> ChatMessage:
        """A stored turn, as it was stored (interrupted, with its memory record)."""
        message = self.add_message(turn.role, turn.text, at)
        if turn.interrupted:
            message.set_interrupted(retry=False)
        if turn.record is not None:
            message.set_record(turn.record, self.titles)
        return message

    def show_history(self, turns: list[StoredTurn]) -> ChatMessage | None:
        """A conversation's stored turns: the latest page built, the rest behind "Show earlier
        messages"; returns the last message shown."""
        message: ChatMessage | None = None
        for turn in turns[-HISTORY_PAGE:]:
            message = self.show_turn(turn)
        self._earlier = turns[:-HISTORY_PAGE]
        self._label_earlier()
        return message

    @Slot()
    def show_earlier(self) -> None:
        """Build the next page of older messages above the shown ones; the view stays where the
        user was reading."""
        if not self._earlier:
            return
        batch, self._earlier = self._earlier[-HISTORY_PAGE:], self._earlier[:-HISTORY_PAGE]
        bar = self.verticalScrollBar()
        self._keep_from_bottom = bar.maximum() - bar.value()
        first = self._messages.indexOf(self.earlier_button) + 1
        for offset, turn in enumerate(batch):
            self.show_turn(turn, at=first + offset)
        self._label_earlier()

    def clear(self, empty_hint: str) -> None:
        """No messages; `empty_hint` says what to do."""
        self._earlier = []
        self._keep_from_bottom = None
        self.earlier_button.hide()
        for message in self.messages():
            self.remove_message(message)
        self.empty_label.setText(empty_hint)
        self.empty_label.show()

    def _label_earlier(self) -> None:
        left = len(self._earlier)
        self.earlier_button.setText(f"Show earlier messages ({left:,} more)")
        self.earlier_button.setVisible(left > 0)

    @Slot(int, int)
    def _on_scroll_range_changed(self, _minimum: int, maximum: int) -> None:
        bar = self.verticalScrollBar()
        if self._keep_from_bottom is not None:  # earlier messages went in above what was read
            bar.setValue(maximum - self._keep_from_bottom)
            return
        bar.setValue(maximum)  # follow the newest text
