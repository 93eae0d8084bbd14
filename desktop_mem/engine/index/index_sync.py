"""Keep the derived indexes (vectors + keywords) and memory_index.json in step with the files.

memory_index.json records, per file, its stat signature, content hash and parsed memory (so a
restart with unchanged files parses nothing), and per indexed id the hashes of the text and the
metadata that went into the indexes (so a restart re-embeds only what changed, and a move into
`deleted/` only rewrites metadata), with a key of the files they were computed from (so a restart
computes those hashes only for memories whose files changed). Everything here can be deleted and
rebuilt from the files.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from desktop_mem.engine.index.index_text import TurnContext
from desktop_mem.engine.index.keyword_index import KeywordDoc, KeywordIndex
from desktop_mem.engine.index.native_heap import release_free_heap
from desktop_mem.engine.models import Memory
from desktop_mem.engine.store.manifest import (
    INPUTS_BITS,
    Manifest,
    entry_hashes,
    entry_inputs,
    entry_text_hash,
    indexed_entry,
)

if TYPE_CHECKING:  # chromadb and onnxruntime load in about a second: only when an index opens
    from desktop_mem.engine.index.embedder import Embedder
    from desktop_mem.engine.index.vector_index import VectorIndex

log = logging.getLogger(__name__)
Progress = Callable[[int, int], None]
# A background() run saves the manifest after a batch once this many seconds passed, and at
# least ten times as long as the last save took (so saving never costs over a tenth of the run).
BULK_SAVE_SECONDS = 1.0
# 100k memories took 1,108 s to rebuild with two at load 6-8 (docs/benchmarks.md, issue #25)
REBUILD_WORKERS = 2


@dataclass(frozen=True)
class SyncReport:
    """What a sync did."""

    embedded: int
    metadata_only: int
    removed: int
    unchanged: int


def _nothing() -> None:
    return None


def _notify(condition: threading.Condition) -> None:
    with condition:
        condition.notify_all()


class _Abandoned(Exception):  # noqa: N818 - a signal to the background worker, never raised out
    """Raised inside a background() worker to stop it between embedding chunks."""


def index_metadata(memory: Memory) -> dict[str, Any]:
    """The front matter mirrored into the vector index for `where` filters."""
    return {
        "role": memory.role,
        "conversation_id": memory.conversation_id,
        "kind": memory.kind or "",
        "source": memory.source or "",
        "created_at": memory.created_at.isoformat(),
        "created_ts": memory.created_at.timestamp(),
        "deleted": memory.deleted,
        "replaced_by": memory.replaced_by or "",
        "summary_kind": memory.summary_kind or "",
        "path": memory.path,
    }


# json.dumps(value, sort_keys=True, default=str) exactly, without building an encoder per call
# (~40 % of the two digests a memory costs at each index open: 100,000 of them; issue #25). The
# output must never change: the manifest's digests would all differ and every memory be embedded
# again.
_ENCODER = json.JSONEncoder(sort_keys=True, default=str)


def _digest(value: Any) -> str:
    return hashlib.sha1(_ENCODER.encode(value).encode()).hexdigest()[:16]


# What a memory is indexed with (its text, index_metadata, TurnContext.text_for) is a function of
# its file (content and path) and, for a turn, of the turn text_for adds: a start skips the two
# digests of a memory whose key of those (IndexSync._inputs) is the one recorded with them (a warm
# sync at 100,000: 2.0 -> 1.2 s of CPU; issue #25). Bump INDEX_INPUTS_VERSION whenever the same files would
# be indexed differently (index_metadata, text_for, index_text, the parser): every memory is then
# digested again once at the next start (nothing is embedded again unless its digests changed).
# tests/test_index_inputs.py pins those functions' outputs and source so a change needs a bump.
INDEX_INPUTS_VERSION = 1
_INPUTS_SALT = f"{INDEX_INPUTS_VERSION}:{','.join(f.name for f in fields(Memory))}"
_INPUTS_SHIFT = 56 - INPUTS_BITS  # a 7-byte blake2b, cut to the bits an entry keeps


class IndexSync:
    """Apply catalog changes to the vector and keyword indexes (thread-safe)."""

    def __init__(
        self,
        manifest: Manifest,
        embedder: Embedder,
        vectors: VectorIndex,
        keywords: KeywordIndex,
        *,
        read_only: bool = False,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.manifest = manifest
        self.embedder = embedder
        self.vectors = vectors
        self.keywords = keywords
        self.read_only = read_only
        self._on_close = on_close  # after both indexes closed (a read-only store's scratch copy goes)
        self._lock = threading.RLock()
        # While a whole-store sync runs, a write's update is handed to it (applied at its next
        # batch) instead of waiting for it: a save during a first full index lands at once.
        self._state = threading.Lock()
        self._syncing = False
        self._handed: list[tuple[list[Memory], list[str]]] = []
        self._on_hand: Callable[[], None] = _nothing  # wakes a background() worker
        # What is indexed for a turn includes the turn before it (see index_text.py).
        self.turns = TurnContext()
        name = f"{embedder.name}:{embedder.dim}"
        if manifest.embedder_name != name and not read_only:
            if manifest.embedder_name:
                log.info("embedding model changed (%s -> %s): re-embedding every memory",
                         manifest.embedder_name, name)
            manifest.indexed.clear()  # another model made those vectors: re-embed everything
            manifest.embedder_name = name

    def consistent(self) -> bool:
        """True when the indexes hold exactly what the manifest says (else rebuild)."""
        n = len(self.manifest.indexed)
        return self.vectors.count() == n and self.keywords.count() == n

    def sync(self, memories: Iterable[Memory], progress: Progress | None = None) -> SyncReport:
        """Make the indexes hold exactly `memories` (the whole catalog)."""
        if self.read_only:
            return SyncReport(0, 0, 0, 0)
        with self._lock:
            with self._state:
                self._syncing = True
            try:
                return self._sync(memories, progress)
            finally:
                with self._state:
                    self._syncing = False
                release_free_heap()  # the whole-store pass's scratch (~40 MB at 100k) goes back

    def _sync(self, memories: Iterable[Memory], progress: Progress | None) -> SyncReport:
        if not self.consistent():
            self._reconcile()
        release_free_heap()  # what opening chroma freed, before the pass builds its own scratch
        desired: dict[str, Memory] = {}
        for m in memories:  # read here, under the index lock: a later write is handed to us
            desired[m.id] = m
        gone = [i for i in self.manifest.indexed if i not in desired]
        wanted = list(desired.values())
        del desired  # not held through the pass: its table is ~5 MB at 100k, at the start's peak
        fresh: set[str] = set()  # ids a write brought up to date meanwhile: newer than `wanted`
        report = self._apply(wanted, gone, progress, lambda: self._take_handed(fresh))
        while True:  # what was handed over after the last batch; then writes wait for the lock again
            with self._state:
                if not self._handed:
                    self._syncing = False
                    break
            self._take_handed(fresh)
        if report.embedded or report.metadata_only or report.removed or fresh:
            self.manifest.save()
        else:
            self.manifest.flush()  # a warm start changes nothing: no 10k-entry rewrite
        return report

    def _reconcile(self) -> None:
        """Make the manifest and both indexes agree on which ids are indexed, keeping what they
        agree on: a kill between an index write and the manifest's next save (a bulk import)
        costs a re-embed of those ids only, not of the whole store."""
        log.info("index does not match memory_index.json: keeping what both hold, re-indexing the rest")
        in_vectors, in_keywords = self.vectors.ids(), self.keywords.ids()
        both = in_vectors & in_keywords
        for i in [i for i in self.manifest.indexed if i not in both]:
            del self.manifest.indexed[i]
        if stray := sorted(in_vectors - self.manifest.indexed.keys()):
            self.vectors.delete(stray)
        if stray := sorted(in_keywords - self.manifest.indexed.keys()):
            self.keywords.delete(stray)

    @contextlib.contextmanager
    def background(self, progress: Progress | None = None, expected: int = 0,
                   workers: int = 1) -> Iterator[list[int]]:
        """Within the block, writes' index updates are queued and indexed by a worker thread, so
        a bulk import writes its next batch of files while the last one is embedded (one core
        each). The block ends when everything queued is indexed. `progress(done, total)` counts
        the memories indexed; `expected` is the total to announce before the writes arrive.

        `workers`: embedding runs side by side (a bulk import that nothing else waits on: 2).
        Yields [memories indexed, of expected], final when the block has ended. The manifest is
        saved between batches (see BULK_SAVE_SECONDS), so a kill re-embeds little."""
        if self.read_only:
            yield [0, 0]
            return
        wake = threading.Condition()
        stop, abandon = threading.Event(), threading.Event()
        errors: list[BaseException] = []
        counts = [0, expected]

        def batch_progress(done: int, _total: int) -> None:
            if abandon.is_set():  # the import failed or was interrupted: stop after this chunk
                raise _Abandoned
            if progress is not None:
                progress(counts[0] + done, counts[1])

        def work() -> None:
            saved, cost = time.monotonic(), 0.0
            with self._lock:
                try:
                    while True:
                        with wake:
                            wake.wait_for(lambda: bool(self._handed) or stop.is_set())
                        with self._state:
                            handed, self._handed = self._handed, []
                        if not handed:
                            if stop.is_set():
                                return
                            continue
                        for changed, removed in handed:
                            counts[1] = max(counts[1], counts[0] + len(changed))
                            self._apply(changed, removed, batch_progress)
                            counts[0] += len(changed)
                        if time.monotonic() - saved >= max(BULK_SAVE_SECONDS, 10 * cost):
                            began = time.monotonic()
                            self.manifest.save()
                            saved = time.monotonic()
                            cost = saved - began
                except _Abandoned:
                    pass
                except BaseException as exc:  # re-raised in the importing thread
                    errors.append(exc)
                finally:
                    with self._state:
                        self._syncing = False
                        handed, self._handed = self._handed, []
                    # Left for the next sync (the manifest does not list them) when interrupted;
                    # after an index error, tried the slow way.
                    for changed, removed in [] if abandon.is_set() else handed:
                        with contextlib.suppress(Exception):
                            self._apply(changed, removed, None)
                    self.manifest.save()

        with self._state:
            self._syncing = True
        self._on_hand = lambda: _notify(wake)
        usual = getattr(self.embedder, "workers", None)
        if usual is not None:
            self.embedder.workers = workers  # type: ignore[attr-defined]  # OnnxEmbedder only
        worker = threading.Thread(target=work, name="index-background", daemon=True)
        worker.start()
        try:
            yield counts
        except BaseException:
            abandon.set()  # Ctrl+C or a failed write: do not make the user wait for the embeddings
            raise
        finally:
            stop.set()
            _notify(wake)
            worker.join()
            self._on_hand = _nothing
            if usual is not None:
                self.embedder.workers = usual  # type: ignore[attr-defined]
        if errors:
            raise errors[0]

    def _take_handed(self, fresh: set[str]) -> set[str]:
        """Apply the writes handed over since the last batch; returns every id written meanwhile."""
        with self._state:
            handed, self._handed = self._handed, []
        for changed, removed in handed:
            self._apply(changed, removed, None)
            fresh.update(m.id for m in changed)
            fresh.update(removed)
        return fresh

    def apply(self, changed: Sequence[Memory], removed_ids: Sequence[str] = ()) -> SyncReport:
        """Index changed memories and drop removed ids (after a write or a watcher event).

        While a whole-store sync runs, they are handed to it and this returns at once."""
        if self.read_only:
            return SyncReport(0, 0, 0, 0)
        while not self._lock.acquire(timeout=0.05):
            with self._state:
                if self._syncing:
                    self._handed.append((list(changed), list(removed_ids)))
                    self._on_hand()
                    return SyncReport(0, 0, 0, 0)
        try:
            report = self._apply(changed, removed_ids, None)
            self.manifest.save(force=False)
            return report
        finally:
            self._lock.release()

    def rebuild(self, memories: Sequence[Memory], progress: Progress | None = None) -> SyncReport:
        """Drop both indexes and re-embed every memory from the files, REBUILD_WORKERS embedding
        runs side by side (the user asked for it and waits: `desktop-mem reindex`, Rebuild index)."""
        usual = getattr(self.embedder, "workers", None)
        with self._lock:
            self.vectors.reset()
            self.keywords.reset()
            self.manifest.indexed.clear()
            self.turns = TurnContext()
            if usual is not None:
                self.embedder.workers = max(usual, REBUILD_WORKERS)  # type: ignore[attr-defined]
            try:
                return self.sync(memories, progress)
            finally:
                if usual is not None:
                    self.embedder.workers = usual  # type: ignore[attr-defined]

    def _apply(
        self, changed: Sequence[Memory], removed_ids: Sequence[str], progress: Progress | None,
        between: Callable[[], set[str]] = set,
    ) -> SyncReport:
        """`between` runs after each embedding batch and names ids a write updated meanwhile:
        their older versions here are skipped."""
        removed = [i for i in removed_ids if i in self.manifest.indexed]
        # A change to a turn changes what its next turn is indexed with: re-check that one too.
        touched = self.turns.update(changed, removed_ids)
        touched.difference_update(m.id for m in changed)  # in place: no second set of 100k ids
        touched.difference_update(removed_ids)
        neighbours = [n for i in sorted(touched) if (n := self.turns.memory(i)) is not None]
        del touched
        changed = [*changed, *neighbours]
        if removed:
            self.vectors.delete(removed)
            self.keywords.delete(removed)
            for i in removed:
                self.manifest.indexed.pop(i, None)
        to_embed: list[Memory] = []
        meta_only: list[Memory] = []
        unchanged = 0
        indexed = self.manifest.indexed
        for m in changed:
            known = indexed.get(m.id)
            inputs = self._inputs(m)
            if known is not None and inputs and entry_inputs(known) == inputs:
                unchanged += 1  # the same files as when its digests were recorded: the same digests
                continue
            # The vector depends on the text alone; the keyword doc also on the turn before it,
            # so that context counts as "metadata": a change there re-uses the stored vector.
            text_hash = _digest(m.text)
            meta_hash = _digest([index_metadata(m), self.turns.text_for(m)])
            if known is not None and entry_hashes(known) == (text_hash, meta_hash):
                unchanged += 1
                if inputs:  # recorded without its key (an older version) or with another one
                    indexed[m.id] = indexed_entry(text_hash, meta_hash, inputs)
            elif known is not None and entry_text_hash(known) == text_hash:
                meta_only.append(m)
            else:
                to_embed.append(m)
        # Similar lengths side by side: less padding per embedding run (deterministic for a
        # given set of texts; the int8 model's vectors depend slightly on their batch-mates).
        to_embed.sort(key=lambda m: len(m.text))
        total = len(to_embed)
        batch = 256
        skip: set[str] = set()
        for start in range(0, total, batch):
            chunk = [m for m in to_embed[start:start + batch] if m.id not in skip]
            if chunk:
                vectors = self.embedder.embed([m.text for m in chunk])
                self._write(chunk, vectors)
            if progress is not None:
                progress(min(start + batch, total), total)
            skip = between()
        if total:  # a bulk job's second copy of the model is dropped when its memories are in
            release = getattr(self.embedder, "release_bulk_session", None)  # OnnxEmbedder only
            if release is not None:
                release()
        meta_only = [m for m in meta_only if m.id not in skip]
        if meta_only:
            stored = self.vectors.get_embeddings([m.id for m in meta_only])
            missing = [m for m in meta_only if m.id not in stored]
            ready = [m for m in meta_only if m.id in stored]
            if ready:
                import numpy as np  # not at import: the app's start-up path imports this module

                self._write(ready, np.stack([stored[m.id] for m in ready]))
            if missing:
                self._write(missing, self.embedder.embed([m.text for m in missing]))
        return SyncReport(len(to_embed), len(meta_only), len(removed), unchanged)

    def _write(self, memories: Sequence[Memory], vectors: Any) -> None:
        ids, metadata = [m.id for m in memories], [index_metadata(m) for m in memories]
        self.vectors.upsert(ids, vectors, metadata, [m.text for m in memories])
        texts = [self.turns.text_for(m) for m in memories]
        self.keywords.upsert([
            KeywordDoc(m.id, t, m.conversation_id, m.role, m.kind or "", m.deleted)
            for m, t in zip(memories, texts, strict=True)
        ])
        for m, t in zip(memories, texts, strict=True):
            self.manifest.indexed[m.id] = indexed_entry(_digest(m.text), _digest([index_metadata(m), t]),
                                                        self._inputs(m))

    def _inputs(self, memory: Memory) -> int:
        """A key of everything the memory's digests are computed from: its file's content hash and
        path, and the same of the turn its keyword text adds (TurnContext.previous), with
        INDEX_INPUTS_VERSION. 0 (never skipped) for a memory without a content hash."""
        previous = self.turns.previous(memory)
        if not memory.content_hash or (previous is not None and not previous.content_hash):
            return 0
        text = f"{_INPUTS_SALT}\0{memory.content_hash}\0{memory.path}"
        if previous is not None:
            text = f"{text}\0{previous.content_hash}\0{previous.path}"
        raw = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=7).digest()
        return int.from_bytes(raw) >> _INPUTS_SHIFT or 1

    def status(self) -> str:
        """One line for `doctor` and the status bar."""
        return (f"{len(self.manifest.indexed)} memories indexed ({self.vectors.count()} vectors, "
                f"{self.keywords.count()} keyword docs; embedder {self.embedder.name})")

    def close(self) -> None:
        """Close both indexes (then `on_close`, once)."""
        self.vectors.close()
        self.keywords.close()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()
