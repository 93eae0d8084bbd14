"""SIGTERM and SIGHUP end a front-end process (`serve`, `mcp`, `chat`) through its normal exit.

Python's default action for both kills the process on the spot: no `finally`, no atexit. What
that left behind: the store lock, a turn's facts never extracted, a read-only store's scratch
index copy in the temp dir (hundreds of MB at 100k memories). SIGTERM is how `kill`, systemd,
`docker stop` and an MCP client (after closing stdin) end a process; SIGHUP is a closed terminal.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def stop_signals_exit(stop: Callable[[int], None] | None = None) -> Iterator[None]:
    """While inside, the first SIGTERM ends the process through its normal exit: SystemExit(143)
    raised in the main thread, so `finally` blocks and atexit handlers run; or, when `stop` is
    given, `stop(signum)` instead (the caller is already on its way out, e.g. closing). Later stop
    signals are ignored, so they cannot cut that clean-up short (SIGKILL still can). SIGHUP is
    handled as SIGTERM, by whoever handles that one then (uvicorn stops gracefully on it, then
    raises it again, which lands here). Outside the main thread no handler can be set: nothing
    changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _terminate(signum: int, _frame: object) -> None:
        for each in STOP_SIGNALS:  # already on the way out
            signal.signal(each, signal.SIG_IGN)
        if stop is not None:
            stop(signum)
            return
        raise SystemExit(128 + signum)

    def _hang_up(_signum: int, _frame: object) -> None:
        signal.raise_signal(signal.SIGTERM)

    previous: list[tuple[int, Any]] = []
    for signum in STOP_SIGNALS:
        handler = _terminate if signum == signal.SIGTERM else _hang_up
        previous.append((signum, signal.signal(signum, handler)))
    try:
        yield
    finally:
        for signum, handler in previous:
            signal.signal(signum, handler)
