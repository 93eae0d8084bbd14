"""A recording proxy in front of an OpenAI-compatible endpoint, for benchmarks that drive the real
engine (the engine talks to the proxy as to any server): each request's exact body is answered
from a JSONL file when it was asked before, else forwarded and its whole answer (JSON, or the
streamed SSE bytes) recorded. At temperature 0 a rerun after a code change then asks the model
only what changed: a change to grounding or matching reruns a 90-scenario benchmark in minutes
instead of hours on a small local model. Loopback only; nothing is cached but what was asked.

    with cached_endpoint("http://127.0.0.1:8765/v1", Path("cache.jsonl")) as url:
        ...  # point the engine's llm.base_url at url
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx


class _Cache:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.entries: dict[str, dict[str, str]] = {}
        self.hits = self.misses = 0
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self.entries[entry["key"]] = entry
                except (ValueError, KeyError):
                    continue  # a line cut by an interrupted run

    def get(self, key: str) -> dict[str, str] | None:
        with self.lock:
            hit = self.entries.get(key)
            if hit is None:
                self.misses += 1
            else:
                self.hits += 1
            return hit

    def put(self, entry: dict[str, str]) -> None:
        with self.lock:
            self.entries[entry["key"]] = entry
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _handler(upstream: str, cache: _Cache) -> type[BaseHTTPRequestHandler]:
    client = httpx.Client(timeout=httpx.Timeout(1800.0, connect=10.0))

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:  # quiet: the benchmark prints its own lines
            return

        def _answer(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # /models
            reply = client.get(upstream + self.path.removeprefix("/v1"))
            kind = reply.headers.get("content-type", "application/json")
            self._answer(reply.status_code, kind, reply.content)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            key = hashlib.sha256(self.path.encode() + b"\0" + body).hexdigest()
            hit = cache.get(key)
            if hit is not None:
                self._answer(200, hit["type"], hit["body"].encode("utf-8"))
                return
            reply = client.post(upstream + self.path.removeprefix("/v1"), content=body,
                                headers={"Content-Type": "application/json",
                                         "Authorization": self.headers.get("Authorization", "")})
            kind = reply.headers.get("content-type", "application/json")
            if reply.status_code == 200:
                cache.put({"key": key, "type": kind, "body": reply.content.decode("utf-8")})
            self._answer(reply.status_code, kind, reply.content)

    return Handler


@contextmanager
def cached_endpoint(upstream: str, path: Path) -> Iterator[str]:
    """The base URL of a recording proxy for ``upstream`` (an OpenAI-compatible ``.../v1``)."""
    cache = _Cache(path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(upstream.rstrip("/"), cache))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        print(f"llm cache: {cache.hits} answered from {path}, {cache.misses} asked", flush=True)
