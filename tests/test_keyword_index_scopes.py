"""KeywordIndex at scale (issue #25): scopes matched inside FTS5, an old index upgraded in place,
and a huge memory indexed only up to a cap. A real SQLite FTS5 file in tmp_path."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from desktop_mem.engine.index.keyword_index import MAX_INDEXED_CHARS, KeywordDoc, KeywordIndex

# Conversation ids a user or an import may bring: spaces, quotes, FTS5 operators, non-ASCII.
HOSTILE_CONVERSATIONS = ["c1", "a b", 'say "hi"', "NOT", "c1 OR global", "Zürich-trip", "x*", "(c1)",
                         "global"]


def _ids(index: KeywordIndex, text: str, **kwargs: object) -> set[str]:
    return {hit.id for hit in index.query(text, 50, **kwargs)}  # type: ignore[arg-type]


def test_a_scoped_search_returns_exactly_its_conversations_whatever_their_names(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "kw.sqlite3")
    try:
        docs = [KeywordDoc(f"{i}-{role}", f"We talked about the lighthouse trip number {i}.", conv, role)
                for i, conv in enumerate(HOSTILE_CONVERSATIONS) for role in ("user", "summary")]
        index.upsert(docs)
        for i, conv in enumerate(HOSTILE_CONVERSATIONS):
            assert _ids(index, "lighthouse trip", conversation_ids=[conv]) == {f"{i}-user", f"{i}-summary"}
            no_summary = _ids(index, "lighthouse", conversation_ids=[conv], exclude_roles=["summary"])
            assert no_summary == {f"{i}-user"}
            assert _ids(index, "lighthouse", conversation_ids=[conv], roles=["summary"]) == {f"{i}-summary"}
        both = _ids(index, "lighthouse", conversation_ids=["a b", "global"], roles=["user"])
        where = HOSTILE_CONVERSATIONS.index
        assert both == {f"{where('a b')}-user", f"{where('global')}-user"}
        assert len(_ids(index, "lighthouse")) == 2 * len(HOSTILE_CONVERSATIONS)
    finally:
        index.close()


def test_a_deleted_or_moved_memory_leaves_its_old_scope(tmp_path: Path) -> None:
    index = KeywordIndex(tmp_path / "kw.sqlite3")
    try:
        index.upsert([KeywordDoc("m1", "Kayak rental on Saturday", "c1", "user")])
        index.upsert([KeywordDoc("m1", "Kayak rental on Saturday", "c1", "user", deleted=True)])
        assert _ids(index, "kayak", conversation_ids=["c1"]) == set()
        assert _ids(index, "kayak", conversation_ids=["c1"], include_deleted=True) == {"m1"}
        index.upsert([KeywordDoc("m1", "Kayak rental on Saturday", "c2", "user")])
        assert _ids(index, "kayak", conversation_ids=["c1"], include_deleted=True) == set()
        assert _ids(index, "kayak", conversation_ids=["c2"]) == {"m1"}
    finally:
        index.close()


def _old_layout(path: Path, docs: list[KeywordDoc]) -> None:
    """A keyword index as releases before the `tags` column wrote it."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    conn.executescript(
        """
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            id UNINDEXED, conversation_id UNINDEXED, role UNINDEXED, kind UNINDEXED,
            deleted UNINDEXED, text, tokenize = 'porter unicode61 remove_diacritics 2');
        CREATE TABLE memory_rows (id TEXT PRIMARY KEY, fts_rowid INTEGER NOT NULL) WITHOUT ROWID;
        """
    )
    for rowid, d in enumerate(docs, start=1):
        conn.execute("INSERT INTO memories_fts(rowid, id, conversation_id, role, kind, deleted, text) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?)", (rowid, d.id, d.conversation_id, d.role, d.kind,
                                                      int(d.deleted), d.text))
        conn.execute("INSERT INTO memory_rows(id, fts_rowid) VALUES (?, ?)", (d.id, rowid))
    conn.close()


def test_an_index_written_before_the_upgrade_keeps_every_memory_and_its_scopes(tmp_path: Path) -> None:
    path = tmp_path / "keyword_index.sqlite3"
    docs = [
        KeywordDoc("m1", "The user's greyhound Biscuit hates thunderstorms.", "global", "memory", "fact"),
        KeywordDoc("m2", "Biscuit the greyhound chased a hare.", "c1", "user"),
        KeywordDoc("m3", "Greyhound racing is on tonight.", "c2", "assistant"),
        KeywordDoc("m4", "An old greyhound note.", "c1", "memory", deleted=True),
        KeywordDoc("m5", "Summary: greyhound stories.", "c1", "summary"),
    ]
    _old_layout(path, docs)
    index = KeywordIndex(path)  # upgrades in place: nothing to re-embed, nothing lost
    try:
        assert index.count() == 5 and index.ids() == {"m1", "m2", "m3", "m4", "m5"}
        scoped = _ids(index, "greyhound", conversation_ids=["c1", "global"], exclude_roles=["summary"])
        assert scoped == {"m1", "m2"}
        assert _ids(index, "greyhound", conversation_ids=["c2"]) == {"m3"}
        assert _ids(index, "greyhound", conversation_ids=["c1"], include_deleted=True) == {"m2", "m4", "m5"}
        index.upsert([KeywordDoc("m6", "A new greyhound arrived.", "c2", "user")])
        assert _ids(index, "greyhound", conversation_ids=["c2"]) == {"m3", "m6"}
    finally:
        index.close()
    reopened = KeywordIndex(path)  # opening it again changes nothing
    try:
        assert _ids(reopened, "greyhound", conversation_ids=["c2"]) == {"m3", "m6"}
    finally:
        reopened.close()


def test_a_huge_memory_is_indexed_up_to_the_cap_only(tmp_path: Path) -> None:
    """A pasted 2 MB document costs the keyword index what a long message does: its start is
    findable, words past MAX_INDEXED_CHARS are not indexed (docs/benchmarks.md, issue #25)."""
    words = [f"w{i}" for i in range(400_000)]  # ~2.4 MB of distinct words
    text = "openingword " + " ".join(words)
    assert len(text) > 60 * MAX_INDEXED_CHARS
    index = KeywordIndex(tmp_path / "kw.sqlite3")
    try:
        index.upsert([KeywordDoc("big", text, "c1", "user")])
        assert _ids(index, "openingword", conversation_ids=["c1"]) == {"big"}
        early = words[100]
        late = words[-1]
        assert text.index(early) < MAX_INDEXED_CHARS < text.index(late)
        assert _ids(index, early) == {"big"}
        assert _ids(index, late) == set()
    finally:
        index.close()
    conn = sqlite3.connect(str(tmp_path / "kw.sqlite3"))
    try:
        stored = conn.execute("SELECT length(text) FROM memories_fts").fetchone()[0]
    finally:
        conn.close()
    assert stored == MAX_INDEXED_CHARS


def test_a_process_that_opened_the_old_layout_writes_rows_the_upgraded_index_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes open an old index at once; the one that could not upgrade it (the other held
    the write lock) must still write rows that the upgraded index's scoped searches find."""
    path = tmp_path / "keyword_index.sqlite3"
    _old_layout(path, [KeywordDoc("m1", "Sailing lessons on the lake.", "c1", "user")])
    with monkeypatch.context() as patch:
        patch.setattr(KeywordIndex, "_upgrade", lambda self: setattr(self, "_tagged", False))
        late = KeywordIndex(path)  # lost the race: still sees the old layout
    upgraded = KeywordIndex(path)
    try:
        late.upsert([KeywordDoc("m2", "Sailing again next Sunday.", "c1", "user")])
        assert _ids(upgraded, "sailing", conversation_ids=["c1"]) == {"m1", "m2"}
        assert _ids(late, "sailing", conversation_ids=["c1"]) == {"m1", "m2"}
    finally:
        late.close()
        upgraded.close()
