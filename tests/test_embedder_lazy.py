"""Issue #25: the embedding model is built by the first embed, not when the index opens.

A start whose files all match the index embeds nothing, so the window and `serve` do not hold the
model's ~48 MB until the first search or save. Its vectors are the same as an eagerly built
model's, and a search right after the start still finds what it should.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.embedder import LOCAL_MODELS, OnnxEmbedder
from tests.mcp_clients import ROOT, cli_env

# A process of its own: this one shares one embedder among its engines, loaded by other tests.
OPEN_AND_SEARCH = """
import json, sys
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
engine = MemoryEngine.open(load_config(flags={"store.path": sys.argv[1], "watcher.enabled": False}))
report = engine.open_index()
engine.hold_chat_scope()
embedder = engine._parts.search_index.retriever.embedder
opened = {"loaded": embedder.loaded, "embedded": report.embedded, "unchanged": report.unchanged}
found = [r.memory.text for r in engine.search("which instrument does the user play", top_k=1)]
print(json.dumps({"opened": opened, "after_search": embedder.loaded, "found": found}))
engine.close()
"""


def test_a_start_with_nothing_to_embed_builds_no_embedding_model_until_a_search(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with MemoryEngine.open(load_config(flags={"store.path": str(store), "watcher.enabled": False})) as eng:
        eng.open_index()
        for text in ("The user plays the cello", "The user's sister lives in Porto", "The user drinks tea"):
            eng.add(text)
    done = subprocess.run([sys.executable, "-c", OPEN_AND_SEARCH, str(store)], cwd=ROOT, env=cli_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["opened"] == {"loaded": False, "embedded": 0, "unchanged": 3}
    assert report["after_search"] is True and report["found"] == ["The user plays the cello"]


def test_the_model_built_on_first_use_makes_the_vectors_an_eager_one_made() -> None:
    lazy = OnnxEmbedder(model="e5-small-v2", query_threads=2)
    assert not lazy.loaded and lazy.dim == LOCAL_MODELS["e5-small-v2"].dim == 384
    texts = ["The user plays the cello", "a longer memory " * 40, "Porto"]
    vectors = lazy.embed(texts)
    assert lazy.loaded
    eager = OnnxEmbedder(model="e5-small-v2", query_threads=2)
    _ = eager.session  # built before any embed, as every embedder was
    assert np.array_equal(vectors, eager.embed(texts))
    assert np.array_equal(lazy.embed_query("cello"), eager.embed_query("cello"))
    # a bulk job's first embed (more than one batch: its own session) finds the model's names too
    bulk = OnnxEmbedder(model="e5-small-v2", query_threads=2, threads=1, batch_size=2)
    batched = OnnxEmbedder(model="e5-small-v2", query_threads=1, threads=1, batch_size=2)
    _ = batched.session
    assert np.allclose(bulk.embed(texts), batched.embed(texts), atol=1e-5)
