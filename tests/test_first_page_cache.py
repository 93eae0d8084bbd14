"""A window opens a large store on the last session's first page of the memory list while the
catalog loads (issue #36): the page is what the full listing would show, it is never used once a
file on it changed, and every read or write made meanwhile waits for the load and then answers as
if the store had opened whole."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.models import Operation, utc_now
from desktop_mem.engine.store.first_page import FIRST_PAGE_NAME


def _fill(config: Any, n: int) -> list[str]:
    """A store of n facts, each a minute newer than the last; returns their ids, newest first."""
    start = utc_now() - timedelta(days=30)
    with MemoryEngine.open(config) as engine:
        with engine._parts.writer.transaction(Operation.IMPORT, f"{n} facts") as tx:
            for i in range(n):
                tx.add(f"Fact {i}: the user keeps bees number {i}", conversation_id=f"conv-{i % 3}",
                       kind="fact", source="import", created_at=start + timedelta(minutes=i))
        listed = engine.list_page(0, 10_000)
        assert listed.total == n
        return [m.id for m in listed.memories]


def test_the_next_start_lists_the_first_page_kept_at_close(make_config: Callable[..., Any]) -> None:
    config = make_config()
    newest_first = _fill(config, 620)
    engine = MemoryEngine.open_first(config)
    try:
        assert not engine.catalog_loaded
        page = engine.cached_first_page()
        assert page is not None
        assert page.total == 620
        assert [m.id for m in page.memories] == newest_first[:500]  # one page, as the pane asks
        engine.finish_opening()
        assert engine.catalog_loaded
        full = engine.list_page(0, 500)
        assert full.memories == page.memories and full.total == page.total
    finally:
        engine.close()


def test_a_file_changed_while_closed_drops_the_kept_page(make_config: Callable[..., Any]) -> None:
    config = make_config()
    newest_first = _fill(config, 40)
    with MemoryEngine.open(config) as engine:
        path = config.store_path / engine.get(newest_first[3]).path
    path.write_text(path.read_text(encoding="utf-8").replace("keeps bees", "keeps wasps"), encoding="utf-8")
    engine = MemoryEngine.open_first(config)
    try:
        assert engine.cached_first_page() is None  # the window waits for the catalog instead
        engine.finish_opening()
        assert "wasps" in engine.get(newest_first[3]).text
    finally:
        engine.close()


def test_a_file_written_behind_the_open_engine_drops_the_kept_page(make_config: Callable[..., Any]) -> None:
    """No watcher saw the edit: the page kept at close holds the old text, with the stat the file
    had when that text was read, not the one it has at close."""
    config = make_config()
    newest_first = _fill(config, 10)
    with MemoryEngine.open(config) as engine:
        path = config.store_path / engine.get(newest_first[0]).path
        path.write_text(path.read_text(encoding="utf-8").replace("keeps bees", "keeps barn owls"),
                        encoding="utf-8")
    engine = MemoryEngine.open_first(config)
    try:
        assert engine.cached_first_page() is None
        engine.finish_opening()
        assert "barn owls" in engine.get(newest_first[0]).text
    finally:
        engine.close()


def test_a_hostile_kept_page_is_not_used(make_config: Callable[..., Any]) -> None:
    config = make_config()
    _fill(config, 5)
    cache = Path(config.store_path) / FIRST_PAGE_NAME
    data = json.loads(cache.read_text(encoding="utf-8"))
    outside = Path(config.store_path).parent / "outside.md"
    outside.write_text("not a memory", encoding="utf-8")
    st = outside.stat()
    tries = [
        b"not json",
        json.dumps({**data, "total": 1}).encode(),  # fewer than its rows
        json.dumps({**data, "rows": [["../outside.md", st.st_mtime_ns, st.st_size, data["rows"][0][3]]]})
        .encode(),
        json.dumps({**data, "rows": [[*data["rows"][0][:3], '["tag"]']]}).encode(),
        json.dumps({**data, "rows": [data["rows"][0][:3]]}).encode(),
        json.dumps({**data, "total": True}).encode(),
    ]
    for text in tries:
        cache.write_bytes(text)
        engine = MemoryEngine.open_first(config)
        try:
            assert engine.cached_first_page() is None, text[:80]
            engine.finish_opening()
        finally:
            engine.close()


def test_reads_and_writes_made_while_the_catalog_loads_wait_for_it(make_config: Callable[..., Any]) -> None:
    config = make_config()
    newest_first = _fill(config, 30)
    with MemoryEngine.open(config) as engine:
        hand_edited = config.store_path / engine.get(newest_first[0]).path
    # changed while closed: the start commits it before anyone reads or writes
    hand_edited.write_text(hand_edited.read_text(encoding="utf-8").replace("keeps bees", "keeps goats"),
                           encoding="utf-8")
    engine = MemoryEngine.open_first(config)
    results: dict[str, Any] = {}

    def read() -> None:
        results["page"] = engine.list_page(0, 5)

    def write() -> None:
        results["added"] = engine.add("The user's goats are called Ada and Bo", conversation_id="conv-1")

    try:
        threads = [threading.Thread(target=read), threading.Thread(target=write)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(0.5)
        assert not results  # both wait: the catalog is not loaded
        engine.finish_opening()
        for thread in threads:
            thread.join(30)
        assert results["page"].total in (30, 31)
        assert "goats" in engine.get(newest_first[0]).text
        added = results["added"]
        assert engine.get(added.id).text == "The user's goats are called Ada and Bo"
        subjects = [c.subject for c in engine.history(limit=5)]
        assert "Record changes made while desktop-mem was closed" in subjects
        assert engine.list_page(0, 1).total == 31
    finally:
        engine.close()


def test_a_store_closed_before_its_catalog_loaded_keeps_its_page(make_config: Callable[..., Any]) -> None:
    config = make_config()
    _fill(config, 12)
    cache = Path(config.store_path) / FIRST_PAGE_NAME
    kept = cache.read_bytes()
    MemoryEngine.open_first(config).close()  # a window closed at once: nothing read, nothing written
    assert cache.read_bytes() == kept
    with MemoryEngine.open(config) as engine:
        assert engine.list_page(0, 1).total == 12
