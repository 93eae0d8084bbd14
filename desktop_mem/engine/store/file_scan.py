"""Walking the store's files, in this process or in a helper process beside a start.

A start must stat every memory file to know which changed while the app was closed: 100,000
`lstat` calls plus the Python around them, ~0.4 s, all of it before the window can list the
store. The calls hold the interpreter lock between them, so a thread cannot overlap them with
parsing the manifest's cached rows (tried: both slowed down). A second process can: `spawn()`
runs this file as a script, with only the standard library, on the other core, and it compares
what it finds with the manifest's rows itself, so its answer is the few files that differ, not
100,000 stats (issue #25).

The walking rules live here once, for both: `entries()` is what MarkdownStore.iter_entries runs.
"""

from __future__ import annotations

import marshal
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

# Rows of the manifest this scan compared with: count and sums of their stats. The catalog checks
# them against the rows it read itself; another count (a writer saved in between) and the scan is
# not used.
Fingerprint = tuple[int, int, int]
_ANSWER_KEYS = frozenset({"changed", "gone", "links", "unreadable", "temp_files", "fingerprint"})
SCAN_TIMEOUT = 120.0  # seconds; a scan that takes longer is dropped and the start walks itself


def entries(root: str, top: str, temp_files: list[str] | None = None
            ) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every candidate memory file under `top`, the store's entries folder inside `root` (*.md,
    not hidden, not temp), and every link
    (yielded to be reported, never followed), as (store-relative POSIX path, DirEntry). Temp files
    of interrupted atomic writes (".<name>.<hex>.tmp") are added to `temp_files`, if given.

    Plain string paths, not pathlib: at 100k files pathlib's parsing alone took seconds.
    """
    prefix = len(root) + 1
    if not os.path.isdir(top):
        return
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    if entry.name.startswith("."):
                        if (temp_files is not None and entry.name.endswith(".tmp")
                                and entry.is_file(follow_symlinks=False)):
                            temp_files.append(entry.path)
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_symlink() or (entry.name.endswith(".md")
                                                and entry.is_file(follow_symlinks=False)):
                        rel = entry.path[prefix:]
                        yield (rel if os.sep == "/" else rel.replace(os.sep, "/")), entry
        except OSError:
            continue


def stat_files(root: str, top: str, temp_files: list[str] | None = None
               ) -> tuple[dict[str, tuple[int, int]], list[str], list[tuple[str, str]]]:
    """`entries()` stat-ed: each file's (mtime_ns, size), the links (never followed) and the
    files whose stat failed, with the reason."""
    stats: dict[str, tuple[int, int]] = {}
    links: list[str] = []
    unreadable: list[tuple[str, str]] = []
    for rel, entry in entries(root, top, temp_files):
        if entry.is_symlink():
            links.append(rel)
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError as exc:
            unreadable.append((rel, exc.strerror or str(exc)))
            continue
        stats[rel] = (st.st_mtime_ns, st.st_size)
    return stats, links, unreadable


def fingerprint(count: int, mtime_total: int, size_total: int) -> Fingerprint:
    """Manifest rows as (count, sum of their mtimes, sum of their sizes), wrapped to 62 bits."""
    mask = (1 << 62) - 1
    return (count, mtime_total & mask, size_total & mask)


def scan_changes(root: str, top: str, manifest: str) -> dict[str, Any]:
    """Walk the store and compare each file's (mtime_ns, size) with the manifest's row:
    `changed` files (new, or another stat) with their stat, `gone` rows, `links`, `unreadable`
    files with the reason, `temp_files`, and the `fingerprint` of the rows compared with."""
    rows: list[tuple[str, int, int]] = []
    if os.path.isfile(manifest):
        try:
            db = sqlite3.connect(f"file:{manifest}?mode=ro", uri=True)
            try:
                rows = db.execute("SELECT path, mtime_ns, size FROM files").fetchall()
            finally:
                db.close()
        except sqlite3.Error:
            rows = []
    known = {path: (mtime_ns, size) for path, mtime_ns, size in rows}
    temp_files: list[str] = []
    stats, links, unreadable = stat_files(root, top, temp_files)
    changed = {rel: stat for rel, stat in stats.items() if known.get(rel) != stat}
    gone = [path for path in known if path not in stats]
    return {"changed": changed, "gone": gone, "links": links, "unreadable": unreadable,
            "temp_files": temp_files,
            "fingerprint": fingerprint(len(rows), sum(r[1] for r in rows), sum(r[2] for r in rows))}


class Scan:
    """`scan_changes` running in a helper process; `result()` waits for its answer."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process

    def result(self) -> dict[str, Any] | None:
        """The scan's answer, or None when the helper failed (the caller walks itself)."""
        try:
            out, _err = self._process.communicate(timeout=SCAN_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return None
        if self._process.returncode != 0:
            return None
        try:
            answer = marshal.loads(out)
        except (EOFError, ValueError, TypeError):
            return None
        return answer if isinstance(answer, dict) and answer.keys() >= _ANSWER_KEYS else None

    def cancel(self) -> None:
        """Stop the helper (the start failed or no longer needs it)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.communicate()


def spawn(root: str, top: str, manifest: str) -> Scan | None:
    """Start `scan_changes` in a helper process (Python in isolated mode, without site: only the
    standard library), or None where that cannot work (a frozen app has no interpreter to run
    a script with; a failed spawn)."""
    if getattr(sys, "frozen", False) or not sys.executable:
        return None
    try:
        process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", os.path.abspath(__file__), root, top, manifest],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),  # Windows: no console flashes up
        )
    except OSError:
        return None
    return Scan(process)


if __name__ == "__main__":  # the helper process: argv = store root, entries folder, manifest path
    sys.stdout.buffer.write(marshal.dumps(scan_changes(sys.argv[1], sys.argv[2], sys.argv[3])))
