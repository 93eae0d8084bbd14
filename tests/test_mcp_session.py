"""One warm engine serves a `desktop-mem mcp` session (issue 23), within the one-writer rules:
the session reuses its engines across calls, never keeps the store's lock between calls, and
sees what others wrote in between (a CLI write, a hand edit) as a fresh engine would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from desktop_mem.api.mcp_backends import StdioBackend
from desktop_mem.api.mcp_server import build_server
from desktop_mem.engine.config import load_config
from tests.mcp_clients import CLAUDE, cli_env, git

pytestmark = pytest.mark.timeout(300)


def _cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *args],
                          capture_output=True, text=True, env=cli_env(), timeout=120)


def _json(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    return dict(json.loads(result.content[0].text))


def test_a_session_reuses_its_engines_and_still_sees_what_others_wrote(tmp_path: Path) -> None:
    store = tmp_path / "store"
    config = load_config(env={}, flags={"store.path": str(store), "llm.base_url": ""})
    backend = StdioBackend(config)

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(build_server(backend), client_info=CLAUDE) as c:
            first = _json(await c.call_tool("add_memories", {"text": "I prefer green tea"}))
            for text in ("I work at Acme Robotics", "I live in Ghent"):
                await c.call_tool("add_memories", {"text": text})
            for _ in range(3):
                _json(await c.call_tool("search_memory", {"query": "where does the user live?"}))
                _json(await c.call_tool("list_memories", {}))
                _json(await c.call_tool("get_memory", {"id": first["added"][0]["id"]}))
            out["warm"] = backend.engines_opened  # one reader + one writer for all of that

            # Between calls the lock is free: a CLI write and a hand edit land meanwhile.
            out["cli"] = await anyio.to_thread.run_sync(lambda: _cli(store, "add", "I own a red bicycle"))
            path = store / first["added"][0]["path"]
            path.write_text(path.read_text().replace("green tea", "jasmine tea"))

            found = _json(await c.call_tool("search_memory", {"query": "bicycle"}))
            out["found"] = [r["text"] for r in found["results"]]
            tea = _json(await c.call_tool("search_memory", {"query": "what tea?"}))
            out["tea"] = tea["results"][0]["text"]
            listed = _json(await c.call_tool("list_memories", {}))
            out["listed"] = {m["text"] for m in listed["memories"]}
            out["rebuilt"] = backend.engines_opened
        return out

    try:
        out = anyio.run(scenario)
    finally:
        backend.close()
    assert out["warm"] == 2
    assert out["cli"].returncode == 0, out["cli"].stderr  # the session did not hold the store
    assert out["found"][0] == "I own a red bicycle"  # the warm writer noticed and caught up
    assert out["tea"] == "I prefer jasmine tea"  # the hand edit too ...
    assert "I prefer jasmine tea" in out["listed"] and "I own a red bicycle" in out["listed"]
    assert out["rebuilt"] == 3  # ... by opening the store again once, as a new engine would
    assert "jasmine" in git(store, "show", "HEAD", "--stat", "--format=%B") or \
        "jasmine" in git(store, "log", "-p", "-3")  # and the hand edit is committed, not lost
    assert not git(store, "status", "--porcelain", "entries")
