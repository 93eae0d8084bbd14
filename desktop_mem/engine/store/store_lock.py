"""One writer per store: an OS file lock held for the life of a writing engine.

The lock is advisory and released by the OS when the process dies, so a crash never leaves a
store locked. Two locks are taken: the lock file (as before) and an flock on the store folder
itself, which still holds when someone deletes the lock file while a writer runs (a second
process would otherwise lock a fresh file and get in).

Who holds it (pid, host, program, since, plus whatever the holder publishes, e.g. an endpoint)
is written next to it (0600) so the second process can say who to close. Never a secret: the
program is named by its command words only (never `--set key=value` arguments), and published
values are checked by the secret scanner.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from desktop_mem.engine.models import ReadOnlyError, StoreLockedError, ValidationError, utc_now
from desktop_mem.engine.store.secrets_scan import scan

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the lock file alone
    fcntl = None  # type: ignore[assignment]

LOCK_NAME = ".desktop_mem.lock"
GONE_HOLDER_WAIT = 2.0  # seconds to wait for the OS to release the lock of a holder that died
INFO_NAME = ".desktop_mem.lock.json"


class StoreLock:
    """Acquire with `acquire()`; raises StoreLockedError naming the current holder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = FileLock(str(root / LOCK_NAME), timeout=0, thread_local=False)
        self._dir_fd: int | None = None
        self._info: dict[str, Any] = {}

    @property
    def held(self) -> bool:
        """True while this process holds the lock."""
        return bool(self._lock.is_locked)

    def acquire(self) -> None:
        """Take the writer lock now or fail with a message naming who has it.

        When the recorded holder is a process of this machine that no longer exists, its lock can
        still be held for a moment (seen under load right after a writer was killed and reaped;
        the likely holder is a child process that had not finished starting): try again for up
        to GONE_HOLDER_WAIT seconds before refusing.
        """
        deadline = time.monotonic() + GONE_HOLDER_WAIT
        while True:
            try:
                dir_fd = self._take()
                break
            except Timeout:
                holder = read_holder(self.root)
                if _gone(holder) and time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise StoreLockedError(
                    f"The store {self.root} is open for writing by {describe_holder(holder)}. Close "
                    "that window or process first; read-only commands (list, show, search, history) "
                    "still work."
                ) from None
        self._dir_fd = dir_fd
        self._info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "program": program_name(sys.argv),
            "since": utc_now().isoformat(),
        }
        self._write_info()

    def _take(self) -> int | None:
        """Both locks, or Timeout with neither held."""
        dir_fd = _lock_folder(self.root)
        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            if dir_fd is not None:
                os.close(dir_fd)
            raise
        except OSError as exc:  # a read-only store (file system or permissions): readers still work
            if dir_fd is not None:
                os.close(dir_fd)
            raise ReadOnlyError(f"the store {self.root} cannot be written ({exc.strerror or exc}); "
                                "reading commands (list, show, search, history, doctor) still work") from None
        return dir_fd

    def publish(self, **fields: str | int | float | bool | None) -> None:
        """Add fields to the holder's metadata (e.g. an endpoint other processes may call).

        Values that look like a secret are refused: the file is readable by anyone who can read
        the store, and its contents are printed by `doctor` and by the second writer's error.
        """
        if not self.held:
            raise ValidationError("publish() needs the store lock; acquire it first")
        for key, value in fields.items():
            if scan(f"{key}={value}") or scan(str(value)):
                raise ValidationError(f"lock metadata {key!r} looks like a secret; it is never written")
        self._info.update(fields)
        self._write_info()

    def withdraw(self, *keys: str) -> None:
        """Remove published fields (an endpoint that is about to stop listening), if held."""
        if self.held and any(k in self._info for k in keys):
            for key in keys:
                self._info.pop(key, None)
            self._write_info()

    def _write_info(self) -> None:
        path = self.root / INFO_NAME
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self._info, handle)
        os.replace(tmp, path)

    def release(self) -> None:
        """Give the lock up (idempotent)."""
        if self._lock.is_locked:
            with contextlib.suppress(OSError):
                (self.root / INFO_NAME).unlink()
            self._lock.release(force=True)
        if self._dir_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._dir_fd)  # closing the descriptor releases its flock
            self._dir_fd = None

    def is_locked_elsewhere(self) -> bool:
        """True when another process holds the lock (probes without keeping it)."""
        if self.held:
            return False
        try:
            dir_fd = _lock_folder(self.root)
        except Timeout:
            return True
        try:
            probe = FileLock(str(self.root / LOCK_NAME), timeout=0, thread_local=False)
            try:
                probe.acquire(timeout=0)
            except Timeout:
                return True
            except OSError:  # a read-only store: no lock file can be made, and nobody writes here
                return False
            probe.release(force=True)
            return False
        finally:
            if dir_fd is not None:
                os.close(dir_fd)


def _gone(holder: dict[str, Any]) -> bool:
    """True when ``holder`` names a process of this machine that has exited."""
    pid = holder.get("pid")
    if not isinstance(pid, int) or pid <= 0 or holder.get("host") != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's process)
    return False


def _lock_folder(root: Path) -> int | None:
    """flock the store folder and return its descriptor; None where the platform (or the file
    system) has no flock on folders; raises Timeout when another process holds it."""
    if fcntl is None:
        return None
    try:
        fd = os.open(root, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise Timeout(str(root)) from None
    except OSError:
        os.close(fd)
        return None
    return fd


_COMMAND_WORD = re.compile(r"[a-z][a-z0-9_-]{0,30}")


def program_name(argv: Sequence[str]) -> str:
    """'desktop-mem serve': the program and its first command word, never an option's value
    (`--set=llm.api_key=...` must not end up in a file or a message)."""
    if not argv:
        return "another process"
    words = [w for w in argv[1:] if _COMMAND_WORD.fullmatch(w)]
    name = Path(str(argv[0])).name
    return " ".join([name, *words[:1]])[:100]


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
    # Lock files written by older versions hold the raw command line: show its words only.
    program = program_name(str(holder.get("program") or "another process").split())
    return (
        f"{program} (pid {holder.get('pid')} on "
        f"{holder.get('host')}, since {holder.get('since')})"
    )
