"""Engine calls off the GUI thread: a read pool, one writer, results back on the GUI thread.

As in Picard: reads run in a QThreadPool; every store mutation runs in a one-thread pool so
files, index and git never race. Chat turns have their own lane: a reply streams for seconds to
minutes without the engine's write lock (ChatService takes it only to persist a turn file), so a
Save pressed meanwhile must not queue behind it. Results travel back
through one queued signal and the callbacks run on the GUI thread; workers never touch widgets.
Requests submitted with a `key` are "latest wins": an older result for the same key is dropped.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal, Slot

log = logging.getLogger(__name__)
CHAT_THREADS = 4

ResultCallback = Callable[[Any], None]
ErrorCallback = Callable[[BaseException], None]


@dataclass
class _Ticket:
    """Bookkeeping of one submitted task; only the GUI thread reads or writes it."""

    key: str | None
    on_result: ResultCallback | None
    on_error: ErrorCallback | None
    stale: bool = False  # read by the worker before it starts: skips superseded searches
    dropped: bool = False  # its receiver is gone: a failure is not an error to report


class _Job(QRunnable):
    """Runs one call in a pool thread and reports through the runner's queued signal."""

    def __init__(self, runner: TaskRunner, task_id: int, ticket: _Ticket,
                 fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__()
        self._runner = runner
        self._task_id = task_id
        self._ticket = ticket
        self._fn = fn
        self._args = args
        self._kwargs = kwargs

    def run(self) -> None:
        # Taken out first: PySide can keep a finished runnable's wrapper alive for a while, and
        # with it its arguments (a bulk commit's 40 events stayed alive after another commit
        # was selected, tests/ui/test_timeline_held_rows.py).
        fn, args, kwargs = self._fn, self._args, self._kwargs
        del self._fn, self._args, self._kwargs
        if self._ticket.stale:  # a newer request with the same key was submitted meanwhile
            self._runner._finished.emit(self._task_id, None, None)
            return
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the GUI thread
            self._runner._finished.emit(self._task_id, None, exc)
            return
        self._runner._finished.emit(self._task_id, result, None)


class TaskRunner(QObject):
    """Run engine calls in background threads; deliver results on the GUI thread."""

    # (task id, result, error): emitted from pool threads, received on the runner's thread.
    _finished = Signal(int, object, object)
    # Emitted on the GUI thread after every delivered (non-stale) task: tests and the status bar.
    task_done = Signal()
    # Writes submitted and not yet delivered, on every change: the window's "Saving…" state.
    writes_pending = Signal(int)

    def __init__(self, parent: QObject | None = None, *, read_threads: int = 4) -> None:
        super().__init__(parent)
        self._read_pool = QThreadPool(self)
        self._read_pool.setMaxThreadCount(read_threads)
        self._write_pool = QThreadPool(self)
        self._write_pool.setMaxThreadCount(1)  # one writer: mutations never race
        self._write_pool.setExpiryTimeout(-1)
        # Chat turns: one reply at a time in the UI, plus room for replies the user stopped
        # while they still wait for the server (their thread ends when the server answers).
        self._chat_pool = QThreadPool(self)
        self._chat_pool.setMaxThreadCount(CHAT_THREADS)
        self._writes: set[int] = set()
        self._ids = itertools.count(1)
        self._tickets: dict[int, _Ticket] = {}
        self._latest: dict[str, int] = {}
        # Queued even when emitted on this thread (SyncTaskRunner): callbacks never run inside submit.
        self._finished.connect(self._on_finished, Qt.ConnectionType.QueuedConnection)

    # ---------------------------------------------------------------- submit

    def submit(
        self,
        fn: Callable[..., Any],
        *args: Any,
        key: str | None = None,
        on_result: ResultCallback | None = None,
        on_error: ErrorCallback | None = None,
        serial: bool = False,
        **kwargs: Any,
    ) -> int:
        """Run a read in the read pool. With `key`, only the newest request's result arrives.

        `serial` runs the read on the writer thread instead: for reads that must not overlap a
        write (git reads: GitPython's cat-file pipe is shared by every thread of the process).
        """
        pool = self._write_pool if serial else self._read_pool
        return self._start(pool, fn, args, kwargs, key, on_result, on_error)

    def submit_write(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_result: ResultCallback | None = None,
        on_error: ErrorCallback | None = None,
        quiet: bool = False,
        **kwargs: Any,
    ) -> int:
        """Run a mutation on the single writer thread, in submission order.

        Counted in `writes_pending` (the user sees "Saving…") unless `quiet`: opening the store or
        its index is not a save and has its own progress.
        """
        task_id = self._start(self._write_pool, fn, args, kwargs, None, on_result, on_error)
        if not quiet:
            self._writes.add(task_id)
            self.writes_pending.emit(len(self._writes))
        return task_id

    def submit_chat(
        self,
        fn: Callable[..., Any],
        *args: Any,
        on_result: ResultCallback | None = None,
        on_error: ErrorCallback | None = None,
        **kwargs: Any,
    ) -> int:
        """Run a chat turn on the chat lane: never behind the writer's queue, never blocking it."""
        return self._start(self._chat_pool, fn, args, kwargs, None, on_result, on_error)

    def _start(self, pool: QThreadPool, fn: Callable[..., Any], args: tuple[Any, ...],
               kwargs: dict[str, Any], key: str | None, on_result: ResultCallback | None,
               on_error: ErrorCallback | None) -> int:
        task_id = next(self._ids)
        ticket = _Ticket(key, on_result, on_error)
        if key is not None:
            older = self._tickets.get(self._latest.get(key, -1))
            if older is not None:
                older.stale = True
            self._latest[key] = task_id
        self._tickets[task_id] = ticket
        self._run(pool, _Job(self, task_id, ticket, fn, args, kwargs))
        return task_id

    def _run(self, pool: QThreadPool, job: _Job) -> None:
        pool.start(job)

    # --------------------------------------------------------------- deliver

    @Slot(int, object, object)
    def _on_finished(self, task_id: int, result: Any, error: BaseException | None) -> None:
        ticket = self._tickets.pop(task_id, None)
        if task_id in self._writes:
            self._writes.discard(task_id)
            self.writes_pending.emit(len(self._writes))
        if ticket is None:
            return
        if ticket.key is not None:
            if self._latest.get(ticket.key) != task_id:
                return  # superseded: a newer request with this key owns the view
            del self._latest[ticket.key]
        if not (_alive(ticket.on_result) and _alive(ticket.on_error)):
            # Its pane was deleted (a store switch, the window closing) before the result came.
            ticket.on_result = ticket.on_error = None
            ticket.dropped = True
        try:
            if error is not None:
                if ticket.on_error is not None:
                    ticket.on_error(error)
                elif not ticket.dropped:
                    log.error("background task failed", exc_info=error)
            elif ticket.on_result is not None:
                ticket.on_result(result)
        finally:
            self.task_done.emit()

    # --------------------------------------------------------------- control

    def drop_callbacks(self) -> None:
        """Deliver nothing of the tasks submitted so far (their panes are being deleted).

        The tasks still run (a queued save still saves); only their results are not delivered.
        """
        for ticket in self._tickets.values():
            ticket.on_result = ticket.on_error = None
            ticket.dropped = True

    @property
    def busy(self) -> bool:
        """True while any submitted task has not been delivered."""
        return bool(self._tickets)

    def wait_for_done(self, msecs: int = 30000) -> bool:
        """Block until every pool is idle (shutdown only; never while the window runs)."""
        ok_chat = self._chat_pool.waitForDone(msecs)
        ok_read = self._read_pool.waitForDone(msecs)
        return self._write_pool.waitForDone(msecs) and ok_read and ok_chat


class SyncTaskRunner(TaskRunner):
    """Runs every task inline on the calling thread (tests). Delivery is still a queued signal,

    so callbacks run from the event loop exactly as in the app, never inside `submit`.
    """

    def _run(self, pool: QThreadPool, job: _Job) -> None:
        job.run()


def _alive(callback: Callable[..., Any] | None) -> bool:
    """False when ``callback`` is a method (or a partial of one) of a Qt object already deleted."""
    target = getattr(callback, "func", callback)
    owner = getattr(target, "__self__", None)
    return not isinstance(owner, QObject) or shiboken6.isValid(owner)
