"""What the engine holds per memory once a store is open (issue #25: the window's RSS at 100,000
memories). Sizes are measured with sys.getsizeof and tracemalloc, with a margin; never timed."""

from __future__ import annotations

import sqlite3
import sys
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.index_text import TurnContext
from desktop_mem.engine.models import Memory
from desktop_mem.engine.store.manifest import MANIFEST_NAME, Manifest, entry_hashes, indexed_entry

pytestmark = pytest.mark.timeout(300)


def _indexed_store(make_config: Callable[..., Any]) -> tuple[Any, list[str]]:
    config = make_config()
    with MemoryEngine(config) as eng:
        ids = [eng.add("The user keeps two cats").id, eng.add("The user bakes bread on Sundays").id,
               eng.add("Did you go to the pottery workshop?", conversation_id="c", role="assistant").id,
               eng.add("Yes, it was amazing!", conversation_id="c", role="user").id]
        eng.open_index()
    return config, ids


def test_the_index_record_shares_the_catalogs_id_strings(make_config: Callable[..., Any]) -> None:
    """The record of what the indexes hold is keyed by the very id strings the catalog's memories
    hold, not by a copy read from the manifest (85 bytes a memory: ~9 MB at 100,000)."""
    config, ids = _indexed_store(make_config)
    with MemoryEngine(config) as eng:  # a restart: the record is read from the manifest file
        assert eng.open_index().embedded == 0
        keys = {key: key for key in eng._parts.manifest.indexed}
        for memory_id in ids:
            memory = eng.get(memory_id)
            assert keys[memory.id] is memory.id


def test_the_index_record_costs_under_56_bytes_a_memory(make_config: Callable[..., Any]) -> None:
    """Each memory's two index hashes are held in one small value (48 bytes, was 82 as text), and
    a restart still finds every memory indexed: nothing is embedded again."""
    config, ids = _indexed_store(make_config)
    with MemoryEngine(config) as eng:
        assert eng.open_index().embedded == 0
        record = eng._parts.manifest.indexed
        assert sorted(record) == sorted(ids)
        assert max(sys.getsizeof(value) for value in record.values()) <= 56
        changed = eng.edit(ids[0], text="The user keeps three cats")
        assert entry_hashes(record[changed.id]) != entry_hashes(record[ids[1]])
    with MemoryEngine(config) as eng:
        assert eng.open_index().embedded == 0  # the edit's new hashes were saved and read back
        assert [r.memory.id for r in eng.search("three cats", top_k=1)] == [ids[0]]


def test_hashes_of_another_form_are_kept_exactly(tmp_path: Path) -> None:
    """A row whose hashes are not what this version writes (another version's, or damaged) is
    written back as it was read, and compares as before: equal only to the same two texts."""
    path = tmp_path / MANIFEST_NAME
    odd = {"upper": ("ABCDEF0123456789", "f" * 16), "short": ("abc", "def"),
           "spaced": (" " + "a" * 15, "b" * 16), "prefixed": ("0x" + "a" * 14, "b" * 16),
           "signed": ("+" + "a" * 15, "b" * 16), "empty": ("", ""), "zeros": ("0" * 16, "00ff" * 4)}
    first = Manifest(path)
    for key, (text_hash, meta_hash) in odd.items():
        first.indexed[key] = indexed_entry(text_hash, meta_hash)
        assert entry_hashes(first.indexed[key]) == (text_hash, meta_hash)
    first.save()
    first.close()
    with sqlite3.connect(path) as db:
        assert {i: (t, m) for i, t, m in db.execute("SELECT id, text_hash, meta_hash FROM indexed")} == odd
    db.close()
    again = Manifest(path)
    assert {key: entry_hashes(value) for key, value in again.indexed.items()} == odd
    assert again.indexed["upper"] != indexed_entry("abcdef0123456789", "f" * 16)  # as text: case counts
    assert again.indexed["zeros"] == indexed_entry("0" * 16, "00ff" * 4)
    again.close()


def test_the_turn_context_holds_under_205_bytes_a_turn() -> None:
    """The index's record of each turn's place in its conversation (a turn is indexed with the
    one before it) costs ~180 bytes a turn beside the memory itself (was 240: ~4 MB more at 70,000
    turns), and building it for a whole store peaks at under 320 a turn (was 386)."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    turns = [Memory(id=f"{i:08d}-5f2c-4d1e-9a7b-000000000000", role="user" if i % 2 else "assistant",
                    conversation_id=f"c{i % 20}", text=f"turn {i}", created_at=start + timedelta(seconds=i),
                    path=f"entries/c{i % 20}/turns/user/{i:08d}.md") for i in range(20_000)]
    tracemalloc.start()
    try:
        context = TurnContext()
        context.update(turns)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held / len(turns) < 205
    assert peak / len(turns) < 320
    assert context.text_for(turns[25]) == "turn 25\n\n> turn 5"  # still indexed with the turn before
    assert context.text_for(turns[5]) == "turn 5"  # its conversation's first
    assert context.memory(turns[7].id) is turns[7]
