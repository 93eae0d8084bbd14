"""Changing the embedding model: the index records which model made its vectors, and a store
opened with another model re-embeds every memory, reporting progress, then searches as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.embedder import OnnxEmbedder
from desktop_mem.engine.store.manifest import MANIFEST_NAME, Manifest

FACTS = [
    "The user has a dog named Biscuit, a greyhound",
    "The user works as a nurse at the city hospital",
    "The user lives in Leuven",
    "The user is allergic to peanuts",
    "The user plays tennis every weekend",
]


def _recorded_model(engine: MemoryEngine) -> str:
    return Manifest(engine.root / MANIFEST_NAME).embedder_name


def test_a_model_change_re_embeds_everything_with_progress(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config(embedding__local_model="all-MiniLM-L6-v2")) as eng:
        for text in FACTS:
            eng.add(text)
        eng.open_index()
        assert _recorded_model(eng) == "all-MiniLM-L6-v2-int8-onnx:384"
        dog = eng.search("what is my dog called")[0].memory

    progress: list[tuple[int, int]] = []
    with MemoryEngine(make_config(embedding__local_model="e5-small-v2")) as eng:
        report = eng.open_index(lambda done, total: progress.append((done, total)))
        assert report.embedded == len(FACTS)
        assert progress and progress[-1] == (len(FACTS), len(FACTS))
        assert _recorded_model(eng) == "e5-small-v2-int8-onnx:384"
        # The stored vectors are the new model's, not MiniLM's left behind.
        stored = eng._parts.search_index.retriever.vectors.get_embeddings([dog.id])[dog.id]
        e5 = OnnxEmbedder(model="e5-small-v2").embed([dog.text])[0]
        minilm = OnnxEmbedder(model="all-MiniLM-L6-v2").embed([dog.text])[0]
        assert float(stored @ e5) > 0.99
        assert float(stored @ minilm) < 0.5  # different spaces: the old vector is gone
        assert eng.search("what is my dog called")[0].memory.id == dog.id
        assert eng.search("where do I live")[0].memory.text == "The user lives in Leuven"

    with MemoryEngine(make_config(embedding__local_model="e5-small-v2")) as eng:
        again: list[tuple[int, int]] = []
        report = eng.open_index(lambda done, total: again.append((done, total)))
        assert report.embedded == 0 and report.unchanged == len(FACTS)
        assert again == []  # same model: nothing to re-embed, no progress to show


def test_switching_back_re_embeds_again(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config()) as eng:
        for text in FACTS[:3]:
            eng.add(text)
        eng.open_index()
        assert _recorded_model(eng).startswith("e5-small-v2")  # the default
    with MemoryEngine(make_config(embedding__local_model="all-MiniLM-L6-v2")) as eng:
        assert eng.open_index().embedded == 3
        memory = eng.list_memories()[0]
        stored = eng._parts.search_index.retriever.vectors.get_embeddings([memory.id])[memory.id]
        expected = OnnxEmbedder(model="all-MiniLM-L6-v2").embed([memory.text])[0]
        np.testing.assert_allclose(stored, expected, atol=1e-4)
        assert _recorded_model(eng) == "all-MiniLM-L6-v2-int8-onnx:384"
