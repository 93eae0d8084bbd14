"""SIGTERM and SIGHUP close the window as its close button does (`kill`, a logout, a system
shutdown, the terminal it was started from closed).

Their default action ended the process on the spot: the store lock's note and the endpoint's
socket folder stayed, and a chat turn's write path queued after the reply was lost. The handlers
are api/stop_signals.py's, as in `serve`, `mcp` and `chat`. Python runs a handler only when the
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

from desktop_mem.api.stop_signals import stop_signals_exit

# As `serve`, `mcp` and `chat` exit on SIGTERM or SIGHUP: a wrapper can tell "stopped from outside"
# from "closed by the user" (0); the shell's convention for SIGTERM.
STOPPED_STATUS = 128 + signal.SIGTERM


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
    """While inside (around the event loop), the first SIGTERM or SIGHUP calls `close` from the
    event loop, then ends every loop running (a dialog's too) with STOPPED_STATUS; the list
    yielded then holds SIGTERM's number (SIGHUP is handled as SIGTERM). Later stop signals are
    ignored (stop_signals_exit), so they cannot cut the close short."""
    received: list[int] = []

    def quit_now() -> None:
        close()
        # every event loop of the GUI thread ends, so an open dialog cannot keep the app running
        QCoreApplication.exit(STOPPED_STATUS)

    def stop(signum: int) -> None:
        # the handler may run in the middle of any Python code of the GUI thread: queue the close
        received.append(signum)
        QTimer.singleShot(0, quit_now)

    wakeup = SignalWakeup()
    try:
        with stop_signals_exit(stop):
            yield received
    finally:
        wakeup.close()
