"""The reply on the chat lane: its models warmed while the user writes, its request, its words
painted at a steady rate, and its "memory used".

A turn runs `engine.chat` on the runner's chat lane (never on the writer: saves made while a
reply streams land at once). Tokens arrive on that thread and go into the turn's locked buffer;
a REPAINT_MS timer on the GUI thread drains it, so the view repaints at a steady rate however fast
the model streams. The "memory used" value crosses threads through a queued signal.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot

from desktop_mem.engine.api import MemoryEngine, MemoryUsed
from desktop_mem.ui.chat.turns import StreamedTurn
from desktop_mem.ui.task_runner import TaskRunner

log = logging.getLogger(__name__)

REPAINT_MS = 30
# While the user writes, the turn's search models are loaded (MemoryEngine.prepare_chat_turn), at
# most this often: they load on first use (~0.2 s each, the first turn waited for both) and the
# cross-encoder is let go after minutes idle (retrieval.rerank_idle_release_s, 300 s by default).
PREPARE_EVERY_S = 60.0


class ReplyStream(QObject):
    """One reply at a time, from its request to its last painted words."""

    progressed = Signal(str)  # the reply text so far, after each repaint
    answered = Signal()  # the first words of a reply arrived: the endpoint works

    _used_received = Signal(object)  # MemoryUsed, from the chat thread

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, waiting_text: Callable[[int], str],
                 titles: Callable[[], dict[str, str]], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._waiting_text = waiting_text  # what a reply waits for, after so many seconds
        self._titles = titles  # conversation titles, for the Memory used panel
        self.turn: StreamedTurn | None = None  # the reply being streamed
        self._prepared_at = -PREPARE_EVERY_S  # when typing last loaded the turn's models
        self._repaint = QTimer(self)
        self._repaint.setInterval(REPAINT_MS)
        self._connect_signals()

    def _connect_signals(self) -> None:
        self._repaint.timeout.connect(self._on_repaint_timeout)
        self._used_received.connect(self._on_used_received, Qt.ConnectionType.QueuedConnection)

    def prepare(self) -> None:
        """The user writes a message: load the turn's models now (at most every PREPARE_EVERY_S)."""
        now = time.monotonic()
        if now - self._prepared_at < PREPARE_EVERY_S:
            return
        self._prepared_at = now
        # A failure here is the turn's to report (it loads the same models and says what is wrong).
        self._runner.submit(self._engine.prepare_chat_turn, key="chat-prepare",
                            on_error=lambda exc: log.debug("read path not prepared: %s", exc))

    def start(self, turn: StreamedTurn, *, retry: bool, temporary: bool,
              on_result: Callable[[Any], None], on_error: Callable[[BaseException], None]) -> None:
        """Send `turn`'s message on the chat lane and paint its reply as it streams."""
        self.turn = turn
        self._repaint.start()
        self._runner.submit_chat(
            self._engine.chat, turn.conversation_id, turn.user_text, retry=retry, temporary=temporary,
            on_token=turn.buffer.push, on_used=self._used_received.emit, cancel=turn.cancel,
            on_result=on_result, on_error=on_error)

    def detach(self) -> StreamedTurn | None:
        """Stop painting the reply (it ended, or the user stopped it); returns its turn."""
        turn, self.turn = self.turn, None
        self._repaint.stop()
        return turn

    def show_words(self, turn: StreamedTurn) -> None:
        """Append the words streamed since the last repaint; the first ones say the LLM answers."""
        if turn.message is None:
            return
        chunk = turn.buffer.drain()
        if chunk:
            turn.message.append_text(chunk)
            self.progressed.emit(turn.message.text)
            if not turn.answered:
                turn.answered = True
                self.answered.emit()

    @Slot()
    def _on_repaint_timeout(self) -> None:
        turn = self.turn
        if turn is not None:
            self.show_words(turn)
            seconds = int(time.monotonic() - turn.started)
            if not turn.answered and turn.message is not None and seconds != turn.waited:
                turn.waited = seconds  # what the reply waits for, counted in whole seconds
                turn.message.set_waiting(self._waiting_text(seconds))

    @Slot(object)
    def _on_used_received(self, used: MemoryUsed) -> None:
        turn = self.turn
        if turn is not None and turn.message is not None and used.conversation_id == turn.conversation_id:
            turn.message.set_used(used, self._titles())
