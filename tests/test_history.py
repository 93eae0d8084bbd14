"""Git history over a real repo: one commit per mutation, trailers, paging, diffs, the timeline."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from desktop_mem.engine.models import EventType, Operation


def git(store: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store), *args], check=True, capture_output=True, text=True).stdout


def test_each_mutation_is_one_commit_with_trailers(engine: Any) -> None:
    m = engine.add("User lives in Berlin", conversation_id="global")
    engine.edit(m.id, text="User lives in Munich")
    engine.delete(m.id)
    engine.restore(m.id)
    log = git(engine.root, "log", "--format=%s%x00%B%x01")
    entries = [e.strip() for e in log.split("\x01") if e.strip()]
    assert len(entries) == 4
    subject, body = entries[0].split("\x00")
    assert subject == "Restore fact: User lives in Munich"
    assert "Desktop-Mem-Operation: restore" in body and f"Desktop-Mem-Ids: {m.id}" in body
    assert "Desktop-Mem-Conversation: global" in body
    ignored = (engine.root / ".gitignore").read_text()
    assert "chroma/" in ignored and "memory_index.json" in ignored


def test_history_classifies_app_events_in_order_with_texts(engine: Any) -> None:
    m = engine.add("User lives in Berlin")
    engine.edit(m.id, text="User lives in Munich")
    engine.delete(m.id)
    engine.restore(m.id)
    tomb, new = engine.replace(m.id, "User lives in Hamburg")
    engine.delete(new.id, operation=Operation.EVICT)
    with engine._parts.writer.transaction(Operation.SUMMARY, "Update summary", "c1") as tx:
        tx.write_summary("c1", "The user moved a lot.", 3)
    engine.add("hello there", conversation_id="c1", role="user")
    events = [e for c in reversed(engine.history(limit=50)) for e in c.events]
    kinds = [e.type for e in events]
    assert kinds == [
        EventType.ADD,
        EventType.EDIT,
        EventType.DELETE,
        EventType.RESTORE,
        EventType.UPDATE,
        EventType.EVICT,
        EventType.SUMMARY,
        EventType.TURN,
    ]
    assert events[0].new_text == "User lives in Berlin"
    assert (events[1].old_text, events[1].new_text) == ("User lives in Berlin", "User lives in Munich")
    update = events[4]
    assert update.old_text == "User lives in Munich" and update.new_text == "User lives in Hamburg"
    assert update.replaced_by == new.id and update.memory_id == m.id


def test_hand_made_replacement_and_delete_are_classified(engine: Any) -> None:
    old = engine.add("User's favourite colour is blue")
    other = engine.add("User has a dog")
    root = engine.root
    tomb_rel = old.path.replace("entries/global/", "entries/global/deleted/")
    (root / tomb_rel).parent.mkdir(parents=True, exist_ok=True)
    git(root, "mv", old.path, tomb_rel)
    tomb = root / tomb_rel
    tomb.write_text(
        tomb.read_text().replace(
            "source: manual\n", "source: manual\nreplaced_by: hand-1\ndeleted_at: 2025-01-01T00:00:00Z\n"
        )
    )
    (root / "entries/global/facts/20250101T000000Z__hand-1.md").write_text(
        "---\nid: hand-1\nrole: memory\n---\n\nUser's favourite colour is green\n"
    )
    git(root, "add", "-A")
    git(root, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-qm", "switch colour by hand")
    git(root, "mv", other.path, other.path.replace("entries/global/", "entries/global/deleted/"))
    git(root, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-qm", "forget the dog")
    first, second = engine.history(limit=2)
    assert not first.made_by_app and [e.type for e in first.events] == [EventType.DELETE]
    assert first.events[0].old_text == "User has a dog"
    [update] = second.events
    assert update.type == EventType.UPDATE and update.memory_id == old.id
    assert update.old_text == "User's favourite colour is blue"
    assert update.new_text == "User's favourite colour is green" and update.new_id == "hand-1"


def test_log_pages_diff_and_file_history(engine: Any) -> None:
    ids = [engine.add(f"fact number {i}").id for i in range(7)]
    page1 = engine.history(limit=3)
    page2 = engine.history(limit=3, offset=3)
    assert [c.subject for c in page1] == [f"Add fact: fact number {i}" for i in (6, 5, 4)]
    assert [c.subject for c in page2] == [f"Add fact: fact number {i}" for i in (3, 2, 1)]
    patch = engine.diff(page1[0].sha)
    assert "+fact number 6" in patch
    engine.delete(ids[0])
    engine.restore(ids[0])
    hist = engine.memory_history(ids[0])
    assert [c.events[0].type for c in hist] == [EventType.RESTORE, EventType.DELETE, EventType.ADD]


def test_restore_file_as_of_a_commit(engine: Any) -> None:
    m = engine.add("User likes jazz")
    first = engine.history(limit=1)[0].sha
    engine.edit(m.id, text="User likes techno")
    old_bytes = engine._parts.git.show_file(m.path, first)
    assert b"User likes jazz" in old_bytes
    restored = engine.restore_version(m.id, first)
    assert restored.text == "User likes jazz"
    top = engine.history(limit=1)[0]
    assert top.events[0].type == EventType.EDIT and top.trailers["Operation"] == "revert"
