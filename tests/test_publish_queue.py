"""Publishing after the writer lock: a commit holds the lock; indexing and telling subscribers
happen after it is released, in commit order; a whole-store index sync never makes a save wait.
Real store, real git, real chromadb and the real ONNX embedder."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.models import Operation, StoreChange


def _free_elsewhere(lock: Any) -> bool:
    """Whether another thread could take `lock` right now (an RLock is re-entrant for its owner)."""
    result: list[bool] = []

    def probe() -> None:
        took = lock.acquire(blocking=False)
        if took:
            lock.release()
        result.append(took)

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    return result[0]


def test_subscribers_are_told_after_the_writer_lock_is_released_in_commit_order(
    make_config: Callable[..., Any],
) -> None:
    engine = MemoryEngine.open(make_config())
    try:
        seen: list[tuple[StoreChange, bool]] = []
        engine.subscribe(lambda change: seen.append((change, _free_elsewhere(engine._parts.writer.lock))))
        first = engine.add("The user likes green tea")
        second = engine.add("The user owns a bicycle")
        assert [c.memory_ids for c, _free in seen] == [(first.id,), (second.id,)]
        assert all(free for _c, free in seen), "a subscriber ran while the writer lock was held"
        assert all(c.commit for c, _free in seen), "the change is announced with its commit"
    finally:
        engine.close()


def test_an_edit_that_changes_nothing_announces_nothing(make_config: Callable[..., Any]) -> None:
    engine = MemoryEngine.open(make_config())
    try:
        memory = engine.add("The user lives in Ghent")
        commits = len(engine.history(limit=100))
        seen: list[StoreChange] = []
        engine.subscribe(seen.append)
        assert engine.edit(memory.id, text="The user lives in Ghent") == memory
        assert seen == [], "a no-op edit must not tell the window that something changed"
        assert len(engine.history(limit=100)) == commits
    finally:
        engine.close()


def test_a_save_during_a_full_index_lands_at_once_and_is_searchable_after(
    make_config: Callable[..., Any],
) -> None:
    engine = MemoryEngine.open(make_config())
    try:
        # More than one embedding batch (256), written while the index is closed: the first
        # open_index has to embed them all.
        with engine._parts.writer.transaction(Operation.IMPORT, "Import filler") as tx:
            for i in range(300):
                tx.add(f"Filler note number {i} about topic {i % 17}", conversation_id="filler")
        sync_running, saved = threading.Event(), threading.Event()
        lock_free_during_sync: list[bool] = []

        def progress(done: int, total: int) -> None:
            if not sync_running.is_set():  # after the first batch: hold the sync until the save is done
                lock_free_during_sync.append(_free_elsewhere(engine._parts.writer.lock))
                sync_running.set()
                saved.wait(timeout=60)

        sync = threading.Thread(target=engine.open_index, args=(progress,))
        sync.start()
        assert sync_running.wait(timeout=120), "the sync never reported its first batch"
        done: list[Any] = []
        saver = threading.Thread(target=lambda: done.append(engine.add("The user plays the cello")))
        saver.start()
        saver.join(timeout=30)
        landed = bool(done)
        saved.set()
        sync.join(timeout=180)
        assert lock_free_during_sync == [True], "the whole-store sync held the writer lock"
        assert landed, "the save waited for the full index to finish"
        assert not sync.is_alive()
        memory = done[0]
        assert memory.id in engine.history(limit=1)[0].trailers["Ids"], "the save was committed"
        top = engine.search("who plays the cello", top_k=3)
        assert top and top[0].memory.id == memory.id, "the save made during the sync was indexed"
    finally:
        engine.close()


def test_a_subscriber_that_writes_does_not_hang_and_both_changes_are_told_in_order(
    make_config: Callable[..., Any],
) -> None:
    engine = MemoryEngine.open(make_config())
    try:
        seen: list[str] = []

        def follow_up(change: StoreChange) -> None:
            seen.append(change.operation)
            if change.operation == Operation.ADD and len(seen) == 1:
                engine.add("The user also likes coffee")  # e.g. a plugin reacting to a change

        engine.subscribe(follow_up)
        done = threading.Event()
        writer = threading.Thread(target=lambda: (engine.add("The user likes tea"), done.set()), daemon=True)
        writer.start()
        assert done.wait(timeout=30), "a write made by a subscriber hung the publisher"
        assert seen == [Operation.ADD, Operation.ADD]
        texts = {m.text for m in engine.list_memories()}
        assert texts == {"The user likes tea", "The user also likes coffee"}
    finally:
        engine.close()
