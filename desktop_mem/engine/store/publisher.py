"""Publishing a change: bring the indexes up to date, then tell subscribers, in commit order,
after the writer lock is released (store/transaction.py enqueues under the lock).

One ordered queue: a transaction enqueues its publication while it still holds the writer lock,
so the queue's order is the commit order; whoever releases the lock then drains the queue (one
drain runs at a time), so a write call still returns only when its own change is indexed and
announced, while the next writer may already be committing.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from desktop_mem.engine.models import Memory, StoreChange

log = logging.getLogger(__name__)
Listener = Callable[[StoreChange], None]
IndexUpdate = Callable[[Sequence[Memory], Sequence[str]], None]


def notify(listeners: Sequence[Callable[[Any], None]], event: object) -> None:
    """Call every listener; a broken subscriber must not break a write or the watcher."""
    for listener in list(listeners):
        try:
            listener(event)
        except Exception:
            log.exception("engine listener failed")


class Publisher:
    """The subscribers of the store's changes and the queue of publications to run."""

    def __init__(self, before_notify: Callable[[StoreChange], None] = lambda change: None) -> None:
        self.index_update: IndexUpdate = lambda changed, gone: None  # set by the composition root
        self._before_notify = before_notify
        self._listeners: list[Listener] = []
        self._queue: deque[tuple[Sequence[Memory], Sequence[str], StoreChange]] = deque()
        self._queue_lock = threading.Lock()
        self._drain_lock = threading.Lock()
        self._draining: int | None = None  # the thread running `drain` now

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` after every change; returns a function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def emit(self, change: StoreChange) -> None:
        """Tell subscribers now (a change that is neither committed nor indexed: a problem file)."""
        self._before_notify(change)
        notify(self._listeners, change)

    def enqueue(self, written: Sequence[Memory], gone: Sequence[str], change: StoreChange) -> None:
        """Queue a committed change's publication (called under the writer lock: commit order)."""
        with self._queue_lock:
            self._queue.append((written, gone, change))

    def drain(self) -> None:
        """Run every queued publication, in order; returns when those queued before are done.

        A subscriber that writes (its transaction ends inside a drain on this thread) returns at
        once: the drain that called it publishes that write next, still in order."""
        if self._draining == threading.get_ident():
            return
        with self._drain_lock:
            self._draining = threading.get_ident()
            try:
                self._run_queue()
            finally:
                self._draining = None

    def _run_queue(self) -> None:
        while True:
            with self._queue_lock:
                if not self._queue:
                    return
                written, gone, change = self._queue.popleft()
            if written or gone:
                try:
                    self.index_update(written, gone)
                except Exception:  # the files are the truth; the next sync repairs the index
                    log.exception("index update failed; it will be repaired at the next sync")
            self.emit(change)
