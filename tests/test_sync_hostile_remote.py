"""Issue #22: sync brings memory, nothing else.

A sync remote is somebody else's machine (or an attacker who can push to it). Whatever tree it
holds, a sync may only bring memory files: the lock note (which names the port writes are
forwarded to), the indexes, the kept-secrets list, .gitignore and anything outside entries/ stay
exactly as this store has them, and versioning cannot be switched off from the remote.
Hypothesis builds hostile remote trees; every one is synced into a real store over real git.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.history.git_history import GITIGNORE
from desktop_mem.engine.transfer.git_sync import sync

MARK = b"HOSTILE-REMOTE-BYTES"
LEGIT = "entries/global/facts/20250101T000000Z__0123456789abcdef0123456789abcdef.md"
LEGIT_TEXT = "The user keeps bees on the roof"

# What a hostile remote may commit: every local-state path, paths outside memory, and look-alikes
# of memory paths that are no memory (hidden, temp files, a folder where a file belongs).
HOSTILE_PATHS = [
    ".desktop_mem.lock.json",
    ".desktop_mem.lock",
    "memory_index.json",
    "memory_index.json.tmp",
    "keyword_index.sqlite3",
    "keyword_index.sqlite3-wal",
    "kept_secrets.json",
    "chroma/chroma.sqlite3",
    "chroma/0f/data_level0.bin",
    ".gitattributes",
    ".gitmodules",
    ".gitignore",
    "README.md",
    "notes/elsewhere.md",
    "entries/global/facts/x.md.tmp",
    "entries/global/facts/.hidden.md",
    "entries/global/conversation.yaml.bak",
    "entries/global/.desktop_mem.lock.json",
]
GITIGNORES = [b"entries/\n", b"*\n", b"*.md\n!" + MARK + b"\n", b"/entries\n"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(cwd), "-c", "user.name=x", "-c", "user.email=x@x", *args],
                   check=True, capture_output=True)


def _push_remote(work: Path, remote: Path, files: dict[str, bytes], links: list[str]) -> None:
    _git(work.parent, "init", "-q", "-b", "main", str(work))
    legit = work / LEGIT
    legit.parent.mkdir(parents=True)
    legit.write_text(f"---\nid: 0123456789abcdef0123456789abcdef\nrole: memory\nkind: fact\n"
                     f"created_at: '2025-01-01T00:00:00+00:00'\n---\n\n{LEGIT_TEXT}\n", encoding="utf-8")
    for rel, data in files.items():
        path = work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for rel in links:
        path = work / rel
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            os.symlink("/etc/passwd", path)
    _git(work, "add", "-A", "-f")
    _git(work, "commit", "-qm", "hostile tree")
    _git(work, "push", "-q", str(remote), "main:main")


def _outside_memory(root: Path) -> dict[str, bytes]:
    """Every file of the store that is not under entries/ or .git/, with its bytes."""
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".git/", "entries/")) or not path.is_file() or path.is_symlink():
            continue
        found[rel] = path.read_bytes()
    return found


hostile_trees = st.tuples(
    st.dictionaries(st.sampled_from(HOSTILE_PATHS),
                    st.binary(max_size=40).map(lambda b: MARK + b), min_size=1, max_size=8),
    st.sampled_from(GITIGNORES),
    st.lists(st.sampled_from(["entries/global/facts/link.md", "entries/linked", "escape"]),
             max_size=2, unique=True),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=hostile_trees)
def test_a_hostile_remote_tree_changes_nothing_but_memory(
    make_config: Callable[..., Any], tree: tuple[dict[str, bytes], bytes, list[str]]
) -> None:
    files, ignore, links = tree
    files = {**files, ".gitignore": ignore} if ".gitignore" in files else files
    with tempfile.TemporaryDirectory(prefix="dm-hostile-") as tmp:
        base = Path(tmp)
        remote = base / "remote.git"
        git.Repo.init(remote, bare=True).close()
        _push_remote(base / "hostile", remote, files, links)
        config = make_config(store=base / "store", **{"sync.remote_url": str(remote), "sync.branch": "main"})
        with MemoryEngine(config) as eng:
            eng.add("The user drinks green tea")
            # this machine's local state, as a running app has it
            (eng.root / "kept_secrets.json").write_text('{"kept": []}', encoding="utf-8")
            (eng.root / "chroma").mkdir(exist_ok=True)
            (eng.root / "chroma" / "chroma.sqlite3").write_bytes(b"local index")
            (eng.root / "keyword_index.sqlite3").write_bytes(b"local keyword index")
            eng._parts.lock.publish(endpoint="http://127.0.0.1:1/mcp")
            eng._parts.manifest.flush()
            before = _outside_memory(eng.root)

            sync(eng._parts)

            after = _outside_memory(eng.root)
            # every local-state file is byte-identical (the catalog cache may be rewritten by us)
            for rel, data in before.items():
                if rel != "memory_index.json.sqlite3":
                    assert after.get(rel) == data, f"sync changed {rel}"
            # no byte the remote sent outside memory reached the disk, anywhere in the store
            for path in eng.root.rglob("*"):
                if ".git" in path.relative_to(eng.root).parts or not path.is_file():
                    continue
                assert not path.is_symlink(), path
                assert MARK not in path.read_bytes(), f"remote bytes in {path}"
            assert (eng.root / ".gitignore").read_text(encoding="utf-8") == GITIGNORE
            # the remote's memory arrived, and versioning still works for the next write
            assert LEGIT_TEXT in {m.text for m in eng.list_memories()}
            later = eng.add("The user bikes to work")
            tracked = eng._parts.git.repo.git.ls_files("--", later.path)
            assert tracked == later.path, "a new memory after sync is not versioned"


def _ls(root: Path, rel: str) -> str:
    return subprocess.run(["git", "-C", str(root), "ls-files", "--", rel], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_a_gitignore_that_ignores_entries_cannot_switch_versioning_off(
    make_config: Callable[..., Any]
) -> None:
    config = make_config()
    with MemoryEngine(config) as eng:
        eng.add("The user drinks green tea")
        root = eng.root
    # what an old sync (or a hand edit) left behind: a .gitignore that hides every memory
    (root / ".gitignore").write_text("entries/\n", encoding="utf-8")
    _git(root, "commit", "-qam", "ignore entries")
    with MemoryEngine(config) as eng:
        assert (root / ".gitignore").read_text(encoding="utf-8") == GITIGNORE
        later = eng.add("The user bikes to work")
        assert _ls(root, later.path) == later.path


def test_an_add_is_versioned_even_when_an_exclude_rule_ignores_memory(engine: MemoryEngine) -> None:
    (engine.root / ".git" / "info").mkdir(exist_ok=True)
    (engine.root / ".git" / "info" / "exclude").write_text("entries/\n*.md\n", encoding="utf-8")
    memory = engine.add("The user keeps bees")
    assert _ls(engine.root, memory.path) == memory.path
    assert not engine._parts.git.dirty_paths()


def test_doctor_reports_a_memory_file_git_ignores(engine: MemoryEngine) -> None:
    engine.add("The user keeps bees")
    engine.close()
    (engine.root / ".git" / "info").mkdir(exist_ok=True)
    (engine.root / ".git" / "info" / "exclude").write_text("entries/g2/\n", encoding="utf-8")
    hand = engine.root / "entries" / "g2" / "facts" / "20250101T000000Z__0123456789abcdef0123456789abcdef.md"
    hand.parent.mkdir(parents=True)
    hand.write_text("---\nid: 0123456789abcdef0123456789abcdef\nrole: memory\n---\n\nA hand-made fact\n",
                    encoding="utf-8")
    with MemoryEngine(engine.config) as eng:  # start-up's sweep cannot commit it: ignored
        report = eng.doctor()
    rel = hand.relative_to(engine.root).as_posix()
    assert rel in {p.path for p in report.problems}
    assert not report.ok
