"""What git said of each commit the timeline has shown, kept on disk by sha (issue #25).

A timeline page asked git to list the files of its 50 commits: on a 100,000-commit store that is
~0.1 s of tree diffs even for small commits (a migrated store keeps 17,000 facts in one folder),
and 1.2 s with a bulk commit on the page (an import, a migration: 58,930 files listed, parsed and
classified). A commit never changes, so what it changed is worked out once and kept, by sha:

- a small commit: its changed files as git listed them (paths and blob ids, never a text); the
  page still reads and classifies the few blobs (their texts are not copied here);
- a bulk commit (more than `timeline.DETAIL_LIMIT` memory files): its events from paths, packed
  (`timeline.PathEvents`) with their counts, so the page neither lists nor classifies them.

Bulk commits this app makes are classified when made (`GitHistory.commit`); any other commit (a
sync remote's, one made by hand or before this cache existed) when the timeline first shows it,
from git: nothing in a commit's message or trailers is trusted to say what it holds.

The file is `.git/desktop-mem-timeline.sqlite3`: inside .git, so never committed, pushed or
pulled, written only by this app and only from what git said of that sha. Anything unreadable in
it (a damaged row, an older VERSION of the rules) counts as absent and the commit is read from git
again; deleting the file loses nothing.
"""

from __future__ import annotations

import contextlib
import json
import re
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from desktop_mem.engine.history import timeline
from desktop_mem.engine.history.git_history import FileChange, GitHistory, RawCommit
from desktop_mem.engine.models import CommitInfo, EventType, TimelineEvent

FILE_NAME = "desktop-mem-timeline.sqlite3"
# Bumped whenever timeline.classify's path rules change what a bulk commit's events are.
VERSION = 2  # 2: the summary names the conversations a bulk commit touches
# Bumped if the listing changes (git_history._log's flags: --raw --no-renames --no-abbrev).
FILES_VERSION = 1
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bulk_commits (sha TEXT PRIMARY KEY, version INTEGER NOT NULL,"
    " events INTEGER NOT NULL, counts TEXT NOT NULL, packed BLOB NOT NULL, crc INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS commit_files (sha TEXT PRIMARY KEY, version INTEGER NOT NULL,"
    " files BLOB NOT NULL)",
)
_TYPES = {t.value: t for t in EventType}
_BLOB = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_STATUSES = frozenset("ADMRTUX")  # git_history._raw_change: C is kept as A
_CHUNK = 400  # shas per query (SQLite's default limit of bound values is 32,766)


def cache_file(git: GitHistory) -> Path:
    """Where a store keeps what its commits changed."""
    return git.root / ".git" / FILE_NAME


@contextlib.contextmanager
def _connect(git: GitHistory, *, create: bool) -> Iterator[sqlite3.Connection | None]:
    path = cache_file(git)
    if not path.parent.is_dir() or (not create and not path.is_file()):
        yield None  # nothing kept yet, or no .git folder here (a worktree's .git file)
        return
    db = sqlite3.connect(path, timeout=2.0)
    try:
        if create:
            # WAL + NORMAL: a commit of this cache never waits for the disk, and a crash loses at
            # most the last rows (read from git again), never the file.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            for statement in _SCHEMA:
                db.execute(statement)
        yield db
        db.commit()
    finally:
        db.close()


def remember_if_bulk(git: GitHistory, sha: str, files: int) -> None:
    """Classify a commit of more than `timeline.DETAIL_LIMIT` files and keep its events."""
    if files <= timeline.DETAIL_LIMIT:
        return
    raw = git.with_files([sha])[0]
    if timeline.is_bulk(raw):
        save_bulk(git, timeline.classify(raw, git.blob))


def save_bulk(git: GitHistory, info: CommitInfo) -> None:
    """Keep a bulk commit's events (only PathEvents: a commit classified with texts is not kept)."""
    events = info.events
    if not isinstance(events, timeline.PathEvents) or info.event_counts is None:
        return
    summary = json.dumps({"counts": {str(k): v for k, v in info.event_counts.items()},
                          "conversations": sorted(events.conversations)})
    _write(git, "INSERT OR REPLACE INTO bulk_commits VALUES (?, ?, ?, ?, ?, ?)",
           [(info.sha, VERSION, len(events), summary, events.packed, _crc(summary, events.packed))])


def _crc(summary: str, packed: bytes) -> int:
    """A checksum of a row (~1 ms for 2 MB): a damaged row is read from git, not shown."""
    return zlib.crc32(packed, zlib.crc32(summary.encode()))


def save_files(git: GitHistory, commits: Sequence[RawCommit]) -> None:
    """Keep the changed files of commits read with their files."""
    rows = [(c.sha, FILES_VERSION, zlib.compress(json.dumps(
        [[f.status, f.old_path, f.new_path, f.old_blob, f.new_blob] for f in c.changes]).encode(), 1))
        for c in commits]
    if rows:
        _write(git, "INSERT OR REPLACE INTO commit_files VALUES (?, ?, ?)", rows)


def _write(git: GitHistory, statement: str, rows: list[tuple[Any, ...]]) -> None:
    # A read-only or full disk: the commits are read from git the next time.
    with contextlib.suppress(sqlite3.Error, OSError), _connect(git, create=True) as db:
        if db is not None:
            db.executemany(statement, rows)


def load(git: GitHistory, commits: Sequence[RawCommit]
         ) -> tuple[dict[str, CommitInfo], dict[str, RawCommit]]:
    """Of `commits` (read without their files): the bulk commits kept, classified, and the other
    commits kept, with their files; by sha. What is missing or unreadable is left out."""
    by_sha = {c.sha: c for c in commits}
    bulk: dict[str, CommitInfo] = {}
    listed: dict[str, RawCommit] = {}
    if not by_sha:
        return bulk, listed
    shas = list(by_sha)
    try:
        with _connect(git, create=False) as db:
            if db is None:
                return bulk, listed
            for i in range(0, len(shas), _CHUNK):
                chunk = shas[i:i + _CHUNK]
                marks = ",".join("?" * len(chunk))
                for sha, events, counts, packed, crc in db.execute(
                        f"SELECT sha, events, counts, packed, crc FROM bulk_commits WHERE version = ? "
                        f"AND sha IN ({marks})", (VERSION, *chunk)):
                    info = _bulk(git, by_sha.get(sha), events, counts, packed, crc)
                    if info is not None:
                        bulk[sha] = info
                for sha, files in db.execute(
                        f"SELECT sha, files FROM commit_files WHERE version = ? AND sha IN ({marks})",
                        (FILES_VERSION, *chunk)):
                    changes = _changes(files)
                    if changes is not None and sha in by_sha and sha not in bulk:
                        listed[sha] = replace(by_sha[sha], changes=changes)
    except sqlite3.Error:
        return {}, {}
    return bulk, listed


def _bulk(git: GitHistory, meta: RawCommit | None, events: object, summary: object, packed: object,
          crc: object) -> CommitInfo | None:
    parsed = _summary(summary)
    if (meta is None or type(events) is not int or not isinstance(packed, bytes) or parsed is None
            or sum(parsed[0].values()) != events or not isinstance(summary, str)
            or crc != _crc(summary, packed)):
        return None  # not what this module wrote: read from git instead
    sha = meta.sha
    counts, conversations = parsed

    def from_git() -> Sequence[TimelineEvent]:  # a row damaged past its checksum
        return timeline.classify(git.with_files([sha])[0], git.blob).events

    path_events = timeline.PathEvents(sha, packed, events, recover=from_git, conversations=conversations)
    return timeline.commit_info(meta, path_events, counts)


def _summary(text: object) -> tuple[dict[EventType, int], frozenset[str]] | None:
    try:
        raw = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("counts"), dict):
        return None
    counts: dict[EventType, int] = {}
    for key, value in raw["counts"].items():
        if key not in _TYPES or type(value) is not int or value < 0:
            return None
        counts[_TYPES[key]] = value
    conversations = raw.get("conversations")
    if not isinstance(conversations, list) or not all(isinstance(c, str) for c in conversations):
        return None
    return counts, frozenset(conversations)


def _changes(packed: object) -> tuple[FileChange, ...] | None:
    try:
        rows = json.loads(zlib.decompress(packed)) if isinstance(packed, bytes) else None
    except (zlib.error, ValueError):
        return None
    if not isinstance(rows, list):
        return None
    changes: list[FileChange] = []
    for row in rows:
        if not (isinstance(row, list) and len(row) == 5 and row[0] in _STATUSES
                and all(p is None or (isinstance(p, str) and p) for p in row[1:3])
                and all(b is None or (isinstance(b, str) and _BLOB.fullmatch(b)) for b in row[3:])):
            return None
        changes.append(FileChange(*row))
    return tuple(changes)
