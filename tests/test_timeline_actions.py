"""Timeline actions: each makes one new commit that the timeline classifies, and each refuses
(changing nothing) when what it acts on changed since the event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.history.lineage import lineage
from desktop_mem.engine.history.timeline_actions import (
    memory_at,
    restore_deleted,
    restore_summary_version,
    revert_replacement,
)
from desktop_mem.engine.history.timeline_query import TimelineQuery, timeline_page
from desktop_mem.engine.models import (
    CommitInfo,
    ConflictError,
    EventType,
    NotFoundError,
    TimelineEvent,
    ValidationError,
)
from tests.test_timeline_query import build_history


def find(engine: Any, kind: EventType, memory_id: str) -> TimelineEvent:
    for commit in engine.history(limit=200):
        for event in commit.events:
            if event.type == kind and event.memory_id == memory_id:
                return event
    raise AssertionError(f"no {kind} event for {memory_id}")


def newest(engine: Any) -> CommitInfo:
    [top] = timeline_page(engine._parts, TimelineQuery(), None, 1).commits
    return top


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in (root / "entries").rglob("*.md")}


def test_restore_a_soft_delete_and_an_eviction(engine: Any) -> None:
    built = build_history(engine)
    engine.delete(built.dog)
    live = restore_deleted(engine._parts, find(engine, EventType.DELETE, built.dog))
    assert not live.deleted and live.text == "User has a dog"
    top = newest(engine)
    assert [e.type for e in top.events] == [EventType.RESTORE] and top.trailers["Operation"] == "restore"
    assert top.events[0].memory_id == built.dog

    jazz = restore_deleted(engine._parts, find(engine, EventType.EVICT, built.jazz))
    assert not jazz.deleted and engine.get(built.jazz).path == jazz.path
    assert [e.type for e in newest(engine).events] == [EventType.RESTORE]


def test_restore_a_file_removed_with_plain_git_rm(engine: Any) -> None:
    built = build_history(engine)
    event = find(engine, EventType.DELETE, built.cat)
    assert event.hard_delete
    cat = restore_deleted(engine._parts, event)
    assert cat.text == "User has a cat" and (engine.root / cat.path).exists()
    top = newest(engine)
    # git sees the file come back as a new file; the trailer says why.
    assert [e.type for e in top.events] == [EventType.ADD] and top.trailers["Operation"] == "restore"
    with pytest.raises(ConflictError, match="exists again"):
        restore_deleted(engine._parts, event)


def test_revert_an_app_update_is_one_commit(engine: Any) -> None:
    built = build_history(engine)
    event = find(engine, EventType.UPDATE, built.b)  # Hamburg -> Hamburg, Altona
    old, new = revert_replacement(engine._parts, event)
    assert not old.deleted and old.text == "User lives in Hamburg." and old.replaced_by is None
    assert new.deleted and new.id == built.c and new.replaced_by is None
    top = newest(engine)
    assert top.subject == "Revert update: User lives in Hamburg, Altona. -> User lives in Hamburg."
    assert top.trailers["Operation"] == "revert-update"
    assert sorted((e.type, e.memory_id) for e in top.events) == sorted(
        [(EventType.RESTORE, built.b), (EventType.DELETE, built.c)])
    assert [s.memory_id for s in lineage(engine._parts, built.b).chain] == [built.a, built.b]
    with pytest.raises(ConflictError, match="live again"):
        revert_replacement(engine._parts, event)


def test_revert_a_hand_made_update(engine: Any) -> None:
    built = build_history(engine)
    event = find(engine, EventType.UPDATE, built.blue)
    old, new = revert_replacement(engine._parts, event)
    assert old.text == "User's favourite colour is blue" and not old.deleted
    assert new.id == built.green and new.deleted and new.extra["mood"] == "cheerful"  # unknown key kept
    assert {e.type for e in newest(engine).events} == {EventType.RESTORE, EventType.DELETE}


def test_restore_a_summary_version(engine: Any) -> None:
    build_history(engine)
    summaries = timeline_page(engine._parts, TimelineQuery(event_types={EventType.SUMMARY})).commits
    first_version = summaries[-1].events[0]
    assert first_version.new_text == "The user has a dog."
    current = engine.summary("c1")
    restored = restore_summary_version(engine._parts, first_version, "c1", expected_hash=current.content_hash)
    assert restored.text == "The user has a dog." and restored.summarized_count == 2
    assert engine.summary("c1").text == "The user has a dog."
    [event] = newest(engine).events
    assert event.type == EventType.SUMMARY
    assert (event.old_text, event.new_text) == ("The user has a dog and likes jazz.", "The user has a dog.")
    assert newest(engine).trailers["Operation"] == "restore-summary"
    # The pane showed a summary that has changed since: say so, change nothing.
    with pytest.raises(ConflictError, match="changed since"):
        restore_summary_version(engine._parts, summaries[0].sha, "c1", expected_hash=current.content_hash)
    assert engine.summary("c1").text == "The user has a dog."


def test_memory_as_it_was_at_a_commit(engine: Any) -> None:
    built = build_history(engine)
    add = find(engine, EventType.ADD, built.a)
    then = memory_at(engine._parts, built.a, add.commit)
    assert then.text == "User lives in Berlin." and not then.deleted and then.replaced_by is None
    update = find(engine, EventType.UPDATE, built.a)
    replaced = memory_at(engine._parts, built.a, update.commit)
    assert replaced.deleted and replaced.replaced_by == built.b and replaced.text == "User lives in Munich."
    # The cat's file is gone today; the commit that added it still has it.
    cat = memory_at(engine._parts, built.cat, find(engine, EventType.ADD, built.cat).commit)
    assert cat.text == "User has a cat"
    with pytest.raises(NotFoundError, match="did not exist"):
        memory_at(engine._parts, built.cat, add.commit)
    with pytest.raises(NotFoundError, match="not a commit"):
        memory_at(engine._parts, built.cat, "0123456789abcdef")


def test_edited_after_the_event_is_a_conflict_and_nothing_is_overwritten(engine: Any) -> None:
    built = build_history(engine)
    engine.delete(built.dog)
    event = find(engine, EventType.DELETE, built.dog)
    engine.edit(built.dog, text="User has two dogs")  # the tombstone is edited after the delete
    head, files = engine._parts.git.head(), snapshot(engine.root)
    with pytest.raises(ConflictError, match="edited after"):
        restore_deleted(engine._parts, event)
    assert engine._parts.git.head() == head and snapshot(engine.root) == files
    assert engine.get(built.dog).deleted
    # The user looked and said "restore anyway": the edited text comes back, nothing lost.
    live = restore_deleted(engine._parts, event, force=True)
    assert live.text == "User has two dogs" and not live.deleted

    update = find(engine, EventType.UPDATE, built.b)
    engine.edit(built.c, text="User lives in Hamburg, Ottensen.")
    head, files = engine._parts.git.head(), snapshot(engine.root)
    with pytest.raises(ConflictError, match="edited after"):
        revert_replacement(engine._parts, update)
    assert engine._parts.git.head() == head and snapshot(engine.root) == files
    assert not engine.get(built.c).deleted and engine.get(built.b).deleted


def test_wrong_event_type_is_refused(engine: Any) -> None:
    built = build_history(engine)
    add = find(engine, EventType.ADD, built.a)
    with pytest.raises(ValidationError, match="only a DELETE or EVICT"):
        restore_deleted(engine._parts, add)
    with pytest.raises(ValidationError, match="only an UPDATE"):
        revert_replacement(engine._parts, add)
    with pytest.raises(ConflictError, match="not deleted any more"):
        restore_deleted(engine._parts, find(engine, EventType.DELETE, built.dog))
