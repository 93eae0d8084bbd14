"""Issue #22: readers never need the lock. A store on a read-only file system (a mounted backup,
a snapshot) can still be read and checked; a write says in one line why it cannot happen.

The store is made read-only for real: a read-only bind mount in a private mount namespace
(`unshare -m`, needs root or user namespaces; skipped where the machine cannot do that).
"""

from __future__ import annotations

import json
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


def _read_only(store: Path, *args: str,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`desktop-mem --store STORE ARGS` with STORE mounted read-only."""
    s = shlex.quote(str(store))
    argv = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *args]
    cli = " ".join(shlex.quote(a) for a in argv)
    script = f"mount --bind {s} {s} && mount -o remount,bind,ro {s} && {cli}"
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                          env=env or cli_env(), cwd=ROOT, timeout=300)


def bees_store(tmp_path: Path) -> Path:
    """A store at tmp_path/store with one memory about bees and no lock, as a copied backup may
    be; skips the test where no read-only mount can be made."""
    if not _can_mount_read_only(tmp_path):
        pytest.skip("no read-only bind mounts here (needs unshare -m)")
    store = tmp_path / "store"
    subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "add",
                    "The user keeps bees in the garden"], check=True, capture_output=True, env=cli_env(),
                   cwd=ROOT)
    (store / ".desktop_mem.lock").unlink(missing_ok=True)
    return store


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


def test_search_works_on_a_read_only_store_indexed_or_never_indexed(tmp_path: Path) -> None:
    """A backup mounted read-only may never have been searched (no index), or hold an index that
    chroma and SQLite cannot open read-only: search still answers (from a scratch copy of the
    index, brought in step with the files), never a traceback, and leaves nothing behind."""
    store = bees_store(tmp_path)
    cmd = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store)]
    assert not (store / "chroma").exists()  # an add alone builds no index: never indexed
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = cli_env(TMPDIR=str(scratch))

    never = _read_only(store, "search", "bees", env=env)
    assert never.returncode == 0 and "Traceback" not in never.stderr, never.stderr
    assert "keeps bees in the garden" in never.stdout
    assert not (store / "chroma").exists()  # nothing written into the store
    assert list(scratch.glob("desktop-mem-*")) == []  # the scratch index went away with the process

    subprocess.run([*cmd, "search", "bees"], check=True, capture_output=True, env=cli_env(), cwd=ROOT)
    subprocess.run([*cmd, "add", "The user's bees make linden honey"], check=True, capture_output=True,
                   env=cli_env(), cwd=ROOT)
    (store / ".desktop_mem.lock").unlink(missing_ok=True)
    assert (store / "chroma").is_dir()
    indexed = _read_only(store, "search", "honey", env=env)
    assert indexed.returncode == 0 and "Traceback" not in indexed.stderr, indexed.stderr
    assert "linden honey" in indexed.stdout  # added after the last index update: found all the same
    assert list(scratch.glob("desktop-mem-*")) == []


MCP_SEARCH = '''
import json, sys
import anyio
from pathlib import Path
from tests.mcp_clients import stdio_session

async def main():
    async with stdio_session(Path(sys.argv[1])) as s:
        found = await s.call_tool("search_memory", {"query": sys.argv[2]})
        added = await s.call_tool("add_memories", {"text": "The user likes coffee"})
    text = lambda r: "".join(getattr(c, "text", "") for c in r.content)
    print(json.dumps({"found": [found.is_error, text(found)], "added": [added.is_error, text(added)]}))

anyio.run(main)
'''


def test_an_mcp_search_works_on_a_read_only_store_and_an_add_says_why_not(tmp_path: Path) -> None:
    """`desktop-mem mcp` runs a search where the writer is; on a read-only store there is none,
    and the search failed with "cannot be written". It is a read: it answers."""
    store = bees_store(tmp_path)
    script = tmp_path / "mcp_search.py"
    script.write_text(MCP_SEARCH)
    scratch = tmp_path / "scratch"  # the children's temp dir: the search's index copy goes there
    scratch.mkdir()
    s = shlex.quote(str(store))
    run = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {s} bees"
    mount = f"mount --bind {s} {s} && mount -o remount,bind,ro {s}"
    done = subprocess.run(["unshare", "-m", "sh", "-c", f"{mount} && {run}"], capture_output=True, text=True,
                          env=cli_env(TMPDIR=str(scratch)), cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["found"][0] is False and "keeps bees in the garden" in answer["found"][1], answer
    assert answer["added"][0] is True and "cannot be written" in answer["added"][1], answer
    assert list(scratch.glob("desktop-mem-*")) == []  # gone when the client ended the session


def test_a_broken_index_is_one_line_saying_what_to_do_never_a_traceback(tmp_path: Path) -> None:
    """The index is derived data; when chroma cannot open it (here: its database file is garbage)
    `search` says so in one line with what to do, and doing it brings search back."""
    store = tmp_path / "store"
    cmd = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store)]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*cmd, *args], capture_output=True, text=True, env=cli_env(), cwd=ROOT,
                              timeout=300)

    assert cli("add", "The user keeps bees in the garden").returncode == 0
    assert cli("search", "bees").returncode == 0
    (store / "chroma" / "chroma.sqlite3").write_bytes(b"not a database" * 100)
    broken = cli("search", "bees")
    assert broken.returncode == 1 and "Traceback" not in broken.stderr, broken.stderr
    [line] = broken.stderr.strip().splitlines()
    assert "cannot open the chroma vector index" in line and "delete it and reindex" in line
    shutil.rmtree(store / "chroma")
    again = cli("search", "bees")
    assert again.returncode == 0 and "keeps bees in the garden" in again.stdout, again.stderr
