"""Issue #22: all or nothing. A batch of memories (MCP add_memories) is validated first and saved
as one commit; when one item cannot be saved, none is, and the error says which item and that
nothing was saved, so a client that retries makes no duplicates."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import ValidationError
from tests.mcp_clients import call, stdio_session

LIMIT = 4096  # store.max_file_bytes for these tests: an item over it cannot be saved
TOO_BIG = "y " * LIMIT


def test_a_batch_with_one_unsavable_item_saves_nothing(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config(**{"store.max_file_bytes": LIMIT})) as engine:
        engine.add("Already here")
        before = engine._parts.git.head()
        with pytest.raises(ValidationError, match=r"nothing was saved: item 2 of 3"):
            engine.add_many(["The user likes tea", TOO_BIG, "The user likes cake"])
        assert [m.text for m in engine.list_memories(role="memory")] == ["Already here"]
        assert engine._parts.git.head() == before and not engine._parts.git.dirty_paths()

        saved = engine.add_many(["The user likes tea", "The user likes cake", "The user likes tea"])
        assert len({m.id for m in saved}) == 2
        assert engine._parts.git.count() == 2, "the batch is one commit"
        files = engine._parts.git.repo.git.show("--name-only", "--format=", "HEAD").split()
        assert len([f for f in files if f.endswith(".md")]) == 2


def test_mcp_add_memories_is_all_or_nothing_and_says_so(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with MemoryEngine(load_config(flags={"store.path": str(store), "watcher.enabled": False})) as eng:
        eng.add("Already here")

    async def scenario() -> tuple[Any, Any]:
        async with stdio_session(store, extra_args=("--set", f"store.max_file_bytes={LIMIT}")) as s:
            failed = await s.call_tool("add_memories", {"texts": ["The user likes tea", TOO_BIG]})
            retried = await call(s, "add_memories", texts=["The user likes tea", "The user likes tea"])
            return failed, retried

    failed, retried = anyio.run(scenario)
    assert failed.is_error and "nothing was saved: item 2 of 2" in failed.content[0].text
    assert [m["text"] for m in retried["added"]] == ["The user likes tea", "The user likes tea"]
    with MemoryEngine(load_config(flags={"store.path": str(store), "watcher.enabled": False})) as eng:
        texts = sorted(m.text for m in eng.list_memories(role="memory"))
    assert texts == ["Already here", "The user likes tea"]
