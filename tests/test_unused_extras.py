"""The optional modules the engine keeps from loading (engine/unused_extras.py): they stay out of
a process that imports the engine, chromadb and openai, and both packages still work without
them. A fresh interpreter each: this test process imported httpx and openai long ago."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.mcp_clients import ROOT

PROBE = """
import json, sys
import desktop_mem.engine.api  # the engine first, as every front end imports it
import chromadb, httpx, openai
from desktop_mem.engine.chat import llm_client
client = openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1")
with httpx.Client() as http:
    pass
loaded = {name.split(".")[0] for name in sys.modules}
print(json.dumps({"loaded": sorted(loaded & {"rich", "pygments", "click", "aiohttp"}),
                  "client": type(client).__name__, "httpx_main": callable(httpx.main)}))
"""


def _probe(code: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=True)
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_engine_keeps_the_httpx_cli_and_openais_aiohttp_transport_out() -> None:
    result = _probe(PROBE)
    assert result["loaded"] == [], "httpx's CLI (rich, pygments, click) or openai's aiohttp came back"
    assert result["client"] == "OpenAI" and result["httpx_main"] is True


def test_a_package_imported_before_the_engine_is_left_as_it_is() -> None:
    """Imported first, httpx keeps its CLI module: the engine changes nothing of it then (openai,
    not imported yet, is still spared its aiohttp transport)."""
    result = _probe("import httpx, json, sys\nimport desktop_mem.engine\n"
                    "print(json.dumps({'cli': sys.modules.get('httpx._main') is not None,"
                    " 'aio': 'openai._vendor.httpx_aiohttp' in sys.modules"
                    " and sys.modules['openai._vendor.httpx_aiohttp'] is None}))")
    assert result == {"cli": True, "aio": True}
