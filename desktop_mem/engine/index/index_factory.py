"""Build the embedder, indexes, reranker and read path that a store's settings ask for."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from desktop_mem.engine.config import Config
from desktop_mem.engine.index.embedder import Embedder, OnnxEmbedder, OpenAIEmbedder
from desktop_mem.engine.index.index_sync import IndexSync
from desktop_mem.engine.index.keyword_index import KeywordIndex
from desktop_mem.engine.index.reranker import OnnxReranker, Reranker
from desktop_mem.engine.index.retrieval import MemoryLookup, RetrievalSettings, Retriever
from desktop_mem.engine.index.vector_index import VectorIndex
from desktop_mem.engine.runtime_folders import make_runtime_folder
from desktop_mem.engine.store.catalog import Catalog
from desktop_mem.engine.store.manifest import MANIFEST_NAME, Manifest

SCRATCH_PREFIX = "desktop-mem-index-"  # a read-only store's index copy, in the temp dir

_SHARED_EMBEDDERS: dict[tuple[str, int, int, int], Embedder] = {}
_SHARED_RERANKERS: dict[tuple[str, int, int], Reranker] = {}


def make_embedder(config: Config) -> Embedder:
    """The configured embedder; the local ONNX model is loaded once per process."""
    if config["embedding.provider"] == "openai":
        return OpenAIEmbedder(
            base_url=config["llm.base_url"], api_key=config["llm.api_key"], model=config["embedding.model"]
        )
    key = (config["embedding.local_model"], config["embedding.threads"], config["embedding.batch_size"],
           config["embedding.query_threads"])
    if key not in _SHARED_EMBEDDERS:
        _SHARED_EMBEDDERS[key] = OnnxEmbedder(model=key[0], threads=key[1], batch_size=key[2],
                                              query_threads=key[3])
    return _SHARED_EMBEDDERS[key]


def make_reranker(config: Config) -> Reranker | None:
    """The cross-encoder (the shipped one, or `retrieval.reranker_path`), None when reranking is off.

    Made once per process and folder, like the embedder; it loads its model on first use.
    """
    if not config["retrieval.rerank"]:
        return None
    folder = config["retrieval.reranker_path"]
    key = (str(Path(folder).expanduser()) if folder else "", config["retrieval.reranker_threads"],
           config["retrieval.rerank_idle_release_s"])
    if key not in _SHARED_RERANKERS:
        _SHARED_RERANKERS[key] = OnnxReranker(Path(key[0]) if key[0] else None, threads=key[1],
                                              idle_release_s=key[2])
    return _SHARED_RERANKERS[key]


def retrieval_settings(config: Config) -> RetrievalSettings:
    """Read-path knobs from the settings (each field named like a `retrieval.*` setting)."""
    return config.section(RetrievalSettings, "retrieval")


def build_index(
    root: Path, config: Config, manifest: Manifest, catalog: Catalog, *, read_only: bool,
    lookup: MemoryLookup | None = None,
) -> tuple[IndexSync, Retriever]:
    """Open (or create) the derived indexes of the store at `root` (`lookup`: how the read path
    finds a memory by id, default the catalog's)."""
    embedder = make_embedder(config)
    url = config["chroma.url"]
    at = root
    scratch: Path | None = None
    if read_only and not url and not os.access(root, os.W_OK):
        # a store that cannot be written (a read-only mount, a backup): chroma and SQLite cannot
        # even open there, so search a scratch copy, brought in step with the files (#22)
        at, manifest, read_only = scratch_index(root)
        scratch = at
    vectors = VectorIndex(url=url, ef_search=config["chroma.ef_search"]) if url else VectorIndex(
        path=at / "chroma", ef_search=config["chroma.ef_search"]
    )
    keywords = KeywordIndex(at / "keyword_index.sqlite3")
    # The scratch copy (hundreds of MB at 100k) goes when the engine closes, not only at exit: the
    # window may go on to another store for hours.
    sync = IndexSync(manifest, embedder, vectors, keywords, read_only=read_only,
                     on_close=None if scratch is None else functools.partial(shutil.rmtree, scratch,
                                                                             ignore_errors=True))
    def scope_ids(conversation_ids: Iterable[str]) -> list[str]:
        # Only ids the index holds: chroma refuses a search among ids when one is unknown (a
        # message saved a moment before the chat turn searches, a hand edit held back for a
        # secret), and finding that out costs a lookup of every id in chroma's Rust code, which
        # holds the GIL (~0.1 s at 100k: a GUI stall). VectorIndex.query still copes with one
        # removed in between.
        indexed = manifest.indexed  # what the indexes hold (IndexSync records it after each write)
        return [i for i in catalog.ids_in(conversation_ids) if i in indexed]

    retriever = Retriever(embedder, vectors, keywords, lookup or catalog.lookup, retrieval_settings(config),
                          make_reranker(config), scope_share=catalog.share_of, scope_ids=scope_ids)
    return sync, retriever


def scratch_index(root: Path) -> tuple[Path, Manifest, bool]:
    """A temporary folder holding a copy of the store's indexes and manifest (whatever of them
    exists), removed at exit; the index there may be written (synced) like a writer's. A killed
    process cannot remove its copy (hundreds of MB at 100k memories): the next one does."""
    scratch = make_runtime_folder(SCRATCH_PREFIX)
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    with contextlib.suppress(OSError):
        shutil.copytree(root / "chroma", scratch / "chroma")
    for path in root.iterdir():  # the SQLite files with their -wal/-shm, a legacy memory_index.json
        if path.name.startswith(("keyword_index.sqlite3", "memory_index.json")) and path.is_file():
            with contextlib.suppress(OSError):
                shutil.copy2(path, scratch / path.name)
    return scratch, Manifest(scratch / MANIFEST_NAME), False


def match_similarity(config: Config, facts: bool = False) -> float:
    """The cosine similarity from which a memory (a fact, with `facts`) is close in meaning to a
    query, for the model the settings pick (the local models are measured; OpenAI embeddings use
    MiniLM's figures)."""
    if config["embedding.provider"] == "onnx":
        from desktop_mem.engine.index.embedder import LOCAL_MODELS

        spec = LOCAL_MODELS.get(config["embedding.local_model"])
        if spec is not None:
            return spec.fact_match_similarity if facts else spec.match_similarity
    return 0.20 if facts else 0.35
