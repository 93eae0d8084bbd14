"""The write transaction: each commit holds exactly its operation's files; a failed block leaves
the store byte-identical; stray files never ride along in somebody else's commit."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.history.timeline_actions import restore_deleted, revert_replacement
from desktop_mem.engine.models import EventType, Operation, StoreChange
from tests.llm_roles import FACTS, SUMMARY, is_chat
from tests.scripted_llm import ScriptedLLM
from tests.test_server import Served, make_served  # noqa: F401 - the fixture


def _files(engine: MemoryEngine, sha: str | None) -> set[str]:
    assert sha, "the operation made a commit"
    out = subprocess.run(["git", "-C", str(engine.root), "show", "--name-only", "--no-renames",
                          "--format=", sha], capture_output=True, text=True, check=True).stdout
    # A new store's first commit also carries the .gitignore that init wrote; leave it aside.
    return {line for line in out.splitlines() if line} - {".gitignore"}


def _snapshot(root: Path) -> dict[str, bytes]:
    entries = root / "entries"
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in entries.rglob("*") if p.is_file()}


def _drop_stray(engine: MemoryEngine, name: str = "stray.md") -> str:
    rel = f"entries/global/facts/{name}"
    path = engine.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\nid: stray\n---\nA file another tool wrote\n", encoding="utf-8")
    return rel


def test_each_operation_commits_exactly_its_own_files(engine: MemoryEngine) -> None:
    changes: list[StoreChange] = []
    engine.subscribe(changes.append)
    stray = _drop_stray(engine)
    broken = engine.root / "entries" / "global" / "facts" / "broken.md"
    broken.write_text("---\nid: [unclosed\n---\ntext\n", encoding="utf-8")

    fact = engine.add("The user lives in Ghent")
    assert _files(engine, changes[-1].commit) == {fact.path}
    tracked = subprocess.run(["git", "-C", str(engine.root), "ls-files", "--", ".gitignore"],
                             capture_output=True, text=True, check=True).stdout
    assert tracked.strip() == ".gitignore"
    assert changes[-1].operation is Operation.ADD

    edited = engine.edit(fact.id, text="The user lives in Ghent, Belgium")
    assert _files(engine, changes[-1].commit) == {edited.path}

    tomb = engine.delete(fact.id)
    assert _files(engine, changes[-1].commit) == {edited.path, tomb.path}

    live = engine.restore(fact.id)
    assert _files(engine, changes[-1].commit) == {tomb.path, live.path}

    old_tomb, new = engine.replace(fact.id, "The user lives in Leuven")
    assert _files(engine, changes[-1].commit) == {live.path, old_tomb.path, new.path}
    assert changes[-1].operation is Operation.UPDATE

    conv = engine.new_conversation("Trip")
    assert _files(engine, changes[-1].commit) == {f"entries/{conv}/conversation.yaml"}

    # Neither the stray file nor the broken one rode along in any of those commits.
    status = engine._parts.git.dirty_paths()
    assert stray in status and "entries/global/facts/broken.md" in status


def test_a_failed_transaction_leaves_the_store_byte_identical(engine: MemoryEngine) -> None:
    keep = engine.add("The user has a cat")
    other = engine.add("The user likes tea")
    before = _snapshot(engine.root)
    head = engine._parts.git.head()
    changes: list[StoreChange] = []
    engine.subscribe(changes.append)

    with pytest.raises(RuntimeError, match="disk full"), \
            engine._parts.writer.transaction(Operation.IMPORT, "half an import") as tx:
        tx.add("The user plays chess", conversation_id="global")
        tx.soft_delete(keep)
        tx.rewrite(engine.get(other.id), {"kind": "preference"}, "The user loves tea")
        tx.write_summary("global", "A summary that never was", 3)
        raise RuntimeError("disk full")

    assert _snapshot(engine.root) == before
    assert engine._parts.git.head() == head and not changes
    assert engine.get(keep.id).path == keep.path and not engine.get(keep.id).deleted
    assert engine.get(other.id).text == "The user likes tea"
    assert {m.text for m in engine.list_memories()} == {"The user has a cat", "The user likes tea"}
    assert engine.summary("global") is None


def test_revert_replacement_is_both_halves_or_neither(engine: MemoryEngine, monkeypatch: Any) -> None:
    old = engine.add("The user works at Acme")
    engine.replace(old.id, "The user works at Globex")
    [update] = [e for c in engine.history(limit=5) for e in c.events if e.type == EventType.UPDATE]
    before = _snapshot(engine.root)

    real = engine._parts.store.soft_delete

    def failing(memory: Any, **kw: Any) -> Any:
        raise OSError("the disk went away")

    monkeypatch.setattr(engine._parts.store, "soft_delete", failing)
    with pytest.raises(OSError):
        revert_replacement(engine._parts, update)
    assert _snapshot(engine.root) == before  # the restore half was put back too
    monkeypatch.setattr(engine._parts.store, "soft_delete", real)

    live_old, tomb_new = revert_replacement(engine._parts, update)
    assert not live_old.deleted and tomb_new.deleted
    head = engine.history(limit=1)[0]
    assert head.trailers["Operation"] == "revert-update"


def test_restore_from_the_timeline_commits_only_the_restored_file(engine: MemoryEngine) -> None:
    fact = engine.add("The user's bike is blue")
    tomb = engine.delete(fact.id)
    stray = _drop_stray(engine, "another.md")
    [event] = [e for e in engine.history(limit=1)[0].events if e.type == EventType.DELETE]
    live = restore_deleted(engine._parts, event)
    assert _files(engine, engine._parts.git.head()) == {tomb.path, live.path}
    assert stray in engine._parts.git.dirty_paths()


def test_a_chat_turn_commits_its_turns_facts_and_summary_together(
    make_config: Callable[..., Any], scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.script(FACTS, '["The user lives in Berlin"]')
    scripted_llm.script(SUMMARY, "The user lives in Berlin.")
    scripted_llm.script(is_chat, "Nice!")
    engine = MemoryEngine(make_config(**{"llm.base_url": scripted_llm.base_url, "llm.model": "test-model",
                                         "llm.timeout": 5}))
    try:
        stray = _drop_stray(engine)
        outcomes: list[Any] = []
        engine.subscribe_outcomes(outcomes.append)
        reply = engine.chat("trip", "I live in Berlin.")
        assert engine.wait_idle(60)
        [outcome] = outcomes
        assert outcome.turn_id == reply.turn_id and reply.turn_id == outcome.turns[0].id
        expected = {m.path for m in outcome.turns} | {m.path for m in outcome.added}
        assert outcome.summary is not None
        expected.add(outcome.summary.path)
        assert _files(engine, outcome.commit) == expected
        assert engine.history(limit=1)[0].trailers.get("Turn") == reply.turn_id
        assert stray in engine._parts.git.dirty_paths()
    finally:
        engine.close()


def test_a_stray_file_dropped_while_serve_runs_is_never_in_an_api_write(
    make_served: Callable[..., Served],  # noqa: F811 - the fixture imported above
) -> None:
    served = make_served()
    engine = served.engine
    stray = _drop_stray(engine)
    created = httpx.post(f"{served.url}/api/memories",
                         json={"content": "The user prefers trains", "conversation_id": "global"})
    assert created.status_code == 201, created.text
    memory = engine.get(created.json()["id"])
    assert _files(engine, engine._parts.git.head()) == {memory.path}
    assert stray in engine._parts.git.dirty_paths()
    # The watcher path (here called directly) records it as its own outside edit.
    change = engine.apply_external_changes([stray])
    assert change is not None and change.operation is Operation.EXTERNAL_EDIT
    assert _files(engine, change.commit) == {stray}
    assert engine.history(limit=1)[0].subject.startswith("Edit outside the app")


def test_a_soft_delete_that_fails_after_the_move_is_undone(engine: MemoryEngine, monkeypatch: Any) -> None:
    fact = engine.add("The user sails on weekends")
    before = _snapshot(engine.root)
    real_rewrite = engine._parts.store.rewrite

    def stamp_fails(memory: Any, updates: Any, *a: Any, **kw: Any) -> Any:
        if "deleted_at" in updates:
            raise OSError("no space left on device")
        return real_rewrite(memory, updates, *a, **kw)

    monkeypatch.setattr(engine._parts.store, "rewrite", stamp_fails)
    with pytest.raises(OSError):
        engine.delete(fact.id)
    assert _snapshot(engine.root) == before  # moved, not stamped: moved back, no second copy
    assert engine.get(fact.id).path == fact.path


def test_something_staged_by_hand_stays_out_of_the_apps_commit(engine: MemoryEngine) -> None:
    engine.add("The user rows on Sundays")
    stray = _drop_stray(engine, "staged-by-hand.md")
    subprocess.run(["git", "-C", str(engine.root), "add", "--", stray], check=True)
    fact = engine.add("The user reads crime novels")
    assert _files(engine, engine._parts.git.head()) == {fact.path}
    staged = subprocess.run(["git", "-C", str(engine.root), "diff", "--cached", "--name-only"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert staged == [stray]  # still staged, for whoever staged it


def test_a_file_removed_outside_the_app_is_its_own_commit_naming_it(engine: MemoryEngine) -> None:
    fact = engine.add("The user keeps bees")
    (engine.root / fact.path).unlink()
    change = engine.apply_external_changes([fact.path])
    assert change is not None and change.memory_ids == (fact.id,)
    head = engine.history(limit=1)[0]
    assert head.trailers["Ids"] == fact.id and head.trailers["Operation"] == "external-edit"
    assert _files(engine, change.commit) == {fact.path}
