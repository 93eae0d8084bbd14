"""The memory updates of replies that have not reported yet: "Updating memory… N s" under each
reply and in the status bar, its step, Cancel, and what changed once its outcome arrives.

Each reply's write path runs after the reply; its progress and outcome come through the
EngineBridge carrying the reply's turn id (an outcome may come before its reply does: kept until
then).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot
from shiboken6 import isValid

from desktop_mem.engine.api import MemoryEngine, WriteOutcome
from desktop_mem.ui.chat.chat_message import ChatMessage

TICK_MS = 250  # "Updating memory… N s" counts whole seconds (a 1 s timer firing early showed 0 s twice)


@dataclass
class AwaitedUpdate:
    """A reply whose write path has not reported yet; its outcome carries the same turn id."""

    conversation_id: str
    turn_id: str | None
    message: ChatMessage | None
    started: float = field(default_factory=time.monotonic)
    stage: str = ""  # the write path's step now ("extracting facts", ...), from its progress events
    cancelled: bool = False  # the user pressed Cancel


class MemoryUpdates(QObject):
    """The replies whose memory update runs, for the conversation the pane shows."""

    memory_activity = Signal(str)  # "Updating memory… 12 s" while write paths run, "" when none
    outcome_shown = Signal(str)

    def __init__(self, engine: MemoryEngine, shown: Callable[[], str | None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._shown = shown  # the conversation on screen
        self.pending: list[AwaitedUpdate] = []
        self._early: dict[str, WriteOutcome] = {}  # by turn id, before their reply arrived
        self._tick = QTimer(self)
        self._tick.setInterval(TICK_MS)
        self._tick.timeout.connect(self.tick)

    @property
    def can_cancel(self) -> bool:
        """A running memory update can be cancelled (not in a read-only window: none runs)."""
        return not self._engine.read_only

    def expect(self, conversation_id: str, turn_id: str | None, message: ChatMessage | None) -> None:
        """A reply arrived: wait for its write path (its Cancel button cancels it)."""
        pending = AwaitedUpdate(conversation_id, turn_id, message)
        self.pending.append(pending)
        if message is not None:
            message.cancel_update_requested.connect(partial(self.cancel, pending))

    def take_early(self, turn_id: str | None) -> WriteOutcome | None:
        """The outcome that came before its reply, if any."""
        return self._early.pop(turn_id, None) if turn_id else None

    def cancel_all(self) -> None:
        """Cancel every running write path (the status bar's Cancel)."""
        for pending in list(self.pending):
            self.cancel(pending)

    def cancel(self, pending: AwaitedUpdate) -> None:
        """Cancel one reply's memory update: honoured between its steps, nothing half-applied
        (only a flag is set here; the write path stops on its own thread)."""
        if pending.turn_id is None or pending not in self.pending:
            return
        pending.cancelled = True
        self._engine.cancel_write_path(pending.turn_id)
        if pending.message is not None and isValid(pending.message):
            pending.message.cancel_update_button.setEnabled(False)

    def forget_messages(self) -> None:
        """The transcript was cleared: still counted in the status bar until they report."""
        for pending in self.pending:
            pending.message = None

    def waiting_lines(self) -> list[str]:
        """What a reply waiting for its first words waits behind: these updates, with their step."""
        now = time.monotonic()
        return [f"The memory update of an earlier reply is still running ({int(now - p.started)} s"
                f"{f', {p.stage}' if p.stage else ''}); a local server answers one request at a time."
                for p in self.pending]

    def on_write_progress(self, progress: Any) -> None:
        """A WriteProgress event: show the step, or end "Updating memory…" when the write path
        failed (no outcome comes then; the turn's messages are on disk)."""
        pending = next((p for p in self.pending if p.turn_id == progress.turn_id), None)
        if pending is None:
            return
        if progress.running:
            pending.stage = progress.stage
            self.tick()
            return
        if progress.state == "failed":
            self.pending.remove(pending)
            if pending.message is not None and isValid(pending.message):
                pending.message.set_outcome("Memory was not updated from this turn: the update failed "
                                            "(the messages are saved; see the log).")
            self.tick()

    def on_outcome(self, outcome: WriteOutcome) -> None:
        """The write path of a turn finished: say what changed under that reply."""
        try:
            self._show_outcome(outcome)
        finally:
            self.tick()

    def _show_outcome(self, outcome: WriteOutcome) -> None:
        match = next((p for p in self.pending
                      if outcome.turn_id is not None and p.turn_id == outcome.turn_id), None)
        if match is None:  # an engine without turn ids: the oldest reply of that conversation
            match = next((p for p in self.pending if p.conversation_id == outcome.conversation_id
                          and p.turn_id is None), None)
        if match is None:
            if outcome.turn_id is not None:  # it came before its reply did: shown when that arrives
                self._early[outcome.turn_id] = outcome
            return
        self.pending.remove(match)
        message = match.message
        if message is None or not isValid(message) or match.conversation_id != self._shown():
            return  # its conversation is not shown any more
        text = outcome.describe()
        if match.cancelled:
            text = f"Memory update cancelled: {text[0].lower()}{text[1:]}"
        message.set_outcome(text)
        self.outcome_shown.emit(text)

    @Slot()
    def tick(self) -> None:
        """Say under each reply, and in the status bar, that its memory update is running."""
        pending = self.pending
        if not pending:
            self._tick.stop()
            self.memory_activity.emit("")
            return
        now = time.monotonic()
        shown = self._shown()
        for p in pending:
            if p.message is not None and isValid(p.message) and p.conversation_id == shown:
                p.message.set_updating(int(now - p.started), self.can_cancel and not p.cancelled,
                                       "cancelling" if p.cancelled else p.stage)
        longest = int(now - min(p.started for p in pending))
        more = f" ({len(pending)} replies)" if len(pending) > 1 else ""
        self.memory_activity.emit(f"Updating memory… {longest} s{more}")
        if not self._tick.isActive():
            self._tick.start()
