"""A commit of many memory files (an import, a migration, a bulk delete) on the timeline.

Reading and parsing both sides of every file of such a commit made the first page cost seconds
(two migration commits of 6,000 files: 6.9 s, issue #25): above `timeline.DETAIL_LIMIT` memory
files a commit is classified from its file paths alone. These tests pin what that promises: no
file of the big commit is read for the page, every file still shows as an event of the right
kind (filters and the Restore action keep working on them), and small commits keep their texts.
"""

from __future__ import annotations

from typing import Any

import pytest

from desktop_mem.engine.history import timeline
from desktop_mem.engine.history.timeline_actions import restore_deleted
from desktop_mem.engine.history.timeline_query import CommitCache, TimelineQuery, event_bytes, timeline_page
from desktop_mem.engine.models import EventType, Operation

WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
BULK = len(WORDS)  # memory files of the bulk commit; the limit is lowered below it


@pytest.fixture
def low_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    limit = BULK - 2
    monkeypatch.setattr(timeline, "DETAIL_LIMIT", limit)
    return limit


class CountingBlobs:
    """Counts the blob reads a timeline page makes (the cost that grew with a commit's files)."""

    def __init__(self, engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.read: list[str | None] = []
        real = engine._parts.git.blob

        def blob(sha: str | None) -> bytes | None:
            self.read.append(sha)
            return real(sha)

        monkeypatch.setattr(engine._parts.git, "blob", blob)


def bulk_add(engine: Any, conversation: str = "c1") -> list[Any]:
    with engine._parts.writer.transaction(Operation.IMPORT, f"Import {BULK} facts", conversation) as tx:
        return [tx.add(f"Imported fact number {word}", conversation_id=conversation)
                for word in WORDS]


def test_a_bulk_commit_on_the_first_page_reads_none_of_its_files(
    engine: Any, low_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = engine.add("User lives in Berlin.")
    added = bulk_add(engine)
    blobs = CountingBlobs(engine, monkeypatch)

    page = timeline_page(engine._parts, TimelineQuery(), None, 10, CommitCache())

    bulk, single = page.commits[0], page.commits[1]
    assert bulk.events_from_paths and len(bulk.events) == BULK > low_limit
    assert {e.type for e in bulk.events} == {EventType.ADD}
    assert {e.memory_id for e in bulk.events} == {m.id for m in added}  # the id is in the file name
    assert {e.conversation_id for e in bulk.events} == {"c1"}
    assert all(e.new_text is None for e in bulk.events)
    # Only the small commit's file was read (its text shows); none of the bulk commit's files.
    bulk_blobs = {e_blob for e_blob in blobs.read if e_blob is not None} - _blobs_of(engine, single.sha)
    assert bulk_blobs == set()
    assert not single.events_from_paths
    assert [e.new_text for e in single.events] == [small.text]


def _blobs_of(engine: Any, sha: str) -> set[str]:
    raw = engine._parts.git.commit_info(sha)
    return {b for c in raw.changes for b in (c.old_blob, c.new_blob) if b}


def test_a_bulk_delete_can_be_filtered_shown_and_restored_from_its_path_events(
    engine: Any, low_limit: int
) -> None:
    added = bulk_add(engine)
    engine.add("User has a dog", conversation_id="c2")
    with engine._parts.writer.transaction(Operation.DELETE, "Delete everything imported", "c1") as tx:
        for memory in added:
            tx.soft_delete(engine._parts.raw.lookup(memory.id))

    query = TimelineQuery(only_deletes_and_replacements=True)
    only = timeline_page(engine._parts, query, None, 10, CommitCache())
    assert len(only.commits) == 1 and only.commits[0].events_from_paths
    deleted = only.commits[0].events
    assert [e.type for e in deleted] == [EventType.DELETE] * BULK
    in_c2 = timeline_page(engine._parts, TimelineQuery(conversation="c2"), None, 10, CommitCache())
    assert [c.subject for c in in_c2.commits] == ["Add fact: User has a dog"]

    # The diff view reads the two sides of the one event shown.
    event = next(e for e in deleted if e.memory_id == added[3].id)
    old, new = event_bytes(engine._parts, event)
    assert old is not None and b"Imported fact number four" in old
    assert new is not None and b"deleted_at" in new
    restored = restore_deleted(engine._parts, event)
    assert restored.id == added[3].id and not restored.deleted
    assert engine.get(added[3].id).text == "Imported fact number four"


def test_a_commit_at_the_limit_keeps_its_texts(engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timeline, "DETAIL_LIMIT", BULK)
    bulk_add(engine)
    commit = timeline_page(engine._parts, TimelineQuery(), None, 5, CommitCache()).commits[0]
    assert not commit.events_from_paths
    assert sorted(e.new_text or "" for e in commit.events)[0] == "Imported fact number eight"


def test_a_small_commit_reads_each_of_its_files_once(engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fact = engine.add("User lives in Berlin.")
    engine.edit(fact.id, text="User lives in Hamburg.")
    blobs = CountingBlobs(engine, monkeypatch)
    commit = timeline_page(engine._parts, TimelineQuery(), None, 1, CommitCache()).commits[0]
    assert [(e.type, e.old_text, e.new_text) for e in commit.events] == [
        (EventType.EDIT, "User lives in Berlin.", "User lives in Hamburg.")]
    read = [b for b in blobs.read if b]
    assert sorted(read) == sorted(_blobs_of(engine, commit.sha))  # the two versions, once each
