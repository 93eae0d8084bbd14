"""CLI writes while the app or `serve` holds the store: forwarded to that process (issue #22).

The holder advertises a private endpoint in the lock note (a 0700 Unix socket, or the verified
TCP fallback; api/mcp_forward.py decides which notes can be trusted, the same way it does for
`desktop-mem mcp`). `add`, `edit`, `delete` and `restore` then send their one call to the
holder's memory API (`/api/memories`) and print what a direct write prints; an error comes back
as the same engine error (a likely secret as SecretDetectedError), so the exit code and the
message are those of a direct write. No bearer token is sent: the endpoint is private.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import httpx2

from desktop_mem.api.loopback import EndpointNotVerified
from desktop_mem.api.mcp_forward import Endpoint, not_verified, transport_to, writer_endpoint
from desktop_mem.engine.api import SecretDetectedError
from desktop_mem.engine.models import (
    ConflictError,
    EngineError,
    Memory,
    NotFoundError,
    ReadOnlyError,
    StoreLockedError,
    ValidationError,
)

FORWARDED = frozenset({"add", "edit", "delete", "restore"})  # the CLI writes a holder can take
TIMEOUT_S = 120.0
_ERRORS: dict[int, type[EngineError]] = {404: NotFoundError, 409: ConflictError, 400: ValidationError}


@dataclass(frozen=True)
class _Found:
    """A finding as the holder reported it (kind and masked excerpt; never the secret)."""

    kind: str
    masked: str


class RemoteWriter:
    """The few writes of the CLI, done by the process that holds the store."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    def __enter__(self) -> RemoteWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        return None

    def add(self, text: str, *, conversation_id: str, kind: str, secrets: str | None) -> Memory:
        body = {"content": text, "conversation_id": conversation_id, "type": kind, "secrets": secrets}
        return self._call("POST", "/api/memories", body)

    def edit(self, memory_id: str, *, text: str, secrets: str | None) -> Memory:
        body = {"content": text, "secrets": secrets}
        return self._call("PATCH", f"/api/memories/{_segment(memory_id)}", body)

    def delete(self, memory_id: str) -> Memory:
        return self._call("DELETE", f"/api/memories/{_segment(memory_id)}", None)

    def restore(self, memory_id: str) -> Memory:
        return self._call("POST", f"/api/memories/{_segment(memory_id)}/restore", None)

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> Memory:
        status, answer = anyio.run(self._request, method, path, body)
        if status < 300 and isinstance(answer, dict) and isinstance(answer.get("id"), str):
            return memory_from_json(answer)
        raise _error(status, answer, self.endpoint)

    async def _request(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        try:
            base, transport = transport_to(self.endpoint)
            async with httpx2.AsyncClient(transport=transport, timeout=TIMEOUT_S) as http:
                response = await http.request(method, f"{base}{path}", json=body)
        except EndpointNotVerified as exc:
            raise EngineError(not_verified(self.endpoint, exc)) from None
        except httpx2.TransportError as exc:
            raise EngineError(f"the desktop-mem process holding the store ({self.endpoint}) does not "
                              f"answer ({type(exc).__name__}); nothing was changed by this command. "
                              "Try again in a moment.") from None
        try:
            return response.status_code, response.json()
        except ValueError:
            return response.status_code, {"error": {"message": response.text[:200]}}


def remote_writer(root: Path, command: str) -> RemoteWriter | None:
    """A writer forwarding to the store's holder, when `command` can be forwarded and the holder
    advertises an endpoint that cannot be impersonated; else None."""
    if command not in FORWARDED:
        return None
    endpoint = writer_endpoint(root)
    return RemoteWriter(endpoint) if endpoint is not None else None


def _segment(memory_id: str) -> str:
    """A memory id as one URL path segment (ids are checked by the holder; '/' cannot pass)."""
    from urllib.parse import quote

    return quote(memory_id, safe="")


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
        id=str(data["id"]), role=str(data.get("role")), conversation_id=str(data.get("conversation_id")),
        text=str(data.get("text")), created_at=when("created_at") or datetime.min, path=str(data.get("path")),
        kind=data.get("kind"), source=data.get("source"), updated_at=when("updated_at"),
        deleted_at=when("deleted_at"), expires_at=when("expires_at"), replaced_by=data.get("replaced_by"),
        summary_kind=data.get("summary_kind"), summarized_count=data.get("summarized_count"),
        valid_from=data.get("valid_from"), valid_to=data.get("valid_to"),
        extra={"client": client} if isinstance(client, str) else {},
        content_hash=str(data.get("content_hash") or ""),
    )
