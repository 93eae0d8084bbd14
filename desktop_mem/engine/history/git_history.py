"""GitPython adapter: the store's history. The only module that talks to git.

Reads use one `git log` call per page (not a subprocess per commit; with `--raw` only for the
commits whose files are needed) and GitPython's persistent `cat-file` process for blob contents.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import git
from git.exc import GitCommandError, InvalidGitRepositoryError, NoSuchPathError

from desktop_mem.engine.history.git_env import isolated_env, user_identity
from desktop_mem.engine.models import EngineError

TRAILER_PREFIX = "Desktop-Mem-"
GITIGNORE = """\
# Derived by desktop_mem: rebuilt from the Markdown files at any time.
chroma/
keyword_index.sqlite3*
memory_index.json
memory_index.json.*
.desktop_mem.lock
.desktop_mem.lock.json
*.tmp
# This machine's answers, never synced: likely secrets kept as written in hand-edited files.
kept_secrets.json
# This machine's log of which memories were sent to which model (bounded; see chat/sent_log.py).
sent_log.jsonl
"""
_ZERO = "0" * 40
_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_LOG_FORMAT = "%H%x00%an%x00%ct%x00%P%x00%B"
# A revision named by the user: never an option (no leading '-'), no whitespace or control bytes.
_REVISION = re.compile(r"[A-Za-z0-9_./~^@{}:+][A-Za-z0-9_./~^@{}:+-]{0,199}")
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's id of the empty tree
logger = logging.getLogger(__name__)


AfterCommit = Callable[["GitHistory", str, int], None]
"""Told of a commit GitHistory made: (the history, the commit's sha, how many files it changed)."""


class GitHistoryError(EngineError):
    """A git operation failed; the message carries git's own reason."""


class StoreIsUserRepoError(GitHistoryError):
    """The store folder is one of the user's own git repositories: refused, nothing touched."""


_OWN_KEY = "desktop-mem.store"  # set in the repository config of every store the app made
# What a store's repository tracks: the memories, review proposals and the app's .gitignore.
_OWN_TOP_LEVEL = frozenset({"entries", "review", ".gitignore"})


@dataclass(frozen=True)
class FileChange:
    """One file changed by a commit (status A, M, D or R), with blob ids for its contents."""

    status: str
    old_path: str | None
    new_path: str | None
    old_blob: str | None
    new_blob: str | None


@dataclass(frozen=True)
class RawCommit:
    """A commit as read from `git log`: metadata, parsed trailers and changed files."""

    sha: str
    author: str
    committed_at: datetime
    parents: tuple[str, ...]
    message: str
    trailers: Mapping[str, str]
    changes: tuple[FileChange, ...]

    @property
    def subject(self) -> str:
        """The first line of the message."""
        return self.message.split("\n", 1)[0]


def format_message(subject: str, trailers: Mapping[str, str], body: str = "") -> str:
    """A readable subject, an optional body, and machine-readable `Desktop-Mem-*` trailers."""
    lines = [subject.strip().replace("\n", " ")[:120]]
    if body.strip():
        lines += ["", body.strip()]
    if trailers:
        lines.append("")
        lines += [f"{TRAILER_PREFIX}{k}: {' '.join(str(v).split())}" for k, v in trailers.items()]
    return "\n".join(lines) + "\n"


def parse_trailers(message: str) -> dict[str, str]:
    """The `Desktop-Mem-*` trailers of a message, keys without the prefix (e.g. 'Operation')."""
    result: dict[str, str] = {}
    paragraphs = message.strip().split("\n\n")
    if len(paragraphs) < 2:
        return result
    for line in paragraphs[-1].splitlines():
        key, sep, value = line.partition(": ")
        if sep and key.startswith(TRAILER_PREFIX):
            result[key[len(TRAILER_PREFIX):]] = value.strip()
    return result


class GitHistory:
    """The git repository at the store root."""

    def __init__(self, root: Path, *, after_commit: AfterCommit | None = None) -> None:
        self.root = root
        # Told of each commit this class makes (its sha, how many files): the composition root
        # (compose.py) keeps a bulk commit's events there (history/commit_summaries.py), which
        # reads git through this class.
        self._after_commit = after_commit
        self._repo: git.Repo | None = None
        self._lock = threading.RLock()
        self._signing: bool | None = None  # commit.gpgSign, read once

    @property
    def repo(self) -> git.Repo:
        """The open repository (opened lazily, once: two threads asking at once get the same one)."""
        repo = self._repo
        if repo is not None:
            return repo
        with self._lock:
            if self._repo is None:
                try:
                    repo = git.Repo(self.root)
                    # the user's git config never applies (history/git_env.py)
                    repo.git.update_environment(**isolated_env())
                    self._repo = repo
                except (InvalidGitRepositoryError, NoSuchPathError):
                    raise GitHistoryError(
                        f"{self.root} is not a git repository yet; run `desktop-mem --store {self.root} "
                        "doctor` or open it once for writing to initialise it"
                    ) from None
            return self._repo

    @contextlib.contextmanager
    def locked(self) -> Iterator[git.Repo]:
        """The repository, for calls that use GitPython's persistent object-database process
        (commit objects, trees, blobs): that process is shared and not thread-safe."""
        with self._lock:
            yield self.repo

    def exists(self) -> bool:
        """True when the store root is a git repository."""
        return (self.root / ".git").exists()

    def init(self) -> None:
        """Create the repository and its .gitignore if missing; idempotent. A store that is one of
        the user's own repositories is refused before anything in it is touched (StoreIsUserRepoError)."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self.exists():
            with contextlib.suppress(OSError):  # a new store is private to its user (issue #22)
                os.chmod(self.root, 0o700)
            with self._lock:
                init = git.Git(self.root)
                init.update_environment(**isolated_env())  # no global config
                init.init("--quiet", "--template=")  # and no template (hooks) copied in
                self._mark_own()
        elif (why := self.foreign()) is not None:
            raise StoreIsUserRepoError(
                f"{self.root} is a git repository of your own ({why}): desktop-mem keeps its history in "
                "a repository of its own and never touches yours (its index, config, .gitignore or "
                "staged work). Choose another folder as the store: an empty one, or one desktop-mem made.")
        else:
            self._mark_own()
        ignore = self.root / ".gitignore"
        # The app owns .gitignore: one edited by hand or brought by an old sync (e.g. one that
        # ignores entries/, which would switch versioning off silently) is put back (issue #22).
        if not ignore.is_file() or ignore.is_symlink() or ignore.read_bytes() != GITIGNORE.encode():
            ignore.unlink(missing_ok=True)
            ignore.write_text(GITIGNORE, encoding="utf-8")
        if self.repo.config_reader("repository").get_value("core", "symlinks", True) is not False:
            # A sync remote may deliver symbolic links: check them out as small plain files
            # (holding the target's path) rather than as links that could lead out of the store.
            with self.repo.config_writer("repository") as writer:
                writer.set_value("core", "symlinks", "false")
        reader = self.repo.config_reader("repository")
        if not reader.has_option("user", "name"):  # the user's own identity, read once, else the app's
            name, email = user_identity()
            with self.repo.config_writer("repository") as writer:
                writer.set_value("user", "name", name)
                writer.set_value("user", "email", email)

    def foreign(self) -> str | None:
        """Why the repository at the store root is not the app's (None when it is): `.git` that is
        a link or a file (a worktree or submodule), or files tracked outside the store's layout.
        A repository the app made is marked in its config; an older store of the app's (unmarked)
        tracks nothing but its layout and is marked the first time it is opened."""
        dot_git = self.root / ".git"
        if dot_git.is_symlink() or not dot_git.is_dir():
            return ".git is not a folder here: a worktree, a submodule or a link"
        try:
            if self.repo.git.config("--local", "--get", _OWN_KEY).strip() == "true":
                return None
        except GitCommandError:
            pass  # not marked
        try:
            tracked = self.repo.git.ls_files("-z", "--cached").split("\0")
        except GitCommandError as exc:
            return f"git cannot read it: {_reason(exc)}"
        top = {p.split("/", 1)[0] for p in tracked if p}
        # agent-cli's memory store (the same layout, opened in place) keeps a README beside entries/
        allowed = _OWN_TOP_LEVEL | ({"README.md"} if "entries" in top else set())
        outside = sorted(top - allowed)
        if outside:
            return f"it tracks {', '.join(outside[:3])}{' …' if len(outside) > 3 else ''}"
        return None

    def _mark_own(self) -> None:
        with contextlib.suppress(GitCommandError):
            self.repo.git.config("--local", _OWN_KEY, "true")

    def close(self) -> None:
        """Stop GitPython's helper processes."""
        with self._lock:
            if self._repo is not None:
                self._repo.close()
                self._repo = None

    # ---------------------------------------------------------------- writing

    def commit(
        self, subject: str, trailers: Mapping[str, str], body: str = "", paths: Sequence[str] | None = None
    ) -> str | None:
        """Commit exactly `paths` (store-relative; additions, edits, moves and removals); None if
        nothing changed. `paths=None` sweeps everything under entries/ (+ .gitignore): only for
        recording what changed while the app was closed, and before a sync.
        """
        message = format_message(subject, trailers, body)
        if paths is None:
            return self._commit_all(message)
        if not paths:
            return None
        # Literal, NUL-separated pathspecs from a file: no glob or magic in a file name, no
        # option injection, and no limit on how many paths one commit holds (an import: 10,000).
        spec = self.root / ".git" / f"desktop-mem-pathspec-{uuid.uuid4().hex[:8]}"
        g = self.repo.git
        try:
            with g.custom_environment(GIT_LITERAL_PATHSPECS="1"):
                # a path gone from disk can only be staged if git knows it (a removal)
                gone = [p for p in paths if not os.path.lexists(self.root / p)]
                tracked = self._tracked(gone)
                addable = [p for p in paths if p in tracked or p not in gone]
                if addable:
                    _write_spec(spec, addable)
                    # update-index, not `git add --pathspec-from-file`: add matches every file
                    # against every pathspec (quadratic: 20,000 paths took 9.8 s, 100,000 minutes),
                    # update-index takes the paths as they are (20,000: 0.36 s). Like `add --force`
                    # it stages what this operation wrote whatever an ignore rule says (issue #22).
                    with open(spec, "rb") as paths_in:
                        g.update_index("--add", "--remove", "-z", "--stdin", istream=paths_in)
                staged = self._staged()
                changed = [p for p in paths if p in staged]
                if not changed:
                    return None
                if staged == set(changed):  # the usual case: the index holds just our change
                    self._commit_index(message, spec)
                else:  # something else is staged (by hand, or a commit that failed): leave it out
                    _write_spec(spec, changed)
                    g.commit("--no-verify", "--quiet", "--cleanup=verbatim", "-m", message, "--only",
                             f"--pathspec-from-file={spec}", "--pathspec-file-nul")
        except GitCommandError as exc:
            raise GitHistoryError(f"git commit failed: {_reason(exc)}") from None
        except OSError as exc:  # .git cannot be written (a full disk, a read-only mount)
            raise GitHistoryError(f"git commit failed: {exc.strerror or exc}") from None
        finally:
            with contextlib.suppress(OSError):
                spec.unlink(missing_ok=True)
        sha = self.head()
        if sha is not None:
            self._remember_bulk(sha, len(changed))
        return sha

    def _remember_bulk(self, sha: str, files: int) -> None:
        """A bulk commit this app just made (an import, a migration) is classified now and its
        events kept on disk, so the timeline's first page never lists its files (issue #25;
        history/commit_summaries.py, wired by compose.py). Best effort: the commit is made
        whatever happens here."""
        if self._after_commit is None:
            return
        try:
            self._after_commit(self, sha, files)
        except Exception as exc:  # noqa: BLE001 - never fail a commit that is made
            logger.warning("could not keep the events of bulk commit %s: %s", sha[:10], exc)

    def _commit_index(self, message: str, scratch: Path) -> None:
        """Commit what the index holds, with git's plumbing: `git commit` first re-checks (lstat)
        every tracked file, 0.5 s of each hand edit's commit at 100,000 memories (issue #25);
        write-tree + commit-tree + update-ref write only the changed trees (0.16-0.2 s there).
        A user who signs commits (commit.gpgSign) gets `git commit`, which signs."""
        g = self.repo.git
        if self._signs_commits():
            g.commit("--no-verify", "--quiet", "--cleanup=verbatim", "-m", message)
            return
        parent = self.head()
        tree = str(g.write_tree()).strip()
        scratch.write_bytes(message.encode("utf-8"))  # -F: the message exactly as formatted
        parents = ["-p", parent] if parent else []
        sha = str(g.commit_tree(tree, *parents, "-F", str(scratch))).strip()
        # The old value makes the update atomic: a commit made meanwhile fails it, loudly.
        g.update_ref("-m", f"commit: {message.splitlines()[0]}", "HEAD", sha, parent or _ZERO)

    def _signs_commits(self) -> bool:
        if self._signing is None:
            try:
                value = str(self.repo.git.config("--bool", "--get", "commit.gpgsign"))
                self._signing = value.strip() == "true"
            except GitCommandError:  # not set
                self._signing = False
        return self._signing

    def ignored(self, paths: Sequence[str], chunk: int = 500) -> set[str]:
        """Which of `paths` (untracked files) an ignore rule hides from git (read-only, no lock)."""
        found: set[str] = set()
        for i in range(0, len(paths), chunk):
            try:
                with self.repo.git.custom_environment(GIT_OPTIONAL_LOCKS="0"):
                    out = self.repo.git.check_ignore("--", *paths[i:i + chunk])
            except GitCommandError as exc:
                if exc.status == 1:  # none of them is ignored
                    continue
                raise GitHistoryError(f"git check-ignore failed: {_reason(exc)}") from None
            found.update(out.splitlines())
        return found & set(paths)  # a name git had to quote is not matched: never a false alarm

    def _tracked(self, paths: Sequence[str], chunk: int = 500) -> set[str]:
        """Which of `paths` are in git's index (ls-files takes no pathspec file: in chunks)."""
        found: set[str] = set()
        for i in range(0, len(paths), chunk):
            out = self.repo.git.ls_files("-z", "--cached", "--", *paths[i:i + chunk])
            found.update(p for p in out.split("\0") if p)
        return found

    def _staged(self) -> set[str]:
        """Every path whose staged version differs from HEAD (diff takes no pathspec file)."""
        base = "HEAD" if self.head() is not None else _EMPTY_TREE
        out: str = self.repo.git.diff("-z", "--cached", "--name-only", "--no-renames", base)
        return {p for p in out.split("\0") if p}

    def _commit_all(self, message: str) -> str | None:
        g = self.repo.git
        try:
            g.add("--all", "--", "entries", ".gitignore")
        except GitCommandError as exc:
            if "did not match any files" not in str(exc):
                raise GitHistoryError(f"git add failed: {_reason(exc)}") from None
        if not self.has_staged_changes():
            return None
        try:
            g.commit("--no-verify", "--quiet", "--cleanup=verbatim", "-m", message)
        except GitCommandError as exc:
            raise GitHistoryError(f"git commit failed: {_reason(exc)}") from None
        return self.head()

    def has_staged_changes(self) -> bool:
        """True when the index differs from HEAD (or HEAD is unborn and the index not empty)."""
        try:
            self.repo.git.diff("--cached", "--quiet")
        except GitCommandError:
            return True
        if self.head() is None:
            return bool(self.repo.git.ls_files("--cached").strip())
        return False

    def dirty_paths(self, *also: str) -> list[str]:
        """Files under entries/ (and the store-relative paths `also`) that differ from the last
        commit, staged or not, tracked or not (e.g. edits made while closed)."""
        # A plain `git status` refreshes the index under .git/index.lock, which makes a commit
        # running at the same moment (the writer thread) fail; readers must take no locks.
        try:
            with self.repo.git.custom_environment(GIT_OPTIONAL_LOCKS="0"):
                out = self.repo.git.status(*_STATUS_ARGS, *also)
        except GitCommandError as exc:
            raise self._status_failed(exc) from exc
        return _status_paths(out)

    def dirty_paths_later(self, *also: str) -> Callable[[], list[str]]:
        """Start `dirty_paths` now; the function returned waits for its answer (start-up reads the
        catalog meanwhile) and raises GitHistoryError as dirty_paths does."""
        try:
            with self.repo.git.custom_environment(GIT_OPTIONAL_LOCKS="0"):
                process = self.repo.git.status(*_STATUS_ARGS, *also, as_process=True)
        except GitCommandError as exc:
            raise self._status_failed(exc) from exc

        def answer() -> list[str]:
            out = process.stdout.read() if process.stdout is not None else b""
            try:
                process.wait()
            except GitCommandError as exc:
                raise self._status_failed(exc) from exc
            return _status_paths(out.decode("utf-8", errors="surrogateescape"))

        return answer

    def _status_failed(self, exc: GitCommandError) -> GitHistoryError:
        stderr = exc.stderr.decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else exc.stderr
        return GitHistoryError(f"git cannot list the uncommitted files in {self.root}: "
                               f"{(stderr or str(exc)).strip()}")

    # ---------------------------------------------------------------- reading

    def head(self) -> str | None:
        """The sha of HEAD, or None for an empty history."""
        if not self.exists():
            return None
        with self._lock:
            if not self.repo.head.is_valid():
                return None
            return self.repo.head.commit.hexsha

    def count(self) -> int:
        """Number of commits reachable from HEAD."""
        if self.head() is None:
            return 0
        return int(self.repo.git.rev_list("--count", "HEAD"))

    def log(self, limit: int = 50, offset: int = 0, paths: Sequence[str] = (), *, files: bool = True,
            folders: Sequence[str] = ()) -> list[RawCommit]:
        """A page of commits, newest first, with their changed files (renames detected only when
        one path is followed). `files=False`: without them (`changes` empty), a few ms whatever
        the commits touched; `with_files` then lists them for the commits that need it.
        `folders`: only commits that touch one of these folders (taken literally), counted so."""
        if self.head() is None:
            return []
        if limit < 1 or offset < 0:
            raise GitHistoryError(f"limit must be 1 or more and offset 0 or more (got {limit}, {offset})")
        args = [f"--max-count={limit}", f"--skip={offset}", "HEAD"]
        if paths:
            args += ["--follow", "--", *paths] if len(paths) == 1 else ["--", *paths]
        elif folders:
            args += ["--", *_literal(folders)]
        return self._log(args, files=files)

    def count_between(self, old: str, new: str, folders: Sequence[str] = ()) -> int:
        """How many commits `new` has that `old` has not (of those touching `folders`, if any)."""
        if not _SHA.fullmatch(old) or not _SHA.fullmatch(new):
            raise GitHistoryError("not a commit id")
        try:
            return int(self.repo.git.rev_list("--count", f"{old}..{new}", "--", *_literal(folders)))
        except (GitCommandError, ValueError) as exc:
            raise GitHistoryError(f"git rev-list failed: {exc}") from None

    def with_files(self, shas: Sequence[str]) -> list[RawCommit]:
        """The commits named by full sha, in that order, with their changed files (as `log`)."""
        if not shas:
            return []
        bad = [s for s in shas if not _SHA.fullmatch(s)]
        if bad:
            raise GitHistoryError(f"{bad[0][:40]!r} is not a commit id")
        return self._log(["--no-walk=unsorted", *shas])

    def last_added(self, folder: str) -> dict[str, datetime]:
        """When each file under `folder` was last added (newest first, first seen wins): one
        `git log` over the whole history, for questions asked of many files at once (the
        validity migration asked `log` once per deleted fact: 998 s on a 100k-commit store)."""
        if self.head() is None:
            return {}
        try:
            out: str = self.repo.git.log("-z", "--no-renames", "--diff-filter=A", "--name-only",
                                         "--format=%x01%ct", "HEAD", "--", folder)
        except GitCommandError as exc:
            raise GitHistoryError(f"git cannot read the history of {folder}: {exc}") from exc
        added: dict[str, datetime] = {}
        for block in out.split("\x01")[1:]:  # "<ct>" then the names, NUL/newline separated
            stamp, *names = re.split(r"[\0\n]+", block)
            when = datetime.fromtimestamp(int(stamp), UTC)
            for name in names:
                if name:
                    added.setdefault(name, when)
        return added

    def newest(self) -> RawCommit | None:
        """The newest commit without its changed files, or None for an empty history. Cheap
        whatever it touched: `log(limit=1)` lists an import's 10,000 files (start-up's status line)."""
        if self.head() is None:
            return None
        commits = self._log(["--max-count=1", "HEAD"], files=False)
        return commits[0] if commits else None

    def _log(self, args: Sequence[str], *, files: bool = True) -> list[RawCommit]:
        # No rename detection unless a file is followed: the app keeps a file's name when it moves
        # (into deleted/, to another scope) and the timeline pairs a delete and an add of one name
        # itself (timeline._pair_moves); git's detection compared the contents of every moved file
        # (1,741 of one migration commit: 0.87 s of a first page of 0.11 s without it).
        renames = "-M" if "--follow" in args else "--no-renames"
        try:
            raw: bytes = self.repo.git.log(
                "-z", *(("--raw", renames, "--no-abbrev") if files else ()), f"--format={_LOG_FORMAT}", *args,
                stdout_as_string=False, strip_newline_in_stdout=False,
            )
        except GitCommandError as exc:
            raise GitHistoryError(f"git log failed: {_reason(exc)}") from None
        # Any bytes may sit in a commit message made with plain git: decode leniently.
        return parse_log(raw.decode("utf-8", errors="replace"))

    def resolve(self, revision: str) -> str:
        """The full sha of a commit named by the user; never read as a git option."""
        if not isinstance(revision, str) or not _REVISION.fullmatch(revision):
            raise GitHistoryError(f"{revision!r} is not a commit of this store")
        try:
            return str(self.repo.git.rev_parse("--verify", "--quiet", f"{revision}^{{commit}}")).strip()
        except GitCommandError:
            raise GitHistoryError(f"{revision!r} is not a commit of this store") from None

    def commit_info(self, sha: str, *, files: bool = True) -> RawCommit:
        """One commit by sha (or any revision git understands); `files=False` as in `log`."""
        records = self._log(["--max-count=1", self.resolve(sha)], files=files)
        if not records:
            raise GitHistoryError(f"{sha!r} is not a commit of this store")
        return records[0]

    def commit_before(self, moment: datetime) -> str | None:
        """The newest commit of HEAD made at or before `moment` (None: the history is younger)."""
        if self.head() is None:
            return None
        stamp = str(int(moment.timestamp()))
        try:
            with self._lock:
                out = str(self.repo.git.rev_list("-1", f"--before={stamp}", "HEAD")).strip()
        except GitCommandError as exc:
            raise GitHistoryError(f"git rev-list failed: {_reason(exc)}") from None
        return out or None

    def files_at(self, revision: str, under: str) -> list[tuple[str, str]]:
        """(path, blob id) of every file under a folder at a commit."""
        if not _REVISION.fullmatch(revision) or not _REVISION.fullmatch(under):
            raise GitHistoryError(f"{revision[:10]!r} is not a commit of this store")
        try:
            with self._lock:
                out: bytes = self.repo.git.ls_tree("-r", "-z", revision, "--", under,
                                                   stdout_as_string=False, strip_newline_in_stdout=False)
        except GitCommandError as exc:
            raise GitHistoryError(f"git ls-tree failed: {_reason(exc)}") from None
        found: list[tuple[str, str]] = []
        for record in out.decode("utf-8", errors="replace").split("\0"):
            info, _tab, path = record.partition("\t")
            parts = info.split()
            if path and len(parts) == 3 and parts[1] == "blob":
                found.append((path, parts[2]))
        return found

    def blob(self, sha: str | None) -> bytes | None:
        """Contents of a blob (None for the all-zero id of an added/deleted side)."""
        if not sha or sha == _ZERO:
            return None
        try:
            with self._lock:  # GitPython's persistent cat-file process is not thread-safe
                return bytes(self.repo.odb.stream(bytes.fromhex(sha)).read())
        except (ValueError, OSError):
            return None

    def show_file(self, path: str, revision: str) -> bytes:
        """A file's bytes as of a revision."""
        if not _REVISION.fullmatch(revision):
            raise GitHistoryError(f"{path} does not exist at {revision[:10]!r}")
        try:
            with self._lock:
                data: bytes = self.repo.git.show(f"{revision}:{path}", stdout_as_string=False,
                                                 strip_newline_in_stdout=False)
        except GitCommandError:
            raise GitHistoryError(f"{path} does not exist at {revision[:10]}") from None
        return data

    def diff(self, sha: str) -> str:
        """The patch of one commit (against its first parent), renames detected."""
        full = self.resolve(sha)
        try:
            text: str = self.repo.git.show("--format=", "-M", "--patch", "--no-color", full)
        except GitCommandError:
            raise GitHistoryError(f"{sha!r} is not a commit of this store") from None
        return text

    def fsck(self) -> str:
        """`git fsck --full` output; raises GitHistoryError if the repository is damaged."""
        try:
            return str(self.repo.git.fsck("--full", "--no-progress"))
        except GitCommandError as exc:
            raise GitHistoryError(f"git fsck found problems: {_reason(exc)}") from None


_STATUS_ARGS = ("--porcelain", "-z", "--untracked-files=all", "--", "entries")


def _status_paths(out: str) -> list[str]:
    """The paths of `git status --porcelain -z` output."""
    return [token[3:] for token in out.split("\0") if len(token) > 3 and token[2] == " "]


def _literal(folders: Sequence[str]) -> list[str]:
    """Pathspecs that match these names as written (no glob, no magic)."""
    return [f":(literal){f}" for f in folders]


def _write_spec(spec: Path, paths: Sequence[str]) -> None:
    spec.write_bytes(b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths))


def parse_log(out: str) -> list[RawCommit]:
    """Parse `git log -z --raw --format=_LOG_FORMAT` output, field by field.

    Every field is NUL-terminated and read in order, so a message may hold any byte but NUL
    (\x1e, \x1f, lines that look like raw diff entries or trailers) without confusing the parser.
    Raw entries start with ':'; a sha never does, which is how the next record is found.
    """
    tokens = out.split("\0")
    commits: list[RawCommit] = []
    i, n = 0, len(tokens)
    while i < n:
        if not tokens[i]:
            i += 1
            continue
        if i + 5 > n or not _SHA.fullmatch(tokens[i]):
            raise GitHistoryError(f"unexpected git log output near {tokens[i][:40]!r}")
        sha, author, ctime, parents, message = tokens[i:i + 5]
        i += 5
        changes: list[FileChange] = []
        while i < n:
            token = tokens[i].lstrip("\n")
            if not token:
                i += 1
                continue
            if not token.startswith(":"):
                break  # the next record's sha
            change, i = _raw_change(token, tokens, i + 1)
            changes.append(change)
        commits.append(RawCommit(
            sha=sha,
            author=author,
            committed_at=datetime.fromtimestamp(int(ctime) if ctime.isdigit() else 0, tz=UTC),
            parents=tuple(parents.split()),
            message=message.rstrip("\n"),
            trailers=parse_trailers(message),
            changes=tuple(changes),
        ))
    return commits


def _raw_change(token: str, tokens: list[str], i: int) -> tuple[FileChange, int]:
    fields = token[1:].split()
    if len(fields) < 5 or i >= len(tokens):
        raise GitHistoryError(f"unexpected git log output near {token[:40]!r}")
    old_blob, new_blob, status = fields[2], fields[3], fields[4][0]
    if status in "RC":
        old_path, new_path = tokens[i], tokens[i + 1] if i + 1 < len(tokens) else ""
        i += 2
    else:
        old_path = new_path = tokens[i]
        i += 1
    return FileChange(
        status="A" if status == "C" else status,
        old_path=None if status in "AC" else old_path,
        new_path=None if status == "D" else new_path,
        old_blob=None if old_blob == _ZERO else old_blob,
        new_blob=None if new_blob == _ZERO else new_blob,
    ), i


def _reason(exc: GitCommandError) -> str:
    stderr = exc.stderr if isinstance(exc.stderr, str) else str(exc)
    return " ".join(stderr.replace("stderr:", "").split())[:300] or str(exc)

