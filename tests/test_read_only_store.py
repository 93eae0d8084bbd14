"""Issue #22: readers never need the lock. A store on a read-only file system (a mounted backup,
a snapshot) can still be read and checked; a write says in one line why it cannot happen.

The store is made read-only for real: a read-only bind mount in a private mount namespace
(`unshare -m`, needs root or user namespaces; skipped where the machine cannot do that).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp_clients import ROOT, cli_env


def _can_mount_read_only(tmp: Path) -> bool:
    if shutil.which("unshare") is None or sys.platform != "linux":
        return False
    probe = tmp / "probe"
    probe.mkdir()
    script = f"mount --bind {probe} {probe} && mount -o remount,bind,ro {probe} && ! touch {probe}/x"
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True)
    return done.returncode == 0


def _read_only(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`desktop-mem --store STORE ARGS` with STORE mounted read-only."""
    s = shlex.quote(str(store))
    argv = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *args]
    cli = " ".join(shlex.quote(a) for a in argv)
    script = f"mount --bind {s} {s} && mount -o remount,bind,ro {s} && {cli}"
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                          env=cli_env(), cwd=ROOT, timeout=300)


def test_a_read_only_store_can_be_listed_and_checked_and_refuses_writes_in_one_line(
    tmp_path: Path,
) -> None:
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no read-only bind mounts here (needs unshare -m)")
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store)]
    subprocess.run([*cmd, "add", "The user likes tea"], check=True, capture_output=True, env=cli_env(),
                   cwd=ROOT)
    (store / ".desktop_mem.lock").unlink(missing_ok=True)  # as a copied backup may be

    doctor = _read_only(store, "doctor")
    assert doctor.returncode == 0 and "Traceback" not in doctor.stderr, doctor.stderr
    assert "lock:       free" in doctor.stdout
    listed = _read_only(store, "list")
    assert listed.returncode == 0 and "The user likes tea" in listed.stdout, listed.stderr
    added = _read_only(store, "add", "The user likes coffee")
    assert added.returncode != 0 and "Traceback" not in added.stderr
    [line] = added.stderr.strip().splitlines()
    assert "cannot be written" in line
