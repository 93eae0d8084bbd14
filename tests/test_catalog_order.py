"""The catalog keeps every memory in order (oldest first, then by path) as it changes, so a
listing filters instead of sorting: two sorts of 100,000 memories held Python's lock ~0.1 s in
each chat turn and stalled the window while a reply streamed (issue #25)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from desktop_mem.engine.facade import MemoryEngine


def _sorted(engine: MemoryEngine) -> list[Any]:
    everything = list(engine._parts.catalog._by_path.values())  # noqa: SLF001 - the reference answer
    return sorted(everything, key=lambda m: (m.created_at, m.path))


def test_every_change_keeps_the_catalog_in_order(engine: MemoryEngine) -> None:
    start = datetime(2025, 3, 1, tzinfo=UTC)
    facts = [engine.add(f"The user planted tree number {i}", conversation_id=f"c{i % 3}",
                        created_at=start + timedelta(hours=(i * 7) % 11)) for i in range(12)]
    engine.edit(facts[3].id, text="The user planted an old olive tree")
    engine.delete(facts[5].id)
    engine.delete(facts[8].id)
    engine.restore(facts[8].id)
    # a hand edit that moves a memory in time (another tool, a sync remote)
    path = engine.root / facts[0].path
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"created_at: .*", "created_at: '2024-01-01T00:00:00+00:00'", text, count=1),
                    encoding="utf-8")
    engine.apply_external_changes([facts[0].path])
    path = engine.root / facts[1].path
    path.unlink()  # and one removed by hand
    engine.apply_external_changes([facts[1].path])

    listed = engine._parts.catalog.select(include_deleted=True)  # noqa: SLF001
    assert listed == _sorted(engine)
    assert listed[0].id == facts[0].id  # moved back in time: first now
    assert facts[1].id not in {m.id for m in listed}
    assert len(engine._parts.catalog._ordered) == len(engine._parts.catalog)  # noqa: SLF001 - nothing left behind
    live = engine.list_memories()
    assert live == [m for m in listed if not m.deleted]
    engine.refresh()  # a full re-read gives the same order
    assert engine._parts.catalog.select(include_deleted=True) == _sorted(engine)  # noqa: SLF001
