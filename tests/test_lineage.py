"""Lineage: the replaced_by chain both ways, with texts and commits, over a real store and git."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.history.lineage import lineage
from desktop_mem.engine.models import EventType, NotFoundError
from tests.test_timeline_query import build_history, git


def test_chain_both_ways_with_texts_and_commits(engine: Any) -> None:
    built = build_history(engine)
    line = lineage(engine._parts, built.b)
    assert [s.memory_id for s in line.chain] == [built.a, built.b, built.c]
    assert [s.text for s in line.chain] == ["User lives in Munich.", "User lives in Hamburg.",
                                           "User lives in Hamburg, Altona."]
    assert [s.depth for s in line.chain] == [-1, 0, 1]
    assert [s.live for s in line.chain] == [False, False, True]
    a, b, c = line.chain
    assert a.memory is not None and a.memory.replaced_by == built.b and a.memory.deleted
    assert a.created_in is not None and a.created_in.subject == "Add fact: User lives in Berlin."
    assert a.created_event is not None and a.created_event.type == EventType.ADD
    # The commit that made each later step is the UPDATE that replaced the step before it.
    assert b.created_in is not None and a.replaced_in is not None
    assert b.created_in.sha == a.replaced_in.sha
    assert b.created_event is not None and b.created_event.type == EventType.UPDATE
    assert b.created_event.old_text == "User lives in Munich." and b.created_event.new_text == b.text
    assert c.created_in is not None and b.replaced_in is not None and c.created_in.sha == b.replaced_in.sha
    assert c.replaced_in is None
    assert not line.cycle and line.dangling == ()
    from_end = lineage(engine._parts, built.c)
    assert [s.memory_id for s in from_end.earlier] == [built.a, built.b] and from_end.later == ()
    from_start = lineage(engine._parts, built.a)
    assert [s.memory_id for s in from_start.later] == [built.b, built.c]


def test_hand_made_replacement_is_in_the_lineage(engine: Any) -> None:
    built = build_history(engine)
    line = lineage(engine._parts, built.green)
    assert [s.text for s in line.chain] == ["User's favourite colour is blue",
                                           "User's favourite colour is green"]
    blue, green = line.chain
    assert green.created_in is not None and not green.created_in.made_by_app
    assert green.created_in.subject == "switch colour by hand"
    assert green.created_event is not None and green.created_event.type == EventType.UPDATE
    assert blue.replaced_in is not None and blue.replaced_in.sha == green.created_in.sha
    assert blue.created_in is not None and blue.created_in.made_by_app


def test_merge_cycle_and_dangling_targets_do_not_crash(engine: Any) -> None:
    x = engine.add("User drinks coffee")
    y = engine.add("User drinks coffee every morning")
    _, merged = engine.replace(x.id, "User drinks coffee every morning, black")
    # A second old fact pointing at the same replacement (a merge), edited by hand.
    engine.delete(y.id)
    engine.edit(y.id, meta={"replaced_by": merged.id})
    line = lineage(engine._parts, merged.id)
    assert sorted(s.memory_id for s in line.earlier) == sorted([x.id, y.id])
    assert {s.depth for s in line.earlier} == {-1}

    # Make a loop: the live end now claims to be replaced by the first tombstone.
    engine.edit(merged.id, meta={"replaced_by": x.id})
    looped = lineage(engine._parts, x.id)
    assert looped.cycle
    assert [s.memory_id for s in looped.chain] == [x.id, merged.id]  # each step once, then it stops
    looped_end = lineage(engine._parts, merged.id)
    assert looped_end.cycle and [s.memory_id for s in looped_end.chain] == [y.id, merged.id, x.id]

    gone = engine.add("User rides a bike")
    _, target = engine.replace(gone.id, "User rides an e-bike")
    git(engine.root, "rm", "-q", target.path)
    git(engine.root, "commit", "-qm", "drop the e-bike file")
    engine.refresh()
    dangling = lineage(engine._parts, gone.id)
    assert dangling.dangling == (target.id,)
    [missing] = dangling.later
    assert missing.missing and missing.memory is None
    # The text still comes from the commit that made the replacement.
    assert missing.text == "User rides an e-bike" and missing.created_in is not None

    lone = engine.add("User owns a kayak")
    engine.delete(lone.id)
    engine.edit(lone.id, meta={"replaced_by": "never-written"})
    nowhere = lineage(engine._parts, lone.id)
    assert nowhere.dangling == ("never-written",) and nowhere.later[0].text is None


def test_works_from_the_files_alone_without_git(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config(store__git_versioning=False)) as eng:
        first = eng.add("User is vegetarian")
        _, second = eng.replace(first.id, "User is vegan")
        line = lineage(eng._parts, second.id)
        assert [s.text for s in line.chain] == ["User is vegetarian", "User is vegan"]
        assert all(s.created_in is None and s.replaced_in is None for s in line.chain)


def test_unknown_id_is_a_clear_error(engine: Any) -> None:
    with pytest.raises(NotFoundError, match="no memory with id"):
        lineage(engine._parts, "does-not-exist")
