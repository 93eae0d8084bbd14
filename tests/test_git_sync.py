"""Sync across machines: two real stores and a real local bare repository as the remote."""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import git
import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.transfer.git_sync import SyncError, sync


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    path = tmp_path / "remote.git"
    git.Repo.init(path, bare=True).close()
    return path


@pytest.fixture
def machines(
    make_config: Callable[..., Any], remote: Path, tmp_path: Path
) -> Iterator[tuple[MemoryEngine, MemoryEngine]]:
    a = MemoryEngine(make_config(store=tmp_path / "laptop", **{"sync.remote_url": str(remote)}))
    b = MemoryEngine(make_config(store=tmp_path / "desktop", **{"sync.remote_url": str(remote)}))
    yield a, b
    a.close()
    b.close()


def texts(engine: MemoryEngine, **filters: Any) -> set[str]:
    return {m.text for m in engine.list_memories(**filters)}


def test_two_stores_editing_in_turn_end_up_with_the_same_memories(
    machines: tuple[MemoryEngine, MemoryEngine], remote: Path
) -> None:
    laptop, desktop = machines
    berlin = laptop.add("User lives in Berlin")
    first = sync(laptop._parts)
    assert first.pushed and first.incoming_commits == 0 and first.outgoing_commits >= 1

    desktop.open_index()
    pulled = sync(desktop._parts)
    assert pulled.incoming_commits >= 1 and pulled.conflicts == ()
    assert texts(desktop) == {"User lives in Berlin"}
    assert any(p.endswith(".md") for p in pulled.incoming_paths)
    # the index follows the pulled files: the new memory is searchable at once
    assert [r.memory.id for r in desktop.search("where does the user live")][:1] == [berlin.id]

    cat = desktop.add("User has a cat named Miso", conversation_id="pets")
    assert sync(desktop._parts).outgoing_commits >= 1
    sync(laptop._parts)
    assert texts(laptop) == {"User lives in Berlin", "User has a cat named Miso"}

    laptop.delete(cat.id)
    sync(laptop._parts)
    sync(desktop._parts)
    assert desktop.get(cat.id).deleted
    assert texts(desktop) == {"User lives in Berlin"}
    remote_head = git.Repo(remote).commit("main").hexsha
    assert laptop._parts.git.head() == remote_head or desktop._parts.git.head() == remote_head
    assert not desktop._parts.git.dirty_paths() and not laptop._parts.git.dirty_paths()


def test_a_memory_changed_on_both_machines_keeps_both_versions(
    machines: tuple[MemoryEngine, MemoryEngine],
) -> None:
    laptop, desktop = machines
    home = laptop.add("User lives in Berlin")
    sync(laptop._parts)
    sync(desktop._parts)
    laptop.edit(home.id, text="User lives in Munich")
    sync(laptop._parts)
    desktop.edit(home.id, text="User lives in Hamburg")

    result = sync(desktop._parts)
    assert len(result.conflicts) == 1
    conflict = result.conflicts[0]
    assert conflict.memory_id == home.id and conflict.their_copy_id
    assert desktop.get(home.id).text == "User lives in Hamburg"  # ours stays in place
    copy = desktop.get(conflict.their_copy_id)
    assert copy.text == "User lives in Munich"
    assert copy.extra["conflict_of"] == home.id and copy.source == "import"

    sync(laptop._parts)  # the other machine gets the same two memories
    assert texts(laptop) == texts(desktop) == {"User lives in Hamburg", "User lives in Munich"}
    assert laptop.get(conflict.their_copy_id).extra["conflict_of"] == home.id
    assert any("conflict" in c.subject.lower() for c in desktop.history(limit=5))


def test_deleted_here_and_edited_there_loses_neither(machines: tuple[MemoryEngine, MemoryEngine]) -> None:
    laptop, desktop = machines
    fact = laptop.add("User drinks green tea")
    sync(laptop._parts)
    sync(desktop._parts)
    laptop.delete(fact.id)
    sync(laptop._parts)
    desktop.edit(fact.id, text="User drinks jasmine tea")
    result = sync(desktop._parts)
    assert [c.memory_id for c in result.conflicts] == [fact.id]
    # The delete wins the file's place; the edit is kept there (restorable), the old text beside it.
    kept = desktop.get(fact.id)
    assert kept.text == "User drinks jasmine tea" and kept.deleted
    assert desktop.get(result.conflicts[0].their_copy_id or "").extra["conflict_of"] == fact.id
    assert desktop.restore(fact.id).text == "User drinks jasmine tea"


def test_an_unreachable_remote_fails_clearly_and_keeps_local_memory(
    make_config: Callable[..., Any], tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere.git"
    with MemoryEngine(make_config(**{"sync.remote_url": str(missing)})) as eng:
        eng.add("User lives in Berlin")
        with pytest.raises(SyncError, match="cannot reach the sync remote") as info:
            sync(eng._parts)
        assert str(missing) in str(info.value)
        assert texts(eng) == {"User lives in Berlin"} and not eng._parts.git.dirty_paths()


def test_a_rejected_push_fails_clearly_and_keeps_the_local_commit(
    machines: tuple[MemoryEngine, MemoryEngine], remote: Path
) -> None:
    laptop, _desktop = machines
    hook = remote / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'this remote is read-only' >&2\nexit 1\n", encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    laptop.add("User lives in Berlin")
    with pytest.raises(SyncError, match="could not push") as info:
        sync(laptop._parts)
    assert "read-only" in str(info.value)
    assert "committed locally" in str(info.value)
    assert texts(laptop) == {"User lives in Berlin"} and not laptop._parts.git.dirty_paths()


def test_sync_without_a_remote_says_how_to_set_one(engine: MemoryEngine) -> None:
    with pytest.raises(SyncError, match="sync.remote_url"):
        sync(engine._parts)


def test_an_empty_store_and_an_empty_remote_sync_without_error(
    make_config: Callable[..., Any], remote: Path, tmp_path: Path
) -> None:
    with MemoryEngine(make_config(store=tmp_path / "fresh", **{"sync.remote_url": str(remote)})) as eng:
        result = sync(eng._parts)
        assert result.incoming_commits == 0 and result.conflicts == ()
        eng.add("User lives in Berlin")
        assert sync(eng._parts).pushed
    assert git.Repo(remote).commit("main").hexsha
