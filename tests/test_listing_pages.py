"""engine.list_page: one page of a listing and its total, so a 100k store is listed a page at a
time (the memory browser); sorted over every memory, current after every write (issue #25)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from desktop_mem.engine.models import Operation


def _facts(engine: Any, n: int) -> list[Any]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    with engine._parts.writer.transaction(Operation.IMPORT, f"{n} facts") as tx:
        for i in range(n):
            tx.add(f"Fact {i:02d} about the garden", conversation_id="garden", kind="fact",
                   source="import", created_at=start + timedelta(minutes=i))
    return engine.list_memories()


def test_a_page_holds_its_rows_only_and_the_total(engine: Any) -> None:
    oldest_first = _facts(engine, 9)
    newest_first = list(reversed(oldest_first))
    first = engine.list_page(0, 4)
    assert first.total == 9 and [m.id for m in first.memories] == [m.id for m in newest_first[:4]]
    last = engine.list_page(8, 4)
    assert [m.id for m in last.memories] == [newest_first[8].id]
    assert engine.list_page(9, 4).memories == ()


def _by_text(memory: Any) -> str:
    return str(memory.text).lower()


def test_a_sorted_listing_orders_every_memory_and_follows_writes(engine: Any) -> None:
    _facts(engine, 9)
    by_text = engine.list_page(0, 3, key=_by_text)
    assert [m.text[:7] for m in by_text.memories] == ["Fact 00", "Fact 01", "Fact 02"]
    backwards = engine.list_page(0, 2, key=_by_text, descending=True)
    assert [m.text[:7] for m in backwards.memories] == ["Fact 08", "Fact 07"]
    engine.add("A fact that sorts first", conversation_id="garden")  # the same order, asked again
    again = engine.list_page(0, 3, key=_by_text)
    assert again.total == 10 and again.memories[0].text == "A fact that sorts first"
    engine.delete(again.memories[0].id)
    assert engine.list_page(0, 3, key=_by_text).total == 9
    deleted = engine.list_page(0, 20, include_deleted=True)
    assert deleted.total == 10 and deleted.any_deleted


def test_a_page_filters_like_the_list(engine: Any) -> None:
    _facts(engine, 5)
    engine.add("The user likes rain", conversation_id="weather")
    page = engine.list_page(0, 10, conversation_id="weather")
    assert page.total == 1 and page.memories[0].text == "The user likes rain"
