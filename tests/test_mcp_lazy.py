"""`/mcp` starts the MCP server on its first request: a process no MCP client talks to never loads
the SDK (~27 MB of RSS; issue #25), and the first client is served as before. Likewise the LLM
client (`openai`, ~21 MB) is loaded by the first chat, not by the server."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from fastapi.testclient import TestClient

from desktop_mem.api.rest import create_app
from desktop_mem.engine.facade import MemoryEngine

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "lazy-test", "version": "1"}}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def test_a_server_no_mcp_client_asked_has_not_loaded_the_mcp_sdk(tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import json, sys
        from fastapi.testclient import TestClient
        from desktop_mem.api.rest import create_app
        from desktop_mem.engine.config import load_config
        from desktop_mem.engine.facade import MemoryEngine

        config = load_config(flags={{"store.path": {str(tmp_path / "store")!r}, "watcher.enabled": False}})
        with MemoryEngine.open(config) as engine:
            engine.add("The user keeps bees")
            with TestClient(create_app(engine, None), base_url="http://127.0.0.1") as client:
                listed = client.get("/api/memories").json()["total"]
                before = sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp."))
                before += ["openai"] if "openai" in sys.modules else []
                answer = client.post("/mcp", json={json.dumps(INITIALIZE)}, headers={HEADERS!r})
                after = "mcp.server" in sys.modules
        seen = {{"listed": listed, "before": before, "status": answer.status_code, "after": after}}
        print(json.dumps(seen))
    """)
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         cwd=root)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["listed"] == 1
    assert seen["before"] == []  # the REST routes served; neither the MCP SDK nor openai imported
    assert seen["status"] == 200 and seen["after"] is True  # the first MCP request started it


def test_concurrent_first_requests_share_one_mcp_server(engine: MemoryEngine) -> None:
    app = create_app(engine, None)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert not app.state.mcp.started
        assert client.get("/health").status_code == 200
        assert not app.state.mcp.started
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: client.post("/mcp", json=INITIALIZE, headers=HEADERS),
                                    range(4)))
        assert [a.status_code for a in answers] == [200] * 4
        assert app.state.mcp.started
        assert all("desktop-mem" in a.text for a in answers)  # each one the server's initialize result


def test_mcp_outside_the_servers_life_is_refused_in_the_servers_error_format(engine: MemoryEngine) -> None:
    client = TestClient(create_app(engine, None), base_url="http://127.0.0.1")  # no lifespan run
    answer = client.post("/mcp", json=INITIALIZE, headers=HEADERS)
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert error["type"] == "server_error" and "only while the HTTP server" in error["message"]
