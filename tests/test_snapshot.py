"""A chat path's snapshot of the store (engine/chat/snapshot.py): one copy of the catalog's list,
its questions answered from that copy however the store changes meanwhile, and the files the
path itself wrote taken in (issue #25: grouped when asked, not 100,000 memories up front)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from desktop_mem.engine.chat.snapshot import ConversationSnapshot
from desktop_mem.engine.models import Memory

START = datetime(2025, 1, 1, tzinfo=UTC)


def _memory(i: int, conv: str, role: str = "memory", *, mid: str | None = None, deleted: bool = False,
            text: str | None = None) -> Memory:
    mid = mid or f"id-{i}"
    folder = f"entries/deleted/{conv}" if deleted else f"entries/{conv}"
    return Memory(id=mid, role=role, conversation_id=conv, text=text or f"memory {i}",
                  created_at=START + timedelta(minutes=i), path=f"{folder}/{i}__{mid}.md",
                  deleted_at=START if deleted else None)


class _Catalog:
    def __init__(self, memories: list[Memory]) -> None:
        self.memories = memories

    def list_memories(self, *, include_deleted: bool = False) -> list[Memory]:
        return [m for m in self.memories if include_deleted or not m.deleted]


def test_questions_are_answered_from_the_moment_it_was_taken() -> None:
    memories = [_memory(0, "kitchen"), _memory(1, "garden", "user"), _memory(2, "kitchen", "user"),
                _memory(3, "global"), _memory(4, "kitchen", "summary")]
    catalog = _Catalog(memories)
    snap = ConversationSnapshot.take(catalog, frozenset())
    catalog.memories = [_memory(9, "kitchen")]  # the store moves on
    assert [m.id for m in snap.list_memories(conversation_id="kitchen")] == ["id-0", "id-2", "id-4"]
    assert [m.id for m in snap.list_memories(conversation_id="kitchen", role="memory")] == ["id-0"]
    assert [m.id for m in snap.list_memories(role="summary")] == ["id-4"]
    assert [m.id for m in snap.transcript("kitchen")] == ["id-2"]
    assert snap.lookup("id-3") is memories[3] and snap.lookup("id-9") is None


def test_held_back_memories_are_left_out_but_keep_their_place_in_the_transcript() -> None:
    turns = [_memory(0, "kitchen", "user"), _memory(1, "kitchen", "assistant"), _memory(2, "kitchen", "user")]
    snap = ConversationSnapshot.take(_Catalog(turns), frozenset({"id-1"}))
    assert [m.id for m in snap.list_memories(conversation_id="kitchen")] == ["id-0", "id-2"]
    assert snap.lookup("id-1") is None
    assert [m.id for m in snap.transcript("kitchen")] == ["id-0", "id-1", "id-2"]


def test_a_live_copy_wins_over_its_tombstone_whatever_the_order() -> None:
    live, tomb = _memory(0, "kitchen", mid="same"), _memory(1, "kitchen", mid="same", deleted=True)
    for order in ([live, tomb], [tomb, live]):
        snap = ConversationSnapshot.take(_Catalog(order), frozenset())
        assert snap.lookup("same") is live
        assert [m.path for m in snap.list_memories(conversation_id="kitchen", include_deleted=True)] == [
            m.path for m in order]


def test_the_paths_own_writes_are_taken_in_after_questions_were_asked() -> None:
    memories = [_memory(0, "kitchen", "user"), _memory(1, "kitchen", "assistant")]
    snap = ConversationSnapshot.take(_Catalog(memories), frozenset())
    assert [m.id for m in snap.transcript("kitchen")] == ["id-0", "id-1"]  # grouped before
    assert snap.lookup("id-0") is memories[0]  # the lookup built before
    turn = _memory(2, "kitchen", "user")
    edited = _memory(1, "kitchen", "assistant", text="memory 1, edited")
    snap.including(turn, None, edited)
    assert [m.text for m in snap.transcript("kitchen")] == ["memory 0", "memory 1, edited", "memory 2"]
    assert snap.lookup("id-2") is turn and snap.lookup("id-1") is edited
    assert len(snap.list_memories(include_deleted=True)) == 3  # a new version takes its file's place
    assert snap.list_memories(conversation_id="garden") == []
