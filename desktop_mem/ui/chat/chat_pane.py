"""The chat pane: the transcript, a streaming reply, stop, "memory used" and "memory updated".

A turn runs `engine.chat` on the runner's chat lane and its words are painted at a steady rate
(reply_stream.py); the write path's outcome arrives later through the EngineBridge.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import (
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from desktop_mem.engine.api import ChatReply, MemoryEngine, WriteOutcome
from desktop_mem.engine.models import Role
from desktop_mem.ui.chat.chat_message import ChatMessage
from desktop_mem.ui.chat.compose_box import ComposeBox
from desktop_mem.ui.chat.memory_updates import MemoryUpdates
from desktop_mem.ui.chat.problem_banner import ProblemBanner
from desktop_mem.ui.chat.reply_status import failure_text, is_config_problem, waiting_text
from desktop_mem.ui.chat.reply_stream import ReplyStream
from desktop_mem.ui.chat.temporary_chat import (
    TEMPORARY_CONVERSATION,
    mark_temporary,
)
from desktop_mem.ui.chat.transcript import Transcript
from desktop_mem.ui.chat.turns import StoredTurn, StreamedTurn, load_history, unanswered
from desktop_mem.ui.task_runner import TaskRunner

EMPTY_HINT = ("Say hello. Facts you mention are remembered; the panel under each reply shows what "
              "memory was used.")
NO_CONVERSATION_HINT = ("No conversation yet. Type a message and Send: a new conversation starts "
                        "with it (or press Ctrl+N to name one first).")


UNANSWERED_TEXT = ("No reply to this message was stored (the last attempt failed). Retry, or Send "
                   "on the same text, sends it again; it is stored once.")


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

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._conversation: str | None = None
        self._creating = False  # a conversation for the first message is being created
        self._failed: StreamedTurn | None = None  # the shown conversation's last turn, if its reply failed
        self.last_token_count = 0  # tokens the last reply streamed in (0: it came in one piece)
        self._updates = MemoryUpdates(engine, lambda: self._conversation, self)
        self._titles: dict[str, str] = {}  # conversation id -> title, for the Memory used panels
        self._queued = False  # Send during a reply: the box's text goes once the reply ends
        self._failure_note: tuple[str, str] | None = None  # (conversation, why) kept over a reload
        self._stream = ReplyStream(engine, runner, self._waiting_text, lambda: self._titles, self)
        self._setup_ui()
        self._connect_signals()
        self._set_busy(False)

    # ---------------------------------------------------------------- setup

    def _setup_ui(self) -> None:
        self.banner = ProblemBanner(self)
        self.banner_label, self.banner_close = self.banner.label, self.banner.close_button
        self.scroll_area = Transcript(NO_CONVERSATION_HINT, self)
        self.transcript = self.scroll_area.body
        self.empty_label = self.scroll_area.empty_label
        self.earlier_button = self.scroll_area.earlier_button

        self.compose = ComposeBox(self)
        # its parts, as the pane's own (the window and tests reach them by these names)
        c = self.compose
        self.input, self.send_button, self.stop_button = c.input, c.send_button, c.stop_button
        self.queued_label, self.temporary_toggle, self.temporary_marker = (
            c.queued_label, c.temporary_toggle, c.temporary_marker)
        self.send_shortcut, self.send_shortcut_enter = c.send_shortcut, c.send_shortcut_enter

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.banner)
        layout.addWidget(self.scroll_area, 1)
        layout.addWidget(self.compose)

    def _connect_signals(self) -> None:
        self.compose.send_requested.connect(self.send)
        self.compose.stop_requested.connect(self.stop)
        self.input.textChanged.connect(self._on_input_text_changed)
        self.banner.settings_requested.connect(self.settings_requested)
        self._stream.progressed.connect(self.reply_progressed)
        self._stream.answered.connect(self.llm_answered)
        self._updates.memory_activity.connect(self.memory_activity)
        self._updates.outcome_shown.connect(self.outcome_shown)
        self.scroll_area.memory_requested.connect(self.memory_requested)

    @Slot()
    def _on_input_text_changed(self) -> None:
        if self.input.toPlainText().strip():
            self._stream.prepare()  # the turn's models load while the user writes

    # --------------------------------------------------------------- public

    @property
    def conversation(self) -> str | None:
        """The conversation shown."""
        return self._conversation

    @property
    def busy(self) -> bool:
        """True while a reply is being produced."""
        return self._stream.turn is not None

    def messages(self) -> list[ChatMessage]:
        """The transcript's message widgets, oldest first."""
        return self.scroll_area.messages()

    def set_conversation(self, conversation_id: str | None) -> None:
        """Show a conversation's stored turns (loaded off the GUI thread)."""
        if conversation_id == self._conversation:
            return
        self._conversation = conversation_id
        if self._stream.turn is not None:
            self._stream.turn.message = None  # the reply keeps running; its conversation is no longer shown
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
        if self._stream.turn is not None:  # one reply at a time: this message goes once it ends
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
            self.scroll_area.set_aside(failed.message)
        else:
            sent = self._add_message("user", text)
            if temporary:
                mark_temporary(sent)
        reply = self._add_message("assistant", "")
        reply.set_waiting(self._waiting_text())
        if temporary:
            mark_temporary(reply)
        turn = StreamedTurn(self._conversation or TEMPORARY_CONVERSATION, text, reply)
        reply.retry_requested.connect(lambda t=turn: self.retry(t.user_text))
        self._set_busy(True)
        self._stream.start(turn, retry=retry, temporary=temporary, on_result=partial(self._on_reply, turn),
                           on_error=partial(self._on_chat_error, turn))

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
            turn.message.show_stopped()
        self.reply_stopped.emit()

    def retry(self, text: str) -> None:
        """Send a message again (the Retry button under a failed reply)."""
        if self._stream.turn is not None:
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
        return len(self._updates.pending)

    @property
    def can_cancel_memory_update(self) -> bool:
        """A running memory update can be cancelled (not in a read-only window: none runs)."""
        return self._updates.can_cancel

    @Slot()
    def cancel_memory_updates(self) -> None:
        """Cancel every running write path (the status bar's Cancel)."""
        self._updates.cancel_all()

    def reload_if_idle(self) -> None:
        """Read the shown conversation's turns again (they changed outside a chat turn: the demo,
        an import, a sync, an outside edit) unless a reply or its memory update is under way."""
        conv = self._conversation
        if conv is None or self._stream.turn is not None or self._updates.pending or self._creating:
            return
        self._conversation = None
        self.set_conversation(conv)

    def set_titles(self, titles: dict[str, str]) -> None:
        """Conversation titles: the Memory used panels name conversations by title."""
        self._titles = dict(titles)
        self.scroll_area.titles = self._titles

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

    @Slot(object)
    def on_write_progress(self, progress: Any) -> None:
        """A WriteProgress event: the step of a reply's memory update, or its failure."""
        self._updates.on_write_progress(progress)

    def _waiting_text(self, seconds: int = 0) -> str:
        others = max(self._engine.open_llm_requests() - 1, 0)  # one is this message's own
        return waiting_text(self._engine.config["llm.model"] or "the model", seconds,
                            self._updates.waiting_lines(), others)

    def focus_input(self) -> None:
        """Put the cursor in the message box."""
        self.input.setFocus(Qt.FocusReason.OtherFocusReason)

    def show_problem(self, message: str, *, settings: bool = True) -> None:
        """A non-modal banner; with a link to Settings when a setting can fix the problem."""
        self.banner.show_problem(message, settings=settings)

    def on_outcome(self, outcome: WriteOutcome) -> None:
        """The write path of a turn finished: say what changed under that reply."""
        self._updates.on_outcome(outcome)

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

    def _add_message(self, role: str, text: str) -> ChatMessage:
        return self.scroll_area.add_message(role, text)

    @Slot()
    def show_earlier(self) -> None:
        """Build the next page of older messages above the shown ones (the view stays in place)."""
        self.scroll_area.show_earlier()

    def _clear(self) -> None:
        self.scroll_area.clear(EMPTY_HINT if self._conversation is not None else NO_CONVERSATION_HINT)
        self._updates.forget_messages()

    def _set_busy(self, busy: bool) -> None:
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)

    def _finish_turn(self) -> StreamedTurn | None:
        turn = self._stream.detach()
        self._set_busy(False)
        if turn is not None:
            self.last_token_count = turn.buffer.count
            self._stream.show_words(turn)  # a short reply can end before the first repaint
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

    def _on_reply(self, turn: StreamedTurn, reply: ChatReply) -> None:
        if turn is self._stream.turn:
            self._finish_turn()
        message = turn.message if turn.message is not None and isValid(turn.message) else None
        if not reply.temporary:  # a temporary turn has no memory update to wait for
            self._updates.expect(turn.conversation_id, reply.turn_id, message)
        early = self._updates.take_early(reply.turn_id)
        if message is not None:
            message.show_reply(reply, stopped=reply.cancelled or turn.released, titles=self._titles)
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
            self._updates.tick()

    def _on_chat_error(self, turn: StreamedTurn, error: BaseException) -> None:
        if turn is self._stream.turn:
            self._finish_turn()
        text = f"The message could not be sent: {error}"
        if turn.message is not None and isValid(turn.message):
            turn.message.show_failed(text)
        if turn.conversation_id == self._conversation:
            self._failed = turn
        self._keep_typed_text(turn, "")
        self.show_problem(text, settings=False)

    def _keep_typed_text(self, turn: StreamedTurn, reply_text: str) -> None:
        """Nothing came back: put the message back in the box (unless the user typed anew)."""
        if not reply_text and turn.conversation_id == self._conversation and not self.input.toPlainText():
            self.input.setPlainText(turn.user_text)

    def _on_history_loaded(self, turns: list[StoredTurn]) -> None:
        self._offer_retry(turns, self.scroll_area.show_history(turns))

    def _offer_retry(self, turns: list[StoredTurn], last: ChatMessage | None) -> None:
        """The last message was never answered (its reply failed, then the store was reopened by
        Settings or a restart): show its interrupted reply with Retry, and make Send on the same
        text a retry, so the message is stored once whatever path the user takes."""
        question = unanswered(turns)
        if question is None or self._conversation is None or self._stream.turn is not None:
            return
        if last is None or last.role != Role.ASSISTANT:
            last = self._add_message("assistant", "")
        note, self._failure_note = self._failure_note, None
        last.show_failed(note[1] if note is not None and note[0] == self._conversation and note[1]
                         else UNANSWERED_TEXT)
        failed = StreamedTurn(self._conversation, question.text, last)
        last.retry_requested.connect(lambda t=failed: self.retry(t.user_text))
        self._failed = failed

    def _on_history_failed(self, error: BaseException) -> None:
        self.show_problem(f"Could not load this conversation: {error}")
