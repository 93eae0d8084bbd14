"""The timeline's first page does not ask git again what a commit already shown changed (issue #25).

At 100,000 commits git's listing of a page's files was ~0.1 s for small commits and, with an
import or a migration on the page, listing, parsing and classifying its tens of thousands of
files took 1.2 s. Commits never change, so what each changed is kept on disk by sha
(history/commit_summaries.py): these tests pin that a page then lists nothing it has seen, that a
bulk commit this app makes is kept when it is made, that one arriving from a sync remote is read
from git (never from its message) and then kept, and that a damaged cache costs a git read, never
a wrong page.
"""

from __future__ import annotations

import sqlite3
import subprocess
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import git
import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.history import commit_summaries, timeline
from desktop_mem.engine.history.lineage import lineage
from desktop_mem.engine.history.timeline_query import (
    CommitCache,
    TimelineQuery,
    timeline_page,
    wait_for_background,
)
from desktop_mem.engine.models import CommitInfo, EventType, Operation
from desktop_mem.engine.transfer.git_sync import sync

WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
BULK = len(WORDS)


@pytest.fixture(autouse=True)
def low_limit(monkeypatch: pytest.MonkeyPatch) -> int:
    """A bulk commit of 12 files instead of 201 (the rules are the same)."""
    monkeypatch.setattr(timeline, "DETAIL_LIMIT", BULK - 2)
    return BULK - 2


class GitListings:
    """The commits whose changed files git is asked to list (the cost that grew with history)."""

    def __init__(self, engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.listed: list[str] = []
        self.pages: int = 0  # `git log` pages read with their files (the old way: every commit)
        real_with_files, real_log = engine._parts.git.with_files, engine._parts.git.log

        def with_files(shas: list[str]) -> Any:
            self.listed += shas
            return real_with_files(shas)

        def log(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("files", True):
                self.pages += 1
            return real_log(*args, **kwargs)

        real_commit_info = engine._parts.git.commit_info

        def commit_info(sha: str, **kwargs: Any) -> Any:
            if kwargs.get("files", True):
                self.listed.append(sha)
            return real_commit_info(sha, **kwargs)

        monkeypatch.setattr(engine._parts.git, "with_files", with_files)
        monkeypatch.setattr(engine._parts.git, "log", log)
        monkeypatch.setattr(engine._parts.git, "commit_info", commit_info)

    def read(self, sha: str) -> bool:
        return sha in self.listed or self.pages > 0


def bulk_import(engine: Any, conversation: str = "c1") -> str:
    with engine._parts.writer.transaction(Operation.IMPORT, f"Import {BULK} facts", conversation) as tx:
        for word in WORDS:
            tx.add(f"Imported fact number {word}", conversation_id=conversation)
    head = engine._parts.git.head()
    assert head is not None
    return head


def from_git(engine: Any, sha: str) -> CommitInfo:
    """The commit as classify makes it straight from git (what every page must show)."""
    return timeline.classify(engine._parts.git.commit_info(sha), engine._parts.git.blob)


def same_events(a: CommitInfo, b: CommitInfo) -> bool:
    return list(a.events) == list(b.events) and a.type_counts() == b.type_counts()


def test_a_bulk_commit_the_app_made_is_shown_without_git_listing_its_files(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.add("User lives in Berlin.")
    sha = bulk_import(engine)
    engine.add("User has a dog.")
    listings = GitListings(engine, monkeypatch)

    page = timeline_page(engine._parts, TimelineQuery(), None, 10, CommitCache())

    bulk = next(c for c in page.commits if c.sha == sha)
    assert not listings.read(sha)
    assert bulk.events_from_paths and len(bulk.events) == BULK
    assert isinstance(bulk.events, timeline.PathEvents)
    assert bulk.type_counts() == {EventType.ADD: BULK}
    assert same_events(bulk, from_git(engine, sha))
    # The small commits still show their texts (read from their files).
    assert [c.events[0].new_text for c in page.commits if c.sha != sha] == ["User has a dog.",
                                                                            "User lives in Berlin."]


def test_commits_shown_once_are_not_listed_again_in_a_new_session(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fact = engine.add("User lives in Berlin.")
    engine.edit(fact.id, text="User lives in Hamburg.")
    first = timeline_page(engine._parts, TimelineQuery(), None, 10, CommitCache())
    wait_for_background()  # what git listed is written once the page is handed over
    listings = GitListings(engine, monkeypatch)

    again = timeline_page(engine._parts, TimelineQuery(), None, 10, CommitCache())  # a new session's cache

    assert listings.listed == [] and listings.pages == 0
    assert [list(c.events) for c in again.commits] == [list(c.events) for c in first.commits]
    assert again.commits[0].events[0].old_text == "User lives in Berlin."
    engine.add("User has a dog.")  # a new commit: only it is listed
    top = timeline_page(engine._parts, TimelineQuery(), None, 10, CommitCache())
    assert listings.listed == [top.commits[0].sha]


@pytest.fixture
def machines(make_config: Callable[..., Any], tmp_path: Path) -> Iterator[tuple[MemoryEngine, MemoryEngine]]:
    remote = tmp_path / "remote.git"
    git.Repo.init(remote, bare=True).close()
    a = MemoryEngine(make_config(store=tmp_path / "laptop", **{"sync.remote_url": str(remote)}))
    b = MemoryEngine(make_config(store=tmp_path / "desktop", **{"sync.remote_url": str(remote)}))
    yield a, b
    a.close()
    b.close()


def test_a_bulk_commit_from_a_sync_remote_is_read_from_git_then_kept(
    machines: tuple[MemoryEngine, MemoryEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop, desktop = machines
    laptop.add("User lives in Berlin.")
    sync(laptop._parts)
    sync(desktop._parts)
    # On the laptop, by hand with plain git: 12 files under a message that lies about them.
    folder = laptop.root / "entries" / "c7" / "facts"
    folder.mkdir(parents=True)
    for i, word in enumerate(WORDS):
        memory_id = f"00000000-0000-4000-8000-{i:012d}"
        (folder / f"20250101T000000Z__{memory_id}.md").write_text(
            f"---\nid: {memory_id}\nrole: memory\nconversation_id: c7\n---\nPasted fact {word}\n")
    run = {"cwd": laptop.root, "check": True, "capture_output": True}
    subprocess.run(["git", "add", "entries"], **run)  # type: ignore[call-overload]
    subprocess.run(["git", "commit", "-q", "-m", "Edit one fact\n\nDesktop-Mem-Operation: edit\n"
                    "Desktop-Mem-Count: 1"], **run)  # type: ignore[call-overload]
    sha = laptop._parts.git.head()
    assert sha is not None
    sync(laptop._parts)
    sync(desktop._parts)
    assert desktop._parts.git.repo.is_ancestor(sha, "HEAD")

    page = timeline_page(desktop._parts, TimelineQuery(), None, 10, CommitCache())
    shown = next(c for c in page.commits if c.sha == sha)
    assert shown.events_from_paths
    assert shown.type_counts() == {EventType.ADD: BULK}  # from git's listing, not the message
    assert {e.memory_id for e in shown.events} == {f"00000000-0000-4000-8000-{i:012d}" for i in range(BULK)}
    assert {e.conversation_id for e in shown.events} == {"c7"}

    wait_for_background()
    listings = GitListings(desktop, monkeypatch)
    kept = next(c for c in timeline_page(desktop._parts, TimelineQuery(), None, 10, CommitCache()).commits
                if c.sha == sha)
    assert not listings.read(sha)
    assert same_events(kept, shown) and same_events(kept, from_git(desktop, sha))


@pytest.mark.parametrize("damage", ["packed", "counts", "version", "file", "forged"])
def test_a_damaged_cache_is_read_from_git_again(engine: Any, damage: str) -> None:
    sha = bulk_import(engine)
    engine.add("User has a dog.")
    timeline_page(engine._parts, TimelineQuery(), None, 10, CommitCache())
    wait_for_background()
    path = commit_summaries.cache_file(engine._parts.git)
    if damage == "file":
        path.write_bytes(b"not a database at all" * 100)
    elif damage == "forged":  # damaged past its checksum: found when the events are first read
        with sqlite3.connect(path) as db:
            counts = db.execute("SELECT counts FROM bulk_commits").fetchone()[0]
            packed = zlib.compress(b"ADD\0x\0c1\0entries/c1/facts/a.md\0\0memory\0")
            db.execute("UPDATE bulk_commits SET packed = ?, crc = ?",
                       (packed, commit_summaries._crc(counts, packed)))
    else:
        with sqlite3.connect(path) as db:
            change = {"packed": "packed = X'789c'", "counts": "counts = '{\"ADD\": 3}'",
                      "version": "version = version + 1"}[damage]
            db.execute(f"UPDATE bulk_commits SET {change}")  # noqa: S608
            db.execute("UPDATE commit_files SET files = X'00'")

    page = timeline_page(engine._parts, TimelineQuery(), None, 10, CommitCache())

    bulk = next(c for c in page.commits if c.sha == sha)
    assert same_events(bulk, from_git(engine, sha))
    assert page.commits[0].events[0].new_text == "User has a dog."


def test_filters_and_restore_work_on_a_kept_bulk_delete(engine: Any) -> None:
    imported = bulk_import(engine)
    added = engine.list_memories(conversation_id="c1")
    with engine._parts.writer.transaction(Operation.DELETE, "Delete everything imported", "c1") as tx:
        for memory in added:
            tx.soft_delete(engine._parts.raw.lookup(memory.id))
    engine.add("User has a dog", conversation_id="c2")
    deleting = engine._parts.git.log(limit=1, offset=1, files=False)[0].sha

    query = TimelineQuery(only_deletes_and_replacements=True)
    only = timeline_page(engine._parts, query, None, 10, CommitCache())

    assert [c.sha for c in only.commits] == [deleting]
    assert only.commits[0].type_counts() == {EventType.DELETE: BULK}
    in_c2 = timeline_page(engine._parts, TimelineQuery(conversation="c2"), None, 10, CommitCache())
    assert [c.subject for c in in_c2.commits] == ["Add fact: User has a dog"]
    in_c1 = timeline_page(engine._parts, TimelineQuery(conversation="c1"), None, 10, CommitCache())
    assert [c.sha for c in in_c1.commits] == [deleting, imported]
    adds = TimelineQuery(conversation="c1", event_types={EventType.ADD})
    adds_in_c1 = timeline_page(engine._parts, adds, None, 10, CommitCache())
    assert [c.sha for c in adds_in_c1.commits] == [imported]
    event = next(e for e in only.commits[0].events if e.memory_id == added[5].id)
    from desktop_mem.engine.history.timeline_actions import restore_deleted

    assert restore_deleted(engine._parts, event).id == added[5].id
    assert not engine.get(added[5].id).deleted


def all_pages(engine: Any, query: TimelineQuery, size: int, between: Callable[[], None] | None = None
              ) -> list[CommitInfo]:
    seen: list[CommitInfo] = []
    cursor = None
    while True:
        page = timeline_page(engine._parts, query, cursor, size, CommitCache())
        seen += page.commits
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor
        if between is not None:
            between()
            between = None


def test_a_conversations_pages_skip_and_repeat_nothing_when_commits_arrive_between_them(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(6):
        engine.add(f"User fact {i} in c1", conversation_id="c1")
        engine.add(f"User fact {i} in c2", conversation_id="c2")
    listings = GitListings(engine, monkeypatch)

    def meanwhile() -> None:  # new commits on top, in and outside the conversation
        engine.add("User fact new in c1", conversation_id="c1")
        engine.add("User fact new in c2", conversation_id="c2")

    shown = all_pages(engine, TimelineQuery(conversation="c1"), 2, meanwhile)

    assert [c.events[0].new_text for c in shown] == [f"User fact {i} in c1" for i in reversed(range(6))]
    # Only commits of c1 were ever listed with their files (git walked the folder's commits).
    history = engine._parts.git
    listed = {c.sha: c for c in (timeline.classify(r, history.blob) for r in history.log(limit=20))}
    assert {listed[sha].events[0].conversation_id for sha in listings.listed} == {"c1"}
    # A name is a folder name taken literally: no glob, no way out of the store, no git error.
    for name in ("../c1", "c1/..", "*", "c?", ".", "", "c1/facts"):
        query = TimelineQuery(conversation=name)
        assert timeline_page(engine._parts, query, None, 5, CommitCache()).commits == ()


def test_the_lineage_of_an_imported_memory_does_not_list_the_import(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sha = bulk_import(engine)
    imported = next(m for m in engine.list_memories(conversation_id="c1") if m.text.endswith("seven"))
    listings = GitListings(engine, monkeypatch)

    steps = lineage(engine._parts, imported.id, CommitCache()).chain  # a new session: nothing in memory

    assert [s.memory_id for s in steps] == [imported.id]
    created = steps[0].created_event
    assert created is not None and created.commit == sha and created.type == EventType.ADD
    assert steps[0].created_in is not None and len(steps[0].created_in.events) == BULK
    assert sha not in listings.listed
