"""Timeline paging and filters over a real store whose history holds every event type, plus the
word diff and front-matter changes the diff view shows."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.history.timeline_query import (
    CommitCache,
    FieldChange,
    TimelineCursor,
    TimelineQuery,
    event_bytes,
    front_matter_changes,
    timeline_page,
    word_diff,
)
from desktop_mem.engine.models import CommitInfo, EventType, Operation

HAND_DATE = "2024-01-15T10:00:00+00:00"


def git(store: Path, *args: str, date: str | None = None) -> str:
    env = dict(os.environ)
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return subprocess.run(["git", "-C", str(store), "-c", "user.name=me", "-c", "user.email=me@x", *args],
                          check=True, capture_output=True, text=True, env=env).stdout


@dataclass
class Built:
    """Ids of the memories the history builder made."""

    a: str  # Berlin -> Munich (edit), replaced by b
    b: str  # Hamburg, replaced by c
    c: str  # Hamburg, Altona (live)
    dog: str  # deleted then restored, in c1
    jazz: str  # evicted, in c1
    blue: str  # replaced by hand with plain git by `green`
    green: str
    cat: str  # removed outright with `git rm`


def build_history(engine: Any) -> Built:
    """Every event type, app-made and hand-made (a dated plain-git replacement and a git rm)."""
    a = engine.add("User lives in Berlin.")
    engine.edit(a.id, text="User lives in Munich.")
    _, b = engine.replace(a.id, "User lives in Hamburg.")
    _, c = engine.replace(b.id, "User lives in Hamburg, Altona.")
    dog = engine.add("User has a dog", conversation_id="c1")
    engine.delete(dog.id)
    engine.restore(dog.id)
    jazz = engine.add("User likes jazz", conversation_id="c1")
    engine.delete(jazz.id, operation="evict")
    for text, covered in (("The user has a dog.", 2), ("The user has a dog and likes jazz.", 4)):
        with engine._parts.writer.transaction(Operation.SUMMARY, "Update summary", "c1") as tx:
            tx.write_summary("c1", text, covered)
    engine.add("hello there", conversation_id="c1", role="user")
    blue = engine.add("User's favourite colour is blue")
    cat = engine.add("User has a cat")

    root = engine.root
    tomb_rel = blue.path.replace("entries/global/", "entries/global/deleted/")
    (root / tomb_rel).parent.mkdir(parents=True, exist_ok=True)
    git(root, "mv", blue.path, tomb_rel)
    tomb = root / tomb_rel
    tomb.write_text(tomb.read_text().replace(
        "source: manual\n", "source: manual\nreplaced_by: hand-green\ndeleted_at: 2024-01-15T10:00:00Z\n"))
    (root / "entries/global/facts/20240115T100000Z__hand-green.md").write_text(
        "---\nid: hand-green\nrole: memory\nmood: cheerful\n---\n\nUser's favourite colour is green\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "switch colour by hand", date=HAND_DATE)
    git(root, "rm", "-q", cat.path)
    git(root, "commit", "-qm", "forget the cat")
    engine.refresh()
    return Built(a.id, b.id, c.id, dog.id, jazz.id, blue.id, "hand-green", cat.id)


def all_pages(engine: Any, query: TimelineQuery, page_size: int, cache: CommitCache | None = None
              ) -> list[CommitInfo]:
    commits: list[CommitInfo] = []
    cursor: TimelineCursor | None = None
    for _ in range(100):
        page = timeline_page(engine._parts, query, cursor, page_size, cache)
        assert len(page.commits) <= page_size
        commits += page.commits
        cursor = page.next_cursor
        if cursor is None:
            return commits
    raise AssertionError("paging never ended")


def types_of(commits: list[CommitInfo]) -> set[EventType]:
    return {e.type for c in commits for e in c.events}


def test_pages_cover_history_newest_first_with_every_event_type(engine: Any) -> None:
    build_history(engine)
    expected = [c.sha for c in engine.history(limit=200)]
    commits = all_pages(engine, TimelineQuery(), page_size=4)
    assert [c.sha for c in commits] == expected
    assert types_of(commits) == set(EventType)
    assert commits[0].subject == "forget the cat" and not commits[0].made_by_app
    hand = commits[1]
    assert [e.type for e in hand.events] == [EventType.UPDATE] and not hand.made_by_app
    assert hand.events[0].new_text == "User's favourite colour is green"


def test_next_page_neither_repeats_nor_skips_after_a_new_commit(engine: Any) -> None:
    build_history(engine)
    before = [c.sha for c in engine.history(limit=200)]
    first = timeline_page(engine._parts, TimelineQuery(), None, 5)
    engine.add("a fact added while the user scrolls")
    second = timeline_page(engine._parts, TimelineQuery(), first.next_cursor, 5)
    assert [c.sha for c in first.commits + second.commits] == before[:10]


def test_only_deletes_and_replacements_keeps_fetching_until_the_page_is_full(engine: Any) -> None:
    built = build_history(engine)
    query = TimelineQuery(only_deletes_and_replacements=True)
    first = timeline_page(engine._parts, query, None, 2)
    assert len(first.commits) == 2 and first.next_cursor is not None
    commits = all_pages(engine, query, page_size=2)
    kinds = [sorted(e.type for e in query.matching_events(c)) for c in commits]
    assert kinds == [[EventType.DELETE], [EventType.UPDATE], [EventType.EVICT], [EventType.DELETE],
                     [EventType.UPDATE], [EventType.UPDATE]]
    assert commits[0].events[0].hard_delete and commits[0].events[0].old_text == "User has a cat"
    assert commits[1].events[0].memory_id == built.blue


def test_filter_by_conversation_type_and_text(engine: Any) -> None:
    build_history(engine)
    c1 = all_pages(engine, TimelineQuery(conversation="c1"), page_size=3)
    assert [c.subject for c in c1] == [
        "Add user turn: hello there", "Update summary", "Update summary", "Evict fact: User likes jazz",
        "Add fact: User likes jazz", "Restore fact: User has a dog", "Delete fact: User has a dog",
        "Add fact: User has a dog",
    ]
    assert all(e.conversation_id == "c1" for c in c1 for e in c.events)
    assert types_of(c1) == {EventType.ADD, EventType.DELETE, EventType.RESTORE, EventType.EVICT,
                            EventType.SUMMARY, EventType.TURN}
    summaries = all_pages(engine, TimelineQuery(event_types={EventType.SUMMARY}), page_size=10)
    assert [c.events[0].new_text for c in summaries] == ["The user has a dog and likes jazz.",
                                                         "The user has a dog."]
    hamburg = all_pages(engine, TimelineQuery(text="HAMBURG"), page_size=10)
    assert [c.subject for c in hamburg] == [
        "Update fact: User lives in Hamburg. -> User lives in Hamburg, Altona.",
        "Update fact: User lives in Munich. -> User lives in Hamburg.",
    ]
    both = all_pages(engine, TimelineQuery(conversation="c1", event_types={EventType.EVICT}), 10)
    assert [c.subject for c in both] == ["Evict fact: User likes jazz"]


def test_filter_by_date_does_not_assume_dates_are_in_order(engine: Any) -> None:
    build_history(engine)
    everything = all_pages(engine, TimelineQuery(), 50)
    old = all_pages(engine, TimelineQuery(until=datetime(2024, 6, 1, tzinfo=UTC)), 3)
    assert [c.subject for c in old] == ["switch colour by hand"]
    recent = all_pages(engine, TimelineQuery(since=datetime(2025, 1, 1)), 3)  # naive means UTC
    assert len(recent) == len(everything) - 1
    assert "switch colour by hand" not in [c.subject for c in recent]


def test_classified_commits_are_served_from_the_cache(engine: Any) -> None:
    build_history(engine)
    cache = CommitCache(capacity=5)
    first = timeline_page(engine._parts, TimelineQuery(), None, 5, cache)
    again = timeline_page(engine._parts, TimelineQuery(), None, 5, cache)
    assert all(x is y for x, y in zip(first.commits, again.commits, strict=True))
    timeline_page(engine._parts, TimelineQuery(), first.next_cursor, 5, cache)
    assert len(cache) == 5 and cache.get(first.commits[0].sha) is None  # least recent dropped


def test_empty_store_and_bad_page_size(engine: Any) -> None:
    page = timeline_page(engine._parts, TimelineQuery())
    assert page.commits == () and page.next_cursor is None
    with pytest.raises(ValueError, match="page_size"):
        timeline_page(engine._parts, TimelineQuery(), None, 0)


def test_word_diff_marks_changed_words_and_keeps_spacing() -> None:
    ops = word_diff("User lives in Berlin.", "User lives in  Munich, Germany.")
    assert ops == [("equal", "User lives in"), ("delete", " Berlin"), ("insert", "  Munich, Germany"),
                   ("equal", ".")]
    old = "".join(t for op, t in ops if op != "insert")
    new = "".join(t for op, t in ops if op != "delete")
    assert (old, new) == ("User lives in Berlin.", "User lives in  Munich, Germany.")
    assert word_diff("a b c d e", "a x c y e") == [
        ("equal", "a "), ("delete", "b"), ("insert", "x"), ("equal", " c "), ("delete", "d"),
        ("insert", "y"), ("equal", " e")]
    assert word_diff("", "hello") == [("insert", "hello")]
    assert word_diff("same text", "same text") == [("equal", "same text")]


def test_front_matter_changes_of_an_update_and_a_hand_edit(engine: Any) -> None:
    build_history(engine)
    hand = engine.history(limit=2)[1]
    old, new = event_bytes(engine._parts, hand.events[0])
    assert old is not None and new is not None
    changes = {c.key: c for c in front_matter_changes(old, new)}
    assert set(changes) == {"deleted_at", "replaced_by"}
    assert changes["replaced_by"] == FieldChange("replaced_by", None, "hand-green")
    assert changes["replaced_by"].change == "added"
    assert changes["deleted_at"].new == "2024-01-15T10:00:00+00:00"

    before = b"---\nid: x\nkind: fact\nmood: calm\ntags: [a, b]\n---\n\nText\n"
    after = b"---\nid: x\nkind: preference\ntags: [a, c]\nextra_note: hi\n---\n\nText\n"
    rows = front_matter_changes(before, after)
    assert rows == [FieldChange("kind", "fact", "preference"), FieldChange("mood", "calm", None),
                    FieldChange("tags", "[a, b]", "[a, c]"), FieldChange("extra_note", None, "hi")]
    assert [r.change for r in rows] == ["changed", "removed", "changed", "added"]
    added = front_matter_changes(None, after)
    assert [r.key for r in added] == ["id", "kind", "tags", "extra_note"]
