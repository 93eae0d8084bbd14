"""A bulk commit's events are held packed, never built and kept, until rows of it are read (issue #25).

At 100,000 memories the window kept ~100 MB it did not need after the Timeline's first page: the
page's background warm-up built every event of the import's commits and the commit cache kept
them (and a bulk commit listed from git for the first time was kept with the events its
classification built). These tests count the TimelineEvent objects of a bulk commit that exist:
none after a page (and its background work), only those read from a row copy, none again once
that copy is dropped; and a filter is read from the packed fields without building any.
"""

from __future__ import annotations

import gc
import subprocess
from itertools import islice
from typing import Any

import pytest

from desktop_mem.engine.history import timeline
from desktop_mem.engine.history.timeline_query import (
    CommitCache,
    TimelineQuery,
    timeline_page,
    wait_for_background,
)
from desktop_mem.engine.models import CommitInfo, EventType, Operation, TimelineEvent

FILES = 12


@pytest.fixture(autouse=True)
def low_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bulk commit of 12 files instead of 201 (the rules are the same)."""
    monkeypatch.setattr(timeline, "DETAIL_LIMIT", FILES - 2)


def alive(sha: str) -> int:
    """How many TimelineEvent objects of commit `sha` exist in this process."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, TimelineEvent) and o.commit == sha)


def app_import(engine: Any) -> str:
    """An import made by the app: its events are kept on disk when it is made."""
    with engine._parts.writer.transaction(Operation.IMPORT, f"Import {FILES} facts", "c1") as tx:
        for i in range(FILES):
            tx.add(f"Imported fact {i}", conversation_id=("c1", "c2")[i % 2])
    head = engine._parts.git.head()
    assert head is not None
    return head


def hand_commit(engine: Any) -> str:
    """A bulk commit made with plain git (a sync remote's): listed by git when first shown."""
    for i in range(FILES):
        conversation = ("c7", "c8")[i % 2]
        folder = engine.root / "entries" / conversation / "facts"
        folder.mkdir(parents=True, exist_ok=True)
        memory_id = f"00000000-0000-4000-8000-{i:012d}"
        (folder / f"20250101T000000Z__{memory_id}.md").write_text(
            f"---\nid: {memory_id}\nrole: memory\nconversation_id: {conversation}\n---\nPasted fact {i}\n")
    run = {"cwd": engine.root, "check": True, "capture_output": True}
    subprocess.run(["git", "add", "entries"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "commit", "-q", "-m", "Paste facts"], **run)  # type: ignore[call-overload]
    head = engine._parts.git.head()
    assert head is not None
    return head


def bulk_on_page(engine: Any, sha: str, cache: CommitCache) -> CommitInfo:
    page = timeline_page(engine._parts, TimelineQuery(), None, 10, cache)
    wait_for_background()  # what the page left to do is done
    commit = next(c for c in page.commits if c.sha == sha)
    assert commit.events_from_paths and len(commit.events) == FILES
    return commit


@pytest.mark.parametrize("made", [app_import, hand_commit], ids=["kept-when-made", "listed-by-git"])
def test_a_page_with_a_bulk_commit_leaves_none_of_its_events_built(engine: Any, made: Any) -> None:
    engine.add("User lives in Berlin.")
    sha = made(engine)
    engine.add("User has a dog.")
    cache = CommitCache()

    commit = bulk_on_page(engine, sha, cache)

    assert alive(sha) == 0  # the cache holds the packed text only
    assert isinstance(commit.events, timeline.PathEvents)
    assert commit.type_counts() == {EventType.ADD: FILES}
    # A later page (the commit from the cache) builds none either.
    bulk_on_page(engine, sha, cache)
    assert alive(sha) == 0


def test_rows_read_are_built_in_a_copy_of_their_own_and_go_with_it(engine: Any) -> None:
    sha = hand_commit(engine)
    cache = CommitCache()
    commit = bulk_on_page(engine, sha, cache)

    events, kept = TimelineQuery().rows(commit)
    assert kept is None  # no filter: nothing is dimmed
    first_rows = [events[i] for i in range(3)]  # what the pane draws
    assert alive(sha) == 3
    assert [e.memory_id for e in first_rows] == [e.memory_id for e in commit.events[:3]]
    del events, first_rows

    assert alive(sha) == 0
    assert alive(bulk_on_page(engine, sha, cache).sha) == 0


def test_reading_every_event_once_keeps_none(engine: Any) -> None:
    """A lineage or `history` reads a bulk commit's events in turn: none stays built."""
    sha = app_import(engine)
    commit = bulk_on_page(engine, sha, CommitCache())

    assert len(list(islice(commit.events, 3))) == 3
    assert sum(1 for e in commit.events if e.type == EventType.ADD) == FILES
    assert alive(sha) == 0


@pytest.mark.parametrize("query", [TimelineQuery(conversation="c8"),
                                   TimelineQuery(event_types={EventType.ADD}, conversation="c7"),
                                   TimelineQuery(text="000000000003")],
                         ids=["conversation", "type", "text"])
def test_a_filter_on_a_bulk_commit_keeps_the_right_rows_without_building_events(
    engine: Any, query: TimelineQuery
) -> None:
    sha = hand_commit(engine)
    cache = CommitCache()
    commit = bulk_on_page(engine, sha, cache)
    expected = [i for i, e in enumerate(list(commit.events)) if query.event_matches(commit, e)]
    assert expected and alive(sha) == 0

    _events, kept = query.rows(commit)
    matches = query.matches(commit)
    first = query.first_match(commit)

    assert alive(sha) == 0
    assert kept is not None and sorted(kept) == expected
    assert matches and first == expected[0]


def test_a_filter_that_rules_every_event_of_a_bulk_commit_out_is_told_without_building_them(
    engine: Any
) -> None:
    sha = app_import(engine)
    commit = bulk_on_page(engine, sha, CommitCache())
    query = TimelineQuery(text="no memory holds this")

    assert not query.matches(commit) and query.rows(commit)[1] == frozenset()
    assert alive(sha) == 0
