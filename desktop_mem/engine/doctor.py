"""`doctor`: the health of a store in one report (problems, lock, git, uncommitted, index)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from desktop_mem.engine.history.git_history import GitHistory, GitHistoryError
from desktop_mem.engine.models import EngineError, Memory, Problem
from desktop_mem.engine.store.ports import MemoryView, StoreFiles
from desktop_mem.engine.store.secrets_scan import HELD_BACK_HINT, describe, in_names, redact, scan
from desktop_mem.engine.store.store_lock import describe_holder, read_holder


class LockState(Protocol):
    """Who holds the store (store/store_lock.py's StoreLock)."""

    @property
    def held(self) -> bool: ...

    def is_locked_elsewhere(self) -> bool: ...


class DoctorSource(Protocol):
    """What `examine` looks at, and nothing else (compose.Parts satisfies it): the
    files, the raw catalog (counted, never shown), git, the lock, the problems and the index."""

    @property
    def root(self) -> Path: ...
    @property
    def store(self) -> StoreFiles: ...
    @property
    def raw(self) -> MemoryView: ...
    @property
    def git(self) -> GitHistory: ...

    @property
    def lock(self) -> LockState: ...

    def problems(self) -> list[Problem]: ...

    def index_status(self) -> str: ...


@dataclass(frozen=True)
class DoctorReport:
    """Health of a store: problems, lock holder, git state, index state."""

    store: str
    memories: int
    deleted: int
    problems: tuple[Problem, ...]
    lock: str
    git: str
    uncommitted: tuple[str, ...]
    index: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """True when nothing needs the user's attention."""
        return (not self.problems and not self.uncommitted and self.git.startswith("ok")
                and not self.index.startswith("cannot"))


def _problems(source: DoctorSource) -> tuple[Problem, ...]:
    """Unreadable files (catalog), links anywhere under entries/ (looked for now: one may have
    arrived since the catalog was read), and what sits in entries/ that is no conversation."""
    found = {p.path: p for p in [*source.store.odd_folders(), *source.store.links()]}
    found.update({p.path: p for p in source.problems()})
    return tuple(sorted(found.values(), key=lambda p: p.path))


_UNVERSIONED_HINT = ("An ignore rule hides it from git (.git/info/exclude, a global excludes file, or a "
                     ".gitignore edited by hand or brought by an old sync). Remove the rule; the app "
                     "restores its own .gitignore when it opens the store for writing.")


def _unversioned(source: DoctorSource, memories: list[Memory]) -> tuple[Problem, ...]:
    """Memory files git ignores: they would never reach the history or another machine (#22)."""
    paths = [m.path for m in memories]
    if not paths:
        return ()
    try:
        ignored = source.git.ignored(paths)
    except GitHistoryError:
        return ()
    return tuple(Problem(p, "git ignores this memory file, so it is not versioned or synced",
                         _UNVERSIONED_HINT) for p in sorted(ignored))


def _secret_notes(source: DoctorSource, uncommitted: tuple[str, ...]) -> tuple[str, ...]:
    """Uncommitted hand edits held back because they hold a likely secret (never the secret)."""
    notes = []
    for rel in uncommitted:
        if not rel.endswith(".md"):
            continue
        try:
            memory = source.store.read(rel)
        except (EngineError, ValueError, OSError):
            continue
        named = in_names(memory)
        if named:  # redacting the text cannot help: the file must be renamed or edited (#22)
            notes.append(f"{redact(rel)}: its file name or front matter holds a likely secret "
                         f"({describe(named)}), so it is not committed: rename the file or edit its "
                         "front matter")
            continue
        findings = scan(memory.text)
        if findings:
            notes.append(f"{rel} holds a likely secret ({describe(findings)}), so it is not committed: "
                         f"{HELD_BACK_HINT}")
    return tuple(notes)


MIN_FREE_BYTES = 1 << 20  # below this a commit (objects, index, logs) can fail half-way


def _cannot_commit(root: Path) -> str | None:
    """Why git could not commit in this store now (a read-only file system, a repository not
    writable by this user, a full disk), without writing anything; None when it can."""
    git_dir = root / ".git"
    if _read_only_fs(root) and _read_only_fs(git_dir):
        return None  # a mounted backup: nothing can be written, so nothing can go unversioned
    for folder in (git_dir, git_dir / "objects"):
        if folder.is_dir() and not os.access(folder, os.W_OK):
            why = ("its git repository is on a read-only file system" if _read_only_fs(folder)
                   else f"{folder.name} is not writable by this user")
            return f"cannot commit: {why}; changes cannot be versioned (nothing saved is lost)"
    try:
        free = shutil.disk_usage(git_dir).free
    except OSError:
        return None
    if free < MIN_FREE_BYTES:
        return (f"cannot commit: the disk holding the store is full ({free // 1024} KB free); "
                "free some space (nothing saved is lost)")
    return None


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows)
        return False


def examine(source: DoctorSource) -> DoctorReport:
    """Check the store behind `source` (read-only: changes nothing)."""
    memories = source.raw.list_memories(include_deleted=True)  # counted, never shown
    if source.lock.held:
        lock = "held by this process"
    elif source.lock.is_locked_elsewhere():
        lock = f"held by {describe_holder(read_holder(source.root))}"
    else:
        lock = "free"
    uncommitted: tuple[str, ...] = ()
    unversioned: tuple[Problem, ...] = ()
    if not source.git.exists():
        git_state = "not a git repository (versioning off or never opened for writing)"
    else:
        try:
            source.git.fsck()
            read_only = " on a read-only file system: it can be read, not changed" \
                if _read_only_fs(source.root) else ""
            git_state = _cannot_commit(source.root) or f"ok ({source.git.count()} commits{read_only})"
            uncommitted = tuple(source.git.dirty_paths())
            unversioned = _unversioned(source, memories)
        except GitHistoryError as exc:
            git_state = str(exc)
    return DoctorReport(
        notes=_secret_notes(source, uncommitted),
        store=str(source.root),
        memories=sum(1 for m in memories if not m.deleted),
        deleted=sum(1 for m in memories if m.deleted),
        problems=(*_problems(source), *unversioned),
        lock=lock,
        git=git_state,
        uncommitted=uncommitted,
        index=source.index_status(),
    )
