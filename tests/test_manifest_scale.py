"""The manifest at scale (issue #25): kept in SQLite, written row by row, read one row at a time,
and an old memory_index.json carried over without a re-parse or a re-embed."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.store.manifest import (
    LEGACY_NAME,
    MANIFEST_NAME,
    Manifest,
    entry_hashes,
    indexed_entry,
    memory_to_json,
)
from desktop_mem.engine.store.markdown_store import MarkdownStore

pytestmark = pytest.mark.timeout(300)


def _rows(store: Path) -> dict[str, str]:
    with sqlite3.connect(store / MANIFEST_NAME) as db:
        rows = dict(db.execute("SELECT path, memory FROM files"))
    db.close()
    return rows


def test_a_save_after_one_edit_writes_that_file_only(make_config: Callable[..., Any]) -> None:
    """At 100k memories the JSON manifest was rewritten whole (84 MB) by every save; now an add
    writes its own row and leaves every other row as it was."""
    config = make_config()
    with MemoryEngine(config) as eng:
        kept = eng.add("The user grows tomatoes on the balcony")
        root = eng.root
    marker = _rows(root)[kept.path].replace("on the balcony", "on the balcony (row left alone)")
    with sqlite3.connect(root / MANIFEST_NAME) as db:
        db.execute("UPDATE files SET memory = ? WHERE path = ?", (marker, kept.path))
    db.close()
    with MemoryEngine(config) as eng:
        added = eng.add("The user plays the cello on Sundays")
    rows = _rows(root)
    assert set(rows) == {kept.path, added.path}
    assert rows[kept.path] == marker  # not rewritten
    assert "The user plays the cello on Sundays" in rows[added.path]


def test_a_removed_file_leaves_the_manifest(make_config: Callable[..., Any]) -> None:
    config = make_config()
    with MemoryEngine(config) as eng:
        gone = eng.add("The user lived in Porto")
        stays = eng.add("The user lives in Ghent")
        root = eng.root
    (root / gone.path).unlink()
    with MemoryEngine(config) as eng:
        assert eng.lookup(gone.id) is None
    assert set(_rows(root)) == {stays.path}


def test_memories_from_the_manifest_share_their_repeated_values(make_config: Callable[..., Any]) -> None:
    """100k memories in a few conversations hold one copy of each conversation id and source,
    not one per memory."""
    config = make_config()
    with MemoryEngine(config) as eng:
        ids = [eng.add(f"The user mentioned topic number {i}", conversation_id="kitchen").id
               for i in range(3)]
    with MemoryEngine(config) as eng:
        first, *others = (eng.get(i) for i in ids)
        for other in others:
            assert other.conversation_id is first.conversation_id
            assert other.source is first.source
            assert other.extra is first.extra  # the one shared empty mapping (6 MB at 100k)
        with pytest.raises(TypeError):
            first.extra["note"] = "shared by every memory: must not change"  # type: ignore[index]
        assert eng.get(ids[1]).extra == {}
        fresh = eng.add("The user mentioned topic number 3", conversation_id="kitchen")
        assert json.loads(json.dumps(memory_to_json(fresh)))["extra"] == {}


def test_an_old_json_manifest_is_carried_over_without_parsing_or_re_embedding(
    make_config: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A store last opened by a version with memory_index.json: the first start parses no file,
    embeds nothing again, and replaces the JSON with the SQLite manifest."""
    config = make_config()
    with MemoryEngine(config) as eng:
        facts = [eng.add(t) for t in ("The user has a greyhound named Biscuit", "The user is a nurse")]
        eng.open_index()
        root = eng.root
        indexed = dict(eng._parts.manifest.indexed)
        embedder = eng._parts.manifest.embedder_name
        stats = {m.path: (root / m.path).stat() for m in facts}
    legacy = {"version": 1, "embedder": embedder,
              "files": {m.path: {"mtime_ns": stats[m.path].st_mtime_ns, "size": stats[m.path].st_size,
                                 "hash": m.content_hash, "memory": memory_to_json(m)} for m in facts},
              "indexed": {k: list(entry_hashes(v)) for k, v in indexed.items()}}  # [text hash, meta hash]
    (root / MANIFEST_NAME).unlink()
    (root / LEGACY_NAME).write_text(json.dumps(legacy, default=str), encoding="utf-8")
    parsed: list[str] = []
    real_read = MarkdownStore.read
    monkeypatch.setattr(MarkdownStore, "read", lambda self, rel: parsed.append(rel) or real_read(self, rel))
    with MemoryEngine(config) as eng:
        assert [eng.get(m.id).text for m in facts] == [m.text for m in facts]
        report = eng.open_index()
        assert report.embedded == 0
        assert eng.search("greyhound")[0].memory.id == facts[0].id
    assert parsed == []
    assert not (root / LEGACY_NAME).exists()
    assert set(_rows(root)) == {m.path for m in facts}


def test_another_tools_memory_index_json_is_left_alone(make_config: Callable[..., Any]) -> None:
    config = make_config()
    store = Path(config.store_path)
    store.mkdir(parents=True)
    foreign = json.dumps({"version": "agent-cli 3", "entries": []})
    (store / LEGACY_NAME).write_text(foreign, encoding="utf-8")
    with MemoryEngine(config) as eng:
        eng.add("The user likes rain")
    assert (store / LEGACY_NAME).read_text(encoding="utf-8") == foreign


def test_a_damaged_manifest_costs_a_re_parse_not_the_memories(make_config: Callable[..., Any]) -> None:
    config = make_config()
    with MemoryEngine(config) as eng:
        fact = eng.add("The user speaks Dutch")
        root = eng.root
    (root / MANIFEST_NAME).write_bytes(b"not a database" * 100)
    with MemoryEngine(config) as eng:
        assert eng.get(fact.id).text == "The user speaks Dutch"
        eng.add("The user speaks French")
    assert len(_rows(root)) == 2


def test_damaged_rows_are_parsed_again_from_their_files(make_config: Callable[..., Any]) -> None:
    """Another tool (or a crash) left rows that do not parse: each costs a re-read of its file,
    never a wrong memory or a failed start."""
    config = make_config()
    with MemoryEngine(config) as eng:
        facts = [eng.add(f"The user keeps bee hive number {i}") for i in range(5)]
        root = eng.root
    db = sqlite3.connect(root / MANIFEST_NAME)
    rows = dict(db.execute("SELECT path, memory FROM files"))
    damage = [lambda t: t[:-7],  # cut short
              lambda t: t + ' {"x": 1}',  # something after the value
              lambda t: t.replace('"The user', '"Someone else', 1) + "]",  # another text, then junk
              lambda t: " " + t.replace(t.split(",")[5], "17", 1),  # a number for a date
              lambda t: t.replace(t[2:10], "00000000", 1)]  # another row format's tag
    with db:
        for fact, hurt in zip(facts, damage, strict=True):
            db.execute("UPDATE files SET memory = ? WHERE path = ?", (hurt(rows[fact.path]), fact.path))
    db.close()
    parsed: list[str] = []
    real_read = MarkdownStore.read
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(MarkdownStore, "read", lambda self, rel: parsed.append(rel) or real_read(self, rel))
        with MemoryEngine(config) as eng:
            assert [eng.get(f.id).text for f in facts] == [f.text for f in facts]
    assert sorted(parsed) == sorted(f.path for f in facts)


def test_a_save_does_not_wait_for_a_start_reading_the_rows(tmp_path: Path) -> None:
    """A start streams the manifest for seconds at 100k; a save meanwhile (the index thread, or
    the writer process while a reader process starts) must not wait for it nor fail as
    'database is locked'."""
    from datetime import UTC, datetime

    from desktop_mem.engine.models import Memory
    from desktop_mem.engine.store.manifest import Manifest

    path = tmp_path / MANIFEST_NAME
    first = Manifest(path)
    memories = [Memory(id=f"id-{i}", role="memory", conversation_id="c", text=f"fact {i}",
                       created_at=datetime(2025, 1, 1, tzinfo=UTC), path=f"entries/c/facts/{i}.md")
                for i in range(2500)]  # more rows than one chunk of the stream
    for memory in memories:
        first.remember_file(memory, (1, 2))
    first.save()
    rows = Manifest(path).reuse({m.path: (1, 2) for m in memories})
    seen = [next(rows).id]  # a start in the middle of its rows
    writer = Manifest(path)
    writer.indexed["id-0"] = indexed_entry("a" * 16, "b" * 16)
    writer.save()
    seen += [m.id for m in rows]
    assert sorted(set(seen)) == sorted(m.id for m in memories)
    assert Manifest(path).indexed["id-0"] == indexed_entry("a" * 16, "b" * 16)


def test_a_start_that_never_reads_the_indexed_table_keeps_it(make_config: Callable[..., Any]) -> None:
    """The window's start reads what the index holds only when the index opens (~0.2 s less at
    100k); a session that saves files before that, or never opens the index (a CLI `add`), must
    not lose the record, or the next start would re-embed the whole store."""
    config = make_config()
    with MemoryEngine(config) as eng:
        first = eng.add("The user keeps two cats")
        eng.open_index()
        indexed = dict(eng._parts.manifest.indexed)
        root = eng.root
    assert first.id in indexed
    with MemoryEngine(config) as eng:  # no index opened: only file rows are saved
        (root / first.path).unlink()  # a file gone while closed: its row is dropped at the save
        eng.add("The user keeps a parrot")
    with sqlite3.connect(root / MANIFEST_NAME) as db:
        rows = db.execute("SELECT id, text_hash, meta_hash FROM indexed")
        kept = {i: (t, m) for i, t, m in rows}
    db.close()
    assert kept == {i: entry_hashes(v) for i, v in indexed.items()}
    assert Manifest(root / MANIFEST_NAME).indexed == indexed  # with each memory's inputs key
    with MemoryEngine(config) as eng:
        report = eng.open_index()
    assert report.embedded == 1  # the parrot only, not everything again


def test_a_row_with_a_role_that_does_not_exist_is_parsed_again(make_config: Callable[..., Any]) -> None:
    """Rows build memories without the dataclass's checks (issue #25: 100k at start); a row
    another tool wrote with a role that is not one of ours must still cost a re-read of the file,
    never a memory with a made-up role."""
    config = make_config()
    with MemoryEngine(config) as eng:
        fact = eng.add("The user repairs old radios")
        root = eng.root
    db = sqlite3.connect(root / MANIFEST_NAME)
    with db:
        row = db.execute("SELECT memory FROM files WHERE path = ?", (fact.path,)).fetchone()[0]
        db.execute("UPDATE files SET memory = ? WHERE path = ?",
                   (row.replace('"memory"', '"wizard"', 1), fact.path))
    db.close()
    with MemoryEngine(config) as eng:
        again = eng.get(fact.id)
    assert again == fact and again.role == "memory"
