"""Folders a process makes for itself in the temp dir (a read-only store's scratch index, the
private endpoint's folder), each marked with its owner, and the sweep that removes those of
processes killed before their own clean-up could run (SIGKILL, a crash, power loss).

The sweep runs whenever a folder of the same kind is made, so it needs no process or timer of
its own. A folder goes only when everything says it is ours and dead: its name is the kind's
prefix followed by `tempfile.mkdtemp`'s random letters, directly in the temp base; it is a real
directory (lstat) of this user's; and its `owner` note names a process of this machine that is
gone, or a pid now running with another start time (pid reuse). Anything else is left alone.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, TypeGuard

OWNER_NAME = "owner"
# Folders without an owner note were made before this version. Nothing tells a live one from a
# dead one, so only age does: a week without a change is far beyond any read-only search and
# beyond nearly every window left open; a folder whose Unix socket still accepts a connection
# (an older app's endpoint) is kept whatever its age.
UNMARKED_MAX_AGE_S = 7 * 24 * 3600
# A name costs nothing to read (scandir brings names in batches, without a stat); a folder whose
# name matches costs an lstat, a note, /proc, perhaps a removal. Both are capped so a huge /tmp
# cannot slow a start; a start that stops early leaves the rest to the next one.
MAX_NAMES = 4096
MAX_CANDIDATES = 256
_MAX_NOTE_BYTES = 4096
_RANDOM_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")  # tempfile's names
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

log = logging.getLogger(__name__)


def make_runtime_folder(prefix: str, base: str | None = None) -> Path:
    """A fresh 0700 folder `<prefix><random>` in `base` (tempfile's temp dir when None) with an
    owner note naming this process, after sweeping away the stale ones of the same `prefix`."""
    try:
        sweep_stale_folders(prefix, base)
    except Exception:  # a sweep is housekeeping: the folder asked for is made all the same
        log.debug("sweeping stale %s folders failed", prefix, exc_info=True)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    try:
        fd = os.open(folder / OWNER_NAME, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(_this_process(), handle)
    except OSError:  # without a note the folder is only ever removed by its age
        log.debug("could not mark %s with its owner", folder, exc_info=True)
    return folder


def remove_runtime_folder(folder: Path) -> None:
    """Remove the owner note and `folder` itself once the caller emptied it (idempotent)."""
    with contextlib.suppress(OSError):
        (folder / OWNER_NAME).unlink()
    with contextlib.suppress(OSError):
        folder.rmdir()


def sweep_stale_folders(prefix: str, base: str | None = None) -> int:
    """Remove the folders `<prefix><random>` directly in `base` whose owner is gone; the count.

    Not on Windows: there is no /proc and no uid to check, and `os.kill(pid, 0)` would end the
    process (TerminateProcess), so its stale folders stay (small there: a key note each)."""
    if not hasattr(os, "getuid"):
        return 0
    base = base or tempfile.gettempdir()
    here = _this_process()
    removed = candidates = 0
    with os.scandir(base) as entries:
        for seen, entry in enumerate(entries):
            if seen >= MAX_NAMES or candidates >= MAX_CANDIDATES:
                break
            if not _named_like_ours(entry.name, prefix):
                continue
            candidates += 1
            folder = Path(base, entry.name)
            try:
                if _stale(folder, here):
                    _remove(folder)
                    removed += 1
            except OSError:  # in use, removed meanwhile by another sweep, not ours after all
                log.debug("left %s in place", folder, exc_info=True)
    return removed


def _named_like_ours(name: str, prefix: str) -> bool:
    """`prefix` and then only mkdtemp's letters: the endpoint's "desktop-mem-" never matches the
    scratch index's "desktop-mem-index-…" (the "-" is not one of them)."""
    rest = name[len(prefix):]
    return name.startswith(prefix) and bool(rest) and set(rest) <= _RANDOM_LETTERS


def _stale(folder: Path, here: dict[str, Any]) -> bool:
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return False
    owner = _read_owner(folder)
    if owner is None:  # made by an older version (or just made, its note not yet written: new)
        return _unchanged_for_long(folder, info) and not _socket_answers(folder)
    return _owner_gone(owner, here)


def _read_owner(folder: Path) -> dict[str, Any] | None:
    """The owner note, None when there is none; OSError unless it is a readable regular file of
    this user's holding a JSON object (a garbled note keeps the folder: it is not ours to judge)."""
    try:
        fd = os.open(folder / OWNER_NAME, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        note = os.fstat(handle.fileno())
        if not stat.S_ISREG(note.st_mode) or note.st_uid != os.getuid():
            raise OSError(f"{folder / OWNER_NAME} is not a note of ours")
        text = handle.read(_MAX_NOTE_BYTES)
    try:
        owner = json.loads(text)
    except ValueError as exc:
        raise OSError(f"{folder / OWNER_NAME} cannot be read") from exc
    if not _well_formed(owner):
        raise OSError(f"{folder / OWNER_NAME} names no process")
    return owner


def _well_formed(owner: object) -> TypeGuard[dict[str, Any]]:
    """The fields `_this_process` writes, of the types it writes (a note of another shape proves
    nothing about its folder's process)."""
    if not isinstance(owner, dict):
        return False
    pid, start = owner.get("pid"), owner.get("start")
    return (type(pid) is int and pid > 0 and (start is None or type(start) is int)
            and isinstance(owner.get("host"), str)
            and all(isinstance(owner.get(k), str | None) for k in ("boot", "pid_ns")))


def _this_process() -> dict[str, Any]:
    pid = os.getpid()
    start = None
    with contextlib.suppress(OSError):  # no /proc
        start = _start_time(pid)
    return {"pid": pid, "start": start, "boot": _boot_id(), "pid_ns": _pid_namespace(),
            "host": socket.gethostname()}


def _owner_gone(owner: dict[str, Any], here: dict[str, Any]) -> bool:
    """True only when the process `owner` names has certainly exited (`here`: this process)."""
    # another machine sharing the temp dir, or another pid namespace (a container, a sandbox):
    # its pids mean nothing here, so its folders are never ours to judge
    if owner.get("host") != here["host"] or owner.get("pid_ns") != here["pid_ns"]:
        return False
    pid: int = owner["pid"]
    if not os.path.exists("/proc/self/stat"):
        # macOS, the BSDs: no start time to compare, so a reused pid keeps the folder until
        # that pid is free again (never the other way round)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False
    if owner.get("boot") is not None and here["boot"] is not None and owner["boot"] != here["boot"]:
        return True  # made before the last reboot: every process of that boot is gone
    try:
        start = _start_time(pid)
    except (FileNotFoundError, ProcessLookupError):
        return True
    # a pid running with another start time was reused: the note's process is gone
    return None not in (start, owner.get("start")) and start != owner["start"]


def _start_time(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (clock ticks after boot): with the pid, it names one process.
    OSError when there is no such file (FileNotFoundError: no such process), None if garbled."""
    text = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    try:  # field 2 is the command in parentheses, which may itself hold spaces and parentheses
        return int(text[text.rindex(")") + 1:].split()[19])
    except (ValueError, IndexError):
        return None


def _boot_id() -> str | None:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    return None


def _pid_namespace() -> str | None:
    with contextlib.suppress(OSError):
        return os.readlink("/proc/self/ns/pid")
    return None


def _unchanged_for_long(folder: Path, info: os.stat_result) -> bool:
    """True when neither `folder` (`info`: its lstat) nor anything directly in it changed for
    UNMARKED_MAX_AGE_S (an index copy's files change when it syncs; the folder's own mtime
    only when an entry comes or goes)."""
    newest = info.st_mtime
    with os.scandir(folder) as entries:
        for entry in entries:
            newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
    return time.time() - newest > UNMARKED_MAX_AGE_S


def _socket_answers(folder: Path) -> bool:
    """True when a Unix socket directly in `folder` accepts a connection: a live endpoint."""
    with os.scandir(folder) as entries:
        sockets = [e.path for e in entries if stat.S_ISSOCK(e.stat(follow_symlinks=False).st_mode)]
    for path in sockets:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(0.5)
            try:
                probe.connect(path)
            except OSError:
                continue
            return True
    return False


def _remove(folder: Path) -> None:
    """Remove `folder`'s contents, then its owner note, then `folder`: a removal that fails half
    way keeps the note, so the next sweep tries again. Links inside are removed, never followed
    (rmtree takes a real directory and never follows a link within it)."""
    with os.scandir(folder) as entries:
        inside = [(e.path, e.is_dir(follow_symlinks=False)) for e in entries if e.name != OWNER_NAME]
    for path, is_dir in inside:
        if is_dir:
            shutil.rmtree(path)
        else:
            os.unlink(path)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(folder / OWNER_NAME)
    os.rmdir(folder)
    log.debug("removed %s: its process is gone", folder)

