"""CLI writes while the app or `serve` holds the store: forwarded to that process (issue #22).

The holder advertises a private endpoint in the lock note (a 0700 Unix socket, or the verified
TCP fallback; api/mcp_forward.py decides which notes can be trusted, the same way it does for
`desktop-mem mcp`). `add`, `edit`, `delete` and `restore` then send their one call to the
holder's memory API (`/api/memories`) and print what a direct write prints; an error comes back
as the same engine error (a likely secret as SecretDetectedError), so the exit code and the
message are those of a direct write. No bearer token is sent: the endpoint is private.

`search` and `show` are asked of the holder too (issue #25): its index and catalog are warm and
up to date, where a second process would load them again (4-6 s and ~500 MB at 100,000
memories) and search an index another process is writing. When the holder cannot be verified
or does not answer, nothing is sent and the command reads the store itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlencode

import anyio
import httpx2

from desktop_mem.api.holder_endpoint import Endpoint, not_verified, transport_to, writer_endpoint
from desktop_mem.api.loopback import EndpointNotVerified
from desktop_mem.engine.api import ScoreBreakdown, SecretDetectedError
from desktop_mem.engine.models import (
    ConflictError,
    EngineError,
    Memory,
    NotFoundError,
    ReadOnlyError,
    Role,
    StoreLockedError,
    ValidationError,
)
from desktop_mem.engine.schema import SearchRequest

FORWARDED = frozenset({"add", "edit", "delete", "restore"})  # the CLI writes a holder can take
TIMEOUT_S = 120.0
READ_TIMEOUT_S = 30.0  # a holder that does not answer a read by then: the command reads the store itself
_ERRORS: dict[int, type[EngineError]] = {404: NotFoundError, 409: ConflictError, 400: ValidationError}


@dataclass(frozen=True)
class _Found:
    """A finding as the holder reported it (kind and masked excerpt; never the secret)."""

    kind: str
    masked: str


class _Holder:
    """Calls to the memory API of the process that holds the store."""

    timeout_s = TIMEOUT_S

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    def _answer(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        status, answer = anyio.run(self._request, method, path, body)
        if status >= 300:
            raise _error(status, answer, self.endpoint)
        return answer

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> Memory:
        answer = self._answer(method, path, body)
        if isinstance(answer, dict) and isinstance(answer.get("id"), str):
            try:
                return memory_from_json(answer)
            except ValueError:  # an unknown role, a date that is none: not a memory
                raise _error(502, answer, self.endpoint) from None
        raise _error(502, answer, self.endpoint)

    async def _request(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        try:
            base, transport = transport_to(self.endpoint)
            async with httpx2.AsyncClient(transport=transport, timeout=self.timeout_s) as http:
                response = await http.request(method, f"{base}{path}", json=body)
        except EndpointNotVerified as exc:
            raise NotAnswered(not_verified(self.endpoint, exc)) from None
        except httpx2.TransportError as exc:
            raise NotAnswered(f"the desktop-mem process holding the store ({self.endpoint}) does not "
                              f"answer ({type(exc).__name__}); nothing was changed by this command. "
                              "Try again in a moment.") from None
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, {"error": {"message": response.text[:200]}}


class NotAnswered(EngineError):
    """Nothing reached the holder (it could not be verified, or did not answer)."""


class RemoteWriter(_Holder):
    """The few writes of the CLI, done by the process that holds the store."""

    def add(self, text: str, *, conversation_id: str, kind: str, secrets: str | None) -> Memory:
        body = {"content": text, "conversation_id": conversation_id, "type": kind, "secrets": secrets}
        return self._call("POST", "/api/memories", body)

    def edit(self, memory_id: str, *, text: str, secrets: str | None,
             expected_hash: str | None = None) -> Memory:
        body = {"content": text, "secrets": secrets, "expected_hash": expected_hash}
        return self._call("PATCH", f"/api/memories/{_segment(memory_id)}", body)

    def delete(self, memory_id: str, *, expected_hash: str | None = None) -> Memory:
        return self._call("DELETE", f"/api/memories/{_segment(memory_id)}{_if_hash(expected_hash)}", None)

    def restore(self, memory_id: str, *, expected_hash: str | None = None) -> Memory:
        path = f"/api/memories/{_segment(memory_id)}/restore{_if_hash(expected_hash)}"
        return self._call("POST", path, None)


class RemoteMemoryTool(_Holder):
    """Claude memory-tool commands (integrations/claude_memory.py), run by the holder."""

    def run(self, command: dict[str, Any]) -> str:
        answer = self._answer("POST", "/api/claude-memory", {"command": command})
        result = answer.get("result") if isinstance(answer, dict) else None
        if isinstance(result, str):
            return result
        raise _error(502, answer, self.endpoint)


class RemoteCapture(_Holder):
    """A coding agent's captured messages (api/agent_capture.py), stored by the holder."""

    def remember(self, messages: list[str], *, project: str, agent: str) -> dict[str, Any]:
        answer = self._answer("POST", "/api/agent-capture",
                              {"messages": messages, "project": project, "agent": agent})
        if isinstance(answer, dict):
            return answer
        raise _error(502, answer, self.endpoint)


def remote_capture(root: Path) -> RemoteCapture | None:
    """The holder of the store at `root`, when it advertises a private endpoint; else None."""
    endpoint = writer_endpoint(root)
    return RemoteCapture(endpoint) if endpoint is not None else None


def remote_memory_tool(root: Path) -> RemoteMemoryTool | None:
    """The holder of the store at `root`, when it advertises a private endpoint; else None."""
    endpoint = writer_endpoint(root)
    return RemoteMemoryTool(endpoint) if endpoint is not None else None


@dataclass(frozen=True)
class Hit:
    """A search result as the holder ranked it (what `desktop-mem search` prints)."""

    memory: Memory
    scores: ScoreBreakdown


class RemoteReader(_Holder):
    """`search` and `show`, answered by the process that holds the store."""

    timeout_s = READ_TIMEOUT_S

    def search(self, request: SearchRequest) -> list[Hit]:
        """`request` run by the holder (REST /api/search: the read path with the cross-encoder)."""
        deleted = "true" if request.include_deleted else "false"
        params: dict[str, Any] = {"q": request.query, "deleted": deleted}
        if request.conversation_id is not None:
            params["conversation"] = request.conversation_id
        if request.project is not None:
            params["project"] = request.project
        if request.top_k is not None:
            params["top_k"] = request.top_k
        answer = self._answer("GET", f"/api/search?{urlencode(params)}", None)
        try:
            # schema.SearchHitJSON (the memory under `memory` too; a server before it had only that)
            return [Hit(memory_from_json(h.get("memory", h)), ScoreBreakdown(**h["scores"]))
                    for h in answer["data"]]
        except (KeyError, TypeError, ValueError):
            raise _error(502, answer, self.endpoint) from None

    def get(self, memory_id: str) -> Memory:
        return self._call("GET", f"/api/memories/{_segment(memory_id)}", None)


def remote_writer(root: Path, command: str) -> RemoteWriter | None:
    """A writer forwarding to the store's holder, when `command` can be forwarded and the holder
    advertises an endpoint that cannot be impersonated; else None."""
    if command not in FORWARDED:
        return None
    endpoint = writer_endpoint(root)
    return RemoteWriter(endpoint) if endpoint is not None else None


def remote_reader(root: Path) -> RemoteReader | None:
    """A reader asking the store's holder, when it advertises an endpoint that cannot be
    impersonated; else None (the command reads the store itself)."""
    endpoint = writer_endpoint(root)
    return RemoteReader(endpoint) if endpoint is not None else None


def _segment(memory_id: str) -> str:
    """A memory id as one URL path segment (ids are checked by the holder; '/' cannot pass)."""
    from urllib.parse import quote

    return quote(memory_id, safe="")


def _if_hash(expected_hash: str | None) -> str:
    return f"?{urlencode({'expected_hash': expected_hash})}" if expected_hash else ""


def _error(status: int, answer: Any, endpoint: Endpoint) -> EngineError:
    error = answer.get("error") if isinstance(answer, dict) else None
    error = error if isinstance(error, dict) else {}
    message = str(error.get("message") or f"the desktop-mem process at {endpoint} answered HTTP {status}")
    if error.get("code") == "secret_detected":
        found = tuple(_Found(str(f.get("kind")), str(f.get("masked")))
                      for f in error.get("findings") or [] if isinstance(f, dict))
        return SecretDetectedError(found)  # type: ignore[arg-type]  # kind and masked: all it shows
    if status == 409 and "cannot be written" in message:
        return ReadOnlyError(message)
    if status == 409 and "open for writing" in message:
        return StoreLockedError(message)
    return _ERRORS.get(status, EngineError)(message)


def memory_from_json(data: dict[str, Any]) -> Memory:
    """The Memory a holder answered with (`memory_json`'s shape): what a direct write returns."""
    def when(key: str) -> datetime | None:
        value = data.get(key)
        return datetime.fromisoformat(value) if isinstance(value, str) else None

    client = data.get("client")
    return Memory(
        id=str(data["id"]), role=Role(str(data.get("role"))),
        conversation_id=str(data.get("conversation_id")), text=str(data.get("text")),
        created_at=when("created_at") or datetime.min, path=str(data.get("path")),
        kind=data.get("kind"), source=data.get("source"), updated_at=when("updated_at"),
        deleted_at=when("deleted_at"), expires_at=when("expires_at"), replaced_by=data.get("replaced_by"),
        summary_kind=data.get("summary_kind"), summarized_count=data.get("summarized_count"),
        valid_from=data.get("valid_from"), valid_to=data.get("valid_to"),
        extra={"client": client} if isinstance(client, str) else {},
        content_hash=str(data.get("content_hash") or ""),
    )
