"""memory_index.json: per file its stat signature, content hash and parsed memory (a restart
with unchanged files parses nothing), and per indexed id the hashes of what went into the indexes.
A cache: deleting it costs a re-parse and re-embed, never data."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from desktop_mem.engine.models import Memory
from desktop_mem.engine.store.markdown_store import atomic_write

MANIFEST_NAME = "memory_index.json"
MANIFEST_VERSION = 1
SAVE_INTERVAL = 5.0  # seconds between manifest writes caused by single edits


@dataclass(frozen=True)
class FileEntry:
    """What memory_index.json knows about one file."""

    mtime_ns: int
    size: int
    hash: str
    # The parsed Memory (shared with the catalog, so the cache costs no second copy), or its JSON
    # form as read from disk until the file is first looked up.
    memory: Memory | Mapping[str, Any]


_FIELDS = tuple(f.name for f in fields(Memory))
_FIELD_SET = frozenset(_FIELDS)


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
    return Memory(**values)



class Manifest:
    """memory_index.json: file cache + what is in the indexes. Saved atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.embedder_name = ""
        self._saved_at = 0.0
        self._dirty = False
        self.files: dict[str, FileEntry] = {}
        self.indexed: dict[str, tuple[str, str]] = {}
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            return
        self.files = {
            p: FileEntry(e["mtime_ns"], e["size"], e["hash"], e["memory"]) for p, e in data["files"].items()
        }
        self.embedder_name = str(data.get("embedder", ""))
        self.indexed = {k: (v[0], v[1]) for k, v in data.get("indexed", {}).items()}

    def save(self, *, force: bool = True) -> None:
        """Write the manifest atomically (a crash leaves the old one, which is merely stale).

        With force=False the write is skipped if the last one was under SAVE_INTERVAL seconds
        ago: the manifest is a cache, so a stale one costs a re-parse or re-embed of the files
        that changed, never data. Without this, every single write would rewrite a file that
        grows with the store (megabytes at 10k memories). `flush()` writes what was skipped.
        """
        now = time.monotonic()
        if not force and now - self._saved_at < SAVE_INTERVAL:
            self._dirty = True
            return
        self._saved_at = now
        self._dirty = False
        data = {
            "version": MANIFEST_VERSION,
            "embedder": self.embedder_name,
            # Not dataclasses.asdict: it deep-copies every stored memory (~1 s per save at 10k
            # files, and a start saves twice); the entries are already JSON-ready.
            "files": {p: {"mtime_ns": e.mtime_ns, "size": e.size, "hash": e.hash,
                          "memory": memory_to_json(e.memory) if isinstance(e.memory, Memory) else e.memory}
                      for p, e in list(self.files.items())},  # a snapshot: writers may add meanwhile
            "indexed": {k: list(v) for k, v in list(self.indexed.items())},
        }
        atomic_write(self.path, json.dumps(data, separators=(",", ":"), default=str).encode("utf-8"))

    def flush(self) -> None:
        """Write the manifest if anything changed since the last write (deferred saves, close)."""
        if self._dirty:
            self.save()

    def cached_memory(self, rel: str, stat: os.stat_result) -> Memory | None:
        """The parsed memory of an unchanged file (same mtime and size), else None."""
        entry = self.files.get(rel)
        if entry is None or entry.mtime_ns != stat.st_mtime_ns or entry.size != stat.st_size:
            return None
        if isinstance(entry.memory, Memory):
            return entry.memory
        if not entry.memory.keys() >= _FIELD_SET:
            return None  # cached before Memory had these fields (e.g. valid_from): parse again
        try:
            memory = memory_from_json(entry.memory)
        except (TypeError, ValueError, KeyError):
            return None
        self.files[rel] = FileEntry(entry.mtime_ns, entry.size, entry.hash, memory)  # drop the JSON copy
        return memory

    def remember_file(self, memory: Memory, stat: os.stat_result) -> None:
        """Record a freshly parsed file."""
        self.files[memory.path] = FileEntry(stat.st_mtime_ns, stat.st_size, memory.content_hash, memory)
        self._dirty = True

    def forget_file(self, rel: str) -> None:
        """Drop a file that moved or went away."""
        if self.files.pop(rel, None) is not None:
            self._dirty = True
