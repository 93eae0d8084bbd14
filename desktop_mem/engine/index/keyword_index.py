"""Keyword index: SQLite FTS5 with bm25 ranking, one file per store.

On conversation data keyword matching alone beats MiniLM vectors alone, so the read path fuses
both. The index is derived from the Markdown files and can be rebuilt at any time.

What a search may return (its conversations, roles, not deleted) is indexed as tag tokens in a
`tags` column and matched inside FTS5, so bm25 is computed only for rows in the scope: filtering
on the UNINDEXED columns read every matching row from the content table first, which grew with
the store (at 100k memories a common word matches ~5,000 rows; docs/benchmarks.md, issue #25).
At most MAX_INDEXED_CHARS of a memory's text are indexed: a pasted 2 MB document costs the index
(and every search that matches it) no more than a long message.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Words that carry no topic: question words, pronouns, auxiliaries, articles, common prepositions.
# Dropping them keeps bm25 from rewarding documents for "what did you" style filler.
STOPWORDS = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "if", "then", "so", "than", "that", "this", "these", "those",
        "there", "here", "of", "to", "in", "on", "at", "by", "for", "with", "from", "about", "as", "into",
        "onto", "over", "under", "up", "down", "out", "off", "again", "also", "just", "very", "too", "not",
        "no", "nor", "only", "own", "same", "such", "both", "each", "few", "more", "most", "other", "some",
        "any", "all", "can", "will", "would", "shall", "should", "may", "might", "must", "could", "do",
        "does", "did", "doing", "done", "be", "been", "being", "am", "is", "are", "was", "were", "has",
        "have", "had", "having", "i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves",
        "you", "your", "yours", "yourself", "yourselves", "he", "him", "his", "himself", "she", "her",
        "hers", "herself", "it", "its", "itself", "they", "them", "their", "theirs", "themselves", "what",
        "which", "who", "whom", "whose", "when", "where", "why", "how", "s", "t", "d", "ll", "m", "re",
        "ve", "don", "doesn", "didn", "isn", "aren", "wasn", "weren", "hasn", "haven", "hadn", "won",
        "wouldn", "shouldn", "couldn", "let", "lets", "get", "got", "tell", "know", "please"
    }
)

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 64  # a pasted essay as a query should not build a huge MATCH expression
# Characters of a memory's (index) text that the keyword index holds: ~5,000 words, far above a
# chat turn or fact; a store file may be up to store.max_file_bytes (2 MiB) long.
MAX_INDEXED_CHARS = 32_000
# Column weights for bm25(): only the text column ranks (id, conversation_id, role, kind,
# deleted, text, tags).
_BM25 = "bm25(memories_fts, 0, 0, 0, 0, 0, 1.0, 0)"
_CREATE = """
    CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5(
        id UNINDEXED, conversation_id UNINDEXED, role UNINDEXED, kind UNINDEXED,
        deleted UNINDEXED, text, tags,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )
"""


def tag(field: str, value: str) -> str:
    """The token that marks a row's conversation, role or deletion in the `tags` column: "t" and
    digits (a hash), so no tokenizer or stemmer splits or changes it and no word can equal it."""
    digest = hashlib.blake2b(f"{field}\0{value}".encode(), digest_size=8).digest()
    return f"t{int.from_bytes(digest, 'big')}"


def tags_of(conversation_id: str, role: str, deleted: bool) -> str:
    """The `tags` text of one row."""
    return " ".join([tag("c", conversation_id), tag("r", role)] + ([tag("d", "1")] if deleted else []))


def _any_of(tokens: Iterable[str]) -> str:
    return "tags : (" + " OR ".join(f'"{t}"' for t in tokens) + ")"


@dataclass(frozen=True)
class KeywordDoc:
    """One indexed memory: its id, text and the fields the read path filters on."""

    id: str
    text: str
    conversation_id: str
    role: str
    kind: str = ""
    deleted: bool = False


@dataclass(frozen=True)
class KeywordHit:
    """A match; score is -bm25(), so higher is better."""

    id: str
    score: float


def match_expression(text: str) -> str | None:
    """A safe FTS5 MATCH string from free text: quoted non-stopword terms OR-ed; None if none."""
    terms: list[str] = []
    seen: set[str] = set()
    for word in _WORD.findall(text.lower()):
        # "_" is a \w character but unicode61 splits on it; skip pure-underscore runs.
        if word in STOPWORDS or word in seen or not word.strip("_"):
            continue
        seen.add(word)
        terms.append('"' + word.replace('"', '""') + '"')
        if len(terms) >= _MAX_TERMS:
            break
    return " OR ".join(terms) if terms else None


class KeywordIndex:
    """SQLite FTS5 index over memory texts; thread-safe (one connection behind a lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # The engine calls from worker threads; the lock serialises use of the one connection.
        # timeout: another process's writes (an upgrade copies 100k rows in seconds) are waited
        # for, not failed after SQLite's default 5 s
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=60.0)
        self._tagged = True  # False: an index of the old layout that could not be upgraded
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._create_tables()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise RuntimeError(
                f"keyword index {path} is unreadable ({exc}); it is derived data: "
                "delete the file and reindex to rebuild it"
            ) from exc

    def _create_tables(self) -> None:
        self._conn.executescript(
            _CREATE.format(name="memories_fts") + """;
            CREATE TABLE IF NOT EXISTS memory_rows (
                id TEXT PRIMARY KEY,
                fts_rowid INTEGER NOT NULL
            ) WITHOUT ROWID;
            """
        )
        if not self._has_tags():
            self._upgrade()

    def _has_tags(self) -> bool:
        return "tags" in {row[1] for row in self._conn.execute("PRAGMA table_info(memories_fts)")}

    def _tags_now(self) -> bool:
        """Whether the table has the `tags` column, looked at again while it had not: another
        process may have upgraded it since (its searches must see this one's rows in scope)."""
        if not self._tagged:
            self._tagged = self._has_tags()
        return self._tagged

    def _upgrade(self) -> None:
        """Copy an index of the old layout (no `tags` column) into the new one, within SQLite (a
        few seconds at 100k memories). A read-only store keeps the old layout, searched the old
        way."""
        self._conn.create_function("desktop_mem_tags", 3, lambda c, r, d: tags_of(c, r, bool(d)),
                                   deterministic=True)
        try:
            with self._transaction():
                if self._has_tags():  # another process upgraded it meanwhile
                    return
                self._conn.execute("DROP TABLE IF EXISTS memories_fts_new")
                self._conn.execute(_CREATE.format(name="memories_fts_new"))
                self._conn.execute(
                    "INSERT INTO memories_fts_new(rowid, id, conversation_id, role, kind, deleted, text, "
                    "tags) SELECT rowid, id, conversation_id, role, kind, deleted, substr(text, 1, ?), "
                    "desktop_mem_tags(conversation_id, role, deleted) FROM memories_fts",
                    (MAX_INDEXED_CHARS,))
                self._conn.execute("DROP TABLE memories_fts")
                self._conn.execute("ALTER TABLE memories_fts_new RENAME TO memories_fts")
        except sqlite3.OperationalError:  # read-only, or another process is upgrading it (see _tags_now)
            self._tagged = False

    def upsert(self, entries: Sequence[KeywordDoc]) -> None:
        """Insert or replace entries by id, all in one transaction."""
        # The last entry wins when an id appears twice in one batch.
        unique = list({entry.id: entry for entry in entries}.values())
        if not unique:
            return
        with self._lock, self._transaction():
            self._delete_locked([entry.id for entry in unique])
            next_rowid = self._conn.execute(
                "SELECT COALESCE(MAX(rowid), 0) + 1 FROM memories_fts"
            ).fetchone()[0]
            rows = [
                (
                    next_rowid + offset,
                    entry.id,
                    entry.conversation_id,
                    entry.role,
                    entry.kind,
                    int(entry.deleted),
                    entry.text[:MAX_INDEXED_CHARS],
                    tags_of(entry.conversation_id, entry.role, entry.deleted),
                )
                for offset, entry in enumerate(unique)
            ]
            if self._tags_now():
                self._conn.executemany(
                    "INSERT INTO memories_fts(rowid, id, conversation_id, role, kind, deleted, text, tags) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
            else:
                self._conn.executemany(
                    "INSERT INTO memories_fts(rowid, id, conversation_id, role, kind, deleted, text) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [row[:7] for row in rows],
                )
            self._conn.executemany(
                "INSERT INTO memory_rows(id, fts_rowid) VALUES (?, ?)",
                [(row[1], row[0]) for row in rows],
            )

    def delete(self, ids: Iterable[str]) -> None:
        """Remove entries by id; unknown ids are ignored."""
        id_list = list(dict.fromkeys(ids))
        if not id_list:
            return
        with self._lock, self._transaction():
            self._delete_locked(id_list)

    def _delete_locked(self, ids: list[str]) -> None:
        found: list[tuple[str, int]] = []
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            found.extend(
                self._conn.execute(
                    f"SELECT id, fts_rowid FROM memory_rows WHERE id IN ({marks})", chunk
                ).fetchall()
            )
        if not found:
            return
        self._conn.executemany("DELETE FROM memories_fts WHERE rowid = ?", [(r,) for _, r in found])
        # By primary key: fts_rowid has no index, and a scan per id is quadratic at 100k entries.
        self._conn.executemany("DELETE FROM memory_rows WHERE id = ?", [(i,) for i, _ in found])

    def query(
        self,
        text: str,
        n: int,
        conversation_ids: Sequence[str] | None = None,
        roles: Sequence[str] | None = None,
        exclude_roles: Sequence[str] = (),
        include_deleted: bool = False,
    ) -> list[KeywordHit]:
        """Best n matches for free text (bm25), filtered; [] when the text has no usable terms."""
        expression = match_expression(text)
        if expression is None or n <= 0:
            return []
        if conversation_ids is not None and not conversation_ids:
            return []
        if roles is not None and not roles:
            return []
        with self._lock:
            tagged = self._tags_now()
        if tagged:
            return self._query_tagged(expression, n, conversation_ids, roles, exclude_roles, include_deleted)
        sql = ["SELECT id, -bm25(memories_fts) AS score FROM memories_fts WHERE memories_fts MATCH ?"]
        params: list[object] = [expression]
        if conversation_ids is not None:
            sql.append(f"AND conversation_id IN ({','.join('?' * len(conversation_ids))})")
            params.extend(conversation_ids)
        if roles is not None:
            sql.append(f"AND role IN ({','.join('?' * len(roles))})")
            params.extend(roles)
        if exclude_roles:
            sql.append(f"AND role NOT IN ({','.join('?' * len(exclude_roles))})")
            params.extend(exclude_roles)
        if not include_deleted:
            sql.append("AND deleted = 0")
        sql.append("ORDER BY score DESC, id LIMIT ?")
        params.append(n)
        with self._lock:
            try:
                rows = self._conn.execute(" ".join(sql), params).fetchall()
            except sqlite3.OperationalError:
                # Quoted terms make syntax errors impossible in practice; a query is never fatal.
                return []
        return [KeywordHit(id=row[0], score=float(row[1])) for row in rows]

    def _query_tagged(
        self,
        expression: str,
        n: int,
        conversation_ids: Sequence[str] | None,
        roles: Sequence[str] | None,
        exclude_roles: Sequence[str],
        include_deleted: bool,
    ) -> list[KeywordHit]:
        """The filters as tag tokens inside the MATCH, then bm25 over the rows in scope only, and
        the ids read for the best n rows only."""
        required = [f"text : ({expression})"]
        if conversation_ids is not None:
            required.append(_any_of(tag("c", c) for c in dict.fromkeys(conversation_ids)))
        if roles is not None:
            required.append(_any_of(tag("r", r) for r in dict.fromkeys(roles)))
        excluded = [tag("r", r) for r in dict.fromkeys(exclude_roles)]
        if not include_deleted:
            excluded.append(tag("d", "1"))
        match = " AND ".join(f"({part})" for part in required)
        if excluded:
            match = f"({match}) NOT ({_any_of(excluded)})"
        sql = (f"SELECT f.id, h.score FROM (SELECT rowid AS r, -{_BM25} AS score FROM memories_fts "
               "WHERE memories_fts MATCH ? ORDER BY score DESC, rowid LIMIT ?) AS h "
               "CROSS JOIN memories_fts AS f ON f.rowid = h.r ORDER BY h.score DESC, h.r")
        with self._lock:
            try:
                rows = self._conn.execute(sql, (match, n)).fetchall()
            except sqlite3.OperationalError:
                return []  # as above: a query is never fatal
        return [KeywordHit(id=row[0], score=float(row[1])) for row in rows]

    def ids(self) -> set[str]:
        """Every indexed id."""
        with self._lock:
            return {row[0] for row in self._conn.execute("SELECT id FROM memory_rows")}

    def count(self) -> int:
        """Number of indexed entries."""
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM memory_rows").fetchone()[0])

    def reset(self) -> None:
        """Drop every entry (before a full rebuild)."""
        with self._lock, self._transaction():
            self._conn.execute("DELETE FROM memories_fts")
            self._conn.execute("DELETE FROM memory_rows")

    def close(self) -> None:
        """Close the connection; the index must not be used afterwards."""
        with self._lock:
            self._conn.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)


class _Transaction:
    """BEGIN ... COMMIT, or ROLLBACK on error (the connection runs in autocommit mode)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self._conn.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
