"""Keep one store on several machines through a git remote (`sync.remote_url`, `sync.branch`).

`sync(source)`: commit local changes, fetch, merge the remote branch, push. A memory changed on
both sides is never lost: our version stays in place and theirs becomes a new memory beside it
(fresh id, `conflict_of: <id>`, `source: import`), so both show in the app and the user picks.
Everything runs under the store's writer lock; afterwards the catalog and index follow the files.

Sync brings memory, nothing else: before anything is merged, the remote tip is replaced by a
commit on top of it (`_memory_only`) whose tree holds the remote's memory files (plain files
under entries/: Markdown memories and conversation.yaml) and, for every other path, this store's
own version. So a remote that commits the lock note, the indexes, the kept-secrets list, a
.gitignore that ignores entries/, links or submodules changes nothing here: git's merge (which
overwrites ignored files without asking) only ever writes memory files.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from git.exc import GitCommandError

from desktop_mem.engine.chat import review
from desktop_mem.engine.history.git_env import with_credential_helpers
from desktop_mem.engine.history.git_history import format_message
from desktop_mem.engine.models import EngineError, Memory, Operation, Role, ValidationError
from desktop_mem.engine.store import layout
from desktop_mem.engine.store.front_matter import FrontMatterError
from desktop_mem.engine.store.markdown_store import atomic_write
from desktop_mem.engine.store.transaction import Transaction
from desktop_mem.engine.transfer.ports import TransferSource

if TYPE_CHECKING:
    import git

log = logging.getLogger(__name__)
REMOTE = "desktop-mem-sync"  # our own remote name, so a user's `origin` is left alone
GIT_TIMEOUT_S = 120
ATTEMPTS = 3  # a push rejected because another machine pushed meanwhile is retried


class SyncError(EngineError):
    """Sync could not finish; the message says what and what to do. Local memory is intact."""


@dataclass(frozen=True)
class SyncConflict:
    """A file changed on both sides: ours kept at `path`, theirs saved as `their_copy`."""

    memory_id: str | None
    path: str
    their_copy_id: str | None
    their_copy_path: str | None
    note: str


@dataclass(frozen=True)
class SyncResult:
    """What came in, what went out, and the conflicts that were kept side by side."""

    remote: str
    branch: str
    incoming_commits: int
    incoming_paths: tuple[str, ...]
    outgoing_commits: int
    conflicts: tuple[SyncConflict, ...]
    pushed: bool


def sync(source: TransferSource) -> SyncResult:
    """Commit, fetch, merge (conflicts kept side by side), push; raises SyncError on failure."""
    source.writer.require_writer()
    url = str(source.config["sync.remote_url"]).strip()
    branch = str(source.config["sync.branch"]).strip() or "main"
    if not url:
        raise SyncError("no sync remote is set: set sync.remote_url (a git URL or a folder) in the "
                        "settings or with --set sync.remote_url=...")
    if not source.config["store.git_versioning"]:
        raise SyncError("sync needs git versioning: set store.git_versioning to true")
    check_remote(url, branch)
    repo = source.git.repo
    with source.writer.lock, _quiet_git(repo):
        _abort_stale_merge(repo)
        source.commit_all("Record changes before sync", Operation.SYNC)
        _set_remote(repo, url)
        incoming, outgoing, pushed = 0, 0, True
        paths: list[str] = []
        conflicts: list[SyncConflict] = []
        for attempt in range(1, ATTEMPTS + 1):
            n, changed, found = _pull(source, repo, url, branch)
            incoming, conflicts = incoming + n, conflicts + found
            paths += [p for p in changed if p not in paths]
            if source.git.head() is None:
                pushed = False  # an empty store and an empty remote: nothing to send yet
                break
            outgoing = _count(repo, f"refs/remotes/{REMOTE}/{branch}..HEAD")
            if _push(repo, url, branch, last=attempt == ATTEMPTS):
                break
        _follow_files(source, paths)
    return SyncResult(url, branch, incoming, tuple(paths), outgoing, tuple(conflicts), pushed)


# Transports that run a command or read a file descriptor ("ext::sh -c ...", "fd::3" waits
# forever); `<helper>::<address>` in general, so no remote helper is started by a setting.
_HELPER_TRANSPORT = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_BRANCH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]{0,99}")


def check_remote(url: str, branch: str) -> None:
    """Refuse a remote URL or branch git would read as an option or a command (one-line error)."""
    if url.startswith("-") or any(ord(c) < 32 or ord(c) == 127 for c in url):
        raise SyncError(f"sync.remote_url {url[:60]!r} is not a git URL or folder (it starts with '-' "
                        "or holds control characters); set sync.remote_url to e.g. a path or https URL")
    if _HELPER_TRANSPORT.match(url):
        raise SyncError(f"sync.remote_url {url[:60]!r} uses a '<transport>::' remote helper, which "
                        "is refused; set sync.remote_url to a path, ssh or https URL")
    if not _BRANCH.fullmatch(branch) or ".." in branch or branch.endswith((".lock", "/", ".")):
        raise SyncError(f"sync.branch {branch[:60]!r} is not a usable branch name")


@contextlib.contextmanager
def _quiet_git(repo: git.Repo) -> Iterator[None]:
    # Never wait on a password prompt: sync runs from the app and from scripts. The repository's
    # git runs isolated from the user's config (history/git_env.py), which already keeps the
    # transports that run a command or read a descriptor off; the user's credential helpers are
    # carried over so an https remote still authenticates.
    ssh = os.environ.get("GIT_SSH_COMMAND") or "ssh -o BatchMode=yes"
    env = {"GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": ssh,
           **with_credential_helpers(dict(repo.git.environment()))}
    with repo.git.custom_environment(**env):
        yield


def _git(repo: git.Repo, *args: str) -> str:
    out: str = repo.git.execute(["git", *args], kill_after_timeout=GIT_TIMEOUT_S)
    return out


def _abort_stale_merge(repo: git.Repo) -> None:
    """A sync killed mid-merge leaves MERGE_HEAD; the committed history is intact, so start over."""
    if (Path(repo.git_dir) / "MERGE_HEAD").exists():
        log.warning("aborting a merge left by an interrupted sync")
        _git(repo, "merge", "--abort")


def _set_remote(repo: git.Repo, url: str) -> None:
    names = [r.name for r in repo.remotes]
    if REMOTE in names:
        if repo.remote(REMOTE).url != url:
            _git(repo, "remote", "set-url", REMOTE, url)
    else:
        _git(repo, "remote", "add", REMOTE, url)


def _count(repo: git.Repo, spec: str, *, work_only: bool = False) -> int:
    """Commits in base..tip (all of tip when base is missing). work_only leaves out what syncs
    make themselves (merges and "take only memory" commits): the other machines' work."""
    base, _, tip = spec.partition("..")
    if not base or not _exists(repo, base):
        spec = tip
    only = ["--no-merges", "--invert-grep", f"--grep=^{_FILTER_SUBJECT}"] if work_only else []
    return int(_git(repo, "rev-list", "--count", *only, spec) or 0)


def _exists(repo: git.Repo, ref: str) -> bool:
    try:
        _git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        return True
    except GitCommandError:
        return False


def _reason(exc: GitCommandError) -> str:
    stderr = exc.stderr if isinstance(exc.stderr, str) else str(exc)
    return " ".join(stderr.replace("stderr:", "").split())[:300] or str(exc)


def _pull(
    source: TransferSource, repo: git.Repo, url: str, branch: str
) -> tuple[int, list[str], list[SyncConflict]]:
    """Fetch and merge the remote branch; returns (commits in, paths changed, conflicts)."""
    tracking = f"refs/remotes/{REMOTE}/{branch}"
    try:
        listed = _git(repo, "ls-remote", "--heads", REMOTE, f"refs/heads/{branch}")
        if not listed.strip():
            return 0, [], []  # an empty remote: the push below creates the branch
        _git(repo, "fetch", "--no-tags", REMOTE, f"+refs/heads/{branch}:{tracking}")
    except GitCommandError as exc:
        raise SyncError(f"cannot reach the sync remote {url}: {_reason(exc)}. Check sync.remote_url "
                        "and your network; nothing was changed.") from None
    before = source.git.head()
    incoming = _count(repo, f"{before or ''}..{tracking}", work_only=True)
    if incoming == 0:
        return 0, [], []
    theirs = _memory_only(repo, tracking, before, branch)
    if before is None:  # a new store: take the remote history; files written here stay untracked
        _git(repo, "reset", "--quiet", "--mixed", theirs)
        _git(repo, "checkout-index", "--all", "--force")
        source.commit_all("Record changes made before the first sync", Operation.SYNC)
        return incoming, [p for p in _git(repo, "ls-files", "-z").split("\0") if p], []
    conflicts: list[SyncConflict] = []
    try:
        _git(repo, "merge", "--no-edit", "--no-ff", "--allow-unrelated-histories", "--no-commit", theirs)
    except GitCommandError:
        if not _unmerged(repo):
            _abort_stale_merge(repo)
            raise SyncError("git could not merge the remote branch; nothing was changed. "
                            "Run `desktop-mem doctor` and retry.") from None
    copies: list[tuple[str, bytes]] = []
    for path, stages in _unmerged(repo).items():
        conflicts.append(_keep_both(repo, source, path, stages, copies))
    message = format_message(f"Sync: merge {incoming} commits from {branch}",
                             {"Operation": str(Operation.SYNC), "Conflicts": str(len(conflicts))})
    _git(repo, "commit", "--no-verify", "--quiet", "--allow-empty", "-m", message)
    if copies:
        conflicts = _write_copies(source, conflicts, copies)
    changed = _git(repo, "diff", "--name-only", "-z", f"{before}..HEAD").split("\0")
    return incoming, [p for p in changed if p], conflicts


_PLAIN_FILE = ("100644", "100755")
_PROPOSAL = re.compile(r"p-[0-9a-f]{8,32}\.json")  # review/<id>.json: a proposal for the user


def syncable(path: str, mode: str) -> bool:
    """True for what a remote may bring: a plain file that is a memory (a visible .md under
    entries/), a conversation's conversation.yaml or a review proposal. Never a link, submodule,
    folder or any other path (the lock note, indexes, kept-secrets list, .gitignore, ...)."""
    if mode not in _PLAIN_FILE:
        return False
    parts = path.split("/")
    if any(not p or p.startswith(".") for p in parts):
        return False
    return layout.is_memory_file(path) or (
        len(parts) == 3 and parts[0] == layout.ENTRIES and parts[2] == layout.CONVERSATION_FILE) or (
        len(parts) == 2 and parts[0] == review.FOLDER and _PROPOSAL.fullmatch(parts[1]) is not None)


def _tree(repo: git.Repo, rev: str | None) -> dict[str, tuple[str, str]]:
    """Every path of a commit's tree with its (mode, object id); {} for None."""
    if rev is None:
        return {}
    found: dict[str, tuple[str, str]] = {}
    for line in _git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).split("\0"):
        if "\t" in line:
            info, path = line.split("\t", 1)
            mode, _kind, sha = info.split()
            found[path] = (mode, sha)
    return found


_FILTER_SUBJECT = "Sync: take only memory files from"


def _memory_only(repo: git.Repo, tracking: str, ours: str | None, branch: str) -> str:
    """The commit to merge instead of the remote tip: its memory files, our version of the rest.

    Returns the tip itself when it already holds nothing else; otherwise a new commit whose parent
    is the tip (so the push after the merge still fast-forwards the remote)."""
    theirs = _tree(repo, tracking)
    mine = _tree(repo, ours)
    keep = {p: e for p, e in theirs.items() if syncable(p, e[0])}
    keep.update({p: e for p, e in mine.items() if not syncable(p, e[0])})
    if keep == theirs:
        return tracking
    dropped = sorted(p for p in theirs if p not in keep or keep[p] != theirs[p])
    log.warning("sync: the remote holds %d paths that are not memory; this store keeps its own: %s",
                len(dropped), ", ".join(dropped[:10]))
    fd, index = tempfile.mkstemp(prefix="desktop-mem-sync-index-", dir=repo.git_dir)
    os.close(fd)
    os.unlink(index)  # git wants to create the index file itself
    listing = "".join(f"{mode} {sha}\t{path}\0" for path, (mode, sha) in sorted(keep.items()))
    try:
        with repo.git.custom_environment(GIT_INDEX_FILE=index), tempfile.TemporaryFile() as stdin:
            stdin.write(listing.encode("utf-8", "surrogateescape"))
            stdin.seek(0)
            repo.git.execute(["git", "update-index", "-z", "--add", "--index-info"], istream=stdin,
                             kill_after_timeout=GIT_TIMEOUT_S)
            tree = _git(repo, "write-tree")
    except GitCommandError as exc:
        raise SyncError(f"the sync remote's branch {branch} cannot be read as a store "
                        f"({_reason(exc)}); nothing was changed") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(index)
    message = format_message(f"{_FILTER_SUBJECT} {branch}",
                             {"Operation": str(Operation.SYNC), "Dropped": str(len(dropped))},
                             "Paths the remote holds that are not memory (kept as this store has "
                             "them):\n" + "\n".join(dropped[:50]))
    return _git(repo, "commit-tree", tree.strip(), "-p", tracking, "-m", message).strip()


def _unmerged(repo: git.Repo) -> dict[str, dict[int, str]]:
    """Conflicted paths with their stages: 1 base, 2 ours, 3 theirs (blob ids)."""
    result: dict[str, dict[int, str]] = {}
    for line in _git(repo, "ls-files", "--unmerged", "-z").split("\0"):
        if "\t" in line:
            info, path = line.split("\t", 1)
            _mode, blob, stage = info.split()
            result.setdefault(path, {})[int(stage)] = blob
    return result


def _keep_both(
    repo: git.Repo, source: TransferSource, path: str, stages: dict[int, str], copies: list[tuple[str, bytes]]
) -> SyncConflict:
    """Resolve one path so nothing is lost: ours in place, theirs queued as a separate copy."""
    ours, theirs = stages.get(2), stages.get(3)
    keep = ours or theirs
    assert keep is not None  # an unmerged path has stage 2 or 3
    data = source.git.blob(keep) or b""
    atomic_write(source.root / path, data)
    _git(repo, "add", "--", path)
    memory_id = _id_of(source, path, data)
    if ours and theirs and path.startswith("entries/") and path.endswith(".md"):
        their_data = source.git.blob(theirs) or b""
        copies.append((path, their_data))
        return SyncConflict(memory_id, path, None, None, "changed on both machines: both versions kept")
    side = "ours" if ours else "theirs"
    note = {"ours": "deleted on the other machine, changed here: kept",
            "theirs": "deleted here, changed on the other machine: kept"}[side]
    if not path.endswith(".md"):
        note = "changed on both machines: this machine's version kept (theirs is in the history)"
        if not ours:
            note = "changed on both machines: the other machine's version kept"
    return SyncConflict(memory_id, path, None, None, note)


def _id_of(source: TransferSource, path: str, data: bytes) -> str | None:
    try:
        return source.store.memory_from_bytes(path, data).id
    except (FrontMatterError, ValidationError):
        return None


def _write_copies(
    source: TransferSource, conflicts: list[SyncConflict], copies: list[tuple[str, bytes]]
) -> list[SyncConflict]:
    """Save the other machine's versions as new memories (conflict_of) in one more commit."""
    saved: dict[str, Memory | str] = {}
    subject = f"Sync conflict: kept both versions of {len(copies)} memories"
    with source.writer.transaction(Operation.ADD, subject, publish=False) as tx:
        result = _save_copies(source, tx, conflicts, copies, saved)
        tx.trailers["Sync-Conflicts"] = ", ".join(c.memory_id or c.path for c in result if c.their_copy_path)
        tx.publish()
    return result


def _save_copies(
    source: TransferSource, tx: Transaction, conflicts: list[SyncConflict], copies: list[tuple[str, bytes]],
    saved: dict[str, Memory | str],
) -> list[SyncConflict]:
    store = source.store
    for path, data in copies:
        try:
            theirs = store.memory_from_bytes(path, data)
        except (FrontMatterError, ValidationError):
            # Not a readable memory: keep its bytes beside ours; the app lists it as a problem.
            rel = f"{path[:-3]}.conflict.md"
            atomic_write(store.abspath(rel), data)
            tx.touch([rel])
            saved[path] = rel
            continue
        if theirs.role == Role.SUMMARY:
            saved[path] = "the other machine's summary is in the history; the summary here was kept"
            continue
        extra = {"conflict_of": theirs.id, **{k: v for k, v in theirs.extra.items() if k != "conflict_of"}}
        copy = tx.add(theirs.text, conversation_id=theirs.conversation_id, role=theirs.role,
                      kind=theirs.kind if theirs.role == Role.MEMORY else None, source="import",
                      created_at=theirs.created_at, expires_at=theirs.expires_at, extra=extra)
        if theirs.deleted:
            copy = tx.soft_delete(copy)
        saved[path] = copy
    result: list[SyncConflict] = []
    for c in conflicts:
        item = saved.get(c.path)
        if isinstance(item, Memory):
            c = SyncConflict(c.memory_id, c.path, item.id, item.path, c.note)
        elif isinstance(item, str):
            c = SyncConflict(c.memory_id, c.path, None, item if item.endswith(".md") else None,
                             c.note if item.endswith(".md") else item)
        result.append(c)
    return result


def _push(repo: git.Repo, url: str, branch: str, *, last: bool) -> bool:
    """Push HEAD to the remote branch; False when rejected as out of date (pull again)."""
    try:
        _git(repo, "push", "--porcelain", REMOTE, f"HEAD:refs/heads/{branch}")
        _git(repo, "fetch", "--no-tags", REMOTE, f"+refs/heads/{branch}:refs/remotes/{REMOTE}/{branch}")
        return True
    except GitCommandError as exc:
        reason = _reason(exc)
        status = exc.stdout if isinstance(exc.stdout, str) else ""
        # --porcelain: "[rejected] (fetch first|non-fast-forward)" means another machine pushed first;
        # "[remote rejected]" means the remote refused (hook, permissions): retrying will not help.
        rejected = "[rejected]" in status
        if rejected and not last:
            return False
        if rejected:
            raise SyncError(f"the sync remote {url} keeps changing while syncing ({reason}); "
                            "your changes are committed locally, run sync again") from None
        raise SyncError(f"could not push to the sync remote {url}: {reason}. Your changes are "
                        "committed locally; check the remote and run sync again.") from None


def _follow_files(source: TransferSource, paths: list[str]) -> None:
    """Bring catalog and index in step with what the merge changed on disk."""
    if paths:
        source.apply_external_changes(paths)
    source.refresh()
