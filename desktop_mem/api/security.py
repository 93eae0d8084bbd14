"""Who may talk to `desktop-mem serve`: loopback by default, a bearer token for anything else,
no cross-origin browser requests, and a request size limit, checked before any route runs."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from typing import Any

from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from desktop_mem.api.loopback import is_loopback, is_private_connection
from desktop_mem.engine.models import ValidationError

ErrorBody = Callable[[int, str, str | None, str], dict[str, Any]]


# host[:port] as RFC 9110 allows it: a name or IPv4 address, or an [IPv6] literal, and digits
# for the port. Anything more ("127.0.0.1:80@evil.com", spaces, paths) is not a loopback name.
_HOST_PORT = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[A-Za-z0-9._-]+))(?::\d{1,5})?")


def _host_of(value: str) -> str:
    """The host part of a Host header or an Origin URL; '' when it is not a plain host[:port]."""
    scheme, sep, rest = value.partition("://")
    if sep and not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        return ""
    match = _HOST_PORT.fullmatch(rest if sep else value)
    if match is None:
        return ""
    return match.group("v6") or match.group("name")


class Guard:
    """Bearer token, browser cross-origin refusal and the request size limit, before any route."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int, error_body: ErrorBody) -> None:
        self.app, self.token, self.max_body, self._error_body = app, token, max_body, error_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refused = self._refusal(headers, private=is_private_connection(scope))
        if refused is not None:
            status, message, extra = refused
            await JSONResponse(self._error_body(status, message, None, "invalid_request_error"),
                               status_code=status, headers=extra)(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body:  # chunked uploads have no Content-Length to check first
                raise HTTPException(413, self._too_large())
            return message

        await self.app(scope, limited, send)

    def _refusal(self, headers: Headers, *, private: bool = False) -> tuple[int, str, dict[str, str]] | None:
        # `private`: over our 0700 Unix socket, only this OS user can be talking to us: the token
        # guards the TCP port (the one a forwarder never uses where the OS has such sockets).
        if self.token is not None and not private:
            given = headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            valid = hmac.compare_digest(value.strip().encode(), self.token.encode())
            if scheme.lower() != "bearer" or not valid:
                return (401, "missing or wrong bearer token: send 'Authorization: Bearer <token>' "
                        "(the token is server.token / DESKTOP_MEM_TOKEN)", {"WWW-Authenticate": "Bearer"})
        else:
            # Without a token only local clients may talk to us; a web page that rebinds its DNS
            # name to 127.0.0.1, or posts cross-origin, must not read or change memories.
            host = headers.get("host", "127.0.0.1")
            if not is_loopback(_host_of(host)):
                return 403, f"Host {host!r} is not a loopback name; set a token to serve other hosts", {}
            origin = headers.get("origin")
            if origin and origin != "null" and not is_loopback(_host_of(origin)):
                return 403, f"cross-origin request from {origin!r} refused", {}
            if origin == "null":
                return 403, "cross-origin request from an opaque origin refused", {}
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            return 413, self._too_large(), {}
        return None

    def _too_large(self) -> str:
        return f"request body larger than {self.max_body} bytes; send less (e.g. fewer or shorter messages)"



def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve beyond loopback without a bearer token."""
    if not is_loopback(host) and not token:
        raise ValidationError(
            f"refusing to serve on {host!r} without a token: anyone on the network could read your "
            "memories. Set --token (or DESKTOP_MEM_TOKEN / server.token), or bind 127.0.0.1."
        )
