"""The manifest: per file its stat signature, content hash and parsed memory (a restart with
unchanged files parses nothing), and per indexed id the hashes of what went into the indexes.
A cache: deleting it costs a re-parse and re-embed, never data.

Kept in SQLite (`memory_index.json.sqlite3`), one row per file, written in place: at 100,000
memories the JSON file it replaces was 84 MB, read whole at every start (2.9 s, and its decoded
dicts raised the peak) and rewritten whole by every save. Now a start streams the rows once and
a save writes only the rows that changed. The name keeps the old `memory_index.json.*` pattern
that every store's committed .gitignore already ignores. An old memory_index.json is read once
and replaced by the first save.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import json.scanner
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any

from desktop_mem.engine.models import NO_EXTRA, Memory, Role, memory_from_values

MANIFEST_NAME = "memory_index.json.sqlite3"
LEGACY_NAME = "memory_index.json"  # the JSON manifest before issue #25, migrated by the first save
LEGACY_VERSION = 1
SCHEMA_VERSION = "2"
SAVE_INTERVAL = 5.0  # seconds between manifest writes caused by single edits
BUSY_SECONDS = 30.0  # how long a save waits for another process reading the manifest
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL,
                                  size INTEGER NOT NULL, hash TEXT NOT NULL, memory TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS indexed (id TEXT PRIMARY KEY, text_hash TEXT NOT NULL, meta_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS indexed_inputs (id TEXT PRIMARY KEY, bound INTEGER NOT NULL) WITHOUT ROWID;
"""
Stat = tuple[int, int]  # (st_mtime_ns, st_size): a file unchanged since it was parsed
_FIELDS = tuple(f.name for f in fields(Memory))
_FIELD_SET = frozenset(_FIELDS)
# A row's memory is a JSON array: this tag, then the fields in _FIELDS order (positional: half
# the cost of a JSON object per row at start, and no key repeated 100k times on disk). A row
# written when Memory had other fields has another tag and is parsed from its file again.
_ROW_TAG = hashlib.sha1(",".join(_FIELDS).encode()).hexdigest()[:8]
_DATES = tuple(i for i, name in enumerate(_FIELDS, start=1)
               if name in ("created_at", "updated_at", "deleted_at", "expires_at"))
_SHARED_AT = tuple(i for i, name in enumerate(_FIELDS, start=1)
                   if name in ("conversation_id", "source", "kind", "summary_kind"))
_ROLE_AT = _FIELDS.index("role") + 1
_EXTRA_AT = _FIELDS.index("extra") + 1
_ROLES = {role.value: role for role in Role}  # a dict lookup: Role(text) is ~5x slower per row
# Values many memories share: one string object each instead of one per memory (issue #25).
_SHARED = ("conversation_id", "source", "kind", "summary_kind")


def memory_to_json(memory: Memory) -> dict[str, Any]:
    """A Memory as JSON-ready data (datetimes as ISO text; `extra` values json.dumps can take,
    anything else is written with str()). Not dataclasses.asdict: it deep-copies everything."""
    data = {name: getattr(memory, name) for name in _FIELDS}
    for key, value in data.items():
        if isinstance(value, datetime):
            data[key] = value.isoformat()
    data["extra"] = dict(memory.extra)
    return data


def memory_from_json(data: Mapping[str, Any]) -> Memory:
    """Inverse of memory_to_json."""
    values = dict(data)
    for key in ("created_at", "updated_at", "deleted_at", "expires_at"):
        if values.get(key):
            values[key] = datetime.fromisoformat(values[key])
    for key in _SHARED:
        if isinstance(values.get(key), str):
            values[key] = sys.intern(values[key])
    return Memory(**values)


IndexedEntry = int | str  # see indexed_entry
# An entry may also hold a key of the memory's index inputs (IndexSync._inputs: its file's content
# hash and path, and its previous turn's): a start skips the digests of a memory whose key is the
# one recorded (issue #25). 52 bits, so the int stays 6 digits of 30 bits: 48 bytes, as without it.
INPUTS_BITS = 52
_INPUTS_MASK = (1 << INPUTS_BITS) - 1


def indexed_entry(text_hash: str, meta_hash: str, inputs: int = 0) -> IndexedEntry:
    """What `Manifest.indexed` holds for an id: both hashes, and `inputs` (a key of what they were
    computed from; 0: none), as one int (48 bytes a memory instead of 96 for their text: ~5 MB at
    100,000; issue #25). Hashes of another form than IndexSync writes (16 lowercase hex digits
    each: a damaged or foreign row) are kept as "text hash\nmeta hash", so they compare and are
    written back exactly as they were; they never carry a key."""
    both = text_hash + meta_hash
    if len(text_hash) == 16 and len(both) == 32 and both.lower() == both:
        try:
            raw = bytes.fromhex(both)  # uppercase is ruled out above; whitespace makes it shorter
        except ValueError:
            raw = b""
        if len(raw) == 16:
            return int.from_bytes(raw) << INPUTS_BITS | (inputs & _INPUTS_MASK)
    return f"{text_hash}\n{meta_hash}"


def entry_hashes(entry: IndexedEntry) -> tuple[str, str]:
    """The (text hash, metadata hash) an `indexed_entry` was made of."""
    if isinstance(entry, int):
        both = f"{entry >> INPUTS_BITS:032x}"
        return both[:16], both[16:]
    text_hash, _, meta_hash = entry.partition("\n")
    return text_hash, meta_hash


def entry_inputs(entry: IndexedEntry) -> int:
    """The key of the inputs an `indexed_entry` was computed from, 0 when it has none."""
    return entry & _INPUTS_MASK if isinstance(entry, int) else 0


def entry_text_hash(entry: IndexedEntry) -> str:
    """The text hash of an `indexed_entry` (the vector depends on the text alone)."""
    return entry_hashes(entry)[0]


# The key is stored in a table of its own, `indexed_inputs`, XOR-ed with the low bits of the
# row's hashes: a version before the key (which reads and writes `indexed` only) keeps working on
# the file, and when it re-indexes a memory, the key read back beside the new hashes is noise
# (matching nothing) instead of a key of the old file claiming the new hashes.
def _bound(entry: int) -> int:
    return (entry ^ (entry >> INPUTS_BITS)) & _INPUTS_MASK


def _with_bound(entry: int, bound: int) -> int:
    return entry | ((bound ^ (entry >> INPUTS_BITS)) & _INPUTS_MASK)


class _Indexed(dict[str, IndexedEntry]):
    """id -> indexed_entry(text hash, metadata hash) of what the indexes hold, remembering which
    ids changed since the last save so a save writes only those rows."""

    def __init__(self, items: Iterable[tuple[str, IndexedEntry]] = ()) -> None:
        super().__init__(items)
        self.changed: set[str] = set()
        self.cleared = False

    def __setitem__(self, key: str, value: IndexedEntry) -> None:
        super().__setitem__(key, value)
        self.changed.add(key)

    def __delitem__(self, key: str) -> None:
        super().__delitem__(key)
        self.changed.add(key)

    def pop(self, key: str, *default: Any) -> Any:
        self.changed.add(key)
        return super().pop(key, *default)

    def clear(self) -> None:
        super().clear()
        self.changed.clear()
        self.cleared = True

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]


class Manifest:
    """The file cache + what is in the indexes, in SQLite. Thread-safe; saves are atomic (one
    transaction), so a crash leaves the previous state, which is merely stale."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.embedder_name = ""
        self._saved_embedder = ""
        self._saved_at = 0.0
        self._dirty = False
        self._lock = threading.RLock()
        self._db: sqlite3.Connection | None = None  # the file, or the legacy JSON's rows in memory
        self._writable = False
        self._legacy: Path | None = None  # an old memory_index.json to remove once saved
        # path -> (stat, memory), or None for a file gone: written by the next save
        self._pending: dict[str, tuple[Stat, Memory] | None] = {}
        # What the indexes hold: read from the file on first use (the index thread's, after the
        # window lists the store: 100,000 rows are ~0.2 s of a start; issue #25). None: not read.
        self._indexed: _Indexed | None = _Indexed()
        self._same_id: Callable[[str], str] = _itself
        self._load()

    def share_ids_with(self, same_id: Callable[[str], str]) -> None:
        """Key the indexed table, when it is read, by the strings `same_id(id)` returns: equal
        ones another table already holds (the catalog's), one string per id instead of two
        (~9 MB at 100,000 memories; issue #25)."""
        self._same_id = same_id

    @property
    def indexed(self) -> _Indexed:
        """id -> indexed_entry(text hash, metadata hash) of every memory the indexes hold."""
        indexed = self._indexed
        if indexed is None:
            with self._lock:
                if self._indexed is None:
                    self._indexed = self._read_indexed()
                indexed = self._indexed
        return indexed

    def _read_indexed(self) -> _Indexed:
        try:
            db = _reader(self.path)
            try:
                rows = db.execute("SELECT id, text_hash, meta_hash FROM indexed")
                same_id = self._same_id
                indexed = _Indexed((same_id(i), indexed_entry(t, m)) for i, t, m in rows)
                try:  # a second pass, not a join: ~0.1 s at 100,000 instead of ~0.27
                    keys = db.execute("SELECT id, bound FROM indexed_inputs")
                except sqlite3.OperationalError:  # written before the keys (no such table)
                    keys = None
                put, get = super(_Indexed, indexed).__setitem__, indexed.get  # not a change to save
                for i, bound in keys or ():
                    entry = get(i)
                    if isinstance(entry, int) and isinstance(bound, int):  # else: a foreign row, no key
                        put(i, _with_bound(entry, bound))
                return indexed
            finally:
                db.close()
        except sqlite3.Error:
            return _Indexed()  # unreadable since the start: re-embedded, as at a start without it

    # ------------------------------------------------------------------ reading

    def _load(self) -> None:
        if self.path.exists():
            try:
                db = _reader(self.path)
                meta = dict(db.execute("SELECT key, value FROM meta"))
                if meta.get("version") != SCHEMA_VERSION:
                    db.close()
                    return  # another version: start empty (a re-parse and re-embed), overwritten on save
                self.embedder_name = self._saved_embedder = meta.get("embedder", "")
                self._indexed = None  # read when first used
                self._db = db
            except sqlite3.Error:
                self._indexed = _Indexed()
                self.embedder_name = self._saved_embedder = ""
            return
        legacy = self.path.with_name(LEGACY_NAME)
        if legacy.name != self.path.name and legacy.is_file():
            self._load_legacy(legacy)

    def _load_legacy(self, legacy: Path) -> None:
        """Read an old memory_index.json once, into an in-memory table; the first save writes the
        SQLite file and removes the JSON (a reader never writes)."""
        try:
            data = json.loads(legacy.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not (isinstance(data, dict) and data.get("version") == LEGACY_VERSION
                and isinstance(data.get("files"), dict)):
            return  # not ours (another tool's memory_index.json): leave it alone
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.executescript(_SCHEMA)
        rows = ((p, e["mtime_ns"], e["size"], e["hash"], _legacy_row(e["memory"]))
                for p, e in data.pop("files").items() if isinstance(e, dict))
        with contextlib.suppress(KeyError, TypeError, sqlite3.Error), db:
            db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", rows)
        self.embedder_name = str(data.get("embedder", ""))
        indexed = data.get("indexed", {})
        self._indexed = _Indexed((k, indexed_entry(str(v[0]), str(v[1]))) for k, v in indexed.items()
                                 if isinstance(v, list) and len(v) == 2)
        self._indexed.changed.update(self._indexed)
        self._db = db
        self._legacy = legacy
        self._dirty = True  # a writer's first flush moves it to SQLite

    def reuse(self, stats: Mapping[str, Stat]) -> Iterator[Memory]:
        """The parsed memory of every file in `stats` whose (mtime_ns, size) match the cached row;
        rows of files not in `stats` are dropped at the next save. One pass over the rows, so a
        start holds one row at a time, not the whole manifest."""
        with self._lock:
            pending = dict(self._pending)
            rows: Iterable[tuple[str, int, int, str]] = self._rows()
        seen: set[str] = set()
        for rel, entry in pending.items():
            seen.add(rel)
            if entry is not None and rel in stats and entry[0] == stats[rel]:
                yield entry[1]
        stale: list[str] = []
        for rel, mtime_ns, size, text in rows:
            if rel in seen:
                continue
            st = stats.get(rel)
            if st is None:
                stale.append(rel)
                continue
            if st != (mtime_ns, size):
                continue
            memory = parse_row(text)
            if memory is not None:
                yield memory
        if stale:
            with self._lock:
                for rel in stale:
                    self._pending.setdefault(rel, None)
                self._dirty = True

    def signature(self, rel: str) -> Stat | None:
        """The (mtime_ns, size) of the file `rel` when its cached memory was parsed, or None."""
        with self._lock:
            if rel in self._pending:
                entry = self._pending[rel]
                return entry[0] if entry is not None else None
            db = self._db
            if db is None:
                return None
            try:
                row = db.execute("SELECT mtime_ns, size FROM files WHERE path = ?", (rel,)).fetchone()
            except sqlite3.Error:
                return None
        return (int(row[0]), int(row[1])) if row is not None else None

    def saved_only(self) -> bool:
        """True when every cached row is in the file (nothing pending, no old JSON carried over):
        what another process reading the file sees is what this one has (file_scan.py)."""
        with self._lock:
            return not self._pending and self._legacy is None and self._db is not None

    def cached(self) -> Iterator[tuple[str, int, int, Memory | None]]:
        """Every saved row as (path, mtime_ns, size, its memory or None when the row cannot be
        used), whatever the files are now: a start checks the stats beside it (catalog.py)."""
        for rel, mtime_ns, size, text in self._rows():
            yield rel, mtime_ns, size, parse_row(text)

    def _rows(self) -> Iterator[tuple[str, int, int, str]]:
        """The saved rows, streamed: from a connection of their own (a save meanwhile does not
        disturb them), or from the old JSON's in-memory table."""
        db = self._db
        if db is None:
            return iter(())
        if not self._legacy and self.path.exists():
            try:
                db = _reader(self.path)
            except sqlite3.Error:
                return iter(())
            return _stream(db, close=True)
        with self._lock:
            return iter(db.execute("SELECT path, mtime_ns, size, memory FROM files").fetchall())

    # ------------------------------------------------------------------ changes

    def remember_file(self, memory: Memory, stat: os.stat_result | Stat) -> None:
        """Record a freshly parsed file with its stat (or its (mtime_ns, size))."""
        signature = (stat.st_mtime_ns, stat.st_size) if isinstance(stat, os.stat_result) else stat
        with self._lock:
            self._pending[memory.path] = (signature, memory)
            self._dirty = True

    def forget_file(self, rel: str) -> None:
        """Drop a file that moved or went away."""
        with self._lock:
            self._pending[rel] = None
            self._dirty = True

    def save(self, *, force: bool = True) -> None:
        """Write what changed, in one transaction (a crash leaves the previous state).

        With force=False the write is skipped if the last one was under SAVE_INTERVAL seconds
        ago (a burst of single edits makes one write); `flush()` writes what was skipped.
        """
        now = time.monotonic()
        with self._lock:
            if not force and now - self._saved_at < SAVE_INTERVAL:
                self._dirty = True
                return
            self._saved_at = now
            db = self._writer()
            pending, self._pending = self._pending, {}
            indexed = self._indexed if self._indexed is not None else _Indexed()  # unread: unchanged
            # swapped, not copied and cleared: an id the index thread changes meanwhile lands in
            # the new set and is written by the next save
            changed, cleared = indexed.changed, indexed.cleared
            indexed.changed, indexed.cleared = set(), False
            try:
                with db:
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('version', ?)", (SCHEMA_VERSION,))
                    db.execute("INSERT OR REPLACE INTO meta VALUES ('embedder', ?)", (self.embedder_name,))
                    gone = [(p,) for p, e in pending.items() if e is None]
                    db.executemany("DELETE FROM files WHERE path = ?", gone)
                    db.executemany("INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)", (
                        (p, e[0][0], e[0][1], e[1].content_hash,
                         row_text(e[1]))
                        for p, e in pending.items() if e is not None))
                    if cleared:
                        db.execute("DELETE FROM indexed")
                        db.execute("DELETE FROM indexed_inputs")
                    now_indexed = {i: indexed.get(i) for i in changed}
                    db.executemany("DELETE FROM indexed WHERE id = ?",
                                   ((i,) for i, v in now_indexed.items() if v is None))
                    db.executemany("INSERT OR REPLACE INTO indexed VALUES (?, ?, ?)",
                                   ((i, *entry_hashes(v)) for i, v in now_indexed.items() if v is not None))
                    db.executemany("DELETE FROM indexed_inputs WHERE id = ?",
                                   ((i,) for i, v in now_indexed.items() if v is None or not entry_inputs(v)))
                    db.executemany("INSERT OR REPLACE INTO indexed_inputs VALUES (?, ?)",
                                   ((i, _bound(v)) for i, v in now_indexed.items()
                                    if isinstance(v, int) and entry_inputs(v)))
            except BaseException:
                # keep what was not written for the next save
                self._pending = {**pending, **self._pending}
                indexed.changed |= changed
                indexed.cleared = indexed.cleared or cleared
                self._dirty = True
                raise
            self._saved_embedder = self.embedder_name
            self._dirty = False
            if self._legacy is not None:
                with contextlib.suppress(OSError):
                    self._legacy.unlink()
                self._legacy = None

    def flush(self) -> None:
        """Write the manifest if anything changed since the last write (deferred saves, close)."""
        indexed = self._indexed  # never read: nothing of it changed
        changed = indexed is not None and bool(indexed.changed or indexed.cleared)
        if self._dirty or changed or self.embedder_name != self._saved_embedder:
            self.save()

    def close(self) -> None:
        """Close the database (what is pending stays pending until a save)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
                self._writable = False

    def _writer(self) -> sqlite3.Connection:
        """The file's connection for writing: created on the first save (a reader never writes);
        rows read from an old JSON manifest are copied into it."""
        if self._db is not None and self._writable:
            return self._db
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists()
        db = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_SECONDS)
        try:
            if self._db is not None and self._legacy is not None:
                self._db.backup(db)  # the old JSON's rows, now on disk
            elif not fresh and _version(db) != SCHEMA_VERSION:
                raise sqlite3.DatabaseError("another version")
            db.executescript(_SCHEMA)
        except sqlite3.Error:
            # unreadable or another version: it is a cache, start it again
            db.close()
            indexed = self.indexed  # what was read of it, before it goes
            self.path.unlink(missing_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_SECONDS)
            db.executescript(_SCHEMA)
            indexed.changed.update(indexed)
            indexed.cleared = True
        if self._db is not None:
            self._db.close()
        self._db, self._writable = db, True
        return db


def _itself(text: str) -> str:
    return text


def row_text(memory: Memory) -> str:
    """A memory as a row's JSON array (see _ROW_TAG)."""
    data = memory_to_json(memory)
    return json.dumps([_ROW_TAG, *(data[name] for name in _FIELDS)], separators=(",", ":"), default=str)


def _legacy_row(data: Any) -> str:
    """An entry of memory_index.json as a row: the array form when it has every field, else the
    object as it was (parsed from its file again at the next start)."""
    if isinstance(data, dict) and data.keys() >= _FIELD_SET:
        return json.dumps([_ROW_TAG, *(data[name] for name in _FIELDS)], separators=(",", ":"), default=str)
    return json.dumps(data, default=str)


# The C scanner behind json.loads, called directly: json.loads' Python layers (two regex
# matches for whitespace per call) were ~40 % of parsing a row at start (issue #25).
_SCAN = getattr(json.scanner, "c_make_scanner", None)
_scan_once = _SCAN(json.JSONDecoder()) if _SCAN is not None else None
_CREATED_AT = _FIELDS.index("created_at") + 1
_LATER_DATES = tuple(i for i in _DATES if i != _CREATED_AT)


def _json_value(text: str) -> Any:
    """json.loads(text) for a row this module wrote (no whitespace around the value)."""
    if _scan_once is None:
        return json.loads(text)
    try:
        value, end = _scan_once(text, 0)
    except StopIteration as exc:
        raise ValueError(f"not JSON at {exc.value}") from None
    if end != len(text):
        raise ValueError("extra data after the JSON value")
    return value


def parse_row(text: str) -> Memory | None:
    """A cached memory, or None when the row cannot be used (parse the file again)."""
    try:
        data = _json_value(text)
        if isinstance(data, list):
            if len(data) != len(_FIELDS) + 1 or data[0] != _ROW_TAG:
                return None  # written when Memory had other fields
            data[_CREATED_AT] = datetime.fromisoformat(data[_CREATED_AT])
            for i in _LATER_DATES:  # mostly None: one test each
                if data[i]:
                    data[i] = datetime.fromisoformat(data[i])
            for i in _SHARED_AT:
                if isinstance(data[i], str):
                    data[i] = sys.intern(data[i])
            data[_ROLE_AT] = _ROLES.get(data[_ROLE_AT], data[_ROLE_AT])
            if data[_EXTRA_AT] == {}:
                data[_EXTRA_AT] = NO_EXTRA
            return memory_from_values(data[1:])
        # an object: a row carried over from memory_index.json
        if not isinstance(data, dict) or not data.keys() >= _FIELD_SET:
            return None  # cached before Memory had these fields (e.g. valid_from): parse again
        return memory_from_json(data)
    except (TypeError, ValueError, KeyError):
        return None


def _reader(path: Path) -> sqlite3.Connection:
    """A read-only connection (a reader process never writes the manifest)."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False, timeout=BUSY_SECONDS)


def _stream(db: sqlite3.Connection, *, close: bool) -> Iterator[tuple[str, int, int, str]]:
    """The rows in chunks of 2,000, each its own statement: a writer (this process's index
    thread, or another process) never waits on a reader for the seconds a start takes, only for
    one chunk. A row a save rewrites meanwhile may come twice (the later copy wins)."""
    last = -1
    try:
        while batch := db.execute("SELECT rowid, path, mtime_ns, size, memory FROM files WHERE rowid > ? "
                                  "ORDER BY rowid LIMIT 2000", (last,)).fetchall():
            last = batch[-1][0]
            yield from (row[1:] for row in batch)
    except sqlite3.Error:
        return
    finally:
        if close:
            db.close()


def _version(db: sqlite3.Connection) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()
    return str(row[0]) if row else None
