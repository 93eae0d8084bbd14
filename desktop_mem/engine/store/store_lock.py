"""One writer per store: an OS file lock held for the life of a writing engine.

The lock is advisory and released by the OS when the process dies, so a crash never leaves a
store locked. Who holds it (pid, host, program, since) is written next to it so the second
process can say who to close.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from desktop_mem.engine.models import StoreLockedError, utc_now

LOCK_NAME = ".desktop_mem.lock"
INFO_NAME = ".desktop_mem.lock.json"


class StoreLock:
    """Acquire with `acquire()`; raises StoreLockedError naming the current holder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = FileLock(str(root / LOCK_NAME), timeout=0, thread_local=False)

    @property
    def held(self) -> bool:
        """True while this process holds the lock."""
        return bool(self._lock.is_locked)

    def acquire(self) -> None:
        """Take the writer lock now or fail with a message naming who has it."""
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            holder = read_holder(self.root)
            who = describe_holder(holder)
            raise StoreLockedError(
                f"The store {self.root} is open for writing by {who}. Close that window or "
                "process first; read-only commands (list, show, search, history) still work."
            ) from None
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "program": " ".join(sys.argv[:2])[:200],
            "since": utc_now().isoformat(),
        }
        (self.root / INFO_NAME).write_text(json.dumps(info), encoding="utf-8")

    def release(self) -> None:
        """Give the lock up (idempotent)."""
        if self._lock.is_locked:
            with contextlib.suppress(OSError):
                (self.root / INFO_NAME).unlink()
            self._lock.release(force=True)

    def is_locked_elsewhere(self) -> bool:
        """True when another process holds the lock (probes without keeping it)."""
        if self.held:
            return False
        probe = FileLock(str(self.root / LOCK_NAME), timeout=0, thread_local=False)
        try:
            probe.acquire(timeout=0)
        except Timeout:
            return True
        probe.release(force=True)
        return False


def read_holder(root: Path) -> dict[str, Any]:
    """What the current holder wrote about itself ({} if unknown)."""
    try:
        data = json.loads((root / INFO_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def describe_holder(holder: dict[str, Any]) -> str:
    """'desktop-mem (pid 123 on host, since ...)' or 'another process'."""
    if not holder:
        return "another process"
    return (
        f"{holder.get('program') or 'another process'} (pid {holder.get('pid')} on "
        f"{holder.get('host')}, since {holder.get('since')})"
    )
