"""A large store's start stats its files in a helper process beside the one that builds the
cached memories (engine/store/file_scan.py; issue #25: ~0.4 s of a 100k start moved to the other
core). Whatever changed while the app was closed must come out exactly as the in-process walk
finds it, and a helper that cannot run or saw other rows costs that walk, never a memory."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.store import catalog as catalog_module
from desktop_mem.engine.store import file_scan
from desktop_mem.engine.store.manifest import MANIFEST_NAME

pytestmark = pytest.mark.timeout(300)


def _state(eng: MemoryEngine) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    page = eng.list_page(0, 1000, include_deleted=True)
    memories = sorted((m.path, m.id, m.text) for m in page.memories)
    return memories, sorted((p.path, p.reason) for p in eng.problems())


def _store_changed_while_closed(make_config: Callable[..., Any]) -> tuple[Any, Path, list[str]]:
    """A store, then closed and changed by hand in every way the walk tells apart."""
    config = make_config()
    with MemoryEngine(config) as eng:
        kept = [eng.add(f"The user keeps bee hive number {i}") for i in range(6)]
        root = eng.root
    edited, removed, damaged, linked = kept[0], kept[1], kept[2], kept[3]
    path = root / edited.path
    path.write_text(path.read_text(encoding="utf-8").replace("bee hive number 0", "bee hive zero"),
                    encoding="utf-8")
    (root / removed.path).unlink()
    db = sqlite3.connect(root / MANIFEST_NAME)
    with db:
        db.execute("UPDATE files SET memory = 'not a row' WHERE path = ?", (damaged.path,))
    db.close()
    new = path.with_name("20250101T000000Z__11111111-2222-3333-4444-555555555555.md")
    new.write_text("---\nid: 11111111-2222-3333-4444-555555555555\nrole: memory\n---\n"
                   "The user added this fact by hand\n", encoding="utf-8")
    (root / linked.path).unlink()
    (root / linked.path).symlink_to(root / kept[4].path)
    temp = path.parent / f".{path.name}.1234abcd.tmp"  # a write killed before its rename
    temp.write_text("half a file", encoding="utf-8")
    return config, root, [str(temp)]


def test_a_start_beside_a_helper_finds_what_changed_as_the_walk_here_does(
    make_config: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    config, root, temps = _store_changed_while_closed(make_config)
    here_root = root.parent / "copy"
    shutil.copytree(root, here_root, symlinks=True)  # the same store, for the walk in this process
    helpers: list[object] = []
    real_spawn = file_scan.spawn
    monkeypatch.setattr(catalog_module, "SCAN_BESIDE_BYTES", 0)
    monkeypatch.setattr(file_scan, "spawn", lambda *a: helpers.append(a) or real_spawn(*a))

    def no_walk_here(*_args: object) -> object:
        raise AssertionError("the helper's answer was not used")

    with monkeypatch.context() as inner:
        inner.setattr(catalog_module.Catalog, "_load_here", no_walk_here)
        with MemoryEngine(config) as eng:
            beside = _state(eng)
            assert "The user added this fact by hand" in [t for _p, _i, t in beside[0]]
            assert any("bee hive zero" in t for _p, _i, t in beside[0])
    assert helpers  # the start used the helper process
    assert not any(os.path.exists(t) for t in temps)  # the interrupted write's temp file was cleared
    monkeypatch.setattr(catalog_module, "SCAN_BESIDE_BYTES", 10**15)  # the walk here
    with MemoryEngine(make_config(store=here_root)) as eng:
        here = _state(eng)
    assert beside == here
    assert [p for p, _r in beside[1]] == [p for p, _r in here[1]] != []  # the link is reported


@pytest.mark.parametrize("failure", ["cannot start", "dies", "saw other rows"])
def test_a_helper_that_fails_costs_the_walk_here_not_a_memory(
    make_config: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, failure: str,
) -> None:
    config, _root, _temps = _store_changed_while_closed(make_config)
    monkeypatch.setattr(catalog_module, "SCAN_BESIDE_BYTES", 0)
    real_spawn = file_scan.spawn
    if failure == "cannot start":
        monkeypatch.setattr(file_scan, "spawn", lambda *a: None)
    elif failure == "dies":
        monkeypatch.setattr(file_scan, "spawn", lambda *a: _killed(real_spawn(*a)))
    else:
        real_scan = file_scan.scan_changes
        monkeypatch.setattr(file_scan, "spawn", lambda *a: _answering(real_scan(*a), extra_row=True))
    walked: list[bool] = []
    real_here = catalog_module.Catalog._load_here
    monkeypatch.setattr(catalog_module.Catalog, "_load_here",
                        lambda self, temp: walked.append(True) or real_here(self, temp))
    with MemoryEngine(config) as eng:
        texts = [t for _p, _i, t in _state(eng)[0]]
    assert walked == [True]
    assert "The user added this fact by hand" in texts
    assert len(texts) == 5  # 6 added, one removed, one now a link, one new


def _killed(scan: file_scan.Scan | None) -> file_scan.Scan | None:
    assert scan is not None
    scan._process.kill()
    return scan


class _Answer(file_scan.Scan):
    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer

    def result(self) -> dict[str, Any] | None:
        return self.answer

    def cancel(self) -> None:
        pass


def _answering(answer: dict[str, Any], *, extra_row: bool) -> file_scan.Scan:
    count, mtimes, sizes = answer["fingerprint"]
    if extra_row:  # the helper read one row more than this process (a writer saved between)
        answer["fingerprint"] = file_scan.fingerprint(count + 1, mtimes + 5, sizes + 7)
    return _Answer(answer)


def test_a_store_with_no_cached_rows_yet_is_read_whole(
    make_config: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A damaged manifest: every row unusable, every file read again, nothing lost."""
    config = make_config()
    with MemoryEngine(config) as eng:
        added = {eng.add(f"The user visited city number {i}").id for i in range(4)}
        root = eng.root
    db = sqlite3.connect(root / MANIFEST_NAME)
    with db:
        db.execute("UPDATE files SET memory = '[]'")
    db.close()
    monkeypatch.setattr(catalog_module, "SCAN_BESIDE_BYTES", 0)
    with MemoryEngine(config) as eng:
        assert {m.id for m in eng.list_page(0, 100).memories} == added
