"""`desktop-mem serve`: an OpenAI-compatible chat endpoint with memory, plus sessions and memory APIs.

A thin FastAPI front end over MemoryEngine: every route turns HTTP into one engine call. Blocking
engine work runs in worker threads so the event loop only shuttles bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from desktop_mem import __version__
from desktop_mem.api.loopback import (
    handshake_protocol,
    has_unix_sockets,
    private_server_class,
    private_socket,
    remove_private,
    remove_private_socket,
    server_token,
    verified_listener,
)
from desktop_mem.api.security import Guard, check_bind
from desktop_mem.api.stop_signals import stop_signals_exit
from desktop_mem.engine.api import (
    STRATEGY_NAMES,
    ChatReply,
    LLMError,
    MemoryEngine,
    MemoryUsed,
    RetrievalOverrides,
    SecretDetectedError,
    parse_as_of,
    project_scope,
    validate_conversation_id,
)
from desktop_mem.engine.config import Config
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    KINDS,
    TURN_ROLES,
    ConflictError,
    EngineError,
    NotFoundError,
    ReadOnlyError,
    Role,
    StoreLockedError,
    ValidationError,
    disk_problem,
)
from desktop_mem.engine.schema import MemoryJSON, MemoryQuery, SearchRequest, memory_json, search_hit_json

MAX_BODY_BYTES = 1_000_000
_LLM_STATUS = {"auth": 401, "timeout": 504, "rate_limited": 429, "model_missing": 404}
_ENGINE_STATUS: tuple[tuple[type[Exception], int], ...] = (
    (NotFoundError, 404), (ConflictError, 409), (ReadOnlyError, 409), (StoreLockedError, 409),
    (ValidationError, 400), (ValueError, 400), (EngineError, 400),
)


class ChatMessage(BaseModel):
    """One OpenAI chat message (content as text or content parts)."""

    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatRequest(BaseModel):
    """An OpenAI chat completion request; unknown fields (temperature, tools ...) are accepted."""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    memory_id: str | None = None
    conversation_id: str | None = None
    strategy: str | None = None
    temporary: bool = False  # a temporary chat: read memory, store nothing (also X-Memory-Temporary)
    # agent-cli's memory proxy fields: the read path's knobs for this request only.
    memory_top_k: int | None = Field(default=None, ge=1, le=100)
    memory_recency_weight: float | None = Field(default=None, ge=0, le=1)
    memory_score_threshold: float | None = Field(default=None, ge=0, le=1)


class NewMemory(BaseModel):
    """Body of POST /api/memories."""

    model_config = ConfigDict(extra="forbid")
    content: str
    type: str = "fact"
    conversation_id: str = GLOBAL_CONVERSATION
    project: str | None = None  # a project's name or scope: the memory goes there instead
    expires_at: datetime | None = None
    secrets: Literal["keep", "redact"] | None = None  # the user's choice for a likely secret


class BatchItem(BaseModel):
    """One memory of POST /api/memories/batch."""

    model_config = ConfigDict(extra="forbid")
    content: str
    type: str = "fact"


class NewMemories(BaseModel):
    """Body of POST /api/memories/batch: several memories of one conversation, all or nothing."""

    model_config = ConfigDict(extra="forbid")
    memories: list[BatchItem] = Field(min_length=1, max_length=1000)
    conversation_id: str = GLOBAL_CONVERSATION
    secrets: Literal["keep", "redact"] | None = None


class MemoryChange(BaseModel):
    """Body of PATCH /api/memories/{id}: the memory's new text."""

    model_config = ConfigDict(extra="forbid")
    content: str
    secrets: Literal["keep", "redact"] | None = None
    # the `content_hash` of the memory this change was based on: a file that holds other content
    # now answers 409 naming what changed; without it, a change made outside the app since is
    # committed first and this one applied on top (issue #34)
    expected_hash: str | None = Field(default=None, max_length=128)


class CapturedMessages(BaseModel):
    """Body of POST /api/agent-capture: a coding session's user messages (api/agent_capture.py)."""

    model_config = ConfigDict(extra="forbid")
    agent: str
    project: str
    messages: list[str] = Field(max_length=20)


class MemoryToolCall(BaseModel):
    """Body of POST /api/claude-memory: one memory-tool input as the model sent it."""

    model_config = ConfigDict(extra="forbid")
    command: dict[str, Any]


# ------------------------------------------------------------------------------------- app


def create_app(engine: MemoryEngine, token: str | None) -> FastAPI:
    """The HTTP app over an open engine; with `token`, every request needs `Bearer <token>`.

    `/mcp` serves the MCP tools (streamable HTTP); it needs the app's lifespan to run.
    """
    from starlette.routing import Route

    from desktop_mem.api.mcp_lazy import LazyMCP

    mcp = LazyMCP(engine, _error_body)  # the MCP server starts on the first /mcp request (mcp_lazy.py)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        async with mcp.running():
            yield

    app = FastAPI(title="desktop-mem", version=__version__, docs_url=None, redoc_url=None, openapi_url=None,
                  lifespan=lifespan)
    app.state.mcp = mcp
    app.router.routes.append(Route("/mcp", endpoint=mcp))
    app.add_middleware(Guard, token=token or None, max_body=MAX_BODY_BYTES, error_body=_error_body)
    _install_error_handlers(app)
    model_name = str(engine.config["llm.model"])

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        # The listing's total: kept until the store changes (a copy of all 100k per call was
        # ~0.1 s of CPU for a health probe, issue #25).
        return {"status": "ok", "version": __version__, "memories": engine.list_page(0, 0).total}

    @app.get("/health")
    def health() -> dict[str, str]:
        # agent-cli's memory proxy answers GET /health with these keys (all strings).
        return {"status": "ok", "memory_store": str(engine.root),
                "openai_base_url": str(engine.config["llm.base_url"]),
                "default_top_k": str(engine.config["retrieval.top_k"]), "version": __version__}

    @app.get("/v1/models")
    def models() -> dict[str, Any]:
        ids = engine.llm_models()
        return {"object": "list",
                "data": [{"id": i, "object": "model", "created": 0, "owned_by": "upstream"} for i in ids]}

    @app.post("/v1/chat/completions", response_model=None)
    async def chat_completions(
        body: ChatRequest,
        request: Request,
        x_memory_id: str | None = Header(default=None),
        x_conversation_id: str | None = Header(default=None),
        x_memory_temporary: str | None = Header(default=None),
    ) -> JSONResponse | StreamingResponse:
        conv = validate_conversation_id(
            body.memory_id or body.conversation_id or x_memory_id or x_conversation_id or "default"
        )
        if body.strategy is not None and body.strategy not in STRATEGY_NAMES:
            raise ValidationError(f"Unknown context strategy {body.strategy!r}; choose one of "
                                  f"{', '.join(STRATEGY_NAMES)}.")
        message, history = split_messages(body.messages)
        retrieval = {"top_k": body.memory_top_k, "recency_weight": body.memory_recency_weight,
                     "score_threshold": body.memory_score_threshold}
        temporary = body.temporary or _header_flag("X-Memory-Temporary", x_memory_temporary)
        turn = _Turn(engine, conv, message, history, body.strategy, body.model or model_name, retrieval,
                     temporary)
        if body.stream:
            return turn.stream()
        reply = await run_in_threadpool(turn.run)
        return turn.completion(reply)

    @app.get("/api/chat/sessions")
    def sessions() -> dict[str, Any]:
        return {"sessions": [_session(engine, c) for c in engine.conversations()]}

    @app.get("/api/chat/sessions/{conversation_id}")
    def session(conversation_id: str) -> dict[str, Any]:
        validate_conversation_id(conversation_id)
        if conversation_id not in engine.conversations():
            raise NotFoundError(f"no conversation {conversation_id!r}; GET /api/chat/sessions lists them")
        return {**_session(engine, conversation_id), "messages": engine.messages(conversation_id)}

    @app.get("/api/memories")
    def list_memories(
        type: str | None = None,  # noqa: A002 - the API's parameter name
        conversation: str | None = None,
        search: str | None = None,
        limit: int = Query(50, ge=1, le=1000),
        offset: int = Query(0, ge=0),
        deleted: bool = False,
        as_of: str | None = None,
    ) -> dict[str, Any]:
        # No type: facts and summaries, not turns; newest first (engine/schema.py: one query for all).
        query = MemoryQuery.of_type(type, conversation_id=conversation, include_deleted=deleted,
                                    contains=search, limit=limit, offset=offset)
        if as_of is not None:  # what was live then (validity + history): 400 for a bad date
            moment = parse_as_of(as_of)
            page = query.page(query.select(engine.list_as_of(moment, **query.filters())))
        else:
            page = query.run(engine)
        return {"object": "list", "data": [memory_json(m) for m in page.items], "total": page.total,
                "limit": limit, "offset": offset, "has_more": page.has_more}

    @app.get("/api/search")
    def search(
        q: str = Query(min_length=1, max_length=4000),
        conversation: str | None = None,
        top_k: int | None = Query(None, ge=1, le=100),
        deleted: bool = False,
        project: str | None = None,
    ) -> dict[str, Any]:
        # The read path as a chat turn runs it, cross-encoder included, with each hit's scores:
        # `desktop-mem search` asks the process that holds the store (cli/forward.py), whose
        # index is warm and up to date, instead of loading a second copy of it.
        scope = project_scope(project) if project else None  # a project's name or scope
        results = SearchRequest(q, conversation, top_k, deleted, scope).run(engine)
        return {"object": "list", "query": q,
                "data": [search_hit_json(r, nested_memory=True) for r in results]}

    @app.post("/api/memories", status_code=201)
    def add_memory(body: NewMemory) -> MemoryJSON:
        if body.type not in KINDS:
            raise ValidationError(f"type {body.type!r} is not one of {', '.join(KINDS)}")
        expires = body.expires_at
        if expires is not None:
            expires = expires if expires.tzinfo else expires.replace(tzinfo=UTC)
            if expires <= datetime.now(UTC):
                raise ValidationError(f"expires_at {expires.isoformat()} is in the past")
        if body.project and body.conversation_id != GLOBAL_CONVERSATION:
            raise ValidationError("give conversation_id or project, not both: a memory has one scope")
        scope = project_scope(body.project) if body.project else body.conversation_id
        memory = engine.add(body.content, conversation_id=scope, kind=body.type, expires_at=expires,
                            secrets=body.secrets)
        return memory_json(memory)

    @app.post("/api/memories/batch", status_code=201)
    def add_memories(body: NewMemories) -> dict[str, Any]:
        # One commit or nothing (MemoryEngine.add_many): every item is checked before any is
        # written, and an error names the item and says that nothing was saved (#22).
        n = len(body.memories)
        for i, item in enumerate(body.memories, 1):
            if item.type not in KINDS:
                raise ValidationError(f"nothing was saved: item {i} of {n}: type {item.type!r} is not "
                                      f"one of {', '.join(KINDS)}")
        stored = engine.add_many([m.content for m in body.memories], conversation_id=body.conversation_id,
                                 kinds=[m.type for m in body.memories], secrets=body.secrets)
        return {"object": "list", "data": [memory_json(m) for m in stored]}

    @app.get("/api/memories/{memory_id}")
    def get_memory(memory_id: str) -> MemoryJSON:
        return memory_json(engine.get(memory_id))

    @app.patch("/api/memories/{memory_id}")
    def edit_memory(memory_id: str, body: MemoryChange) -> MemoryJSON:
        return memory_json(engine.edit(memory_id, text=body.content, secrets=body.secrets,
                                       expected_hash=body.expected_hash))

    @app.post("/api/memories/{memory_id}/restore")
    def restore_memory(memory_id: str,
                       expected_hash: str | None = Query(None, max_length=128)) -> MemoryJSON:
        return memory_json(engine.restore(memory_id, expected_hash=expected_hash))

    @app.post("/api/agent-capture")
    def agent_capture(body: CapturedMessages) -> dict[str, Any]:
        # a coding agent's hook, delivered here because this process holds the store
        from desktop_mem.api.agent_capture import remember

        return remember(engine, body.messages, project=body.project, agent=body.agent)

    @app.post("/api/claude-memory")
    def claude_memory_command(body: MemoryToolCall) -> dict[str, Any]:
        # Claude's memory tool on this store (integrations/claude_memory.py): a `run_command`
        # from another process, forwarded here because this process holds the store
        from desktop_mem.integrations.claude_memory import MemoryView, ToolError

        try:
            return {"result": MemoryView(engine).run(body.command)}
        except ToolError as exc:
            return {"result": f"Error: {exc}"}

    @app.delete("/api/memories/{memory_id}")
    def delete_memory(memory_id: str,
                      expected_hash: str | None = Query(None, max_length=128)) -> MemoryJSON:
        current = engine.get(memory_id)
        if current.deleted:  # the engine's words (a CLI delete forwarded here prints them)
            raise ConflictError(f"memory {current.id} is already deleted")
        return memory_json(engine.delete(memory_id, expected_hash=expected_hash))

    return app


def split_messages(messages: list[ChatMessage]) -> tuple[str, list[dict[str, Any]] | None]:
    """The new user turn and the client's earlier transcript.

    A client that sends only the new message gets the stored transcript (None): the server is
    the memory. System messages are left out; the engine builds its own system prompt.
    """
    last = messages[-1]
    text = _text(last.content)
    if last.role != Role.USER:
        raise ValidationError(f"the last message must be a user message, not {last.role!r}")
    if not text.strip():
        raise ValidationError("the last user message is empty")
    earlier = [{"role": m.role, "content": _text(m.content)} for m in messages[:-1] if m.role != "system"]
    return text, earlier or None


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if p.get("type", "text") == "text")
    return content or ""


def _header_flag(name: str, value: str | None) -> bool:
    """A yes/no request header: absent is no; anything but a clear yes or no is refused."""
    if value is None:
        return False
    word = value.strip().lower()
    if word in ("1", "true", "yes", "on"):
        return True
    if word in ("", "0", "false", "no", "off"):
        return False
    raise ValidationError(f"header {name} must be true or false, got {value[:40]!r}")


class _Turn:
    """One chat completion request: runs the engine turn and renders it as OpenAI JSON or SSE."""

    def __init__(self, engine: MemoryEngine, conv: str, message: str,
                 history: list[dict[str, Any]] | None, strategy: str | None, model: str,
                 retrieval: RetrievalOverrides | None = None, temporary: bool = False) -> None:
        self.engine, self.conv, self.message, self.history = engine, conv, message, history
        self.strategy, self.model, self.retrieval = strategy, model, retrieval
        self.temporary = temporary
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())

    def run(self, on_token: Callable[[str], None] | None = None,
            on_used: Callable[[MemoryUsed], None] | None = None,
            cancel: threading.Event | None = None) -> ChatReply:
        return self.engine.chat(self.conv, self.message, strategy=self.strategy, on_token=on_token,
                                on_used=on_used, cancel=cancel, history=self.history,
                                retrieval=self.retrieval, temporary=self.temporary)

    def completion(self, reply: ChatReply) -> JSONResponse:
        if reply.error:
            return llm_error_response(reply.error_kind, reply.error)
        prompt = reply.used.tokens_after
        done = self.engine.count_tokens(reply.text)
        return JSONResponse({
            "id": self.id, "object": "chat.completion", "created": self.created, "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": done, "total_tokens": prompt + done},
            "x_memory": x_memory(reply.used),
        })

    def stream(self) -> StreamingResponse:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        cancel = threading.Event()

        def put(kind: str, value: Any) -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

        def work() -> None:
            try:
                put("done", self.run(lambda t: put("token", t), lambda u: put("used", u), cancel))
            except Exception as exc:  # reported to the client as an error event
                put("raised", exc)

        threading.Thread(target=work, name=f"chat-{self.conv}", daemon=True).start()
        return StreamingResponse(self._events(queue, cancel), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})

    async def _events(
        self, queue: asyncio.Queue[tuple[str, Any]], cancel: threading.Event
    ) -> AsyncIterator[str]:
        try:
            while True:
                kind, value = await queue.get()
                if kind == "used":
                    yield _sse(self._chunk({"role": "assistant", "content": ""}, x_memory=x_memory(value)))
                elif kind == "token":
                    yield _sse(self._chunk({"content": value}))
                elif kind == "raised":
                    status, err = _error_of(value)
                    yield _sse({"error": {**err, "status": status}})
                    break
                else:
                    if value.error:
                        yield _sse({"error": {"message": value.error, "type": "upstream_error",
                                              "code": value.error_kind, "param": None}})
                    else:
                        yield _sse(self._chunk({}, finish="stop"))
                    break
            yield "data: [DONE]\n\n"
        finally:
            cancel.set()  # the client went away (or we finished): stop generating

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model, "choices": [choice], **extra}


def _sse(payload: Mapping[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"


def x_memory(used: MemoryUsed) -> dict[str, Any]:
    """The `x_memory` extension: what memory the turn was given (ignored by OpenAI clients)."""
    return {
        "conversation_id": used.conversation_id, "strategy": used.strategy,
        "tokens_before": used.tokens_before, "tokens_after": used.tokens_after,
        "tokens_freed": used.tokens_freed, "summary": used.summary.text if used.summary else None,
        "memories": [{"id": r.memory.id, "text": r.memory.text, "score": round(r.scores.final, 4),
                      "kind": r.memory.kind, "conversation_id": r.memory.conversation_id}
                     for r in used.memories],
    }


# ---------------------------------------------------------------------------- sessions, memories


def _session(engine: MemoryEngine, conv: str) -> dict[str, Any]:
    items = engine.list_memories(conversation_id=conv)
    summary = engine.summary(conv)
    updated = max((m.updated_at or m.created_at for m in items), default=None)
    return {
        "id": conv, "title": engine.conversation_title(conv),
        "summary": summary.text if summary else None,
        "summarizedCount": (summary.summarized_count or 0) if summary else 0,
        "messageCount": sum(1 for m in items if m.role in TURN_ROLES),
        "updatedAt": updated.isoformat() if updated else None,
    }


# ------------------------------------------------------------------------------------ errors


def _error_body(status: int, message: str, code: str | None, type_: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "code": code or str(status), "param": None}}


def llm_error_response(kind: str | None, message: str) -> JSONResponse:
    """An upstream failure as OpenAI error JSON; the turn is stored, so clients must not retry it."""
    status = _LLM_STATUS.get(kind or "", 502)
    return JSONResponse(_error_body(status, message, kind, "upstream_error"), status_code=status,
                        headers={"x-should-retry": "false"})


def _error_of(exc: Exception) -> tuple[int, dict[str, Any]]:
    if isinstance(exc, LLMError):
        status = _LLM_STATUS.get(exc.kind, 502)
        return status, _error_body(status, exc.message, exc.kind, "upstream_error")["error"]
    status = next((s for t, s in _ENGINE_STATUS if isinstance(exc, t)), 500)
    problem = disk_problem(exc) if status >= 500 or isinstance(exc, OSError) else None
    if problem is not None:  # a full disk (507) or a store that cannot be written (503): one line
        status = 507 if "full" in problem else 503
        message = problem
    else:
        message = str(exc) if status != 500 else f"internal error: {type(exc).__name__}: {_no_paths(exc)}"
    error = _error_body(status, message, None, "invalid_request_error" if status < 500 else "server_error")
    if isinstance(exc, SecretDetectedError):  # what was found (masked): the client can ask its user
        error["error"].update(code="secret_detected",
                              findings=[{"kind": f.kind, "masked": f.masked} for f in exc.findings])
    return status, error["error"]


def _no_paths(exc: Exception) -> str:
    """An unexpected error's words without the file names an OSError carries (no absolute path
    of the user's disk goes to a client)."""
    if isinstance(exc, OSError):
        return exc.strerror or "an operating-system error"
    return str(exc)


def _install_error_handlers(app: FastAPI) -> None:
    async def on_exception(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, LLMError):
            return llm_error_response(exc.kind, exc.message)
        status, err = _error_of(exc)
        return JSONResponse({"error": err}, status_code=status)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        message = exc.detail if exc.status_code != 404 else f"no route {request.method} {request.url.path}"
        return JSONResponse(_error_body(exc.status_code, str(message), None, "invalid_request_error"),
                            status_code=exc.status_code, headers=exc.headers)

    async def on_invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        parts = [f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body')}: {e.get('msg')}"
                 for e in exc.errors()]
        message = "invalid request: " + "; ".join(parts[:5])
        return JSONResponse(_error_body(400, message, "invalid_request", "invalid_request_error"),
                            status_code=400)

    for kind in (LLMError, EngineError, ValueError, Exception):
        app.add_exception_handler(kind, on_exception)
    app.add_exception_handler(HTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_invalid)


def serve(
    config: Config, host: str | None = None, port: int | None = None, *, token: str | None = None,
    no_token: bool = False,
) -> None:
    """Open the store once, index it, watch it, and serve until Ctrl-C (one worker).

    A bearer token is required by default (server.token, generated the first time: another local
    user must not read the memories); `no_token` opts out, on loopback only (#22)."""
    import uvicorn

    host = host or str(config["server.host"])
    port = port or int(config["server.port"])
    token = None if no_token else (token or server_token(config))
    check_bind(host, token)
    # SIGTERM (systemd, `kill`, docker stop) and SIGHUP: uvicorn stops gracefully, then raises the
    # signal again, which becomes SystemExit here: the finally below finishes the queued write
    # paths and releases the store lock (the default action killed the process before it)
    with stop_signals_exit():
        engine = MemoryEngine.open(config)
        endpoint: str | None = None
        key_note: str | None = None
        try:
            engine.open_index()
            engine.hold_chat_scope()  # the first chat's search does not wait for the global facts
            if config["watcher.enabled"] and hasattr(engine, "start_watcher"):
                engine.start_watcher()
            # `desktop-mem mcp` and CLI writes forward over a private socket, never the public port;
            # without Unix sockets, over a second 127.0.0.1 port behind the run secret's handshake
            note: dict[str, str] = {}
            http: Any = "auto"
            if has_unix_sockets():
                private, endpoint = private_socket()
            else:
                private, key, key_note, endpoint = verified_listener()
                note["endpoint_key"] = key_note
                http = handshake_protocol(key, private.getsockname()[1])
            settings = uvicorn.Config(create_app(engine, token), host=host, port=port, workers=1,
                                      log_level="info", lifespan="on", http=http)
            print(f"desktop-mem: serving {engine.root} on http://{host}:{port}/v1 (MCP: /mcp)"
                  f"{' (bearer token required)' if token else ' (no token: any local user can connect)'}",
                  flush=True)
            if token:  # the user's own terminal: what to give an OpenAI client as its api_key
                print(f"desktop-mem: bearer token (api_key for OpenAI clients; server.token in "
                      f"{config.file or 'the settings'}): {token}", flush=True)
            sockets = [settings.bind_socket(), private]
            server = private_server_class()(settings)  # leaves the lock note before the port closes
            server.engine, server.private_endpoint, server.key_note = engine, endpoint, key_note
            engine.publish_endpoint(endpoint, **note)
            server.run(sockets=sockets)
        finally:
            remove_private_socket(endpoint)
            remove_private(key_note)
            engine.close()  # finishes the queued write paths, releases the store lock
