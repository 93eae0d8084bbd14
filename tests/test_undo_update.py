"""One undo of an update, with a conflict check, in one commit: what the tool notice's Undo and the
timeline's Revert both do. Real store, real git; the change is the one an MCP update publishes
(the notice's Undo itself: tests/ui/test_tool_notice.py)."""

from __future__ import annotations

import pytest

from desktop_mem.api import mcp_tools
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import ConflictError, Operation, StoreChange


def _mcp_update(engine: MemoryEngine, memory_id: str, text: str) -> StoreChange:
    changes: list[StoreChange] = []
    unsubscribe = engine.subscribe(changes.append)
    mcp_tools.update(engine, memory_id, text, "Claude Desktop")
    unsubscribe()
    [change] = changes
    assert change.operation == Operation.UPDATE and change.source == "mcp"
    return change


def test_undoing_an_ai_tools_update_is_one_commit_that_brings_the_old_fact_back(engine: MemoryEngine) -> None:
    old = engine.add("User lives in Ghent")
    change = _mcp_update(engine, old.id, "User lives in Leuven")
    head = engine._parts.git.head()

    engine.undo_update(change.memory_ids, change.commit)

    assert [c.sha for c in engine.history(limit=2)][1] == head, "exactly one commit"
    [commit] = engine.history(limit=1)
    assert commit.trailers["Operation"] == Operation.REVERT_UPDATE
    live = [m.text for m in engine.list_memories(role="memory")]
    assert live == ["User lives in Ghent"]


def test_undo_is_refused_and_changes_nothing_when_the_new_fact_was_edited_since(engine: MemoryEngine) -> None:
    old = engine.add("User lives in Ghent")
    change = _mcp_update(engine, old.id, "User lives in Leuven")
    new_id = next(i for i in change.memory_ids if i != old.id)
    engine.edit(new_id, text="User lives in Leuven, near the station")  # the user's own edit since
    head = engine._parts.git.head()

    with pytest.raises(ConflictError, match="was edited after"):
        engine.undo_update(change.memory_ids, change.commit)

    assert engine._parts.git.head() == head and engine._parts.git.dirty_paths() == [], "nothing changed"
    assert [m.text for m in engine.list_memories(role="memory")] == ["User lives in Leuven, near the station"]
