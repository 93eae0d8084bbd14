"""Vector index: a chromadb adapter with explicit embeddings, embedded on disk or on a server.

chromadb's own embedding function is never used (its default downloads a model); vectors come
from our Embedder. The index is derived from the Markdown files and can be rebuilt at any time.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import chromadb
import numpy as np
import numpy.typing as npt
from chromadb.config import Settings
from chromadb.errors import ChromaError

from desktop_mem.engine.index.resident_vectors import IdsOf, ResidentVectors
from desktop_mem.engine.models import EngineError, disk_problem

FloatVector = npt.NDArray[np.float32]
MetadataValue = str | int | float | bool
_NO_VECTOR: FloatVector = np.zeros(0, dtype=np.float32)  # shared, read-only: a hit asked without its vector
_NO_VECTOR.setflags(write=False)
_NO_METADATA: Mapping[str, MetadataValue] = MappingProxyType({})  # shared, read-only: a hit without payload
# Vectors kept in memory for MMR, most recently used first out last: a search fetches the vectors of
# its ~20-30 best candidates, and the same memories come back turn after turn; a chroma `get` of 30
# ids costs ~1.3 ms of a ~13 ms search (docs/benchmarks.md). A search within a conversation gets
# them from the resident blocks (resident_vectors.py), so this serves store-wide searches and
# scopes too big for those: 1024 x 384 floats is 1.5 MB (4096 were 6 MB before the blocks).
VECTOR_CACHE_SIZE = 1024
# Vectors per chroma `get` when a resident block is read: chroma hands each over as 384 Python
# floats (~12 KB), so this bounds the transient memory (3 MB).
FETCH_ROWS = 256
# The copy of a memory's text kept beside its vector is a preview (the file is the text, and the
# read path resolves memories through the catalog): chroma also full-text indexes its documents,
# so a 2 MB memory would cost that index megabytes for nothing.
DOCUMENT_CHARS = 2000


class VectorIndexError(EngineError, RuntimeError):
    """The vector store could not be opened or refused an operation."""


@dataclass(frozen=True)
class VectorHit:
    """One nearest neighbour; similarity = 1 - cosine distance, embedding kept for MMR."""

    id: str
    distance: float
    similarity: float
    document: str
    metadata: Mapping[str, MetadataValue]
    embedding: FloatVector = field(repr=False, compare=False)


def clean_metadata(metadata: Mapping[str, Any] | None) -> dict[str, MetadataValue]:
    """Metadata chroma accepts: None values dropped, str/int/float/bool kept, the rest as str."""
    cleaned: dict[str, MetadataValue] = {}
    for key, value in (metadata or {}).items():
        if value is None:
            continue
        if isinstance(value, float) and not math.isfinite(value):
            cleaned[str(key)] = str(value)  # chroma rejects NaN / inf
        elif isinstance(value, (str, int, float, bool)):
            cleaned[str(key)] = value
        else:
            cleaned[str(key)] = str(value)  # dates, lists ... stay readable and filterable
    return cleaned


def _parse_url(url: str) -> tuple[str, int, bool]:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise VectorIndexError(
            f"chroma server URL {url!r} is not valid; use e.g. http://127.0.0.1:8000"
        )
    ssl = parts.scheme == "https"
    try:
        port = parts.port or (443 if ssl else 8000)
    except ValueError as exc:
        raise VectorIndexError(f"chroma server URL {url!r} has a bad port: {exc}") from exc
    return parts.hostname, port, ssl


class VectorIndex:
    """One cosine-space chromadb collection holding memory vectors, documents and metadata."""

    def __init__(
        self,
        path: Path | None = None,
        url: str | None = None,
        collection: str = "memories",
        ef_search: int = 200,
    ) -> None:
        if (path is None) == (url is None):
            raise VectorIndexError("VectorIndex needs exactly one of path (embedded) or url (server)")
        self.collection_name = collection
        self.ef_search = ef_search
        self._cache: OrderedDict[str, FloatVector] = OrderedDict()
        self._cache_lock = threading.Lock()  # searches run in worker threads beside index updates
        self._generation = 0  # bumped by every write: a fetch that raced a write is not cached
        self.resident = ResidentVectors()  # whole conversations' vectors, for exact scoped search
        settings = Settings(anonymized_telemetry=False)
        try:
            if path is not None:
                path.mkdir(parents=True, exist_ok=True)
                self._client = chromadb.PersistentClient(path=str(path), settings=settings)
                self.location = str(path)
            else:
                assert url is not None
                host, port, ssl = _parse_url(url)
                self._client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
                self.location = url
            self._max_batch = max(1, int(self._client.get_max_batch_size()))
            self._collection = self._open_collection()
        except VectorIndexError:
            raise
        except Exception as exc:  # chromadb raises plain ValueError/ConnectionError/Rust errors
            where = f"server {url}" if url else f"folder {path}"
            hint = "is the server running?" if url else (
                disk_problem(exc) or "it is derived data: delete it and reindex")
            raise VectorIndexError(f"cannot open the chroma vector index at {where}: {exc}; {hint}") from exc

    def _open_collection(self) -> Any:
        collection = self._client.get_or_create_collection(
            self.collection_name,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine", "ef_search": self.ef_search}},
        )
        hnsw = (collection.configuration or {}).get("hnsw") or {}
        if hnsw.get("space", "cosine") != "cosine":
            raise VectorIndexError(
                f"collection {self.collection_name!r} at {self.location} uses {hnsw.get('space')} "
                "distance, not cosine; reset the vector index (reindex) to rebuild it"
            )
        # get_or_create ignores configuration for an existing collection: apply a changed setting.
        if hnsw.get("ef_search") not in (None, self.ef_search):
            collection.modify(configuration={"hnsw": {"ef_search": self.ef_search}})
        return collection

    def _batches(self, size: int) -> Iterator[slice]:
        for start in range(0, size, self._max_batch):
            yield slice(start, min(start + self._max_batch, size))

    def upsert(
        self,
        ids: Sequence[str],
        embeddings: npt.ArrayLike,
        metadatas: Sequence[Mapping[str, Any] | None],
        documents: Sequence[str],
    ) -> None:
        """Insert or replace entries by id, in chunks of the client's maximum batch size."""
        matrix = np.asarray(embeddings, dtype=np.float32)
        if len(ids) == 0:
            return
        if matrix.ndim != 2 or not (len(ids) == matrix.shape[0] == len(metadatas) == len(documents)):
            raise VectorIndexError(
                f"upsert needs one embedding row, metadata and document per id: got {len(ids)} ids, "
                f"embeddings of shape {matrix.shape}, {len(metadatas)} metadatas, "
                f"{len(documents)} documents"
            )
        # chroma rejects duplicate ids in one call; the last occurrence wins, as in a dict.
        last = {entry_id: position for position, entry_id in enumerate(ids)}
        keep = sorted(last.values())
        id_list = [ids[i] for i in keep]
        rows = matrix[keep]
        # chroma rejects an empty metadata dict; None means "no metadata".
        meta_list = [clean_metadata(metadatas[i]) or None for i in keep]
        doc_list = [documents[i][:DOCUMENT_CHARS] for i in keep]
        try:
            for part in self._batches(len(id_list)):
                self._call(
                    "upsert",
                    ids=id_list[part],
                    embeddings=rows[part],
                    metadatas=meta_list[part],
                    documents=doc_list[part],
                )
        except BaseException:
            self.resident.clear()  # what chroma took of a failed call is unknown: reload on use
            raise
        else:
            conversations = [m.get("conversation_id") if m else None for m in meta_list]
            self.resident.written(id_list, rows, [c if isinstance(c, str) else None for c in conversations])
        finally:  # after the write: a fetch that overlapped it is not kept (see get_embeddings)
            self._forget(id_list)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove entries by id; unknown ids are ignored."""
        id_list = list(dict.fromkeys(ids))
        try:
            for part in self._batches(len(id_list)):
                self._call("delete", ids=id_list[part])
        except BaseException:
            self.resident.clear()  # which of them chroma removed is unknown: reload on use
            raise
        else:
            self.resident.removed(id_list)
        finally:
            self._forget(id_list)

    def query(
        self,
        embedding: npt.ArrayLike,
        n: int,
        where: dict[str, Any] | None = None,
        *,
        with_payload: bool = True,
        with_embeddings: bool = True,
        ids: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        """Up to n nearest entries (fewer if the collection or filter has fewer), closest first.

        `with_payload=False` skips documents and metadata (the read path resolves memories
        through its catalog) and `with_embeddings=False` the vectors (empty arrays instead):
        returning 384 floats per hit dominates a query that asks for hundreds of hits.
        `ids` limits the search to these entries (unknown ids are left out).
        """
        if n <= 0 or (ids is not None and not ids):
            return []
        # chroma 1.x answers n > count (and an empty collection) with fewer hits, no error.
        vector = np.asarray(embedding, dtype=np.float32).reshape(-1)
        include = (["distances"] + (["documents", "metadatas"] if with_payload else [])
                   + (["embeddings"] if with_embeddings else []))

        def run(among: list[str] | None) -> Any:
            return self._call("query", query_embeddings=[vector], n_results=n,
                              where=where or None,  # chroma rejects an empty where dict
                              **({"ids": among} if among is not None else {}), include=include)

        wanted = list(dict.fromkeys(ids)) if ids is not None else None
        try:
            result = run(wanted)
        except VectorIndexError:
            # chroma 1.x refuses the whole query when one of `ids` is not in the collection (a
            # memory saved a moment ago and not indexed yet, a held-back hand edit): ask again
            # among the ids it holds. Any other failure is raised as it was.
            if wanted is None:
                raise
            known = self._call("get", ids=wanted, include=[])["ids"]
            if len(known) == len(wanted):
                raise
            if not known:
                return []
            result = run(list(known))
        found = result["ids"][0]
        distances = (result.get("distances") or [[]])[0]
        documents = (result.get("documents") or [[None] * len(found)])[0]
        metadatas = (result.get("metadatas") or [[None] * len(found)])[0]
        embeddings = result.get("embeddings")
        vectors = np.asarray(embeddings[0], dtype=np.float32) if embeddings is not None else None
        return [
            VectorHit(
                id=entry_id,
                distance=float(distances[i]),
                similarity=1.0 - float(distances[i]),
                document=documents[i] or "",
                metadata=dict(metadatas[i]) if metadatas[i] else _NO_METADATA,
                embedding=vectors[i] if vectors is not None else _NO_VECTOR,
            )
            for i, entry_id in enumerate(found)
        ]

    def nearest_in(self, embedding: npt.ArrayLike, conversations: Sequence[str], n: int,
                   ids_of: IdsOf) -> list[VectorHit] | None:
        """Up to n entries of these conversations nearest to `embedding`, closest first, by exact
        cosine over their vectors held in memory (loaded on first use: `ids_of(conversation)`
        names its ids; hits carry no payload). None when they are too many for the memory budget
        (resident_vectors.RESIDENT_BYTES): search with `query` then."""
        found = self.resident.nearest(np.asarray(embedding, dtype=np.float32), conversations, n, ids_of,
                                      self._fetch)
        if found is None:
            return None
        return [VectorHit(id=h.id, distance=1.0 - h.similarity, similarity=h.similarity, document="",
                          metadata=_NO_METADATA, embedding=h.vector) for h in found]

    def _fetch(self, ids: list[str]) -> Iterator[tuple[list[str], FloatVector]]:
        """The stored vectors of these ids (those the index holds), FETCH_ROWS at a time."""
        for start in range(0, len(ids), min(FETCH_ROWS, self._max_batch)):
            part = ids[start : start + min(FETCH_ROWS, self._max_batch)]
            result = self._call("get", ids=part, include=["embeddings"])
            vectors = result.get("embeddings")
            if vectors is None or not len(result["ids"]):
                continue
            # In the asked ids' order and with their strings (kept by the block; chroma's copies go).
            where = {entry_id: row for row, entry_id in enumerate(result["ids"])}
            kept = [entry_id for entry_id in part if entry_id in where]
            yield kept, np.asarray(vectors, dtype=np.float32)[[where[entry_id] for entry_id in kept]]

    def get_embeddings(self, ids: Sequence[str], *, exact: bool = True) -> dict[str, FloatVector]:
        """Stored vectors by id (read-only arrays); ids not in the index are absent from the result.

        Recently fetched vectors come from memory. Writes through this object keep that copy
        right; a write by another process is seen after a reopen, like chroma's own HNSW.
        `exact=False` also takes them from the resident blocks (int16 codes: cosines off by
        < 1e-4), for a search's MMR; a vector written back to the index must be exact.
        """
        id_list = list(dict.fromkeys(ids))
        found: dict[str, FloatVector] = {} if exact else self.resident.vectors(id_list)
        id_list = [entry_id for entry_id in id_list if entry_id not in found]
        with self._cache_lock:
            for entry_id in id_list:
                vector = self._cache.get(entry_id)
                if vector is not None:
                    self._cache.move_to_end(entry_id)
                    found[entry_id] = vector
            generation = self._generation
        wanted = [entry_id for entry_id in id_list if entry_id not in found]
        fetched: dict[str, FloatVector] = {}
        for part in self._batches(len(wanted)):
            result = self._call("get", ids=wanted[part], include=["embeddings"])
            vectors = result.get("embeddings")
            if vectors is None:
                continue
            for entry_id, vector in zip(result["ids"], vectors, strict=True):
                row = np.array(vector, dtype=np.float32)
                row.setflags(write=False)  # shared with the cache: callers must not change it
                fetched[entry_id] = row
        with self._cache_lock:
            if fetched and generation == self._generation:
                self._cache.update(fetched)
                while len(self._cache) > VECTOR_CACHE_SIZE:
                    self._cache.popitem(last=False)
        found.update(fetched)
        return found

    def _forget(self, ids: Sequence[str] | None) -> None:
        """Drop cached vectors once a write changed them (None: all of them). A fetch that began
        before this and ends after it sees a new generation and keeps nothing."""
        with self._cache_lock:
            self._generation += 1
            if ids is None:
                self._cache.clear()
            else:
                for entry_id in ids:
                    self._cache.pop(entry_id, None)

    def ids(self) -> set[str]:
        """Every indexed id, fetched page by page so 100k entries stay cheap."""
        found: set[str] = set()
        offset = 0
        while True:
            page = self._call("get", include=[], limit=self._max_batch, offset=offset)["ids"]
            found.update(page)
            if len(page) < self._max_batch:
                return found
            offset += len(page)

    def count(self) -> int:
        """Number of indexed entries."""
        return int(self._call("count"))

    def reset(self) -> None:
        """Drop the collection and create it empty (before a full rebuild, or a model change)."""
        try:
            # Already gone is fine: reset still ends with an empty collection.
            with contextlib.suppress(ChromaError, ValueError):
                self._client.delete_collection(self.collection_name)
            self._collection = self._open_collection()
        finally:
            self.resident.clear()
            self._forget(None)

    def close(self) -> None:
        """Release the client (for an embedded store: its SQLite files and memory)."""
        # close() exists on chromadb's Client but is missing from its ClientAPI type.
        close = getattr(self._client, "close", None)
        if close is not None:
            close()

    def _call(self, method: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._collection, method)(**kwargs)
        except (ChromaError, ValueError) as exc:
            raise VectorIndexError(
                f"vector index {self.location} refused {method}: {exc}"
                + (
                    "; the embedding model changed? reset the vector index (reindex) to rebuild it"
                    if "dimension" in str(exc)
                    else ""
                )
            ) from exc
