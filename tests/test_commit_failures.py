"""Issue #22: a full disk or a failed commit is a one-line error and a non-zero exit, never a
traceback or a silent exit 0; what was written is committed the next time the store opens.

Real failures, not mocks: the store's `.git` mounted read-only, or the store on a full tmpfs, in
a private mount namespace (`unshare -m`; skipped where the machine cannot do that).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp_clients import ROOT, cli_env

CLI = [sys.executable, "-m", "desktop_mem.cli"]


def _in_namespace(setup: str, *argv: str) -> subprocess.CompletedProcess[str]:
    command = " ".join(shlex.quote(a) for a in argv)
    return subprocess.run(["unshare", "-m", "sh", "-c", f"{setup} && {command}"], capture_output=True,
                          text=True, env=cli_env(), cwd=ROOT, timeout=300)


@pytest.fixture
def namespaces(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.mkdir()
    if shutil.which("unshare") is None or _in_namespace(f"mount --bind {probe} {probe}", "true").returncode:
        pytest.skip("no private mount namespaces here (needs unshare -m)")


def test_an_add_whose_commit_fails_says_so_and_is_committed_later(
    tmp_path: Path, namespaces: None
) -> None:
    store = tmp_path / "store"
    subprocess.run([*CLI, "--store", str(store), "add", "The user likes tea"], check=True,
                   capture_output=True, env=cli_env(), cwd=ROOT)
    git = shlex.quote(str(store / ".git"))
    added = _in_namespace(f"mount --bind {git} {git} && mount -o remount,bind,ro {git}",
                          *CLI, "--store", str(store), "add", "The user likes coffee")
    assert added.returncode == 1, added.stdout
    [line] = added.stderr.strip().splitlines()
    assert "git could not commit" in line and "Traceback" not in added.stderr
    # the file is on disk, and the next start commits it
    assert any("coffee" in p.read_text(encoding="utf-8") for p in (store / "entries").rglob("*.md"))
    later = subprocess.run([*CLI, "--store", str(store), "add", "The user likes cake"],
                           capture_output=True, text=True, env=cli_env(), cwd=ROOT)
    assert later.returncode == 0, later.stderr
    status = subprocess.run(["git", "-C", str(store), "status", "--porcelain"], capture_output=True,
                            text=True)
    assert status.stdout.strip() == ""
    log = subprocess.run(["git", "-C", str(store), "log", "-p"], capture_output=True, text=True).stdout
    assert "coffee" in log


def test_an_add_on_a_full_disk_is_one_line_and_a_non_zero_exit(tmp_path: Path, namespaces: None) -> None:
    store = tmp_path / "store"
    store.mkdir()
    s = shlex.quote(str(store))
    first = " ".join(shlex.quote(a) for a in [*CLI, "--store", str(store), "add", "The user likes tea"])
    fill = (f"mount -t tmpfs -o size=2m tmpfs {s} && {first} >/dev/null"
            f" && (dd if=/dev/zero of={s}/fill bs=64k 2>/dev/null; true)")
    added = _in_namespace(fill, *CLI, "--store", str(store), "add", "The user likes coffee " * 50)
    assert added.returncode == 1, (added.stdout, added.stderr)
    [line] = added.stderr.strip().splitlines()
    assert "Traceback" not in added.stderr
    assert "disk holding the store is full" in line or "could not commit" in line, line
