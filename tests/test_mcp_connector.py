"""ChatGPT connectors and deep research call exactly two MCP tools, `search` and `fetch`, in fixed
shapes (one JSON text item each: {results: [{id, title, url}]} and {id, title, text, url,
metadata}); desktop-mem offers them beside its own tools. Over the official SDK client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import CallToolResult, TextContent

from tests.mcp_clients import CURSOR, ServeProcess, call, http_session, stdio_session

pytestmark = pytest.mark.timeout(400)


def _only_text_item(result: CallToolResult) -> dict[str, Any]:
    """The tool answered as the connector requires: exactly one text item holding a JSON object."""
    assert not result.is_error, result.content
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent)
    value = json.loads(result.content[0].text)
    assert isinstance(value, dict)
    return value


def _check_connector_shapes(found: dict[str, Any], fetched: dict[str, Any], tea_id: str) -> None:
    assert list(found) == ["results"] and found["results"]
    for hit in found["results"]:
        assert set(hit) == {"id", "title", "url"} and all(isinstance(v, str) and v for v in hit.values())
    assert found["results"][0] == {"id": tea_id, "title": "I prefer green tea over coffee",
                                   "url": f"memory://memories/{tea_id}"}
    assert set(fetched) == {"id", "title", "text", "url", "metadata"}
    assert fetched["id"] == tea_id and fetched["text"] == "I prefer green tea over coffee"
    assert fetched["url"] == f"memory://memories/{tea_id}"
    assert fetched["metadata"]["kind"] == "preference" and fetched["metadata"]["source"] == "mcp"


def test_search_and_fetch_in_the_shapes_chatgpt_connectors_require(tmp_path: Path) -> None:
    store = tmp_path / "store"

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with stdio_session(store) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            out["schemas"] = {n: tools[n].input_schema for n in ("search", "fetch")}
            out["read_only"] = [tools[n].annotations.read_only_hint for n in ("search", "fetch")]
            await call(s, "add_memories", texts=["I prefer green tea over coffee",
                                                 "I work at Acme Robotics in Lyon"])
            found = _only_text_item(await s.call_tool("search", {"query": "what does the user drink?"}))
            out["found"] = found
            out["fetched"] = _only_text_item(await s.call_tool("fetch", {"id": found["results"][0]["id"]}))
            out["missing"] = await s.call_tool("fetch", {"id": "no-such-memory"})
            out["empty"] = await s.call_tool("search", {"query": "  "})
        return out

    out = anyio.run(scenario)
    assert out["schemas"]["search"]["required"] == ["query"]
    assert list(out["schemas"]["search"]["properties"]) == ["query"]
    assert out["schemas"]["fetch"]["required"] == ["id"]
    assert list(out["schemas"]["fetch"]["properties"]) == ["id"]
    assert out["read_only"] == [True, True]
    _check_connector_shapes(out["found"], out["fetched"], out["found"]["results"][0]["id"])
    assert out["missing"].is_error and "no-such-memory" in out["missing"].content[0].text
    assert out["empty"].is_error


def test_search_and_fetch_over_http_and_forwarded_when_serve_holds_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    serve = ServeProcess(store).wait_ready()
    try:
        async def scenario() -> dict[str, Any]:
            out: dict[str, Any] = {}
            async with http_session(f"{serve.url}/mcp", headers=serve.headers) as h:
                added = await call(h, "add_memories", texts=["I prefer green tea over coffee"])
                out["tea"] = added["added"][0]["id"]
                out["http"] = _only_text_item(await h.call_tool("search", {"query": "tea or coffee"}))
            async with stdio_session(store, CURSOR) as s:  # searches at serve, fetches from the files
                out["stdio"] = _only_text_item(await s.call_tool("search", {"query": "tea or coffee"}))
                out["fetched"] = _only_text_item(await s.call_tool("fetch", {"id": out["tea"]}))
            return out

        out = anyio.run(scenario)
        _check_connector_shapes(out["http"], out["fetched"], out["tea"])
        assert out["stdio"] == out["http"]
    finally:
        serve.stop()
