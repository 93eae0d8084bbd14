"""Regression tests for defects found by reliability/load.py."""

from __future__ import annotations

import logging
import threading

import pytest

from desktop_mem.engine.facade import MemoryEngine


def test_a_reader_asking_for_dirty_paths_never_breaks_a_writers_commit(
    engine: MemoryEngine, caplog: pytest.LogCaptureFixture
) -> None:
    # Before the fix: `git status` took .git/index.lock, so a concurrent commit failed with
    # "index.lock: File exists" and the change waited, uncommitted, for the next write.
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            engine._parts.git.dirty_paths()

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    before = engine._parts.git.count()
    try:
        with caplog.at_level(logging.ERROR, logger="desktop_mem.engine.facade"):
            for i in range(40):
                engine.add(f"The user wrote note {i}")
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not [r for r in caplog.records if "could not commit" in r.getMessage()]
    assert engine._parts.git.count() == before + 40
    assert engine._parts.git.dirty_paths() == []
