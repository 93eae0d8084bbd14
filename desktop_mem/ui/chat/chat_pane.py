"""The chat pane: the transcript, a streaming reply, stop, "memory used" and "memory updated".

A turn runs `engine.chat` on the runner's chat lane (never on the writer: saves made while a
reply streams land at once). Tokens arrive on that thread and go into a
locked buffer; a 30 ms timer on the GUI thread drains it, so the view repaints at a steady rate
however fast the model streams. The "memory used" value crosses threads through a queued signal;
the write path's outcome arrives later through the EngineBridge.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from desktop_mem.engine.api import ChatReply, MemoryEngine, MemoryUsed, TurnMemory, WriteOutcome, turn_records
from desktop_mem.engine.models import Role
from desktop_mem.ui.chat.chat_message import ChatMessage
from desktop_mem.ui.chat.reply_status import failure_text, is_config_problem, stopped_text
from desktop_mem.ui.chat.temporary_chat import (
    TEMPORARY_CONVERSATION,
    TemporaryMarker,
    TemporaryToggle,
    mark_temporary,
)
from desktop_mem.ui.task_runner import TaskRunner

log = logging.getLogger(__name__)

REPAINT_MS = 30
SLOW_FIRST_WORDS_S = 30  # a reply with no words after this long says what may hold it up
TICK_MS = 250  # "Updating memory… N s" counts whole seconds (a 1 s timer firing early showed 0 s twice)
EMPTY_HINT = ("Say hello. Facts you mention are remembered; the panel under each reply shows what "
              "memory was used.")
NO_CONVERSATION_HINT = ("No conversation yet. Type a message and Send: a new conversation starts "
                        "with it (or press Ctrl+N to name one first).")


UNANSWERED_TEXT = ("No reply to this message was stored (the last attempt failed). Retry, or Send "
                   "on the same text, sends it again; it is stored once.")
QUEUED_TEXT = "Sends when this reply finishes (Esc stops the reply)."
# Messages built when a conversation opens, and per "Show earlier messages": each is a widget made
# on the GUI thread (~3 ms), so a conversation of thousands of turns would freeze the window for
# seconds; its latest turns are what the user reads first (issue #25: 129 turns held a start 0.4 s).
HISTORY_PAGE = 40
# While the user writes, the turn's search models are loaded (MemoryEngine.prepare_chat_turn), at
# most this often: they load on first use (~0.2 s each, the first turn waited for both) and the
# cross-encoder is let go after minutes idle (retrieval.rerank_idle_release_s, 300 s by default).
PREPARE_EVERY_S = 60.0


@dataclass(frozen=True)
class StoredTurn:
    """One stored turn as the pane shows it."""

    role: str
    text: str
    interrupted: bool
    record: TurnMemory | None = None  # a reply's Memory used / updated, kept with its turn


def load_history(engine: MemoryEngine, conversation_id: str) -> list[StoredTurn]:
    """Run in a worker: the stored turns, oldest first, each reply with its memory record."""
    turns = engine.transcript(conversation_id)
    records = turn_records(turns)
    shown: list[StoredTurn] = []
    user_id: str | None = None
    for m in turns:
        user_id = m.id if m.role == Role.USER else user_id
        record = records.get(user_id) if m.role == Role.ASSISTANT and user_id else None
        shown.append(StoredTurn(m.role, m.text, bool(m.extra.get("interrupted")), record))
    return shown


def unanswered(turns: list[StoredTurn]) -> StoredTurn | None:
    """The last user message, when nothing but interrupted replies came after it: the engine
    reuses its stored turn when it is sent again (retry), so it must be sent as a retry."""
    last = next((i for i in range(len(turns) - 1, -1, -1) if turns[i].role == Role.USER), None)
    if last is None or any(not t.interrupted for t in turns[last + 1:]):
        return None
    return turns[last]


class TokenBuffer:
    """Tokens from the chat thread, drained by the GUI thread's repaint timer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: list[str] = []
        self.count = 0  # tokens received in this reply (how a user sees streaming happen)

    def push(self, token: str) -> None:
        """Called on the chat thread for every streamed token."""
        with self._lock:
            self._parts.append(token)
            self.count += 1

    def drain(self) -> str:
        """Everything received since the last drain."""
        with self._lock:
            text = "".join(self._parts)
            self._parts.clear()
        return text


@dataclass
class _Turn:
    """The reply being streamed: its widget, buffer and cancel switch."""

    conversation_id: str
    user_text: str
    message: ChatMessage | None
    buffer: TokenBuffer = field(default_factory=TokenBuffer)
    cancel: threading.Event = field(default_factory=threading.Event)
    released: bool = False  # stopped by the user: the pane no longer waits for it
    answered: bool = False  # its first words arrived
    started: float = field(default_factory=time.monotonic)
    waited: int = -1  # the whole seconds its waiting text last said


@dataclass
class _Awaiting:
    """A reply whose write path has not reported yet; its outcome carries the same turn id."""

    conversation_id: str
    turn_id: str | None
    message: ChatMessage | None
    started: float = field(default_factory=time.monotonic)
    stage: str = ""  # the write path's step now ("extracting facts", ...), from its progress events
    cancelled: bool = False  # the user pressed Cancel


class ChatPane(QWidget):
    """Chat in one conversation."""

    memory_requested = Signal(str)  # open this memory in the editor
    settings_requested = Signal()
    reply_finished = Signal(object)  # ChatReply
    reply_progressed = Signal(str)  # the reply text so far, after each repaint
    outcome_shown = Signal(str)
    llm_problem = Signal(str)  # one line for the status bar
    reply_stopped = Signal()  # Stop or Esc released the pane (the request may still end later)
    conversation_created = Signal(str)  # Send with no conversation selected started this one
    llm_answered = Signal()  # the first words of a reply arrived: the endpoint works
    memory_activity = Signal(str)  # "Updating memory… 12 s" while write paths run, "" when none

    _used_received = Signal(object)  # MemoryUsed, from the chat thread

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._conversation: str | None = None
        self._creating = False  # a conversation for the first message is being created
        self._turn: _Turn | None = None
        self._failed: _Turn | None = None  # the shown conversation's last turn, if its reply failed
        self.last_token_count = 0  # tokens the last reply streamed in (0: it came in one piece)
        # (conversation, user text, reply widget) of replies whose write path has not reported yet
        self._awaiting_outcome: list[_Awaiting] = []
        self._early_outcomes: dict[str, WriteOutcome] = {}  # by turn id, before their reply arrived
        self._titles: dict[str, str] = {}  # conversation id -> title, for the Memory used panels
        self._queued = False  # Send during a reply: the box's text goes once the reply ends
        self._failure_note: tuple[str, str] | None = None  # (conversation, why) kept over a reload
        self._repaint = QTimer(self)
        self._repaint.setInterval(REPAINT_MS)
        self._tick = QTimer(self)
        self._tick.setInterval(TICK_MS)
        self._setup_ui()
        self._connect_signals()
        self._set_busy(False)

    # ---------------------------------------------------------------- setup

    def _setup_ui(self) -> None:
        self.banner = QFrame(self)
        self.banner.setObjectName("warningBanner")
        self.banner_label = QLabel(self.banner)
        self.banner_label.setWordWrap(True)
        self.banner_label.setTextFormat(Qt.TextFormat.RichText)
        self.banner_close = QToolButton(self.banner)
        self.banner_close.setText("✕")
        self.banner_close.setAutoRaise(True)
        banner = QHBoxLayout(self.banner)
        banner.addWidget(self.banner_label, 1)
        banner.addWidget(self.banner_close, 0, Qt.AlignmentFlag.AlignTop)
        self.banner.hide()

        self.transcript = QWidget(self)
        self.transcript.setObjectName("transcript")
        self._messages = QVBoxLayout(self.transcript)
        self._messages.setContentsMargins(12, 12, 12, 12)
        self._messages.setSpacing(10)
        self._messages.addStretch(1)
        self.scroll_area = QScrollArea(self)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setWidget(self.transcript)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        self.empty_label = QLabel(NO_CONVERSATION_HINT, self.transcript)
        self.empty_label.setObjectName("mutedLabel")
        self.empty_label.setWordWrap(True)
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._messages.insertWidget(0, self.empty_label)
        self.earlier_button = QPushButton(self.transcript)
        self.earlier_button.setObjectName("earlierMessages")
        self.earlier_button.setToolTip("This conversation's older messages, a page at a time")
        self.earlier_button.hide()
        self._messages.insertWidget(1, self.earlier_button, 0, Qt.AlignmentFlag.AlignHCenter)
        self._earlier: list[StoredTurn] = []  # older turns of the shown conversation, not built yet
        self._keep_from_bottom: int | None = None  # earlier messages went in above: stay in place
        self._prepared_at = -PREPARE_EVERY_S  # when typing last loaded the turn's models

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
        layout.addWidget(self.banner)
        layout.addWidget(self.scroll_area, 1)
        layout.addWidget(self.queued_label)
        layout.addWidget(self.temporary_marker)
        layout.addLayout(compose)
        self.send_shortcut = QShortcut(QKeySequence("Ctrl+Return"), self.input)
        self.send_shortcut_enter = QShortcut(QKeySequence("Ctrl+Enter"), self.input)

    def _connect_signals(self) -> None:
        self.send_button.clicked.connect(self.send)
        self.stop_button.clicked.connect(self.stop)
        self.send_shortcut.activated.connect(self.send)
        self.send_shortcut_enter.activated.connect(self.send)
        self.input.textChanged.connect(self._on_input_text_changed)
        self.banner_close.clicked.connect(self.banner.hide)
        self.earlier_button.clicked.connect(self.show_earlier)
        self.temporary_toggle.toggled.connect(self.temporary_marker.setVisible)
        self.banner_label.linkActivated.connect(self._on_banner_label_link_activated)
        self._repaint.timeout.connect(self._on_repaint_timeout)
        self._tick.timeout.connect(self._on_tick_timeout)
        self._used_received.connect(self._on_used_received, Qt.ConnectionType.QueuedConnection)
        self.scroll_area.verticalScrollBar().rangeChanged.connect(self._on_scroll_range_changed)

    @Slot()
    def _on_input_text_changed(self) -> None:
        now = time.monotonic()
        if now - self._prepared_at < PREPARE_EVERY_S or not self.input.toPlainText().strip():
            return
        self._prepared_at = now
        # A failure here is the turn's to report (it loads the same models and says what is wrong).
        self._runner.submit(self._engine.prepare_chat_turn, key="chat-prepare",
                            on_error=lambda exc: log.debug("read path not prepared: %s", exc))

    # --------------------------------------------------------------- public

    @property
    def conversation(self) -> str | None:
        """The conversation shown."""
        return self._conversation

    @property
    def busy(self) -> bool:
        """True while a reply is being produced."""
        return self._turn is not None

    def messages(self) -> list[ChatMessage]:
        """The transcript's message widgets, oldest first."""
        items = (self._messages.itemAt(i) for i in range(self._messages.count()))
        widgets = (item.widget() for item in items if item is not None)
        return [w for w in widgets if isinstance(w, ChatMessage)]

    def set_conversation(self, conversation_id: str | None) -> None:
        """Show a conversation's stored turns (loaded off the GUI thread)."""
        if conversation_id == self._conversation:
            return
        self._conversation = conversation_id
        if self._turn is not None:
            self._turn.message = None  # the reply keeps running; its conversation is no longer shown
        self._failed = None
        self._clear()
        if conversation_id is not None:
            self._runner.submit(load_history, self._engine, conversation_id, key="chat-history",
                                on_result=self._on_history_loaded, on_error=self._on_history_failed)

    @Slot()
    def send(self) -> None:
        """Send the typed message; the reply streams in below it.

        The message whose reply just failed, sent again as it was (Retry, or Send on the text put
        back in the box), is a retry: the engine reuses its stored turn, and the transcript shows
        it once, with the new reply under it.
        """
        text = self.input.toPlainText().strip()
        if not text or self._creating:
            return
        if self._turn is not None:  # one reply at a time: this message goes once it ends
            self._queued = True
            self.queued_label.show()
            return
        temporary = self.temporary_toggle.isChecked()  # reads memory, stores nothing
        if self._engine.read_only and not temporary:
            self.show_problem("This window opened the store read-only (another desktop-mem is writing "
                              "to it), so it cannot chat. Close the other one and reopen.")
            return
        if self._conversation is None and not temporary:
            self._start_conversation(text)
            return
        failed, self._failed = self._failed, None
        retry = failed is not None and failed.user_text == text and not temporary
        self.input.clear()
        self.banner.hide()
        if retry and failed is not None:
            self._set_aside(failed)
        else:
            sent = self._add_message("user", text)
            if temporary:
                mark_temporary(sent)
        reply = self._add_message("assistant", "")
        reply.set_waiting(self._waiting_text())
        if temporary:
            mark_temporary(reply)
        turn = _Turn(self._conversation or TEMPORARY_CONVERSATION, text, reply)
        reply.retry_requested.connect(lambda t=turn: self.retry(t.user_text))
        self._turn = turn
        self._set_busy(True)
        self._repaint.start()
        self._runner.submit_chat(
            self._engine.chat, turn.conversation_id, text, retry=retry, temporary=temporary,
            on_token=turn.buffer.push, on_used=self._used_received.emit, cancel=turn.cancel,
            on_result=partial(self._on_reply, turn), on_error=partial(self._on_chat_error, turn))

    @Slot()
    def stop(self) -> None:
        """Stop the reply at once: the text so far is kept, and Send works again right away.

        The engine notices the cancel at its next token; a request still waiting for the server
        ends in the background and its (empty or partial) result is shown when it arrives.
        """
        turn = self._finish_turn()
        if turn is None:
            return
        turn.cancel.set()
        turn.released = True
        if turn.message is not None:
            turn.message.set_interrupted(retry=False)
            turn.message.set_status(stopped_text(len(turn.message.text)))
        self.reply_stopped.emit()

    def retry(self, text: str) -> None:
        """Send a message again (the Retry button under a failed reply)."""
        if self._turn is not None:
            return
        self.input.setPlainText(text)
        self.send()

    @property
    def queued(self) -> bool:
        """True when Send was pressed during a reply: the typed message goes once it ends."""
        return self._queued

    @property
    def updating_memory(self) -> int:
        """How many replies' write paths have not reported yet."""
        return len(self._awaiting_outcome)

    @property
    def can_cancel_memory_update(self) -> bool:
        """A running memory update can be cancelled (not in a read-only window: none runs)."""
        return not self._engine.read_only

    @Slot()
    def cancel_memory_updates(self) -> None:
        """Cancel every running write path (the status bar's Cancel)."""
        for pending in list(self._awaiting_outcome):
            self._cancel_update(pending)

    def reload_if_idle(self) -> None:
        """Read the shown conversation's turns again (they changed outside a chat turn: the demo,
        an import, a sync, an outside edit) unless a reply or its memory update is under way."""
        conv = self._conversation
        if conv is None or self._turn is not None or self._awaiting_outcome or self._creating:
            return
        self._conversation = None
        self.set_conversation(conv)

    def set_titles(self, titles: dict[str, str]) -> None:
        """Conversation titles: the Memory used panels name conversations by title."""
        self._titles = dict(titles)

    def keep_failure_note(self, conversation_id: str, why: str) -> None:
        """Say `why` under the conversation's unanswered message once it is shown again (the
        window reopens the store after Settings are saved)."""
        self._failure_note = (conversation_id, why)

    def failure_note(self) -> tuple[str, str] | None:
        """(conversation, why) of the shown conversation's failed last reply, if any."""
        failed = self._failed
        if failed is None or failed.message is None or not isValid(failed.message):
            return None
        return failed.conversation_id, failed.message.status_label.text()

    def _cancel_update(self, pending: _Awaiting) -> None:
        """Cancel one reply's memory update: honoured between its steps, nothing half-applied
        (only a flag is set here; the write path stops on its own thread)."""
        if pending.turn_id is None or pending not in self._awaiting_outcome:
            return
        pending.cancelled = True
        self._engine.cancel_write_path(pending.turn_id)
        if pending.message is not None and isValid(pending.message):
            pending.message.cancel_update_button.setEnabled(False)

    @Slot(object)
    def on_write_progress(self, progress: Any) -> None:
        """A WriteProgress event: show the step, or end "Updating memory…" when the write path
        failed (no outcome comes then; the turn's messages are on disk)."""
        pending = next((p for p in self._awaiting_outcome if p.turn_id == progress.turn_id), None)
        if pending is None:
            return
        if progress.running:
            pending.stage = progress.stage
            self._on_tick_timeout()
            return
        if progress.state == "failed":
            self._awaiting_outcome.remove(pending)
            if pending.message is not None and isValid(pending.message):
                pending.message.set_outcome("Memory was not updated from this turn: the update failed "
                                            "(the messages are saved; see the log).")
            self._on_tick_timeout()

    def _set_aside(self, failed: _Turn) -> None:
        """A retry replaces the failed reply: gone if nothing of it arrived (nothing was stored),
        else kept as it is stored (marked interrupted) without its Retry button."""
        message = failed.message
        if message is None or not isValid(message):
            return
        if message.text:
            message.retry_button.hide()
            return
        self._messages.removeWidget(message)
        message.setParent(None)
        message.deleteLater()

    def _waiting_text(self, seconds: int = 0) -> str:
        """What a new reply waits for, before its first words, and for how long: the app's other
        requests at the model server (memory updates) and, after a while, what else it may be."""
        model = self._engine.config["llm.model"] or "the model"
        parts = [f"Waiting for {model}… {seconds} s"]
        now = time.monotonic()
        for p in self._awaiting_outcome:
            step = f", {p.stage}" if p.stage else ""
            parts.append(f"The memory update of an earlier reply is still running ({int(now - p.started)} s"
                         f"{step}); a local server answers one request at a time.")
        others = max(self._engine.open_llm_requests() - 1, 0)  # one is this message's own
        if others and not self._awaiting_outcome:
            parts.append(f"{others} other request{'s' if others > 1 else ''} of this app "
                         f"{'are' if others > 1 else 'is'} open at the model server.")
        if seconds >= SLOW_FIRST_WORDS_S:
            parts.append("No words yet: the server may be busy with other programs' requests or still "
                         "loading the model. Stop (Esc) keeps your message.")
        return "\n".join(parts)

    def focus_input(self) -> None:
        """Put the cursor in the message box."""
        self.input.setFocus(Qt.FocusReason.OtherFocusReason)

    def show_problem(self, message: str, *, settings: bool = True) -> None:
        """A non-modal banner; with a link to Settings when a setting can fix the problem."""
        safe = message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        link = ' &nbsp;<a href="settings">Open Settings…</a>' if settings else ""
        self.banner_label.setText(f"{safe}{link}")
        self.banner.show()

    def on_outcome(self, outcome: WriteOutcome) -> None:
        """The write path of a turn finished: say what changed under that reply."""
        try:
            self._show_outcome(outcome)
        finally:
            self._on_tick_timeout()

    def _show_outcome(self, outcome: WriteOutcome) -> None:
        match = next((p for p in self._awaiting_outcome
                      if outcome.turn_id is not None and p.turn_id == outcome.turn_id), None)
        if match is None:  # an engine without turn ids: the oldest reply of that conversation
            match = next((p for p in self._awaiting_outcome if p.conversation_id == outcome.conversation_id
                          and p.turn_id is None), None)
        if match is None:
            if outcome.turn_id is not None:  # it came before its reply did: shown when that arrives
                self._early_outcomes[outcome.turn_id] = outcome
            return
        self._awaiting_outcome.remove(match)
        message = match.message
        if message is None or not isValid(message) or match.conversation_id != self._conversation:
            return  # its conversation is not shown any more
        text = outcome.describe()
        if match.cancelled:
            text = f"Memory update cancelled: {text[0].lower()}{text[1:]}"
        message.set_outcome(text)
        self.outcome_shown.emit(text)

    # -------------------------------------------------------------- private

    def _start_conversation(self, text: str) -> None:
        """Send with nothing selected (a new, empty store): create a conversation named after it."""
        self._creating = True
        self.send_button.setEnabled(False)
        title = " ".join(text.split()[:6])[:60] or "Conversation"
        self._runner.submit_write(self._engine.new_conversation, title,
                                  on_result=self._on_conversation_created,
                                  on_error=self._on_conversation_failed)

    def _on_conversation_created(self, conversation_id: str) -> None:
        self._creating = False
        self._conversation = conversation_id
        self.empty_label.setText(EMPTY_HINT)
        self.conversation_created.emit(conversation_id)
        self._set_busy(False)
        self.send()

    def _on_conversation_failed(self, error: BaseException) -> None:
        self._creating = False
        self._set_busy(False)
        self.show_problem(f"Could not start a conversation: {error}")

    def _add_message(self, role: str, text: str, at: int | None = None) -> ChatMessage:
        """A message at the end (the view follows it), or at layout index `at` (earlier ones)."""
        self.empty_label.hide()
        message = ChatMessage(role, text, self.transcript)
        message.memory_requested.connect(self.memory_requested)
        if at is None:
            self._keep_from_bottom = None
        self._messages.insertWidget(self._messages.count() - 1 if at is None else at, message)
        return message

    def _show_turn(self, turn: StoredTurn, at: int | None = None) -> ChatMessage:
        message = self._add_message(turn.role, turn.text, at)
        if turn.interrupted:
            message.set_interrupted(retry=False)
        if turn.record is not None:
            message.set_record(turn.record, self._titles)
        return message

    @Slot()
    def show_earlier(self) -> None:
        """Build the next page of older messages above the shown ones; the view stays where the
        user was reading."""
        if not self._earlier:
            return
        batch, self._earlier = self._earlier[-HISTORY_PAGE:], self._earlier[:-HISTORY_PAGE]
        bar = self.scroll_area.verticalScrollBar()
        self._keep_from_bottom = bar.maximum() - bar.value()
        first = self._messages.indexOf(self.earlier_button) + 1
        for offset, turn in enumerate(batch):
            self._show_turn(turn, at=first + offset)
        self._label_earlier()

    def _label_earlier(self) -> None:
        left = len(self._earlier)
        self.earlier_button.setText(f"Show earlier messages ({left:,} more)")
        self.earlier_button.setVisible(left > 0)

    def _clear(self) -> None:
        self._earlier = []
        self._keep_from_bottom = None
        self.earlier_button.hide()
        for message in self.messages():
            self._messages.removeWidget(message)
            message.setParent(None)
            message.deleteLater()
        for pending in self._awaiting_outcome:  # still counted in the status bar until they report
            pending.message = None
        self.empty_label.setText(EMPTY_HINT if self._conversation is not None else NO_CONVERSATION_HINT)
        self.empty_label.show()

    def _set_busy(self, busy: bool) -> None:
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)

    def _finish_turn(self) -> _Turn | None:
        turn = self._turn
        self._turn = None
        self._repaint.stop()
        self._set_busy(False)
        if turn is not None:
            self.last_token_count = turn.buffer.count
        if turn is not None:
            self._show_words(turn)  # a short reply can end before the first repaint
        if self._queued:
            QTimer.singleShot(0, self._send_queued)
        return turn

    @Slot()
    def _send_queued(self) -> None:
        """The reply before it ended: send the message queued with Send / Ctrl+Enter meanwhile,
        unless that reply failed (then the user decides: Retry first, or Send)."""
        self._queued = False
        self.queued_label.hide()
        if self._failed is None:
            self.send()

    @Slot()
    def _on_tick_timeout(self) -> None:
        """Say under each reply, and in the status bar, that its memory update is running."""
        pending = self._awaiting_outcome
        if not pending:
            self._tick.stop()
            self.memory_activity.emit("")
            return
        now = time.monotonic()
        cancellable = self.can_cancel_memory_update
        for p in pending:
            if p.message is not None and isValid(p.message) and p.conversation_id == self._conversation:
                p.message.set_updating(int(now - p.started), cancellable and not p.cancelled,
                                       "cancelling" if p.cancelled else p.stage)
        longest = int(now - min(p.started for p in pending))
        more = f" ({len(pending)} replies)" if len(pending) > 1 else ""
        self.memory_activity.emit(f"Updating memory… {longest} s{more}")
        if not self._tick.isActive():
            self._tick.start()

    @Slot()
    def _on_repaint_timeout(self) -> None:
        turn = self._turn
        if turn is not None:
            self._show_words(turn)
            seconds = int(time.monotonic() - turn.started)
            if not turn.answered and turn.message is not None and seconds != turn.waited:
                turn.waited = seconds  # what the reply waits for, counted in whole seconds
                turn.message.set_waiting(self._waiting_text(seconds))

    def _show_words(self, turn: _Turn) -> None:
        """Append the words streamed since the last repaint; the first ones say the LLM answers."""
        if turn.message is None:
            return
        chunk = turn.buffer.drain()
        if chunk:
            turn.message.append_text(chunk)
            self.reply_progressed.emit(turn.message.text)
            if not turn.answered:
                turn.answered = True
                self.llm_answered.emit()

    @Slot(object)
    def _on_used_received(self, used: MemoryUsed) -> None:
        turn = self._turn
        if turn is not None and turn.message is not None and used.conversation_id == turn.conversation_id:
            turn.message.set_used(used, self._titles)

    def _on_reply(self, turn: _Turn, reply: ChatReply) -> None:
        if turn is self._turn:
            self._finish_turn()
        message = turn.message if turn.message is not None and isValid(turn.message) else None
        if not reply.temporary:  # a temporary turn has no memory update to wait for
            pending = _Awaiting(turn.conversation_id, reply.turn_id, message)
            self._awaiting_outcome.append(pending)
            if message is not None:
                message.cancel_update_requested.connect(partial(self._cancel_update, pending))
        early = self._early_outcomes.pop(reply.turn_id, None) if reply.turn_id else None
        if message is not None:
            if reply.text != message.text:
                message.set_text(reply.text)
            if message.used_panel is None:
                message.set_used(reply.used, self._titles)
            if reply.cancelled or turn.released:
                message.set_interrupted(retry=False)
                message.set_status(stopped_text(len(reply.text)))
            elif reply.error:
                message.set_interrupted(retry=True)
                message.set_status(failure_text(reply))
        if reply.error and not turn.released:
            if turn.conversation_id == self._conversation:
                self._failed = turn
            self._keep_typed_text(turn, reply.text)
            if is_config_problem(reply) or message is None:
                # The banner is for what Settings can fix (or a reply no longer on screen); a
                # cut or failed reply says it under itself, with Retry.
                self.show_problem(failure_text(reply), settings=is_config_problem(reply))
            self.llm_problem.emit(reply.error)
        self.reply_finished.emit(reply)
        if early is not None:
            self.on_outcome(early)
        else:
            self._on_tick_timeout()

    def _on_chat_error(self, turn: _Turn, error: BaseException) -> None:
        if turn is self._turn:
            self._finish_turn()
        text = f"The message could not be sent: {error}"
        if turn.message is not None and isValid(turn.message):
            turn.message.set_interrupted(retry=True)
            turn.message.set_status(text)
        if turn.conversation_id == self._conversation:
            self._failed = turn
        self._keep_typed_text(turn, "")
        self.show_problem(text, settings=False)

    def _keep_typed_text(self, turn: _Turn, reply_text: str) -> None:
        """Nothing came back: put the message back in the box (unless the user typed anew)."""
        if not reply_text and turn.conversation_id == self._conversation and not self.input.toPlainText():
            self.input.setPlainText(turn.user_text)

    def _on_history_loaded(self, turns: list[StoredTurn]) -> None:
        message: ChatMessage | None = None
        for turn in turns[-HISTORY_PAGE:]:
            message = self._show_turn(turn)
        self._earlier = turns[:-HISTORY_PAGE]
        self._label_earlier()
        self._offer_retry(turns, message)

    def _offer_retry(self, turns: list[StoredTurn], last: ChatMessage | None) -> None:
        """The last message was never answered (its reply failed, then the store was reopened by
        Settings or a restart): show its interrupted reply with Retry, and make Send on the same
        text a retry, so the message is stored once whatever path the user takes."""
        question = unanswered(turns)
        if question is None or self._conversation is None or self._turn is not None:
            return
        if last is None or last.role != Role.ASSISTANT:
            last = self._add_message("assistant", "")
        last.set_interrupted(retry=True)
        note, self._failure_note = self._failure_note, None
        last.set_status(note[1] if note is not None and note[0] == self._conversation and note[1]
                        else UNANSWERED_TEXT)
        failed = _Turn(self._conversation, question.text, last)
        last.retry_requested.connect(lambda t=failed: self.retry(t.user_text))
        self._failed = failed

    def _on_history_failed(self, error: BaseException) -> None:
        self.show_problem(f"Could not load this conversation: {error}")

    @Slot(str)
    def _on_banner_label_link_activated(self, _link: str) -> None:
        self.settings_requested.emit()

    @Slot(int, int)
    def _on_scroll_range_changed(self, _minimum: int, maximum: int) -> None:
        bar = self.scroll_area.verticalScrollBar()
        if self._keep_from_bottom is not None:  # earlier messages went in above what was read
            bar.setValue(maximum - self._keep_from_bottom)
            return
        bar.setValue(maximum)  # follow the newest text
