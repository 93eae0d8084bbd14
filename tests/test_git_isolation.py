"""The app's git is the app's own (issue #34): the user's global git config never changes what is
committed, and a store that is one of the user's own repositories is refused, untouched.

The hostile config is the user's real one (HOME): hooks that fail and leave a marker, autocrlf with
safecrlf, signing with a program that fails, a pager, colour always, no diff prefixes, an external
diff, ignore and attribute files that hide Markdown and ask for CRLF, a template folder with hooks,
and useConfigOnly without a name. The test's own git calls run with a clean config.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.history import git_env
from desktop_mem.engine.models import EngineError

HOOKS = ("pre-commit", "post-commit", "commit-msg", "prepare-commit-msg", "reference-transaction",
         "post-index-change", "pre-push", "post-checkout", "post-merge", "pre-auto-gc")


def _clean_git(*args: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def hostile_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    hooks, template = home / "hooks", home / "template" / "hooks"
    for folder in (hooks, template):
        folder.mkdir(parents=True)
        for name in HOOKS:
            hook = folder / name
            hook.write_text(f"#!/bin/sh\necho \"$0\" >> {home / 'MARKER'}\nexit 1\n")
            hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    (home / "excludes").write_text("*.md\n*.json\n")
    (home / "attributes").write_text("* text eol=crlf\n")
    (home / ".gitconfig").write_text(f"""\
[core]
\thooksPath = {hooks}
\tautocrlf = true
\tsafecrlf = true
\tpager = false
\teditor = false
\tquotePath = false
\texcludesFile = {home / 'excludes'}
\tattributesFile = {home / 'attributes'}
[commit]
\tgpgSign = true
[gpg]
\tprogram = false
[color]
\tui = always
[diff]
\tnoprefix = true
\texternal = false
[log]
\tshowSignature = true
[init]
\ttemplateDir = {home / 'template'}
[user]
\tuseConfigOnly = true
""")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    git_env.user_identity.cache_clear()
    git_env._credential_helpers.cache_clear()
    yield home
    git_env.user_identity.cache_clear()
    git_env._credential_helpers.cache_clear()


def test_a_hostile_global_git_config_changes_nothing_the_app_commits(
        hostile_home: Path, make_config: Callable[..., Any], tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    _clean_git("init", "-q", "--bare", str(remote))
    config = make_config(sync__remote_url=str(remote))
    with MemoryEngine(config) as engine:
        fact = engine.add("The user lives in Utrecht")
        engine.edit(fact.id, text="The user lives in Utrecht, near the old canal")
        other = engine.add("The user keeps bees")
        engine.delete(other.id)
        engine.restore(other.id)
        history = engine.history(limit=10)
        diff = engine.diff(history[0].sha)
        synced = engine.transfer.sync()
        root = engine.root

    assert not (hostile_home / "MARKER").exists(), "no hook of the user's ran"
    log = _clean_git("-C", str(root), "log", "--format=%s").splitlines()
    assert len(log) >= 5 and log[0].startswith("Restore")
    assert [e.type for c in history for e in c.events][:4] == ["RESTORE", "DELETE", "ADD", "EDIT"]
    assert "+++ b/entries/" in diff or "b/entries/" in diff  # parsed with the usual prefixes
    assert synced.pushed and _clean_git("-C", str(remote), "rev-parse", synced.branch).strip() == \
        _clean_git("-C", str(root), "rev-parse", "HEAD").strip()
    for path in _clean_git("-C", str(root), "ls-files").split():
        assert b"\r\n" not in subprocess.run(["git", "-C", str(root), "cat-file", "blob", f"HEAD:{path}"],
                                             capture_output=True, check=True).stdout
    eol = _clean_git("-C", str(root), "ls-files", "--eol")
    assert "i/crlf" not in eol and "w/crlf" not in eol
    assert _clean_git("-C", str(root), "status", "--porcelain").strip() == ""
    assert not (root / ".git" / "hooks" / "pre-commit").exists(), "no template hooks copied in"


def test_a_store_that_is_the_users_own_repository_is_refused_and_left_untouched(
        make_config: Callable[..., Any], tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _clean_git("init", "-q", str(project))
    (project / "README.md").write_text("my project\n")
    (project / ".gitignore").write_text("build/\n")
    _clean_git("-C", str(project), "add", "README.md", ".gitignore")
    _clean_git("-C", str(project), "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-qm", "mine")
    (project / "notes.txt").write_text("work in progress\n")
    _clean_git("-C", str(project), "add", "notes.txt")  # the user's staged work
    before = {p: (project / ".git" / p).read_bytes() for p in ("config", "index", "HEAD")}

    with pytest.raises(EngineError) as refused:
        MemoryEngine(make_config(project)).close()

    assert "git repository of your own" in str(refused.value) and "tracks" in str(refused.value)
    assert (project / ".gitignore").read_text() == "build/\n"
    assert {p: (project / ".git" / p).read_bytes() for p in before} == before
    assert _clean_git("-C", str(project), "diff", "--cached", "--name-only").split() == ["notes.txt"]
    assert _clean_git("-C", str(project), "log", "--format=%s").split() == ["mine"]


def test_a_store_inside_a_users_repository_keeps_a_repository_of_its_own(
        make_config: Callable[..., Any], tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    _clean_git("init", "-q", str(project))
    (project / "code.py").write_text("print(1)\n")
    _clean_git("-C", str(project), "add", "code.py")
    index = (project / ".git" / "index").read_bytes()

    with MemoryEngine(make_config(project / "memory")) as engine:
        engine.add("The user prefers tabs")

    assert (project / "memory" / ".git").is_dir()
    assert (project / ".git" / "index").read_bytes() == index
    assert _clean_git("-C", str(project), "diff", "--cached", "--name-only").split() == ["code.py"]


def test_an_older_store_of_the_apps_own_opens_and_is_marked(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config()) as engine:
        engine.add("The user likes jazz")
        root = engine.root
    _clean_git("-C", str(root), "config", "--unset", "desktop-mem.store")  # as a store made before

    with MemoryEngine(make_config()) as engine:
        assert [m.text for m in engine.list_memories(role="memory")] == ["The user likes jazz"]

    assert _clean_git("-C", str(root), "config", "--get", "desktop-mem.store").strip() == "true"
