"""The endpoint probe (`check`, `list_models`): the window runs it at start, before any chat, so it
must not load the openai package (~25 MB of RSS, issue #25), and its failures must read exactly as
a completion's would. Real HTTP: the scripted server, and a plain server answering every request
with one status."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from desktop_mem.engine.chat.llm_client import LLMClient, LLMEndpoint
from desktop_mem.engine.chat.llm_errors import LLMError
from tests.scripted_llm import ScriptedLLM

HI = [{"role": "user", "content": "hi"}]
ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import sys
from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.config import load_config

config = load_config(flags={"store.path": sys.argv[1], "watcher.enabled": False,
                            "llm.base_url": sys.argv[2], "llm.model": "test-model", "llm.api_key": "k"})
with MemoryEngine.open(config) as engine:
    print(engine.llm_check())
    print("openai loaded" if "openai" in sys.modules else "openai not loaded")
"""


def test_the_window_probe_does_not_load_openai(scripted_llm: ScriptedLLM, tmp_path: Path) -> None:
    # a fresh process, as the window's: the engine's own probe, through the chat service
    done = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "store"), scripted_llm.base_url],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    status, loaded = done.stdout.strip().splitlines()[-2:]
    assert "model 'test-model' available" in status
    assert loaded == "openai not loaded"
    assert [r.path for r in scripted_llm.requests] == ["/v1/models"]


class _Fixed(BaseHTTPRequestHandler):
    """Every GET and POST gets the server's one status and body (after its delay)."""

    status = 200
    body: bytes = b"{}"
    delay = 0.0

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        time.sleep(self.delay)
        with contextlib.suppress(ConnectionError):  # a client that timed out has gone
            self.send_response(self.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(self.body)))
            self.end_headers()
            self.wfile.write(self.body)

    do_GET = do_POST = _answer  # noqa: N815


@pytest.fixture
def fixed() -> Iterator[tuple[str, type[_Fixed]]]:
    handler = type("Handler", (_Fixed,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", handler
    finally:
        server.shutdown()
        server.server_close()


def _error(call: object) -> LLMError:
    with pytest.raises(LLMError) as info:
        call()  # type: ignore[operator]
    return info.value


@pytest.mark.parametrize(("status", "kind"), [(401, "auth"), (403, "auth"), (404, "model_missing"),
                                              (429, "rate_limited"), (418, "server_error"),
                                              (500, "server_error"), (503, "server_error")])
def test_a_refused_model_list_reads_as_a_refused_completion(
    fixed: tuple[str, type[_Fixed]], status: int, kind: str
) -> None:
    url, handler = fixed
    handler.status = status
    reason = f"the server's reason {status} for sk-secret-9"
    handler.body = json.dumps({"error": {"message": reason}}).encode()
    client = LLMClient(LLMEndpoint(url, "sk-secret-9", "test-model"))
    listing = _error(client.list_models)
    assert (listing.kind, listing.message) == (kind, _error(lambda: client.complete(HI)).message)
    assert f"the server's reason {status}" in listing.message and "sk-secret-9" not in listing.message


def test_a_model_list_that_is_not_json_is_a_bad_response(fixed: tuple[str, type[_Fixed]]) -> None:
    url, handler = fixed
    handler.body = b"<html>a login page</html>"
    err = _error(LLMClient(LLMEndpoint(url, "", "test-model")).list_models)
    assert err.kind == "bad_response" and "OpenAI-compatible /v1" in err.message


def test_a_slow_model_list_is_a_timeout(fixed: tuple[str, type[_Fixed]]) -> None:
    url, handler = fixed
    handler.delay = 2.0
    err = _error(LLMClient(LLMEndpoint(url, "", "test-model", timeout=0.3)).check)
    assert err.kind == "timeout" and "0.3 s" in err.message


def test_the_probe_sends_the_key_and_a_placeholder_without_one(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.require_key = "sk-right"
    keyed = LLMClient(LLMEndpoint(scripted_llm.base_url, "sk-right", "test-model"))
    assert keyed.list_models() == ["test-model"]
    assert _error(LLMClient(LLMEndpoint(scripted_llm.base_url, "", "test-model")).check).kind == "auth"
