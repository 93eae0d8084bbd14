"""A start skips the digests of memories whose files did not change, and still indexes exactly
what a full pass would (issue #25: at 100,000 memories the two digests of every memory were
~1 s of each warm start, of the CLI's `search` and of the window's "index ready").

A memory's digests are computed from its file (content and path) and, for a turn, from the turn
its keyword text adds (the previous live turn of its conversation): IndexSync records a key of
those beside the digests. Every way the digest inputs can change must change that key: each test
below edits the files while the app is closed and checks what the next start records against a
full pass computed from scratch.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index import index_sync, index_text
from desktop_mem.engine.index.index_sync import INDEX_INPUTS_VERSION, _digest, index_metadata
from desktop_mem.engine.index.index_text import TurnContext
from desktop_mem.engine.models import Memory
from desktop_mem.engine.store import front_matter
from desktop_mem.engine.store.manifest import MANIFEST_NAME, entry_hashes, entry_inputs
from desktop_mem.engine.store.markdown_store import MarkdownStore

pytestmark = pytest.mark.timeout(300)
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def _full_pass(eng: Any) -> dict[str, tuple[str, str]]:
    """What a pass digesting every memory from scratch records (the version before the key)."""
    memories = eng.list_memories(include_deleted=True, include_summaries=True)
    turns = TurnContext()
    turns.update(memories)
    return {m.id: (_digest(m.text), _digest([index_metadata(m), turns.text_for(m)])) for m in memories}


def _recorded(eng: Any) -> dict[str, tuple[str, str]]:
    return {i: entry_hashes(v) for i, v in eng._parts.manifest.indexed.items()}


@pytest.fixture
def digested(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts IndexSync digests (each memory: its text, then its metadata and keyword text)."""
    seen: list[str] = []
    real = index_sync._digest

    def counting(value: Any) -> str:
        seen.append(value if isinstance(value, str) else "meta")
        return real(value)

    monkeypatch.setattr(index_sync, "_digest", counting)
    yield seen


def _conversation(make_config: Callable[..., Any]) -> tuple[Any, dict[str, Memory]]:
    config = make_config()
    with MemoryEngine(config) as eng:
        made = {name: eng.add(f"{name} turn: {text}", conversation_id="trip", role=role,
                              created_at=START + timedelta(minutes=i))
                for i, (name, role, text) in enumerate([
                    ("a", "user", "Shall we book the ferry to Hvar?"),
                    ("b", "assistant", "The morning ferry leaves at seven."),
                    ("c", "user", "Yes, that one."),
                    ("d", "assistant", "Booked."),
                ])}
        made["fact"] = eng.add("The user gets seasick on small boats", source="manual")
        eng.open_index()
        assert _recorded(eng) == _full_pass(eng)
    return config, made


def _reopen(config: Any) -> tuple[Any, Any]:
    eng = MemoryEngine(config)
    return eng, eng.open_index()


def _rewrite(path: Path, **updates: Any) -> None:
    doc = front_matter.parse(front_matter.decode(path.read_bytes()))
    body = updates.pop("body", doc.body)
    path.write_text(front_matter.render(updates, body, doc.yaml_text), encoding="utf-8")


def test_a_warm_start_digests_nothing_and_embeds_nothing(make_config: Callable[..., Any],
                                                         digested: list[str]) -> None:
    config, made = _conversation(make_config)
    digested.clear()
    eng, report = _reopen(config)
    with eng:
        assert (report.embedded, report.metadata_only, report.unchanged) == (0, 0, len(made))
        assert digested == []  # before: two digests of every memory, every start
        assert _recorded(eng) == _full_pass(eng)


def test_each_change_to_what_a_memory_is_indexed_with_is_caught(make_config: Callable[..., Any],
                                                                digested: list[str]) -> None:
    """Text and front-matter edits, a move into deleted/, a turn inserted, removed or moved before
    another: each start re-indexes exactly the memories a full pass finds changed."""
    config, made = _conversation(make_config)
    root = Path(config["store.path"])
    a, b, c, d = (made[k] for k in "abcd")

    def start_after(edit: Callable[[], None], embedded: int, metadata_only: int) -> MemoryEngine:
        edit()
        digested.clear()
        eng, report = _reopen(config)
        with eng:
            assert _recorded(eng) == _full_pass(eng)  # exactly what a pass digesting all records
            assert (report.embedded, report.metadata_only) == (embedded, metadata_only)
            n = len(eng._parts.manifest.indexed)
            assert report.unchanged == n - embedded - metadata_only
        return eng

    # A turn's text: it is embedded again; the next turn's keyword text quotes it.
    start_after(lambda: _rewrite(root / b.path, body="b turn: The evening ferry is cheaper."), 1, 1)
    assert "b turn: The evening ferry is cheaper." in digested
    # Front matter only (the same text): metadata only, of that memory alone.
    start_after(lambda: _rewrite(root / made["fact"].path, source="import"), 0, 1)
    # c moved into deleted/ by hand (a git pull, a file manager): its metadata changes, and d is
    # now indexed with b, the previous live turn.
    moved = c.path.replace("entries/trip/", "entries/trip/deleted/")
    (root / moved).parent.mkdir(parents=True, exist_ok=True)
    start_after(lambda: (root / c.path).rename(root / moved), 0, 2)
    # A turn written between a and b: it is new (embedded) and b's context is now that turn.
    inserted = front_matter.render({"id": "inserted-turn", "role": "user", "conversation_id": "trip",
                                    "created_at": (START + timedelta(seconds=30)).isoformat()},
                                   "x turn: Is there a faster catamaran?")
    inserted_path = root / "entries/trip/turns/user/20260301T090030Z__inserted-turn.md"
    start_after(lambda: inserted_path.write_text(inserted, encoding="utf-8"), 1, 1)
    # That turn removed again: b is indexed with a as before.
    start_after(inserted_path.unlink, 0, 1)
    # a's time moved after d's: b is now its conversation's first turn (no context), a is
    # indexed with d (c is deleted), and a's own metadata (created_at) changed.
    start_after(lambda: _rewrite(root / a.path, created_at=(START + timedelta(hours=1)).isoformat()), 0, 2)
    # And nothing changed: nothing digested.
    start_after(lambda: None, 0, 0)
    assert digested == []
    # An edit and a new turn while the app runs: the next turn is re-indexed at once, and the
    # keys recorded let the next start skip them all.
    with MemoryEngine(config) as eng:
        eng.open_index()
        eng.edit(d.id, text="d turn: Booked the evening ferry.")
        assert _recorded(eng) == _full_pass(eng)
        eng.add("y turn: Which deck?", conversation_id="trip", role="user",
                created_at=START + timedelta(minutes=2, seconds=30))  # between b and d: d's context
        assert _recorded(eng) == _full_pass(eng)
    start_after(lambda: None, 0, 0)
    assert digested == []


def test_a_store_recorded_without_keys_is_keyed_on_its_first_start(make_config: Callable[..., Any],
                                                                   digested: list[str]) -> None:
    """A store the previous version indexed (no keys): nothing is embedded or rewritten in the
    indexes, the keys are recorded in place, and the next start digests nothing."""
    config, made = _conversation(make_config)
    manifest = Path(config["store.path"]) / MANIFEST_NAME
    with sqlite3.connect(manifest) as db:
        db.execute("DROP TABLE indexed_inputs")  # as the version before the keys wrote it
    db.close()
    eng, report = _reopen(config)
    with eng:
        assert (report.embedded, report.metadata_only, report.unchanged) == (0, 0, len(made))
        assert all(entry_inputs(v) for v in eng._parts.manifest.indexed.values())
    digested.clear()
    eng, report = _reopen(config)
    with eng:
        assert (report.embedded, report.unchanged) == (0, len(made))
        assert digested == []


def test_a_memory_an_older_version_re_indexed_is_not_skipped(make_config: Callable[..., Any]) -> None:
    """A version without keys (run on the store in between: a downgrade, or the benchmarks' old
    tree) rewrites only the digests. If the file then returns to its earlier bytes, the key left
    from before must not claim the newer digests: the memory is indexed from its file again."""
    config, made = _conversation(make_config)
    root = Path(config["store.path"])
    fact = made["fact"]
    before = (root / fact.path).read_bytes()
    with sqlite3.connect(root / MANIFEST_NAME) as db:
        keys_then = db.execute("SELECT bound FROM indexed_inputs WHERE id = ?", (fact.id,)).fetchone()
    db.close()
    with MemoryEngine(config) as eng:
        eng.open_index()
        eng.edit(fact.id, text="The user no longer gets seasick")
    with sqlite3.connect(root / MANIFEST_NAME) as db:  # what the older version leaves: its digests,
        db.execute("UPDATE indexed_inputs SET bound = ? WHERE id = ?", (keys_then[0], fact.id))  # our old key
    db.close()
    (root / fact.path).write_bytes(before)  # reverted by hand while the app is closed
    eng, report = _reopen(config)
    with eng:
        assert report.embedded == 1
        assert _recorded(eng) == _full_pass(eng)
        assert [r.memory.id for r in eng.search("seasick on small boats", top_k=1)] == [fact.id]


# What the same files are indexed with, from raw bytes through the parser, the turn context and
# index_metadata, and the source of the functions computing it. When either changes, the keys of
# INDEX_INPUTS_VERSION no longer say "these digests are still right": add the new values under a
# new version, and bump INDEX_INPUTS_VERSION in index_sync.py (every memory is then digested once
# more at the next start; only those whose digests differ are re-indexed).
PINNED = {1: ("a22f4589a9c71cdd", "8bb03f4d892514ef")}  # 1: not released before this session
_FILES = {
    "entries/trip/turns/user/20260301T090000Z__t1.md":
        b"---\nid: t1\nrole: user\ncreated_at: 2026-03-01T10:00:00+01:00\n---\n\n" + b"Long question. " * 40,
    "entries/trip/turns/assistant/20260301T090100Z__t2.md":
        b"---\nid: t2\nrole: assistant\nsource: chat\ncreated_at: 2026-03-01T09:01:00Z\n---\n\nThe answer.\n",
    "entries/trip/deleted/turns/user/20260301T090200Z__t3.md":
        b"---\nid: t3\nrole: user\ndeleted_at: 2026-03-02T00:00:00Z\n---\n\nA deleted reply.\n",
    "entries/trip/turns/user/20260301T090300Z__t4.md": b"Yes, that one! No front matter.\n",
    "entries/global/facts/f1.md":
        b"---\nid: f1\nrole: memory\nkind: fact\nreplaced_by: f2\nvalid_from: 2026-01-01\n"
        b"colour: teal\n---\n\n"
        b"The user \xe2\x80\x94 likes t\xc3\xa9a.\n",
    "entries/trip/summaries/s1.md":
        b"---\nid: s1\nrole: summary\nsummary_kind: conversation\nsummarized_count: 3\n---\n\n"
        b"A ferry trip.\n",
}


def _outputs_pin() -> str:
    store = MarkdownStore.__new__(MarkdownStore)  # memory_from_bytes reads nothing of the store
    memories = [store.memory_from_bytes(rel, raw) for rel, raw in _FILES.items()]
    turns = TurnContext()
    turns.update(memories)
    out = [[m.id, index_metadata(m), turns.text_for(m), m.text] for m in memories]
    return hashlib.sha1(json.dumps(out, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _source_pin() -> str:
    parts = [index_sync.index_metadata, index_sync._digest, index_text.index_text, TurnContext.text_for,
             TurnContext.previous, TurnContext.update, TurnContext._current]
    source = "".join(inspect.getsource(p) for p in parts)
    extra = f"{index_text.CONTEXT_CHARS}{sorted(index_text.TURN_ROLES)}"
    return hashlib.sha1((source + extra).encode()).hexdigest()[:16]


def test_what_a_file_is_indexed_with_is_pinned_to_the_inputs_version() -> None:
    assert len(set(PINNED.values())) == len(PINNED), "each version pins what it indexes"
    assert max(PINNED) == INDEX_INPUTS_VERSION
    assert (_outputs_pin(), _source_pin()) == PINNED[INDEX_INPUTS_VERSION], (
        "what the same files are indexed with changed: bump INDEX_INPUTS_VERSION (index_sync.py) and "
        "pin the new values under it")
