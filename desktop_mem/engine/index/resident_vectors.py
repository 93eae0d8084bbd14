"""Whole conversations' vectors held in memory, for an exact search within a chat turn's scope.

At 100,000 memories a chat turn's scope (its conversation + the ~9.1k global facts) was searched
with an oversampled store-wide HNSW query and, in 68 % of searches, a second one limited to the
scope's ids: ~30 ms of a 37 ms read (issue #25). One matrix product over the scope's vectors takes
~1 ms and is exact. The vectors are kept as int16 codes with a scale per row (half of float32: 7 MB
for 9.1k global facts at 384 dimensions; cosines off by < 1e-4), one block per conversation, the
least recently searched dropped past a byte budget. Writes through the VectorIndex patch the blocks
in place (a new fact is searchable at once, with no reload); a write by another process is seen
after a reopen, like chroma's own HNSW.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatVector = npt.NDArray[np.float32]
FloatMatrix = npt.NDArray[np.float32]
# What the blocks may hold in all (codes, scales and norms; ids are extra, ~0.1 KB each): the
# global facts of a 100k store (9.1k x 384 dimensions, 7.2 MB) and a few conversations. A scope
# larger than this is searched through chroma as before (retrieval.py).
RESIDENT_BYTES = 8 * 2**20
# Rows per chunk: a block grows a chunk at a time (never copied whole) and one matrix product per
# chunk keeps the float32 copy of its codes small (512: 0.7 ms for 9.3k rows, 4096: 1.3 ms).
CHUNK_ROWS = 512
_CODE_MAX = 32767.0


@dataclass(frozen=True)
class Nearest:
    """One row of a search: its id, cosine similarity to the query and (dequantised) vector."""

    id: str
    similarity: float
    vector: FloatVector


class _Block:
    """One conversation's vectors: int16 codes in chunks of CHUNK_ROWS rows (all full but the
    last), each row's scale (code x scale = value) and original norm, and the id of each row."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self.codes: list[npt.NDArray[np.int16]] = []
        self.scales: list[FloatVector] = []
        self.norms: list[FloatVector] = []

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for parts in (self.codes, self.scales, self.norms) for p in parts)

    @classmethod
    def read(cls, dim: int, ids: list[str], fetch: Fetch) -> _Block:
        """A block of these ids' stored vectors (those the index holds). Its arrays are made
        before any vector is read and its id table after: the fetch's many short-lived objects
        (chroma hands vectors over as Python floats) then leave no long-lived ones between them,
        which would keep their memory from going back to the system."""
        block = cls(dim)
        for chunk in range(-(-len(ids) // CHUNK_ROWS)):
            block._resize(chunk, min(CHUNK_ROWS, len(ids) - chunk * CHUNK_ROWS))
        for found, matrix in fetch(ids):
            block.extend(found, matrix, index=False)
        block.rows = {entry_id: row for row, entry_id in enumerate(block.ids)}
        return block

    def extend(self, ids: Sequence[str], matrix: FloatMatrix, *, index: bool = True) -> None:
        """Append rows for ids the block does not hold yet (`index=False`: the id table is
        filled in later)."""
        done = 0
        while done < len(ids):
            chunk, at = divmod(len(self.ids), CHUNK_ROWS)
            if chunk == len(self.codes):
                self._resize(chunk, min(CHUNK_ROWS, max(16, len(ids) - done)))
            elif at == len(self.codes[chunk]):  # the last chunk is full below CHUNK_ROWS: grow it
                self._resize(chunk, min(CHUNK_ROWS, max(at + len(ids) - done, 2 * at)))
            take = min(len(ids) - done, len(self.codes[chunk]) - at)
            self._write(chunk, at, matrix[done : done + take])
            for entry_id in ids[done : done + take]:
                if index:
                    self.rows[entry_id] = len(self.ids)
                self.ids.append(entry_id)
            done += take

    def _resize(self, chunk: int, size: int) -> None:
        """Give chunk `chunk` (the last, or a new one) room for `size` rows."""
        if chunk == len(self.codes):
            self.codes.append(np.zeros((0, self.dim), np.int16))
            self.scales.append(np.zeros(0, np.float32))
            self.norms.append(np.zeros(0, np.float32))
        for parts in (self.codes, self.scales, self.norms):
            old = parts[chunk]
            grown = np.zeros((size, *old.shape[1:]), old.dtype)
            grown[: len(old)] = old
            parts[chunk] = grown

    def _write(self, chunk: int, at: int, matrix: FloatMatrix) -> None:
        peak = np.abs(matrix).max(axis=1) if matrix.shape[1] else np.zeros(len(matrix), np.float32)
        scale = np.where(peak > 0, peak / _CODE_MAX, 1.0).astype(np.float32)
        self.codes[chunk][at : at + len(matrix)] = np.round(matrix / scale[:, None])
        self.scales[chunk][at : at + len(matrix)] = scale
        self.norms[chunk][at : at + len(matrix)] = np.linalg.norm(matrix, axis=1)

    def put(self, entry_id: str, vector: FloatVector) -> None:
        row = self.rows.get(entry_id)
        if row is None:
            self.extend([entry_id], vector[None, :])
        else:
            self._write(*divmod(row, CHUNK_ROWS), vector[None, :])

    def remove(self, entry_id: str) -> None:
        """Drop a row: the last row moves into its place (rows stay contiguous)."""
        row = self.rows.pop(entry_id, None)
        if row is None:
            return
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            (c, a), (lc, la) = divmod(row, CHUNK_ROWS), divmod(last, CHUNK_ROWS)
            for parts in (self.codes, self.scales, self.norms):
                parts[c][a] = parts[lc][la]
            self.ids[row] = moved
            self.rows[moved] = row
        self.ids.pop()
        if len(self.ids) <= (len(self.codes) - 1) * CHUNK_ROWS:  # the last chunk is empty: free it
            for parts in (self.codes, self.scales, self.norms):
                parts.pop()

    def vector(self, row: int) -> FloatVector:
        chunk, at = divmod(row, CHUNK_ROWS)
        out: FloatVector = self.codes[chunk][at].astype(np.float32) * self.scales[chunk][at]
        out.setflags(write=False)
        return out

    def similarities(self, unit_query: FloatVector) -> FloatVector:
        """Cosine similarity of every row to a unit-length query."""
        out = np.empty(len(self.ids), np.float32)
        for chunk, codes in enumerate(self.codes):
            start = chunk * CHUNK_ROWS
            rows = min(len(codes), len(self.ids) - start)
            if rows <= 0:
                break
            dots = codes[:rows].astype(np.float32) @ unit_query
            norms = np.maximum(self.norms[chunk][:rows], 1e-12)
            out[start : start + rows] = dots * self.scales[chunk][:rows] / norms
        return out


IdsOf = Callable[[str], list[str]]  # the ids a conversation holds (that the index has)
Fetch = Callable[[list[str]], Iterator[tuple[list[str], FloatMatrix]]]  # their vectors, a batch at a time
_Write = tuple[str, "FloatVector | None", "str | None"]  # an id, its vector and conversation (None: gone)


class _Reading:
    """The writes that land while blocks are read from the index, replayed onto them before they
    are kept (a chat turn saves its messages while the first search reads the global block)."""

    def __init__(self) -> None:
        self.writes: list[_Write] = []
        self.reset = False  # the index was reset meanwhile: what was read is gone


class ResidentVectors:
    """Conversations' vectors in memory under a byte budget, kept in step by the index's writes."""

    def __init__(self, budget: int = RESIDENT_BYTES) -> None:
        self.budget = budget
        self._blocks: OrderedDict[str, _Block] = OrderedDict()  # least recently searched first
        self._too_big: set[tuple[str, ...]] = set()  # scopes that did not fit (until a removal)
        self._lock = threading.Lock()  # searches run in worker threads beside index writes
        self._generation = 0  # bumped by every write: a scope sized across a removal is not noted
        self._readings: list[_Reading] = []

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(b.nbytes for b in self._blocks.values())

    def nearest(self, query: FloatVector, conversations: Iterable[str], n: int, ids_of: IdsOf,
                fetch: Fetch) -> list[Nearest] | None:
        """The n rows of these conversations nearest to `query` (cosine), nearest first; blocks
        not in memory are read first (the first search of a 100k store's global facts waits
        0.4-0.8 s for them, at load 3-5). None when the conversations do not fit the budget."""
        scope = tuple(dict.fromkeys(conversations))
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        with self._lock:
            if self.budget <= 0 or scope in self._too_big:
                return None
            missing = [c for c in scope if c not in self._blocks]
            held = sum(self._blocks[c].nbytes for c in scope if c in self._blocks)
            generation = self._generation
        loaded: dict[str, _Block] = {}
        if missing:
            wanted = {c: ids_of(c) for c in missing}
            if not self._fits(scope, wanted, held, q.shape[0], generation):
                return None
            loaded = self._read(wanted, q.shape[0], fetch) or {}
        with self._lock:
            blocks = [b for c in scope if (b := self._blocks.get(c, loaded.get(c))) is not None]
            if len(blocks) < len(scope):  # the index was reset while this search read
                return None
            for c in scope:
                if c in self._blocks:
                    self._blocks.move_to_end(c)
            self._evict(scope)
            return self._search(blocks, q, n)

    def _fits(self, scope: tuple[str, ...], wanted: dict[str, list[str]], held: int, dim: int,
              generation: int) -> bool:
        """Whether the scope fits the budget, checked before any vector is read (if not, the
        scope is noted as too big)."""
        row_bytes = dim * 2 + 8
        need = held + sum(-(-len(ids) // CHUNK_ROWS) * CHUNK_ROWS * row_bytes for ids in wanted.values())
        if need <= self.budget:
            return True
        with self._lock:
            if generation == self._generation:
                self._too_big.add(scope)
        return False

    def _read(self, wanted: dict[str, list[str]], dim: int, fetch: Fetch) -> dict[str, _Block] | None:
        """Blocks for these conversations, read outside the lock, then brought up to date with
        the writes made meanwhile and kept; None when the index was reset meanwhile."""
        reading = _Reading()
        with self._lock:
            self._readings.append(reading)
        loaded: dict[str, _Block] | None = None
        try:
            loaded = {c: _Block.read(dim, ids, fetch) for c, ids in wanted.items()}
        finally:
            with self._lock:
                self._readings.remove(reading)
                if loaded is not None and not reading.reset:
                    for name, block in loaded.items():
                        _replay(block, name, reading.writes)
                    self._blocks.update(loaded)
                    self._evict(tuple(loaded))
        return None if reading.reset else loaded

    def _evict(self, keep: tuple[str, ...]) -> None:
        """Drop the least recently searched blocks (not those of `keep`) past the budget."""
        total = sum(b.nbytes for b in self._blocks.values())
        while total > self.budget and self._blocks:
            first = next(iter(self._blocks))
            if first in keep:
                break
            total -= self._blocks.pop(first).nbytes

    @staticmethod
    def _search(blocks: list[_Block], q: FloatVector, n: int) -> list[Nearest]:
        unit = q / max(float(np.linalg.norm(q)), 1e-12)
        parts = [b.similarities(unit) for b in blocks]
        sims = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        k = min(n, len(sims))
        if k <= 0:
            return []
        top = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        order = top[np.argsort(-sims[top], kind="stable")]
        starts = np.cumsum([0, *(len(b) for b in blocks)])
        out: list[Nearest] = []
        for i in order:
            which = int(np.searchsorted(starts, i, side="right")) - 1
            block, row = blocks[which], int(i - starts[which])
            out.append(Nearest(block.ids[row], float(sims[i]), block.vector(row)))
        return out

    def vectors(self, ids: Iterable[str]) -> dict[str, FloatVector]:
        """The vectors of these ids that a block holds."""
        found: dict[str, FloatVector] = {}
        with self._lock:
            for entry_id in ids:
                for block in self._blocks.values():
                    row = block.rows.get(entry_id)
                    if row is not None:
                        found[entry_id] = block.vector(row)
                        break
        return found

    def written(self, ids: Sequence[str], matrix: FloatMatrix, conversations: Sequence[str | None]) -> None:
        """Rows upserted into the index: each goes into its conversation's block (if held) and
        out of any other (a memory moved to another conversation)."""
        writes: list[_Write] = list(zip(ids, matrix, conversations, strict=True))
        with self._lock:
            self._generation += 1
            for name, block in self._blocks.items():
                _replay(block, name, writes)
            for reading in self._readings:
                reading.writes.extend(writes)
            self._evict(())

    def removed(self, ids: Iterable[str]) -> None:
        """Rows deleted from the index."""
        writes: list[_Write] = [(entry_id, None, None) for entry_id in ids]
        with self._lock:
            self._generation += 1
            self._too_big.clear()
            for name, block in self._blocks.items():
                _replay(block, name, writes)
            for reading in self._readings:
                reading.writes.extend(writes)

    def clear(self) -> None:
        """Forget every block (the index was reset, or a write failed half way)."""
        with self._lock:
            self._generation += 1
            self._too_big.clear()
            self._blocks.clear()
            for reading in self._readings:
                reading.reset = True


def _replay(block: _Block, name: str, writes: Iterable[_Write]) -> None:
    """Bring conversation `name`'s block in step with these writes, in order."""
    for entry_id, vector, conversation in writes:
        if vector is not None and conversation == name:
            block.put(entry_id, vector)
        else:
            block.remove(entry_id)
