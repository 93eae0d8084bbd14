"""Memory work is visible: the write path reports its stages and can be cancelled safely.

Events (from the write-path thread), each with the seconds since the turn's write path started:
`started`, one `stage` per step ("extracting facts", "reconciling", "updating the summary",
"saving"), then `finished`, `cancelled` or `failed`. A cancel is honoured between steps, before
anything is written: the turn's messages are still committed, no fact or summary change is, so
nothing is half-applied. (An LLM call already running finishes first; its answer is dropped.)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

STARTED, STAGE, FINISHED, CANCELLED, FAILED = "started", "stage", "finished", "cancelled", "failed"
EXTRACTING, RECONCILING, SUMMARIZING, SAVING = (
    "extracting facts", "reconciling", "updating the summary", "saving")


@dataclass(frozen=True)
class WriteProgress:
    """One step of a turn's write path, for "Updating memory…" with the elapsed time."""

    conversation_id: str
    turn_id: str
    state: str  # started | stage | finished | cancelled | failed
    stage: str = ""
    elapsed: float = 0.0

    @property
    def running(self) -> bool:
        """True until the write path ended (finished, cancelled or failed)."""
        return self.state in (STARTED, STAGE)


class WriteCancelled(Exception):
    """The user cancelled the write path; raised between steps, before anything is written."""


ProgressListener = Callable[[WriteProgress], None]


class WriteProgressHub:
    """Listeners and cancel flags of the write paths (one engine; shared with the chat service)."""

    def __init__(self) -> None:
        self.listeners: list[ProgressListener] = []
        self._cancel: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def subscribe(self, listener: ProgressListener) -> Callable[[], None]:
        """Call `listener` on every event; returns a function that unsubscribes."""
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener) if listener in self.listeners else None

    def tracker(self, conversation_id: str, turn_id: str) -> Tracker:
        """The progress of one turn's write path (registers its cancel flag)."""
        event = threading.Event()
        with self._lock:
            self._cancel[turn_id] = event
        return Tracker(self, conversation_id, turn_id, event)

    def cancel(self, turn_id: str | None = None) -> bool:
        """Ask the write path of `turn_id` (None: every one queued or running) to stop; True if
        one was found."""
        with self._lock:
            events = list(self._cancel.values()) if turn_id is None else [
                e for t, e in self._cancel.items() if t == turn_id]
        for event in events:
            event.set()
        return bool(events)

    def running(self) -> tuple[str, ...]:
        """Turn ids whose write path is queued or running."""
        with self._lock:
            return tuple(self._cancel)

    def _done(self, turn_id: str) -> None:
        with self._lock:
            self._cancel.pop(turn_id, None)

    def _emit(self, progress: WriteProgress) -> None:
        for listener in list(self.listeners):
            try:
                listener(progress)
            except Exception:
                log.exception("write-progress listener failed")


class Tracker:
    """Reports the stages of one write path and checks its cancel flag."""

    def __init__(self, hub: WriteProgressHub | None, conversation_id: str, turn_id: str,
                 cancelled: threading.Event | None = None) -> None:
        self.hub = hub
        self.conversation_id = conversation_id
        self.turn_id = turn_id
        self.cancelled = cancelled or threading.Event()
        self.stopped = False  # True once a cancel was honoured (a late one changes nothing)
        self.start = time.monotonic()

    def _send(self, state: str, stage: str = "") -> None:
        if self.hub is not None:
            self.hub._emit(WriteProgress(self.conversation_id, self.turn_id, state, stage,
                                         round(time.monotonic() - self.start, 2)))

    def started(self) -> None:
        """The write path began (it may have waited behind an earlier turn's)."""
        self.start = time.monotonic()
        self._send(STARTED)

    def stage(self, name: str) -> None:
        """A new step begins; raises WriteCancelled if the user cancelled."""
        self.check()
        self._send(STAGE, name)

    def check(self) -> None:
        """Raise WriteCancelled if the user cancelled."""
        if self.cancelled.is_set():
            self.stopped = True
            raise WriteCancelled(self.turn_id)

    def ended(self, state: str) -> None:
        """The write path ended: finished, cancelled or failed."""
        self._send(state)
        if self.hub is not None:
            self.hub._done(self.turn_id)


def quiet(conversation_id: str, turn_id: str) -> Tracker:
    """A tracker nobody listens to (a write path run directly, e.g. in tests)."""
    return Tracker(None, conversation_id, turn_id)
