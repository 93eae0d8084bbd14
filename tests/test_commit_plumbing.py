"""The app's commit of an edit costs the same at 100 or 100,000 memories (issue #25).

`git commit` re-checks (lstat) every tracked file before it commits: 0.5 s of a hand edit at
100,000 memories. The writer commits what it staged with write-tree + commit-tree + update-ref
instead; the commit must be the same one a user would get from `git commit`.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from desktop_mem.engine.history.git_history import GitHistoryError, format_message, parse_trailers


def git(root: Any, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def test_an_edit_is_committed_without_git_commit_and_reads_as_one(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = engine.add("User lives in Berlin.")
    before = engine._parts.git.head()

    called: list[str] = []
    cls = type(engine._parts.git.repo.git)
    call = cls._call_process

    def recording(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        called.append(method)
        return call(self, method, *args, **kwargs)

    monkeypatch.setattr(cls, "_call_process", recording)
    engine.edit(first.id, text="User lives in Hamburg.")

    assert "commit_tree" in called and "commit" not in called  # git commit lstat's every file
    head = engine._parts.git.head()
    assert head != before
    assert git(engine.root, "rev-parse", f"{head}^").strip() == before
    message = git(engine.root, "log", "-1", "--format=%B", head)
    info = engine._parts.git.commit_info(head)
    assert message.rstrip("\n") == info.message
    assert parse_trailers(message)["Operation"] == "edit"
    assert info.message + "\n" == format_message(info.subject, parse_trailers(message))
    assert [c.new_path for c in info.changes] == [first.path]
    assert git(engine.root, "status", "--porcelain", "--", "entries") == ""  # index and HEAD agree
    assert "commit: Edit fact" in git(engine.root, "reflog", "-1", "--format=%gs")


def test_a_commit_made_meanwhile_is_never_overwritten(engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fact = engine.add("User lives in Berlin.")
    history = engine._parts.git
    stale = history.head()
    (engine.root / "notes.txt").write_text("by hand\n")
    git(engine.root, "add", "notes.txt")
    git(engine.root, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-qm", "by hand")
    by_hand = history.head()
    path = engine.root / fact.path
    path.write_text(path.read_text().replace("Berlin", "Bremen"))
    monkeypatch.setattr(history, "head", lambda: stale)  # HEAD as read before the hand commit landed

    with pytest.raises(GitHistoryError):
        history.commit("Edit fact", {"Operation": "edit"}, paths=[fact.path])
    assert git(engine.root, "rev-parse", "HEAD").strip() == by_hand
