"""Bounded work on MCP messages (issue #34): each line a client sends `desktop-mem mcp` is measured
before the SDK parses it. A request nested 100,000 deep was never answered (the client waited for
ever); a line had no length limit. Now such a request gets an "invalid request" error naming the
limit at once, and the session goes on. A real `desktop-mem mcp` process, spoken to line by line."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

from desktop_mem.api.mcp_stdio import MESSAGE_LIMITS
from desktop_mem.engine.facade import MemoryEngine

ROOT = Path(__file__).resolve().parent.parent


def test_an_oversized_or_deep_request_is_answered_with_an_error_and_the_session_goes_on(
    tmp_path: Path, make_config: object,
) -> None:
    store = tmp_path / "store"
    with MemoryEngine(make_config(store=store)) as engine:  # type: ignore[operator]
        engine.add("The user likes tea")
    proc = subprocess.Popen([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "--set",
                             "llm.base_url=", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path)
    assert proc.stdin is not None and proc.stdout is not None

    def send(line: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line.encode() + b"\n")
        proc.stdin.flush()

    def answer() -> dict[str, object]:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "no answer within 60 s"
        return dict(json.loads(proc.stdout.readline()))

    try:
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}))
        assert answer()["id"] == 1
        send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        deep = "[" * 100_000 + "]" * 100_000
        send('{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add_memories", '
             f'"arguments": {{"memories": {deep}}}}}}}')
        refused = answer()
        assert refused["id"] == 2 and "nested 100,003 levels deep" in str(refused["error"]), refused
        long_text = "x" * (MESSAGE_LIMITS.max_chars + 10)
        send('{"jsonrpc": "2.0", "id": "long", "method": "tools/call", "params": {"name": "search_memory", '
             f'"arguments": {{"query": "{long_text}"}}}}}}')
        refused = answer()
        assert refused["id"] == "long" and "characters, over the limit" in str(refused["error"]), refused
        send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                         "params": {"name": "search_memory", "arguments": {"query": "tea"}}}))
        found = answer()
        assert found["id"] == 3 and "The user likes tea" in json.dumps(found), found
    finally:
        proc.stdin.close()
        assert proc.wait(60) == 0
        proc.stdout.close()
        assert proc.stderr is not None
        assert "Traceback" not in proc.stderr.read().decode()
