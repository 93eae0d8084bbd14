"""The store's derived indexes, opened on first use, and the read path over them.

Holds what the facade used to: building the index once (under its own lock), bringing it in step
with the files, the writer's index update (a closed index catches up when it opens), and the
read path's per-call setting overrides merged over the settings. Light at import: the embedder,
chromadb and onnxruntime load only when the index opens.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from desktop_mem.engine.config import Config
from desktop_mem.engine.index.index_sync import IndexSync, Progress, SyncReport
from desktop_mem.engine.index.retrieval import (
    MemoryLookup,
    RetrievalOverrides,
    RetrievalSettings,
    Retriever,
    SearchFilters,
    SearchResult,
)
from desktop_mem.engine.models import Memory
from desktop_mem.engine.store.conversation_ids import validate_conversation_id

if TYPE_CHECKING:
    from desktop_mem.engine.store.catalog import Catalog
    from desktop_mem.engine.store.manifest import Manifest


def merged_settings(
    base: RetrievalSettings, overrides: RetrievalOverrides | None
) -> RetrievalSettings | None:
    """The settings with one search's overrides (top_k, recency_weight, score_threshold) in
    place; None when there are none."""
    if not overrides:
        return None
    k, rw, th = (overrides.get(n) for n in ("top_k", "recency_weight", "score_threshold"))
    return replace(base, top_k=int(k) if k is not None else base.top_k,
                   recency_weight=float(rw) if rw is not None else base.recency_weight,
                   score_threshold=float(th) if th is not None else base.score_threshold)


class SearchIndex:
    """One store's indexes: opened once, kept in step by the writer, searched by the read path."""

    def __init__(
        self,
        root: Path,
        config: Config,
        manifest: Manifest,
        catalog: Catalog,
        *,
        read_only: bool,
        lookup: MemoryLookup,
        indexable: Callable[[], list[Memory]],
        project_of: Callable[[str], str | None] = lambda _conversation: None,
    ) -> None:
        self._project_of = project_of  # the project a conversation is bound to (store/projects.py)
        self._root = root
        self._config = config
        self._manifest = manifest
        self._catalog = catalog
        self._read_only = read_only
        self._lookup = lookup
        self._indexable = indexable
        self._index: IndexSync | None = None
        self._retriever: Retriever | None = None
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        """True once the embedder and indexes are loaded."""
        return self._index is not None

    def open(self, progress: Progress | None = None) -> SyncReport:
        """Load the embedder and indexes (once) and bring them in step with the files.

        The sync runs without the writer lock: a save meanwhile lands at once and its index
        update waits for the sync's current batch only (index_sync.py)."""
        index = self._built()
        return index.sync(self._indexable(), progress)

    def hold_chat_scope(self) -> None:
        """Read the global facts' vectors into memory (retrieval.Retriever.hold)."""
        self.retriever.hold()

    def prepare_read_path(self) -> bool:
        """Load the read path's models if the index is open (never opens it); False if closed."""
        retriever = self._retriever
        if retriever is None:
            return False
        retriever.prepare()
        return True

    def _built(self) -> IndexSync:
        from desktop_mem.engine.index.index_factory import build_index

        with self._lock:
            if self._index is None:
                self._index, self._retriever = build_index(
                    self._root, self._config, self._manifest, self._catalog, read_only=self._read_only,
                    lookup=self._lookup)
            return self._index

    @property
    def index(self) -> IndexSync:
        """The open index (opened and synced on first use)."""
        if self._index is None:
            self.open()
        assert self._index is not None
        return self._index

    @property
    def retriever(self) -> Retriever:
        """The read path over the open index."""
        self.index  # noqa: B018 - opens the index on first use
        assert self._retriever is not None
        return self._retriever

    def rebuild(self, progress: Progress | None = None) -> SyncReport:
        """Drop the derived indexes and rebuild them from the files."""
        return self.index.rebuild(self._indexable(), progress)

    def changed(self, changed: Sequence[Memory], gone: Sequence[str]) -> None:
        """The writer's index update: bring an open index up to date; a closed one catches up
        when it opens (the manifest remembers the files)."""
        index = self._index
        if index is None:
            if not self._read_only:
                self._manifest.save(force=False)
            return
        index.apply(changed, gone)

    def search(
        self,
        query: str,
        *,
        conversation_id: str | None = None,
        top_k: int | None = None,
        filters: SearchFilters | None = None,
        use_mmr: bool = True,
        overrides: RetrievalOverrides | None = None,
        rerank: bool = False,
    ) -> list[SearchResult]:
        """The read path: best memories for `query` with their score breakdowns; `overrides`
        replace the settings for this search, `conversation_id` scopes it (to it + its project, if
        it is bound to one, + global)."""
        if conversation_id is not None:
            validate_conversation_id(conversation_id)
        f = filters or SearchFilters()
        if conversation_id is not None:
            f = replace(f, conversation_id=conversation_id)
        if f.conversation_id is not None and f.project is None:  # a conversation in a project reads it
            f = replace(f, project=self._project_of(f.conversation_id))
        retriever = self.retriever
        settings = merged_settings(retriever.settings, overrides)
        if settings is not None:
            top_k = top_k or settings.top_k
        return retriever.search(query, f, top_k=top_k, use_mmr=use_mmr, rerank=rerank, settings=settings)

    def status(self) -> str:
        """One line about the search index."""
        if self._index is None:
            return f"{len(self._manifest.indexed)} memories indexed (index not opened by this command)"
        return self._index.status()

    def close(self) -> None:
        """Close the indexes, if open (the next search opens them again and catches up)."""
        with self._lock:
            index, self._index, self._retriever = self._index, None, None
        if index is not None:
            index.close()
