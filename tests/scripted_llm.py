"""A scripted OpenAI-compatible HTTP server on loopback: the one stand-in allowed in tests.

It speaks the real protocol (``GET /v1/models``, ``POST /v1/chat/completions`` with or without
SSE streaming, ``POST /v1/embeddings``) over real sockets, so the production ``openai`` client
is exercised end to end. Tests script replies by rule, independent of call order::

    scripted_llm.script("Extract facts", '["The user likes tea"]')
    scripted_llm.script(lambda req: req.get("stream", False), Fault.cut_stream(3))
    scripted_llm.default_reply = "Hello!"

A string rule matches a substring of any system message or of the last user message; a callable
gets the parsed request body; ``None`` matches everything. The first matching rule wins.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

Body = dict[str, Any]
Match = Callable[[Body], bool] | str | None


@dataclass(frozen=True)
class Fault:
    """A scripted misbehaviour instead of a normal reply."""

    kind: Literal["delay", "status", "malformed_json", "cut_stream", "huge"]
    seconds: float = 0.0
    code: int = 200
    body: str | Body | None = None
    after_chunks: int = 0
    abrupt: bool = True
    n_bytes: int = 0
    text: str = "OK"

    @classmethod
    def delay(cls, seconds: float, then: str = "OK") -> Fault:
        """Wait ``seconds`` before answering ``then`` (client timeouts)."""
        return cls("delay", seconds=seconds, text=then)

    @classmethod
    def status(cls, code: int, body: str | Body | None = None) -> Fault:
        """Answer HTTP ``code``; a str body becomes an OpenAI-style error message, a dict is sent as is."""
        return cls("status", code=code, body=body)

    @classmethod
    def malformed_json(cls) -> Fault:
        """Answer 200 with a body (or SSE event) that is not valid JSON."""
        return cls("malformed_json")

    @classmethod
    def cut_stream(
        cls, after_chunks: int, text: str = "one two three four five six", abrupt: bool = True
    ) -> Fault:
        """Send ``after_chunks`` content chunks of ``text`` then stop, without finish or [DONE].

        ``abrupt`` drops the connection mid-body (the client sees a broken transfer); otherwise
        the HTTP body ends cleanly but the completion never finishes.
        """
        return cls("cut_stream", after_chunks=after_chunks, text=text, abrupt=abrupt)

    @classmethod
    def huge(cls, n_bytes: int) -> Fault:
        """A syntactically valid reply whose content is ``n_bytes`` long."""
        return cls("huge", n_bytes=n_bytes)


@dataclass(frozen=True)
class Odds:
    """A one-token reply whose top logprobs (sent when the request asks for ``logprobs``) give
    these probabilities of its tokens; the likeliest is the reply's text."""

    probabilities: dict[str, float]

    @property
    def text(self) -> str:
        return max(self.probabilities, key=lambda token: self.probabilities[token])


Reply = str | Fault | Odds | Callable[[Body], str]


@dataclass
class _Rule:
    match: Match
    reply: Reply
    times: int | None
    hits: int = 0


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Body | None

    @property
    def system_text(self) -> str:
        """All system messages joined (empty for non-chat requests)."""
        return "\n".join(_text(m) for m in _messages(self.body) if m.get("role") == "system")

    @property
    def last_user_text(self) -> str:
        """Content of the last user message (empty if none)."""
        users = [m for m in _messages(self.body) if m.get("role") == "user"]
        return _text(users[-1]) if users else ""


def _messages(body: Body | None) -> list[Body]:
    raw = (body or {}).get("messages")
    return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []


def _text(message: Body) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


@dataclass
class ScriptedLLM:
    """The server: rules, a default reply, the models it offers and a log of requests."""

    models: list[str] = field(default_factory=lambda: ["test-model"])
    require_key: str | None = None
    default_reply: Reply = "OK"
    embedding_dim: int = 8
    _rules: list[_Rule] = field(default_factory=list)
    _requests: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopping: threading.Event = field(default_factory=threading.Event)
    _httpd: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> ScriptedLLM:
        """Bind a free loopback port and serve in a daemon thread."""
        server = self

        class Handler(_Handler):
            scripted = server

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving; pending delays end at once."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def port(self) -> int:
        """The bound TCP port."""
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What a client uses as ``base_url``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting -----------------------------------------------------------------------

    def script(self, match: Match, reply: Reply, *, times: int | None = None) -> None:
        """Add a rule; ``times`` limits how often it may fire (None = always)."""
        with self._lock:
            self._rules.append(_Rule(match, reply, times))

    def reset(self) -> None:
        """Forget rules and recorded requests."""
        with self._lock:
            self._rules.clear()
            self._requests.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """Only the chat-completion requests."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _choose(self, request: RecordedRequest) -> Reply:
        with self._lock:
            for rule in self._rules:
                if rule.times is not None and rule.hits >= rule.times:
                    continue
                if _matches(rule.match, request):
                    rule.hits += 1
                    return rule.reply
        return self.default_reply


def _matches(match: Match, request: RecordedRequest) -> bool:
    if match is None:
        return True
    if isinstance(match, str):
        return match in request.system_text or match in request.last_user_text
    return bool(match(request.body or {}))


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or hang up are part of the script, not test failures.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripted: ScriptedLLM
    timeout = 30  # idle keep-alive connections end on their own

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    # -- routing -------------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802
        request = self._read()
        if request is None or not self._authorised():
            return
        if request.path.rstrip("/").endswith("/models"):
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
                for m in self.scripted.models
            ]
            self._json(200, {"object": "list", "data": data})
        else:
            self._error(404, f"No route {request.path}", "not_found")

    def do_POST(self) -> None:  # noqa: N802
        request = self._read()
        if request is None or not self._authorised():
            return
        if request.body is None:
            self._error(400, "Request body is not valid JSON", "invalid_request_error")
            return
        model = request.body.get("model")
        if model not in self.scripted.models:
            self._error(404, f"The model `{model}` does not exist", "model_not_found")
        elif request.path.endswith("/chat/completions"):
            self._chat(request)
        elif request.path.endswith("/embeddings"):
            self._embeddings(request.body)
        else:
            self._error(404, f"No route {request.path}", "not_found")

    def _read(self) -> RecordedRequest | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Body | None = None
        if raw:
            try:
                parsed = json.loads(raw)
                body = parsed if isinstance(parsed, dict) else None
            except ValueError:
                body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body)
        self.scripted._record(request)
        return request

    def _authorised(self) -> bool:
        key = self.scripted.require_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        self._error(401, "Incorrect API key provided.", "invalid_api_key")
        return False

    # -- chat ----------------------------------------------------------------------------

    def _chat(self, request: RecordedRequest) -> None:
        body = request.body or {}
        reply = self.scripted._choose(request)
        stream = bool(body.get("stream"))
        if callable(reply) and not isinstance(reply, Fault):
            reply = reply(body)
        if isinstance(reply, str):
            self._answer(body, reply, stream)
            return
        if isinstance(reply, Odds):
            self._odds(body, reply)
            return
        if reply.kind == "delay":
            if self.scripted._stopping.wait(reply.seconds):
                return
            self._answer(body, reply.text, stream)
        elif reply.kind == "status":
            if isinstance(reply.body, dict):
                self._json(reply.code, reply.body)
            else:
                self._error(reply.code, reply.body or f"scripted status {reply.code}", "scripted")
        elif reply.kind == "huge":
            self._answer(body, ("lorem ipsum " * (reply.n_bytes // 12 + 1))[: reply.n_bytes], stream)
        elif reply.kind == "malformed_json":
            self._malformed(stream)
        else:
            self._cut(reply, stream)

    def _answer(self, body: Body, text: str, stream: bool) -> None:
        model = str(body.get("model"))
        if not stream:
            self._json(200, _completion(model, text, _prompt_tokens(body)))
            return
        self._start_sse()
        pieces = _pieces(text)
        self._event(_chunk(model, {"role": "assistant", "content": ""}))
        for piece in pieces:
            self._event(_chunk(model, {"content": piece}))
        self._event(_chunk(model, {}, finish="stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = _completion(model, text, _prompt_tokens(body))["usage"]
            self._event({**_chunk(model, {}), "choices": [], "usage": usage})
        self._send_chunk(b"data: [DONE]\n\n")
        self._send_chunk(b"")

    def _odds(self, body: Body, odds: Odds) -> None:
        completion = _completion(str(body.get("model")), odds.text, _prompt_tokens(body))
        if body.get("logprobs"):
            top = [{"token": token, "logprob": math.log(p), "bytes": None}
                   for token, p in sorted(odds.probabilities.items(), key=lambda kv: -kv[1]) if p > 0]
            completion["choices"][0]["logprobs"] = {"content": [{**top[0], "top_logprobs": top}]}
        self._json(200, completion)

    def _malformed(self, stream: bool) -> None:
        if not stream:
            self._raw(200, b'{"id": "chatcmpl-broken", "choices": [{"message": {"content": "Hel')
            return
        self._start_sse()
        self._event(_chunk("x", {"role": "assistant", "content": "Hel"}))
        self._send_chunk(b'data: {"choices": [{"delta": {"content": "lo\n\n')
        self._send_chunk(b"data: [DONE]\n\n")
        self._send_chunk(b"")

    def _cut(self, fault: Fault, stream: bool) -> None:
        pieces = _pieces(fault.text)[: fault.after_chunks]
        if not stream:
            payload = json.dumps(_completion("x", fault.text, 0)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self._drop()
            return
        self._start_sse()
        self._event(_chunk("x", {"role": "assistant", "content": ""}))
        for piece in pieces:
            self._event(_chunk("x", {"content": piece}))
        if fault.abrupt:
            self._drop()
        else:
            self._send_chunk(b"")

    # -- embeddings ----------------------------------------------------------------------

    def _embeddings(self, body: Body) -> None:
        raw = body.get("input")
        texts = [raw] if isinstance(raw, str) else [str(t) for t in raw or []]
        data = [
            {"object": "embedding", "index": i, "embedding": _vector(t, self.scripted.embedding_dim)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(t.split()) for t in texts)
        self._json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    # -- wire helpers --------------------------------------------------------------------

    def _json(self, code: int, payload: Body) -> None:
        self._raw(code, json.dumps(payload).encode())

    def _raw(self, code: int, payload: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _error(self, code: int, message: str, err_code: str) -> None:
        self._json(
            code,
            {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": err_code}},
        )

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _event(self, payload: Body) -> None:
        self._send_chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """Hang up without finishing the HTTP body."""
        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _pieces(text: str) -> list[str]:
    """Split into word-sized deltas (1000-char slices for long texts), keeping every character."""
    if len(text) > 4000:
        return [text[i : i + 1000] for i in range(0, len(text), 1000)]
    return re.findall(r"\s*\S+|\s+", text) or [""]


def _prompt_tokens(body: Body) -> int:
    return sum(len(_text(m).split()) for m in _messages(body))


def _completion(model: str, text: str, prompt_tokens: int) -> Body:
    completion_tokens = len(text.split())
    return {
        "id": f"chatcmpl-{hashlib.sha1(text.encode()).hexdigest()[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _chunk(model: str, delta: Body, finish: str | None = None) -> Body:
    return {
        "id": "chatcmpl-stream",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _vector(text: str, dim: int) -> list[float]:
    """Deterministic unit vector from the text's hash (stable across runs)."""
    digest = hashlib.sha256(text.encode()).digest()
    raw = [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dim)]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [v / norm for v in raw]


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedLLM]:
    """A started scripted server (``.base_url``); stopped after the test."""
    server = ScriptedLLM().start()
    try:
        yield server
    finally:
        server.stop()
