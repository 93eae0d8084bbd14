"""Bulk import at scale (issue #25): a large import lands in whole batches, is indexed as it is
written, and an import killed half way is finished by running the same command again: nothing
twice, nothing lost, and the work already done is not done again."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.transfer.importers import apply_import, plan_import


def _history(path: Path, n: int) -> Path:
    items = [{"text": f"Note {i}: the user went to {('Lisbon', 'Oslo', 'Kyoto')[i % 3]} with friend {i}.",
              "role": "memory" if i % 3 == 0 else ("user", "assistant")[i % 2],
              "conversation_id": f"trip-{i % 7}",
              "created_at": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00+00:00"}
             for i in range(n)]
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def _import_commits(root: Path) -> list[str]:
    if not (root / ".git").exists():
        return []
    out = subprocess.run(["git", "log", "--format=%s"], cwd=root, capture_output=True, text=True).stdout
    return [s for s in out.splitlines() if s.startswith("Import ")]


def _memory_files(root: Path) -> list[Path]:
    return [p for p in (root / "entries").rglob("*.md") if not p.name.startswith(".")]


def test_an_import_in_batches_is_one_whole_commit_per_batch(make_config: Callable[..., Any],
                                                            tmp_path: Path) -> None:
    source = _history(tmp_path / "history.json", 700)
    with MemoryEngine.open(make_config()) as eng:
        result = apply_import(eng._parts, plan_import(eng._parts, source, secrets="keep"), batch_size=300)
        assert len(result.commits) == 3 and result.commit == result.commits[-1]
        assert len(result.memories) == 700
        # each commit holds its batch whole: 300, 300, 100 files, nothing left uncommitted
        sizes = [sum(name.endswith(".md") for name in _git(eng.root, "show", "--name-only", "--format=",
                                                           sha).split()) for sha in result.commits]
        assert sizes == [300, 300, 100]
        assert _git(eng.root, "status", "--porcelain", "entries") == ""
        assert [s.split(":")[0] for s in _import_commits(eng.root)] == [
            f"Import history.json (part {n} of 3)" for n in (3, 2, 1)]


def test_an_import_killed_half_way_finishes_when_run_again(tmp_path: Path) -> None:
    # MiniLM (6 layers) embeds about twice as fast as the default e5: the same code path, a faster test
    Path(os.environ["DESKTOP_MEM_CONFIG"]).write_text("embedding:\n  local_model: all-MiniLM-L6-v2\n",
                                                      encoding="utf-8")
    source = _history(tmp_path / "history.json", 800)
    store = tmp_path / "store"
    command = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "import", str(source),
               "--keep-secret", "--batch-size", "120", "--workers", "1"]
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(_import_commits(store)) < 2 and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert first.poll() is None, "the import ended before it could be killed"
    os.kill(first.pid, signal.SIGKILL)
    first.wait()
    committed = len(_import_commits(store))
    assert 2 <= committed < 7  # killed half way: some batches committed, not all
    on_disk = len(_memory_files(store))
    assert on_disk < 800

    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    # the files already there were left out, not written again
    assert f"already in the store, left out: {on_disk}" in again.stdout
    assert "already in the store" in again.stderr  # said up front, before the work starts
    # every memory exactly once, all committed, and all of them indexed
    files = _memory_files(store)
    assert len(files) == 800
    with MemoryEngine.open(_config(store)) as eng:
        ids = Counter(m.id for m in eng.list_memories())
        assert len(ids) == 800 and max(ids.values()) == 1
        assert _git(store, "status", "--porcelain", "entries") == ""
        report = eng.open_index()
        assert report.embedded == 0  # the second run indexed everything the first had not
        retriever = eng._parts.search_index.retriever
        assert retriever.vectors.count() == 800 and retriever.keywords.count() == 800
        hit = eng.search("Note 799: the user went to Oslo with friend 799", top_k=3)
        assert any(r.memory.text.startswith("Note 799:") for r in hit)


def _config(store: Path) -> Any:
    from desktop_mem.engine.config import load_config

    return load_config(flags={"store.path": str(store), "watcher.enabled": False})


def test_an_index_behind_its_manifest_re_embeds_only_what_is_missing(make_config: Callable[..., Any]) -> None:
    """A kill between an index write and the manifest's save used to throw the whole index away
    (a rebuild of every memory); now only the memories the manifest does not know are embedded."""
    with MemoryEngine.open(make_config()) as eng:
        for i in range(12):
            eng.add(f"The user keeps jar number {i} of honey in the pantry.", conversation_id="c")
        assert eng.open_index().embedded == 12
        manifest = eng._parts.search_index.index.manifest
        dropped = sorted(manifest.indexed)[:4]
        for memory_id in dropped:  # indexed, but the manifest was not saved after it
            del manifest.indexed[memory_id]
        manifest.save()
    with MemoryEngine.open(make_config()) as eng:
        report = eng.open_index()
        assert report.embedded == 4
        retriever = eng._parts.search_index.retriever
        assert retriever.vectors.count() == 12 and retriever.keywords.count() == 12
        best = eng.search("jar number 7 of honey", top_k=1)[0].memory
        assert best.text.startswith("The user keeps jar number 7")


def test_the_model_copy_a_bulk_index_used_is_dropped_when_it_ends(make_config: Callable[..., Any]) -> None:
    """Bulk embedding runs on a second copy of the model (its own thread count); the app keeps
    only the copy searches use once the job is done (~55 MB less for the app's whole life)."""
    config = make_config(**{"embedding.batch_size": 8, "embedding.threads": 1, "embedding.query_threads": 2})
    with MemoryEngine.open(config) as eng:
        eng.add_many([f"The user keeps jar number {i} of honey in the pantry." for i in range(40)])
        embedder = eng._parts.search_index.retriever.embedder
        built: list[object] = []
        bulk = embedder._session_for_bulk
        embedder._session_for_bulk = lambda: built.append(bulk()) or built[-1]  # type: ignore[method-assign]
        try:
            assert eng.reindex().embedded == 40
        finally:
            del embedder._session_for_bulk
        assert built and built[0] is not embedder.session  # the job embedded on its own copy
        assert embedder._bulk_session is None  # ... which is gone now
        best = eng.search("jar number 7 of honey", top_k=1)[0].memory
        assert best.text.startswith("The user keeps jar number 7")


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_memory_a_whole_store_pass_freed_goes_back_to_the_system() -> None:
    """A pass over 100k memories frees ~40 MB of scratch that glibc keeps in the process (counted
    in its RSS all session) unless it is handed back; the index sync hands it back when it ends."""
    from desktop_mem.engine.index.native_heap import release_free_heap

    def rss_mb() -> int:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
        return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS"))) // 1024

    blocks = [bytes(4000) + bytes([i % 256]) for i in range(50_000)]  # ~200 MB of heap blocks
    kept = blocks[::100]  # a few survivors pin the heap: free() alone cannot shrink it
    del blocks
    held = rss_mb()
    release_free_heap()
    assert rss_mb() < held - 100
    assert len(kept) == 500
