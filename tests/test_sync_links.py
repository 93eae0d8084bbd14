"""Issue #13 case 1 through sync: a link pushed to the remote by another machine (or a hostile
remote) is never checked out as a link, so nothing reads through it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.transfer.git_sync import sync


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), "-c", "user.name=x", "-c", "user.email=x@x", *args],
                   check=True, capture_output=True)


def test_a_link_pulled_by_sync_is_never_checked_out_or_followed(
    make_config: Callable[..., Any], tmp_path: Path
) -> None:
    secret = tmp_path / "outside.md"
    secret.write_text("---\nrole: memory\n---\n\nOUTSIDE-SECRET-TEXT\n", encoding="utf-8")
    remote = tmp_path / "remote.git"
    git.Repo.init(remote, bare=True).close()
    hostile = tmp_path / "hostile"
    _git(tmp_path, "init", "-q", "-b", "main", str(hostile))
    facts = hostile / "entries" / "global" / "facts"
    facts.mkdir(parents=True)
    os.symlink(secret, facts / "20250101T000000Z__link.md")
    os.symlink(tmp_path, hostile / "entries" / "linked")
    _git(hostile, "add", "-A")
    _git(hostile, "commit", "-qm", "links")
    _git(hostile, "push", "-q", str(remote), "main:main")
    with MemoryEngine(make_config(**{"sync.remote_url": str(remote), "sync.branch": "main"})) as eng:
        eng.add("User likes tea")
        sync(eng._parts)
        link = eng.root / "entries" / "global" / "facts" / "20250101T000000Z__link.md"
        # a link is not a memory file: sync does not take it at all (issue #22)
        assert not link.is_symlink() and not link.exists()
        assert not (eng.root / "entries" / "linked").is_symlink()
        texts = [m.text for m in eng.list_memories(include_deleted=True)]
        assert all("OUTSIDE-SECRET-TEXT" not in t for t in texts)
        assert secret.read_text(encoding="utf-8").endswith("OUTSIDE-SECRET-TEXT\n")
