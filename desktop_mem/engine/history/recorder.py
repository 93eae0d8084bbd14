"""History recording and reading: the writer's commits, "commit what changed while closed", the
log with its classified events, diffs, a memory's own history and a file at a revision."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from desktop_mem.engine.history.git_history import GitHistory, GitHistoryError
from desktop_mem.engine.history.timeline import classify
from desktop_mem.engine.models import CommitInfo, Memory, NotFoundError, Operation, utc_now
from desktop_mem.engine.store import layout
from desktop_mem.engine.store.ports import MemoryView, StoreFiles, Writer
from desktop_mem.engine.store.transaction import CommitFailedError, clip, noun

log = logging.getLogger(__name__)
HeldBack = Callable[[Sequence[str] | None], set[str]]
"""(uncommitted paths, or None to ask git) -> the paths held back for a likely secret."""


def commits(git: GitHistory, limit: int = 50, offset: int = 0) -> list[CommitInfo]:
    """Commits newest first, each with its classified events: git alone, no catalog (a reader
    that asks for nothing else, `desktop-mem history`, need not load 100,000 memories)."""
    return [classify(c, git.blob) for c in git.log(limit=limit, offset=offset)]


class HistoryRecorder:
    """Commits of the store's git repository and what is read back from them."""

    def __init__(
        self, git: GitHistory, writer: Writer, store: StoreFiles, raw: MemoryView, *, versioned: bool,
        read_only: bool,
    ) -> None:
        self.git = git
        self._writer = writer
        self._store = store
        self._raw = raw
        self._versioned = versioned
        self._read_only = read_only
        self.held_back: HeldBack = lambda dirty: set()  # set by the composition root
        # Why the last commit failed, until one succeeds: versioning is not working (issue #34)
        self.failure: str | None = None

    def commit_paths(self, subject: str, trailers: Mapping[str, str], paths: Sequence[str]) -> str | None:
        """The writer's committer: one commit of exactly `paths`. A git failure never loses the
        file write (the next start-up records it) and is reported: CommitFailedError (#22)."""
        try:
            # A new store's .gitignore (written by init) goes with its first commit.
            sha = self.git.commit(subject, trailers, paths=[*paths, ".gitignore"])
        except GitHistoryError as exc:  # reported by whoever asked for the change (one line)
            self.failure = (f"the change is saved in the files but git could not commit it "
                            f"({' '.join(str(exc).split())[:200]}); it is committed the next "
                            "time the store is opened once git works again")
            raise CommitFailedError(self.failure) from None
        self.failure = None
        return sha

    def commit_all(
        self, subject: str, operation: Operation, trailers: Mapping[str, str] | None = None, *,
        dirty: Sequence[str] | None = None,
    ) -> str | None:
        """Commit everything under entries/ that differs from HEAD: what changed while the app was
        closed, or before a sync. Every other commit holds exactly its operation's files.
        `dirty`: start-up's `git status` of entries/ and .gitignore, read while the catalog loaded."""
        if self._read_only or not self._versioned:
            return None
        with self._writer.lock:
            # One lock-free `git status` first: when nothing differs (every start-up but one after
            # edits made while closed) no `git add` refreshes the index over every file of the store.
            if dirty is None:
                dirty = self.git.dirty_paths(".gitignore")
            held = self.held_back(dirty)
            if not dirty:
                return None
            paths = None if not held else [*(p for p in dirty if p not in held and p != ".gitignore"),
                                           ".gitignore"]
            try:
                trailers = {"Operation": str(operation), **(trailers or {})}
                sha = self.git.commit(subject, trailers, paths=paths)
            except GitHistoryError as exc:
                # the files stay as they are, uncommitted: said in the window, `doctor` and the log
                self.failure = (f"changes are saved in the files but git could not commit them "
                                f"({' '.join(str(exc).split())[:200]}); they are committed once git "
                                "works again")
                log.error("could not commit %r: %s", subject, exc)
                return None
            self.failure = None
            return sha

    def history(self, limit: int = 50, offset: int = 0) -> list[CommitInfo]:
        """Commits newest first, each with its classified events."""
        return commits(self.git, limit, offset)

    def memory_history(self, memory_id: str, limit: int = 100) -> list[CommitInfo]:
        """Commits that touched this memory's file in its two places (live and deleted/).

        Not `git log --follow`: its rename guess can pair a new fact with the similar one it
        replaced and walk on into that other memory's history.
        """
        memory = self._raw.get(memory_id)  # commits only: a held-back edit is never committed
        places = layout.both_places(memory.path, memory.conversation_id)
        return [classify(c, self.git.blob) for c in self.git.log(limit=limit, paths=places)]

    def file_at(self, memory: Memory, revision: str) -> bytes:
        """The bytes of a memory's file at a revision, wherever it lived then (live or deleted/)."""
        for candidate in layout.both_places(memory.path, memory.conversation_id):
            try:
                return self.git.show_file(candidate, revision)
            except GitHistoryError:
                continue
        raise NotFoundError(f"memory {memory.id} did not exist at {revision[:10]}")

    def restore_version(self, memory_id: str, revision: str, *, expected_hash: str | None = None) -> Memory:
        """Put back the text a memory had at `revision` (a new commit; nothing is lost)."""
        with self._writer.transaction(Operation.REVERT) as tx:
            current = self._raw.get(memory_id)
            old = self._store.memory_from_bytes(current.path, self.file_at(current, revision))
            if old.text == current.text:
                return current
            memory = tx.rewrite(current, {"updated_at": utc_now()}, old.text, expected_hash=expected_hash)
            tx.subject = f"Revert {noun(memory)} to {revision[:10]}: {clip(memory.text)}"
            tx.conversation = memory.conversation_id
        return memory

    def uncommitted(self, everything: Callable[[], list[str]]) -> list[str]:
        """Files git has not committed. A reader whose git cannot tell (a broken repository, which
        `doctor` must still report) takes every file (`everything`) as uncommitted: unkept secrets
        stay hidden."""
        try:
            return self.git.dirty_paths()
        except GitHistoryError as exc:
            if not self._read_only:
                raise
            log.warning("%s; every memory with a likely secret is treated as held back", exc)
            return everything()
