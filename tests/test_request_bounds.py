"""Bounded work on REST request bodies (issue #34): a body is at most `MAX_BODY_BYTES` (1 MB, checked
while it streams in), so at most a few hundred thousand values are ever built from one; a body
nested 100,000 deep, or a flood of tiny items, is a 400 with a JSON error, never a 500 or a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from desktop_mem.api.rest import MAX_BODY_BYTES, create_app
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine

DEEP = '{"content": ' + "[" * 100_000 + "]" * 100_000 + "}"
FLOOD = "[" + ",".join(["{}"] * 300_000) + "]"
HUGE = "[" + ",".join(["{}"] * (MAX_BODY_BYTES // 3 + 10)) + "]"


@pytest.mark.parametrize("route", ["/api/memories", "/v1/chat/completions", "/api/memories/batch"])
def test_deep_flooding_or_huge_bodies_are_refused_with_json(route: str, tmp_path: Path) -> None:
    outer = tmp_path
    engine = MemoryEngine(load_config(flags={"store.path": str(outer / "store"), "watcher.enabled": False}))
    try:
        with TestClient(create_app(engine, None), base_url="http://127.0.0.1",
                        raise_server_exceptions=False) as client:
            for body, status in ((DEEP, 400), (FLOOD, 400), (HUGE, 413)):
                answer = client.post(route, content=body, headers={"content-type": "application/json"})
                assert answer.status_code == status, (route, answer.status_code, answer.text[:200])
                assert answer.json()["error"]["message"]
        assert engine.list_memories() == []
    finally:
        engine.close()
