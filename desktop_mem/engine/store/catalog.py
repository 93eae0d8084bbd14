"""The in-memory catalog of the store: every parsed memory by path and by id, and the problems.

Built from the files at start-up (reusing the manifest for files whose size and mtime did
not change, so a warm start parses nothing) and kept current by every write and watcher event.
A store opened with its catalog to come (`defer_reads`: the window, which lists the last
session's first page meanwhile) has every read wait until its start has loaded the catalog and
committed what changed while it was closed (hand edits held back for a secret are known then): a
reader never sees a half-built catalog, only a later answer (issue #36).
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from datetime import datetime
from operator import attrgetter

from typing_extensions import Unpack

from desktop_mem.engine.models import (
    ListFilters,
    Memory,
    NotFoundError,
    Problem,
    ValidationError,
    select_memories,
)
from desktop_mem.engine.store import file_scan
from desktop_mem.engine.store.front_matter import FrontMatterError
from desktop_mem.engine.store.manifest import Manifest, Stat
from desktop_mem.engine.store.markdown_store import SYMLINK_REASON, MarkdownStore

# A start walks the files in a helper process beside it from this manifest size on (~2,500
# memories; below it the walk here takes milliseconds, less than starting the helper).
SCAN_BESIDE_BYTES = 1_000_000

log = logging.getLogger(__name__)
_PATH = attrgetter("path")
_CREATED = attrgetter("created_at")


def _walk_problems(links: Iterable[str], unreadable: Iterable[tuple[str, str]]) -> list[Problem]:
    """What a walk of the files reports: links (never read through) and files it cannot stat."""
    return [*(Problem(rel, f"{rel} {SYMLINK_REASON}") for rel in links),
            *(_unreadable(rel, reason) for rel, reason in unreadable)]


def _unreadable(rel: str, reason: str) -> Problem:
    return Problem(rel, f"cannot read the file: {reason}")


def _order_key(memory: Memory) -> tuple[datetime, str]:
    """The catalog's order: oldest first, then by path."""
    return memory.created_at, memory.path


class Catalog:
    """Thread-safe maps path -> Memory and id -> path, plus unreadable files as Problems."""

    def __init__(self, store: MarkdownStore, manifest: Manifest) -> None:
        self.store = store
        self.manifest = manifest
        self.lock = threading.RLock()
        self._by_path: dict[str, Memory] = {}
        self._by_id: dict[str, str] = {}
        self._problems: dict[str, Problem] = {}
        # conversation -> {path: id} of its memories (live or deleted): share_of() and ids_in()
        self._per_conversation: dict[str, dict[str, str]] = {}
        # Every memory in _order_key order, kept in place by each change: select() filters it
        # instead of sorting (two sorts of 100k memories held the GIL ~0.1 s in each chat turn's
        # snapshot: a stall of the window while a reply streamed; issue #25).
        self._ordered: list[Memory] = []
        # Bumped by every change: a listing's sorted order is reused until it moves (reads.py).
        self.generation = 0
        # Set once the catalog may be read: at once, unless the opening defers its load.
        self._loaded = threading.Event()
        self._loaded.set()
        self._loader: int | None = None  # the thread loading it meanwhile (reads on)
        manifest.share_ids_with(self._same_id)

    def defer_reads(self) -> None:
        """Make every read wait until `release_readers` (the store opens before its catalog loads);
        the thread that then loads it (`loading_here`) reads on."""
        self._loader = None
        self._loaded.clear()

    def loading_here(self) -> None:
        """This thread loads the catalog and commits what changed meanwhile: it reads on."""
        self._loader = threading.get_ident()

    def release_readers(self) -> None:
        """Let every reader go (the store's start has ended, or it closed before its load)."""
        self._loaded.set()
        self._loader = None

    @property
    def loaded(self) -> bool:
        """False while reads wait for the start to load the catalog (see `defer_reads`)."""
        return self._loaded.is_set()

    def wait_loaded(self) -> None:
        """Return once the catalog may be read (at once, but while a deferred start loads it)."""
        if self._loaded.is_set() or self._loader == threading.get_ident():
            return
        if threading.current_thread() is threading.main_thread():
            # a front end's GUI thread freezes here until the load ends
            log.warning("the main thread waits for the store's catalog to load")
        self._loaded.wait()

    def _same_id(self, memory_id: str) -> str:
        """The catalog's own string for this id (an equal object), so another table keyed by id
        holds no copy of it; `memory_id` itself when no memory has it. Two dict reads, no lock:
        at worst a copy is kept."""
        memory = self._by_path.get(self._by_id.get(memory_id, ""))
        return memory.id if memory is not None and memory.id == memory_id else memory_id

    def load(self, temp_files: list[str] | None = None) -> None:
        """Re-read the store; unchanged files come from the manifest's cache. Temp files of
        interrupted writes seen on the way are added to `temp_files`, if given."""
        with no_cyclic_gc():
            self._load(temp_files)

    def _load(self, temp_files: list[str] | None) -> None:
        loaded = self._load_beside_scan(temp_files) if self._first_load_of_a_large_store() else None
        memories, problems = loaded if loaded is not None else self._load_here(temp_files)
        memories.sort(key=_PATH)  # two stable sorts by one attribute each: no 100k key tuples
        memories.sort(key=_CREATED)
        with self.lock:
            self._ordered = memories
            self._by_path = {m.path: m for m in memories}
            # live copies win over tombstones when an id appears twice
            self._by_id = {m.id: m.path for m in sorted(memories, key=lambda m: m.deleted, reverse=True)}
            self._problems = {p.path: p for p in problems}
            self._per_conversation = {}
            for m in memories:
                self._per_conversation.setdefault(m.conversation_id, {})[m.path] = m.id
            self.generation += 1

    def _load_here(self, temp_files: list[str] | None) -> tuple[list[Memory], list[Problem]]:
        """Stat every file, then take the manifest's memory of each unchanged one."""
        stats, links, unreadable = file_scan.stat_files(str(self.store.root), str(self.store.entries),
                                                        temp_files)
        problems = _walk_problems(links, unreadable)
        memories = list(self.manifest.reuse(stats))
        changed = {rel: stats[rel] for rel in stats.keys() - {m.path for m in memories}}
        del stats
        return memories, problems + self._parse_changed(changed, memories)

    def _first_load_of_a_large_store(self) -> bool:
        if self._by_path or self._problems or not self.manifest.saved_only():
            return False  # a reload: the in-memory rows may be ahead of the file
        try:
            return self.manifest.path.stat().st_size >= SCAN_BESIDE_BYTES
        except OSError:
            return False

    def _load_beside_scan(self, temp_files: list[str] | None) -> tuple[list[Memory], list[Problem]] | None:
        """A start of a large store: a helper process stats the files (file_scan.py) while this
        one builds the manifest's cached memories, then only the files it found changed are
        read. None when the helper cannot run or compared with other rows (walk here instead)."""
        store = self.store
        scan = file_scan.spawn(str(store.root), str(store.entries), str(self.manifest.path))
        if scan is None:
            return None
        count = mtime_total = size_total = 0
        memories: list[Memory] = []
        unusable: dict[str, Stat] = {}  # rows that do not parse: their files are read again
        try:
            for rel, mtime_ns, size, memory in self.manifest.cached():
                count, mtime_total, size_total = count + 1, mtime_total + mtime_ns, size_total + size
                if memory is None:
                    unusable[rel] = (mtime_ns, size)
                else:
                    memories.append(memory)
        except BaseException:
            scan.cancel()
            raise
        answer = scan.result()
        if answer is None or tuple(answer["fingerprint"]) != file_scan.fingerprint(
                count, mtime_total, size_total):
            return None  # other rows than these (a writer saved meanwhile): walk here
        changed: dict[str, Stat] = {rel: (int(st[0]), int(st[1])) for rel, st in answer["changed"].items()}
        gone = set(answer["gone"])
        if changed or gone:
            memories = [m for m in memories if m.path not in changed and m.path not in gone]
        for rel in gone:
            self.manifest.forget_file(rel)
        for rel, stat in unusable.items():
            if rel not in gone:
                changed.setdefault(rel, stat)
        problems = _walk_problems(answer["links"], answer["unreadable"])
        if temp_files is not None:
            temp_files.extend(answer["temp_files"])
        return memories, problems + self._parse_changed(changed, memories)

    def _parse_changed(self, changed: dict[str, Stat], memories: list[Memory]) -> list[Problem]:
        """Read the new or changed files into `memories`; the unreadable ones as Problems."""
        problems: list[Problem] = []
        for rel in sorted(changed):
            result = self._read(rel)
            if isinstance(result, Problem):
                problems.append(result)
            else:
                memories.append(result)
                self.manifest.remember_file(result, changed[rel])
        return problems

    def reload(self, paths: Iterable[str]) -> list[Memory | Problem | str]:
        """Re-read changed paths; returns the new Memory, a Problem, or the path if it is gone.

        Each file is read first and swapped in under the lock, so a reader never sees a memory
        vanish while its file is being re-read.
        """
        results: list[Memory | Problem | str] = []
        for rel in paths:
            gone = not os.path.lexists(self.store.root / rel)  # a dangling link is reported, not gone
            result: Memory | Problem | str = rel if gone else self._read(rel)
            with self.lock:
                self.generation += 1
                old = self._by_path.pop(rel, None)
                if old is not None:
                    self._unplace(old)
                    self._per_conversation.get(old.conversation_id, {}).pop(rel, None)
                    if self._by_id.get(old.id) == rel:
                        del self._by_id[old.id]
                self._problems.pop(rel, None)
                if isinstance(result, Problem):
                    self._problems[rel] = result
                elif isinstance(result, Memory):
                    self.remember(result)
                else:
                    self.manifest.forget_file(rel)
            results.append(result)
        return results

    def _read(self, rel: str) -> Memory | Problem:
        try:
            return self.store.read(rel)
        except (FrontMatterError, ValidationError) as exc:
            return Problem(rel, str(exc))
        except OSError as exc:
            return _unreadable(rel, exc.strerror or str(exc))

    def remember(self, memory: Memory) -> None:
        """Record a memory just written (or re-read)."""
        with self.lock:
            self.generation += 1
            old = self._by_path.get(memory.path)
            if old is not None:
                self._unplace(old)
                self._per_conversation.get(old.conversation_id, {}).pop(old.path, None)
            self._per_conversation.setdefault(memory.conversation_id, {})[memory.path] = memory.id
            self._by_path[memory.path] = memory
            bisect.insort(self._ordered, memory, key=_order_key)
            self._by_id[memory.id] = memory.path
            with contextlib.suppress(OSError):
                self.manifest.remember_file(memory, (self.store.root / memory.path).stat())

    def _unplace(self, memory: Memory) -> None:
        """Take this exact object out of the ordered list (the lock is held)."""
        ordered = self._ordered
        key = _order_key(memory)
        i = bisect.bisect_left(ordered, key, key=_order_key)
        while i < len(ordered) and _order_key(ordered[i]) == key:
            if ordered[i] is memory:
                del ordered[i]
                return
            i += 1
        for j, m in enumerate(ordered):  # not where its key says: never expected, never left behind
            if m is memory:
                del ordered[j]
                return

    def show_as(self, memory: Memory) -> None:
        """Give out `memory` for its file from now on, in this process only (the manifest is not
        told): a read-only engine's redacted view of a file its writer will redact."""
        with self.lock:
            old = self._by_path.get(memory.path)
            if old is not None:
                self._unplace(old)
                self._by_path[memory.path] = memory
                bisect.insort(self._ordered, memory, key=_order_key)
                self.generation += 1

    def forget(self, memory: Memory) -> None:
        """Drop a memory whose file moved or went away."""
        with self.lock:
            self.generation += 1
            if (old := self._by_path.pop(memory.path, None)) is not None:
                self._unplace(old)
                self._per_conversation.get(old.conversation_id, {}).pop(old.path, None)
            self.manifest.forget_file(memory.path)
            if self._by_id.get(memory.id) == memory.path:
                del self._by_id[memory.id]

    def get(self, memory_id: str) -> Memory:
        """By id, or by a unique prefix of at least 6 characters; NotFoundError otherwise."""
        self.wait_loaded()
        with self.lock:
            path = self._by_id.get(memory_id)
            if path is None and len(memory_id) >= 6:
                matches = [i for i in self._by_id if i.startswith(memory_id)]
                if len(matches) == 1:
                    path = self._by_id[matches[0]]
            memory = self._by_path.get(path) if path else None
        if memory is None:
            raise NotFoundError(f"no memory with id {memory_id!r}; `desktop-mem list` shows the ids")
        return memory

    def lookup(self, memory_id: str) -> Memory | None:
        """Exactly this id, or None."""
        self.wait_loaded()
        with self.lock:
            path = self._by_id.get(memory_id)
            return self._by_path.get(path) if path else None

    def at_path(self, rel: str) -> Memory | None:
        """The memory stored at this store-relative path, if it parsed."""
        self.wait_loaded()
        with self.lock:
            return self._by_path.get(rel)

    def select(self, **filters: Unpack[ListFilters]) -> list[Memory]:
        """Memories matching the filters, oldest first."""
        self.wait_loaded()
        with self.lock:
            items = list(self._ordered)  # oldest first, then by path: nothing to sort
        return select_memories(items, filters)

    def __len__(self) -> int:
        """How many memories (live or deleted) the catalog holds."""
        self.wait_loaded()
        with self.lock:
            return len(self._by_path)

    def problems(self) -> list[Problem]:
        """Files that could not be read, with their reasons."""
        self.wait_loaded()
        with self.lock:
            return sorted(self._problems.values(), key=lambda p: p.path)

    def share_of(self, conversation_ids: Iterable[str]) -> float:
        """The fraction of all memories (live or deleted) that these conversations hold."""
        self.wait_loaded()
        with self.lock:
            total = len(self._by_path)
            part = sum(len(self._per_conversation.get(c, ())) for c in set(conversation_ids))
        return part / total if total else 1.0

    def ids_in(self, conversation_ids: Iterable[str]) -> list[str]:
        """The ids of every memory (live or deleted) these conversations hold, without a scan of
        the store (an id held twice, live and deleted, may appear twice): the read path's search
        over a scope (retrieval.py)."""
        self.wait_loaded()
        found: list[str] = []
        with self.lock:
            for c in set(conversation_ids):
                found.extend(self._per_conversation.get(c, {}).values())
        return found

    def live_conversations(self) -> set[str]:
        """Conversations that hold at least one live memory."""
        self.wait_loaded()
        with self.lock:
            return {m.conversation_id for m in self._by_path.values() if not m.deleted}


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Python's cycle collector paused while a start builds 100,000s of objects that hold no
    cycles: each full pass walked everything built so far (quadratic). Reference counting still
    frees what is dropped; the collector runs again after (issue #25)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
