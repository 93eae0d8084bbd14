"""SIGTERM, SIGHUP and SIGINT close the window as its close button does (`kill`, a logout, a
system shutdown, the terminal it was started from closed, Ctrl+C in that terminal).

Their default action ended the process on the spot: the store lock's note and the endpoint's
socket folder stayed, and a chat turn's write path queued after the reply was lost. Ctrl+C
raised KeyboardInterrupt inside a Qt slot: a traceback was printed and the window stayed open.
The handlers are api/stop_signals.py's, as in `serve`, `mcp` and `chat`. Python runs a handler only when the
interpreter next gets control, which Qt's event loop (C++) may not give it for minutes: the C
level handler writes to a socket (`signal.set_wakeup_fd`) whose other end a QSocketNotifier
watches, so the loop wakes, Python runs the handler on the GUI thread, and the handler queues the
close for the loop to run.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Iterator

from PySide6.QtCore import QCoreApplication, QObject, QSocketNotifier, QTimer, Slot

from desktop_mem.api.stop_signals import STOP_SIGNALS, stop_signals_exit


class SignalWakeup(QObject):
    """While open, a signal with a Python handler wakes the Qt event loop, so the handler runs at
    once on the GUI thread (the main thread: signals are only set there)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._reader, self._writer = socket.socketpair()  # a socket, as Windows requires
        self._reader.setblocking(False)
        self._writer.setblocking(False)  # set_wakeup_fd requires it
        self._previous = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._on_notifier_activated)

    def close(self) -> None:
        """Stop watching; the previous wakeup fd (normally none) is set again."""
        self._notifier.setEnabled(False)
        signal.set_wakeup_fd(self._previous)
        self._reader.close()
        self._writer.close()

    @Slot()
    def _on_notifier_activated(self) -> None:
        # The bytes are the signals' numbers; the handlers already know which came. Running this
        # Python code is what lets the interpreter call them.
        with contextlib.suppress(OSError):
            while self._reader.recv(512):
                pass


@contextlib.contextmanager
def close_on_stop_signals(close: Callable[[], None]) -> Iterator[list[int]]:
    """While inside (around the event loop), the first SIGTERM, SIGHUP or SIGINT calls `close`
    from the event loop, then ends every loop running (a dialog's too) with 128 + the signal's
    number (exit_status); the list yielded then holds that number (SIGHUP is handled as SIGTERM).
    Later stop signals are ignored (stop_signals_exit), so they cannot cut the close short."""
    received: list[int] = []

    def quit_now() -> None:
        close()
        # every event loop of the GUI thread ends, so an open dialog cannot keep the app running
        QCoreApplication.exit(exit_status(received))

    def stop(signum: int) -> None:
        # the handler may run in the middle of any Python code of the GUI thread: queue the close
        if received:
            return  # a SIGINT after a SIGTERM (or the reverse): the close is on its way
        received.append(signum)
        QTimer.singleShot(0, quit_now)

    def interrupt(_signum: int, _frame: object) -> None:
        for each in (*STOP_SIGNALS, signal.SIGINT):  # already on the way out
            signal.signal(each, signal.SIG_IGN)
        stop(signal.SIGINT)

    wakeup = SignalWakeup()
    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        with stop_signals_exit(stop):
            yield received
    finally:
        signal.signal(signal.SIGINT, previous)
        wakeup.close()


def exit_status(received: list[int]) -> int:
    """The window's exit status after these stop signals: 128 + the first one's number, as a
    shell reports a process it ended (143 for SIGTERM and SIGHUP, as `serve`, `mcp` and `chat`
    exit; 130 for Ctrl+C), so a wrapper can tell "stopped from outside" from "closed" (0)."""
    return 128 + received[0] if received else 0
