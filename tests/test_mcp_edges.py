"""Issue #22, smaller items over MCP: a conversation without a summary reads as an empty summary,
not an error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp.types import TextResourceContents

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from tests.mcp_clients import stdio_session


def test_the_summary_resource_of_a_conversation_without_summary_is_empty(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with MemoryEngine(load_config(flags={"store.path": str(store), "watcher.enabled": False})) as eng:
        eng.add("The user likes tea", conversation_id="trip")

    async def scenario() -> Any:
        async with stdio_session(store) as s:
            return await s.read_resource("memory://conversations/trip/summary")

    result = anyio.run(scenario)
    [content] = result.contents
    assert isinstance(content, TextResourceContents)
    assert json.loads(content.text) == {"conversation": "trip", "summary": ""}
