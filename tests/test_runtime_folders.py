"""Folders of killed processes in the temp dir (a read-only store's scratch index, the private
endpoint's folder) are removed by the next process that makes one; nothing else ever is.

Real processes, killed with SIGKILL; every folder lives in a per-test temp base."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop_mem.api.loopback import PRIVATE_PREFIX
from desktop_mem.engine.index.index_factory import SCRATCH_PREFIX
from desktop_mem.engine.runtime_folders import (
    OWNER_NAME,
    UNMARKED_MAX_AGE_S,
    make_runtime_folder,
    sweep_stale_folders,
)

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")

SCRATCH = """
import sys, time
from pathlib import Path
from desktop_mem.engine.index.index_factory import scratch_index
print(scratch_index(Path(sys.argv[1]))[0], flush=True)
if sys.argv[2] == "wait":
    time.sleep(120)
"""

PRIVATE = """
import sys, time
from desktop_mem.api.loopback import UNIX_PREFIX, private_socket, remove_private_socket
sock, endpoint = private_socket()
print(endpoint[len(UNIX_PREFIX):], flush=True)
if sys.argv[1] == "wait":
    time.sleep(120)
sock.close()
remove_private_socket(endpoint)
"""

MAKE = """
import sys, time
from desktop_mem.engine.runtime_folders import make_runtime_folder
for _ in range(int(sys.argv[2])):
    print(make_runtime_folder(sys.argv[1]), flush=True)
if sys.argv[3] == "wait":
    time.sleep(120)
"""


def _env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    env["TMPDIR"] = str(base)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _run(base: Path, script: str, *args: str, env: dict[str, str] | None = None) -> Path:
    """Run `script` to its end; the folder it printed."""
    done = subprocess.run([sys.executable, "-c", script, *args], env=env or _env(base), cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=True)
    return Path(done.stdout.strip())


def _killed(base: Path, script: str, *args: str, env: dict[str, str] | None = None) -> Path:
    """Start `script`, wait for the folder it prints, SIGKILL it; the folder."""
    child = subprocess.Popen([sys.executable, "-c", script, *args, "wait"], env=env or _env(base),
                             cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        folder = Path(child.stdout.readline().strip())
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    return folder


@pytest.fixture
def base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The temp base of this test, for this process and the children it starts."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(folder))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield folder


def _stale(base: Path, count: int = 1, prefix: str = SCRATCH_PREFIX) -> list[Path]:
    """`count` folders marked by one process that has exited (without removing them); made by
    one process since each one made sweeps away the dead ones before it."""
    done = subprocess.run([sys.executable, "-c", MAKE, prefix, str(count), "exit"], env=_env(base),
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=True)
    return [Path(line) for line in done.stdout.split()]


def _ours(base: Path) -> list[Path]:
    """The folders of ours in `base` (the children's libraries may leave other files there)."""
    return sorted(p for p in base.iterdir() if p.name.startswith("desktop-mem-"))


def _owner(folder: Path) -> dict[str, object]:
    note: dict[str, object] = json.loads((folder / OWNER_NAME).read_text())
    return note


def test_a_killed_readers_scratch_index_is_removed_by_the_next_reader(base: Path, tmp_path: Path) -> None:
    """A search on a read-only store copies the index to the temp dir (hundreds of MB at 100k
    memories); killed, it leaves the copy, and the next such search removes it."""
    store = tmp_path / "store"
    store.mkdir()
    (store / "keyword_index.sqlite3").write_bytes(b"x" * 4096)

    killed = _killed(base, SCRATCH, str(store))
    assert (killed / "keyword_index.sqlite3").is_file()  # SIGKILL: no atexit ran

    after = _run(base, SCRATCH, str(store), "exit")
    assert after != killed
    assert _ours(base) == []  # the killed reader's copy went; the next one's at its exit


def test_a_killed_apps_private_folder_is_removed_by_the_next_endpoint(base: Path) -> None:
    """The app's endpoint folder (its socket, in XDG_RUNTIME_DIR) left by a killed app goes when
    the next endpoint is made; a dead reader's scratch copy there is another kind, left for it."""
    env = {**_env(base), "XDG_RUNTIME_DIR": str(base)}
    [scratch] = _stale(base)
    killed = _killed(base, PRIVATE, env=env)
    assert killed.parent.parent == base and killed.exists()  # the socket is still there

    _run(base, PRIVATE, "exit", env=env)
    assert not killed.parent.exists()
    assert _ours(base) == [scratch]  # not the endpoint's kind: left to the next reader


def test_a_live_processs_folder_is_never_removed(base: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", MAKE, SCRATCH_PREFIX, "1", "wait"], env=_env(base),
                             cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        theirs = Path(child.stdout.readline().strip())
        ours = make_runtime_folder(SCRATCH_PREFIX)

        assert sweep_stale_folders(SCRATCH_PREFIX) == 0
        make_runtime_folder(SCRATCH_PREFIX)
        assert theirs.is_dir() and (theirs / OWNER_NAME).is_file()
        assert ours.is_dir() and (ours / OWNER_NAME).is_file()
    finally:
        child.kill()
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()


def test_a_reused_pid_does_not_keep_a_dead_processs_folder(base: Path) -> None:
    """A note naming a running pid whose start time differs was written by an earlier process
    with that pid: the folder goes. The same note with the right start time keeps it."""
    reused, live = make_runtime_folder(SCRATCH_PREFIX), make_runtime_folder(SCRATCH_PREFIX)
    note = _owner(reused)
    assert note["pid"] == os.getpid() and isinstance(note["start"], int)
    (reused / OWNER_NAME).write_text(json.dumps({**note, "start": note["start"] - 1}))

    assert sweep_stale_folders(SCRATCH_PREFIX) == 1
    assert not reused.exists() and live.is_dir()


def test_only_folders_of_ours_whose_process_is_gone_are_removed(base: Path, tmp_path: Path) -> None:
    stale, garbled, wrong_shape, elsewhere, contained, target = _stale(base, 6)
    (garbled / OWNER_NAME).write_text("pid 12 started yesterday")
    (wrong_shape / OWNER_NAME).write_text(json.dumps({**_owner(wrong_shape), "start": "later"}))
    # a machine sharing the temp dir, another pid namespace (a container): their pids mean
    # nothing here
    (elsewhere / OWNER_NAME).write_text(json.dumps({**_owner(elsewhere), "host": "another-machine"}))
    (contained / OWNER_NAME).write_text(json.dumps({**_owner(contained), "pid_ns": "pid:[1]"}))
    moved = tmp_path / "target"
    os.rename(target, moved)  # a dead process's folder, but elsewhere, reached through a link
    link = base / f"{SCRATCH_PREFIX}link1234"
    link.symlink_to(moved, target_is_directory=True)
    a_file = base / f"{SCRATCH_PREFIX}file1234"
    a_file.write_text("not a folder")
    nested = base / "sub"
    nested.mkdir()
    deeper = nested / stale.name  # not directly in the temp base
    shutil.copytree(stale, deeper)
    [other_kind] = _stale(base, prefix=PRIVATE_PREFIX)

    assert sweep_stale_folders(SCRATCH_PREFIX) == 1
    assert not stale.exists()
    kept = [garbled, wrong_shape, elsewhere, contained, link, a_file, other_kind]
    assert _ours(base) == sorted(kept) and (nested / stale.name / OWNER_NAME).is_file()
    assert (moved / OWNER_NAME).is_file()


def test_a_dead_processs_folder_of_another_user_is_left_alone(base: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a folder of another uid needs root")
    [theirs] = _stale(base)
    os.chown(theirs, 65534, 65534)
    assert sweep_stale_folders(SCRATCH_PREFIX) == 0
    assert (theirs / OWNER_NAME).is_file()


def test_unmarked_folders_go_only_after_a_week_unchanged_and_never_while_a_socket_answers(
        base: Path) -> None:
    """Folders made before owner notes cannot be told alive or dead: only a week without a
    change (and no socket in it that still accepts a connection) lets one go."""
    week_ago = time.time() - UNMARKED_MAX_AGE_S - 3600

    def unmarked(name: str, *, touched: float) -> Path:
        folder = base / f"{SCRATCH_PREFIX}{name}"
        folder.mkdir(mode=0o700)
        (folder / "keyword_index.sqlite3").write_text("index")
        os.utime(folder / "keyword_index.sqlite3", (touched, touched))
        os.utime(folder, (week_ago, week_ago))
        return folder

    old = unmarked("old12345", touched=week_ago)
    synced_lately = unmarked("synced12", touched=time.time())
    young = base / f"{SCRATCH_PREFIX}young123"
    young.mkdir(mode=0o700)
    serving = unmarked("serving1", touched=week_ago)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(serving / "mcp.sock"))
        listener.listen(1)
        os.utime(serving / "mcp.sock", (week_ago, week_ago), follow_symlinks=False)
        os.utime(serving, (week_ago, week_ago))

        assert sweep_stale_folders(SCRATCH_PREFIX) == 1
    assert not old.exists()
    assert synced_lately.is_dir() and young.is_dir() and serving.is_dir()


def test_the_sweep_never_follows_a_link_out_of_a_stale_folder(base: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "memory.md").write_text("keep me")
    [stale] = _stale(base)
    (stale / "file_link").symlink_to(outside / "memory.md")
    (stale / "dir_link").symlink_to(outside, target_is_directory=True)
    (stale / "chroma").mkdir()
    (stale / "chroma" / "dir_link").symlink_to(outside, target_is_directory=True)

    assert sweep_stale_folders(SCRATCH_PREFIX) == 1
    assert not stale.exists()
    assert (outside / "memory.md").read_text() == "keep me"


def test_a_sweep_that_fails_never_stops_the_new_folder_and_is_tried_again(
        base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    [stale] = _stale(base)
    (stale / "chroma").mkdir()
    (stale / "chroma" / "data.bin").write_bytes(b"x")

    def refuse(path: object, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    with monkeypatch.context() as patch:
        patch.setattr(shutil, "rmtree", refuse)
        made = make_runtime_folder(SCRATCH_PREFIX)
    assert made.is_dir()
    assert (stale / OWNER_NAME).is_file()  # still marked, so the next sweep tries again

    assert sweep_stale_folders(SCRATCH_PREFIX) == 1
    assert not stale.exists() and made.is_dir()
