"""Finding the user's model servers: real HTTP servers on loopback stand in for Ollama, LM Studio,
llama.cpp and vLLM, answering /v1/models as each does (or misbehaving)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from desktop_mem.engine.chat.endpoint_discovery import KnownServer, discover_endpoints, nothing_found_advice

Answer = Callable[[BaseHTTPRequestHandler], None]


class _Server:
    def __init__(self, answer: Answer) -> None:
        seen: list[dict[str, str]] = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
                answer(self)

            def log_message(self, *args: object) -> None:
                pass

        self.seen = seen
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _json(body: object, status: int = 200) -> Answer:
    def answer(h: BaseHTTPRequestHandler) -> None:
        raw = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(raw)))
        h.end_headers()
        h.wfile.write(raw)
    return answer


def _models(owner: str, *ids: str) -> Answer:
    return _json({"object": "list", "data": [{"id": i, "object": "model", "owned_by": owner} for i in ids]})


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], _Server]]:
    started: list[_Server] = []

    def start(answer: Answer) -> _Server:
        started.append(_Server(answer))
        return started[-1]

    yield start
    for s in started:
        s.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_running_servers_are_found_with_their_models_and_the_rest_say_why(serve) -> None:  # type: ignore[no-untyped-def]
    ollama = serve(_models("library", "llama3.2:latest", "qwen2.5:1.5b"))
    lmstudio = serve(_models("organization_owner", "qwen2.5-7b-instruct"))
    empty = serve(_json({"object": "list", "data": []}))
    html = serve(lambda h: (h.send_response(200), h.end_headers(), h.wfile.write(b"<html>hi</html>")))
    closed = _free_port()
    servers = [KnownServer("Ollama", ollama.port, ""), KnownServer("LM Studio", lmstudio.port, ""),
               KnownServer("vLLM", empty.port, ""), KnownServer("llama.cpp server", html.port, ""),
               KnownServer("Other", closed, "")]
    found = discover_endpoints({}, servers=servers, timeout=2)
    by_port = {int(e.base_url.rsplit(":", 1)[1].split("/")[0]): e for e in found}
    assert [e.found for e in found] == [True, True, False, False, False]  # answering ones first
    assert by_port[ollama.port].models == ("llama3.2:latest", "qwen2.5:1.5b")
    assert by_port[ollama.port].base_url == f"http://127.0.0.1:{ollama.port}/v1"
    assert by_port[lmstudio.port].name == "LM Studio"
    assert "no model" in by_port[empty.port].error
    assert "not with JSON" in by_port[html.port].error
    assert by_port[closed].error == "nothing is listening" and not by_port[closed].listening
    assert ollama.seen[0]["path"] == "/v1/models"


def test_who_answers_is_named_from_the_answer_not_only_the_port(serve) -> None:  # type: ignore[no-untyped-def]
    llama = serve(_models("llamacpp", "model.gguf"))
    [found] = discover_endpoints({}, servers=[KnownServer("vLLM", llama.port, "")], timeout=2)
    assert found.name == "llama.cpp server" and found.models == ("model.gguf",)


def test_the_api_key_goes_only_to_the_url_it_belongs_to(serve) -> None:  # type: ignore[no-untyped-def]
    mine = serve(_models("openai", "gpt-4o-mini"))
    squatter = serve(_models("library", "llama3.2"))
    env = {"OPENAI_BASE_URL": f"http://127.0.0.1:{mine.port}/v1", "OPENAI_API_KEY": "sk-test-mine"}
    found = discover_endpoints(env, configured_url="http://localhost:1/v1", configured_key="sk-conf",
                               servers=[KnownServer("Ollama", squatter.port, "")], timeout=2)
    assert found[0].origin == "OPENAI_BASE_URL" and found[0].models == ("gpt-4o-mini",)
    assert mine.seen[0]["authorization"] == "Bearer sk-test-mine"
    assert all("authorization" not in seen for seen in squatter.seen)  # whoever listens gets no key


def test_a_hostile_server_cannot_flood_or_smuggle_control_characters(serve) -> None:  # type: ignore[no-untyped-def]
    huge = serve(lambda h: (h.send_response(200), h.end_headers(), h.wfile.write(b"{" + b" " * (2 << 20))))
    weird = serve(_models("x", "ok-model", "bad\x1b[31mred", "x" * 500, *[f"m{i}" for i in range(400)]))
    wants_key = serve(_json({"error": "unauthorized"}, status=401))
    servers = [KnownServer("A", huge.port, ""), KnownServer("B", weird.port, ""),
               KnownServer("C", wants_key.port, "")]
    by_name = {e.name: e for e in discover_endpoints({}, servers=servers, timeout=3)}
    assert "more than 1 MB" in by_name["A"].error
    models = by_name["B"].models
    assert models[0] == "ok-model" and len(models) == 200
    assert all("\x1b" not in m and len(m) <= 200 for m in models)
    assert "API key" in by_name["C"].error


def test_with_nothing_running_the_advice_says_what_to_install() -> None:
    advice = nothing_found_advice()
    for name in ("Ollama", "LM Studio", "llama.cpp", "vLLM", "OPENAI_BASE_URL"):
        assert name in advice


def test_the_cli_lists_them_and_saves_the_chosen_one(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server = serve(_models("library", "llama3.2:latest", "qwen2.5:1.5b"))
    config = tmp_path / "config.yaml"
    config.write_text("", encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{server.port}/v1"}
    env.pop("OPENAI_API_KEY", None)
    base = [sys.executable, "-m", "desktop_mem.cli", "--store", str(tmp_path / "s"), "--config", str(config),
            "endpoints", "--timeout", "2"]
    listing = subprocess.run(base, capture_output=True, text=True, env=env, timeout=120)
    assert listing.returncode == 0, listing.stderr
    assert f"1. Ollama at http://127.0.0.1:{server.port}/v1 (OPENAI_BASE_URL)" in listing.stdout
    bad = subprocess.run([*base, "--use", "1", "--model", "gpt-5"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert bad.returncode == 1 and "does not offer 'gpt-5'" in bad.stderr
    saved = subprocess.run([*base, "--use", "1", "--model", "qwen2.5:1.5b"], capture_output=True, text=True,
                           env=env, timeout=120)
    assert saved.returncode == 0, saved.stderr
    text = config.read_text(encoding="utf-8")
    assert f"base_url: http://127.0.0.1:{server.port}/v1" in text and "model: qwen2.5:1.5b" in text


def _raw(body: bytes) -> Answer:
    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return answer


def _drip(head_first: bool) -> Answer:
    """A byte at a time, each well within any read timeout, forever (until the client leaves)."""
    def answer(h: BaseHTTPRequestHandler) -> None:
        import time
        try:
            if not head_first:
                for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 10_000:
                    h.wfile.write(bytes([byte]))
                    h.wfile.flush()
                    time.sleep(0.05)
            h.send_response(200)
            h.send_header("Content-Length", "1000000")
            h.end_headers()
            h.wfile.write(b'{"data": [')
            while True:
                h.wfile.write(b" ")
                h.wfile.flush()
                time.sleep(0.05)
        except OSError:
            return
    return answer


def test_deep_or_flooding_json_is_one_line_about_that_server_never_a_traceback(serve) -> None:  # type: ignore[no-untyped-def]
    """A local server answering /models with JSON nested 10,000 deep (RecursionError: the
    command printed a traceback) or a flood of tiny items: refused before parsing, named per
    server; the honest server beside them is still found."""
    deep = serve(_raw(b'{"data": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"))
    flood = serve(_raw(b'{"data": [' + b",".join([b"{}"] * 300_000) + b"]}"))
    good = serve(_models("library", "qwen2.5:1.5b"))
    servers = [KnownServer("A", deep.port, ""), KnownServer("B", flood.port, ""),
               KnownServer("C", good.port, "")]
    by_name = {e.name: e for e in discover_endpoints({}, servers=servers, timeout=3)}
    assert "nested" in by_name["A"].error and not by_name["A"].models
    assert "values" in by_name["B"].error and not by_name["B"].models
    assert by_name["Ollama"].models == ("qwen2.5:1.5b",)  # C, named by its owner


@pytest.mark.parametrize("head_first", [True, False], ids=["body-drips", "headers-drip"])
def test_a_server_that_drips_cannot_hold_endpoints_past_its_timeout(  # type: ignore[no-untyped-def]
    serve, tmp_path: Path, head_first: bool,
) -> None:
    """`desktop-mem endpoints --timeout 1` with a server that sends a byte every 50 ms (each read
    is quick, so a per-read timeout never fires): the command is done within the timeout plus
    start-up, and says that server kept answering (it ran past 25 s)."""
    import time

    dripping = serve(_drip(head_first))
    config = tmp_path / "config.yaml"
    config.write_text("", encoding="utf-8")
    env = {**os.environ, "OPENAI_BASE_URL": f"http://127.0.0.1:{dripping.port}/v1"}
    env.pop("OPENAI_API_KEY", None)
    started = time.monotonic()
    args = ["--store", str(tmp_path / "s"), "--config", str(config), "endpoints", "--timeout", "1"]
    done = subprocess.run([sys.executable, "-m", "desktop_mem.cli", *args], capture_output=True, text=True,
                          env=env, timeout=60)
    spent = time.monotonic() - started
    assert "Traceback" not in done.stderr
    assert "past 1 s" in done.stdout + done.stderr, done.stdout + done.stderr
    start_up = 12  # the interpreter and the CLI's imports, on a busy two-core machine
    assert spent < 1 + start_up, spent


def test_a_busy_local_server_is_told_as_busy_not_as_something_else(  # type: ignore[no-untyped-def]
    serve, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A local server that serves one request at a time answers its models list only after the
    reply it is busy with (13 s, seen behind a benchmark). The search ends on time and says the
    server may be busy, so the user tries again rather than another URL: both when the probe's
    read timeout fires, and when on a loaded machine the probe is still waiting at the deadline
    (the window said "not a models list" of the server it was chatting with)."""
    import time

    from desktop_mem.engine.chat import endpoint_discovery

    def busy(h: BaseHTTPRequestHandler) -> None:
        time.sleep(2.5)
        with contextlib.suppress(OSError):  # the client has given up by now
            _models("me", "local")(h)

    server = serve(busy)
    servers = [KnownServer("Busy", server.port, "")]
    for late in (False, True):
        if late:  # the probe's thread has not returned by the deadline
            monkeypatch.setattr(endpoint_discovery, "probe", lambda *a, **k: time.sleep(3))
        started = time.monotonic()
        found = discover_endpoints({}, servers=servers, timeout=0.5)
        assert time.monotonic() - started < 2.0
        (busy_one,) = [e for e in found if e.base_url.endswith(f":{server.port}/v1")]
        assert not busy_one.found and busy_one.listening
        assert "busy" in busy_one.error, busy_one.error
