"""KeywordIndex: a real SQLite FTS5 file in tmp_path."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from desktop_mem.engine.index.keyword_index import KeywordDoc, KeywordHit, KeywordIndex, match_expression

DOCS = [
    KeywordDoc("m1", "The user adopted a greyhound named Biscuit last spring.", "c1", "fact", "fact"),
    KeywordDoc("m2", "The user likes the weather in spring and walks often.", "c1", "user", ""),
    KeywordDoc("m3", "Weather was discussed: rain all week in the user's town.", "c2", "assistant", ""),
    KeywordDoc("m4", "The user's greyhound Biscuit hates thunderstorms.", "global", "fact", "fact"),
    KeywordDoc("m5", "Old note about greyhound racing.", "c1", "fact", "fact", deleted=True),
    KeywordDoc("m6", "Summary: the user talked about pets and weather.", "c1", "summary", ""),
]


@pytest.fixture()
def index(tmp_path: Path) -> Iterator[KeywordIndex]:
    idx = KeywordIndex(tmp_path / "keyword_index.sqlite3")
    idx.upsert(DOCS)
    yield idx
    idx.close()


def _ids(hits: list[KeywordHit]) -> list[str]:
    return [hit.id for hit in hits]


def test_rare_query_words_rank_first(index: KeywordIndex) -> None:
    hits = index.query("What is the name of my greyhound?", n=10)
    assert _ids(hits)[:2] == ["m4", "m1"] or _ids(hits)[:2] == ["m1", "m4"]
    assert "m5" not in _ids(hits)  # deleted
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:], strict=False))
    assert all(hit.score > 0 for hit in hits)
    top = index.query("Biscuit thunderstorms", n=3)
    assert _ids(top)[0] == "m4"


def test_stemming_and_diacritics(index: KeywordIndex) -> None:
    index.upsert([KeywordDoc("m7", "Café visits in Zürich", "c3", "fact")])
    assert _ids(index.query("walking", n=5)) == ["m2"]  # porter: walking ~ walks
    assert _ids(index.query("cafe zurich", n=5)) == ["m7"]


def test_filters(index: KeywordIndex) -> None:
    assert set(_ids(index.query("weather", n=10))) == {"m2", "m3", "m6"}
    assert set(_ids(index.query("weather", n=10, conversation_ids=["c1"]))) == {"m2", "m6"}
    assert _ids(index.query("weather", n=10, conversation_ids=["c1"], roles=["user"])) == ["m2"]
    assert set(_ids(index.query("weather", n=10, exclude_roles=["summary"]))) == {"m2", "m3"}
    assert index.query("weather", n=10, conversation_ids=[]) == []
    assert len(index.query("weather", n=1)) == 1


def test_deleted_only_when_asked(index: KeywordIndex) -> None:
    assert "m5" not in _ids(index.query("racing", n=10))
    assert _ids(index.query("racing", n=10, include_deleted=True)) == ["m5"]


def test_stopword_only_and_empty_queries_return_nothing(index: KeywordIndex) -> None:
    assert index.query("what did you do?", n=10) == []
    assert index.query("", n=10) == []
    assert index.query("   ", n=10) == []
    assert match_expression('say "hi" NEAR(x) *') == '"say" OR "hi" OR "near" OR "x"'


@pytest.mark.parametrize(
    "hostile",
    ['"', '""', "(", ")", "*", "-", "'", "____", "NOT", "OR OR", "a-b-c", "{c1 c2}: x",
     "grey\u0301hound", "\x00", "AND", "NEAR(", ":", "^", "\\", "%", "\ud7ff", "\U0010ffff"],
)
def test_hostile_queries_do_not_raise(index: KeywordIndex, hostile: str) -> None:
    assert len(index.query(hostile, n=5)) <= 5


@pytest.mark.parametrize(
    "hostile",
    ['greyhound"', '"greyhound', "NEAR(greyhound biscuit)", "greyhound AND OR NOT", "text:greyhound",
     "^greyhound", "greyhound*", "😀 greyhound", "\x00greyhound", "(greyhound)", "-greyhound"],
)
def test_operators_in_queries_are_plain_words(index: KeywordIndex, hostile: str) -> None:
    assert {"m1", "m4"} <= set(_ids(index.query(hostile, n=5)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=80))
def test_arbitrary_text_never_raises(index: KeywordIndex, text: str) -> None:
    hits = index.query(text, n=5)
    assert len(hits) <= 5


def test_upsert_replaces_text(index: KeywordIndex) -> None:
    index.upsert([KeywordDoc("m1", "The user adopted a tabby cat called Miso.", "c1", "fact", "fact")])
    assert "m1" not in _ids(index.query("greyhound", n=10))
    assert _ids(index.query("tabby", n=10)) == ["m1"]
    assert index.count() == len(DOCS)


def test_upsert_can_soft_delete_and_move(index: KeywordIndex) -> None:
    index.upsert([KeywordDoc("m4", DOCS[3].text, "c9", "fact", "fact", deleted=True)])
    assert "m4" not in _ids(index.query("thunderstorms", n=10))
    assert _ids(index.query("thunderstorms", n=10, conversation_ids=["c9"], include_deleted=True)) == ["m4"]


def test_delete_ids_count_reset(index: KeywordIndex) -> None:
    assert index.ids() == {doc.id for doc in DOCS}
    index.delete(["m1", "m4", "unknown"])
    assert index.count() == len(DOCS) - 2
    assert index.query("Biscuit", n=10) == []
    index.reset()
    assert index.count() == 0
    assert index.ids() == set()
    assert index.query("weather", n=10) == []


def test_persists_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "kw.sqlite3"
    first = KeywordIndex(path)
    first.upsert(DOCS)
    first.delete(["m2"])
    first.close()
    second = KeywordIndex(path)
    try:
        assert second.count() == len(DOCS) - 1
        assert set(_ids(second.query("weather", n=10))) == {"m3", "m6"}
        second.upsert([KeywordDoc("m8", "New weather memory", "c1", "fact")])
        assert "m8" in _ids(second.query("weather", n=10))
        assert len(second.ids()) == len(DOCS)
    finally:
        second.close()


def test_duplicate_ids_in_one_batch_keep_the_last(tmp_path: Path) -> None:
    idx = KeywordIndex(tmp_path / "kw.sqlite3")
    try:
        idx.upsert([KeywordDoc("x", "first apple", "c", "fact"), KeywordDoc("x", "second pear", "c", "fact")])
        assert idx.count() == 1
        assert idx.query("apple", n=5) == []
        assert _ids(idx.query("pear", n=5)) == ["x"]
    finally:
        idx.close()


def test_large_batch_and_threads(tmp_path: Path) -> None:
    idx = KeywordIndex(tmp_path / "kw.sqlite3")
    try:
        docs = [KeywordDoc(f"id{i}", f"memory number {i} about topic{i % 50}", f"c{i % 7}", "fact")
                for i in range(3000)]
        idx.upsert(docs)
        assert idx.count() == 3000
        errors: list[BaseException] = []

        def reader() -> None:
            try:
                for _ in range(20):
                    # The delete is one transaction: a reader sees all 60 or exactly 30.
                    assert len(idx.query("topic7", n=100)) in (30, 60)
            except BaseException as exc:  # noqa: BLE001 - surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for thread in threads:
            thread.start()
        idx.delete([f"id{i}" for i in range(1500)])
        for thread in threads:
            thread.join()
        assert errors == []
        assert idx.count() == 1500
        assert len(idx.query("topic7", n=100)) == 30
    finally:
        idx.close()


def test_corrupt_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "kw.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(RuntimeError, match="delete the file and reindex"):
        KeywordIndex(path)
