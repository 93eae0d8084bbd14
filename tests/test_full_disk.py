"""Issue #34, class 7: a full disk or a read-only store is one clear line at every layer (the
files, git, the sqlite keyword index and chroma) and loses nothing.

Real failures, no mocks: the store on a small tmpfs filled to the last byte, or bind-mounted
read-only, in a private mount namespace (`unshare -m`; skipped where the machine cannot).
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from tests.mcp_clients import ROOT, cli_env
from tests.test_commit_failures import CLI, _in_namespace, namespaces  # noqa: F401 - a fixture

FULL = "the disk holding the store is full: free some space and try again (nothing saved is lost)"


def _cli(store: Path, *args: str) -> str:
    return " ".join(shlex.quote(a) for a in [*CLI, "--store", str(store), *args])


def test_every_command_on_a_full_disk_says_so_in_one_line_and_loses_nothing(
    tmp_path: Path, namespaces: None  # noqa: F811
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    s, o = shlex.quote(str(store)), shlex.quote(str(out))
    steps = [f"mount -t tmpfs -o size=6m tmpfs {s}",
             _cli(store, "add", "The user likes tea") + " >/dev/null",
             _cli(store, "search", "tea") + " >/dev/null",  # builds the keyword index and chroma
             f"cp -a {s} {o}/before",
             f"(dd if=/dev/zero of={s}/fill bs=4k 2>/dev/null; true)"]
    for name, args in (("add", ["add", "The user likes coffee"]), ("search", ["search", "tea"]),
                       ("reindex", ["reindex"]), ("doctor", ["doctor"]), ("list", ["list"])):
        steps.append(f"({_cli(store, *args)} >{o}/{name}.out 2>{o}/{name}.err; echo $? >{o}/{name}.rc)")
    steps += [f"rm {s}/fill", _cli(store, "add", "The user likes cake") + " >/dev/null",
              f"git -C {s} status --porcelain >{o}/status", f"git -C {s} log -p >{o}/log",
              f"cp -a {s}/entries {o}/after"]
    done = _in_namespace(" && ".join(steps), "true")
    assert done.returncode == 0, done.stderr

    def read(name: str) -> str:
        return (out / name).read_text("utf-8")

    for name in ("add", "search", "reindex"):
        assert read(f"{name}.rc").strip() == "1", name
        assert read(f"{name}.err").strip() == f"desktop-mem: {FULL}", (name, read(f"{name}.err"))
    # doctor still reports, says why, and tells nobody to delete an index that is fine
    assert read("doctor.rc").strip() == "1"
    assert "git:        cannot commit: the disk holding the store is full" in read("doctor.out")
    assert "delete it and reindex" not in read("doctor.out") + read("doctor.err")
    errors = "".join(read(f"{n}.err") for n in ("add", "search", "reindex", "doctor", "list"))
    assert "Traceback" not in errors
    assert "The user likes tea" in read("list.out") and read("list.rc").strip() == "0"
    # nothing lost: the memory written before is intact, and once there is room all is committed
    before = [p.read_bytes() for p in (out / "before" / "entries").rglob("*.md")]
    after = [p.read_bytes() for p in (out / "after").rglob("*.md")]
    assert before and all(b in after for b in before) and len(after) == len(before) + 1
    assert read("status").strip() == ""
    assert "The user likes cake" in read("log") and "The user likes tea" in read("log")


def test_doctor_says_when_git_cannot_write_and_a_read_only_store_is_one_line(
    tmp_path: Path, namespaces: None  # noqa: F811
) -> None:
    store = tmp_path / "store"
    subprocess.run([*CLI, "--store", str(store), "add", "The user likes tea"], check=True,
                   capture_output=True, env=cli_env(), cwd=ROOT)
    s, g = shlex.quote(str(store)), shlex.quote(str(store / ".git"))
    # only its repository read-only: memory could be written and not versioned: doctor says so
    doctor = _in_namespace(f"mount --bind {g} {g} && mount -o remount,bind,ro {g}",
                           *CLI, "--store", str(store), "doctor")
    assert doctor.returncode == 1, doctor.stdout
    assert "git:        cannot commit: its git repository is on a read-only file system" in doctor.stdout
    assert "Traceback" not in doctor.stderr
    # the whole store read-only (a mounted backup): nothing can go unversioned, doctor says what it is
    doctor = _in_namespace(f"mount --bind {s} {s} && mount -o remount,bind,ro {s}",
                           *CLI, "--store", str(store), "doctor")
    assert doctor.returncode == 0, doctor.stdout
    assert "on a read-only file system: it can be read, not changed" in doctor.stdout
    added = _in_namespace(f"mount --bind {s} {s} && mount -o remount,bind,ro {s}",
                          *CLI, "--store", str(store), "add", "The user likes coffee")
    assert added.returncode == 1 and "Traceback" not in added.stderr
    assert len(added.stderr.strip().splitlines()) == 1, added.stderr
