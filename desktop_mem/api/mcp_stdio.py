"""`desktop-mem mcp` over stdio: serve until the client closes stdin or a stop signal comes, then
close the session's engines and exit normally, so atexit runs (it removes a read-only store's
scratch index copy, hundreds of MB at 100k memories).

An MCP client ends its server by closing stdin, waiting ~2 s, then SIGTERM, then SIGKILL (the
SDK's stdio client). Three things kept that from being a clean exit:
- the store watch waits in a thread that a cancel cannot interrupt, up to its 5 s timeout: a
  session whose stdin closed outlived the 2 s (now the watch gets a stop event);
- SIGTERM's default action kills at once (now it stops the session as a closed stdin does);
- the SDK reads stdin in an anyio worker thread, which a cancel waits for and interpreter exit
  joins: a session told to stop while its client kept stdin open (`kill`, a logout) never
  ended (now stdin is read on a daemon thread, left to the exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer

from desktop_mem.api.mcp_backends import StdioBackend
from desktop_mem.api.mcp_changes import ChangeFeed, watch_store
from desktop_mem.api.mcp_server import build_server
from desktop_mem.api.stop_signals import STOP_SIGNALS, stop_signals_exit
from desktop_mem.engine import bounded_json
from desktop_mem.engine.config import Config

# One client message, measured before the SDK parses it: a line nested 100,000 deep was never
# answered (the client waited for ever), and a line had no length limit at all.
MESSAGE_LIMITS = bounded_json.JSONLimits(max_chars=16_000_000, max_depth=32, max_values=500_000)
_ID = re.compile(r'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})')


def run_stdio(config: Config) -> None:
    """Serve MCP over stdin/stdout until the client closes stdin, or SIGTERM / SIGHUP (then exit
    status 143): one warm engine for the session, and a watch on the store's files for change
    notifications."""
    backend = StdioBackend(config)
    feed = ChangeFeed()
    server = build_server(backend, feed)
    signalled: list[int] = []

    async def serve() -> None:
        stop_watching = anyio.Event()
        async with anyio.create_task_group() as tasks:

            def stop() -> None:
                stop_watching.set()  # the watch's thread sees it within a step; a cancel waits for it
                tasks.cancel_scope.cancel()

            def on_signal(signum: int) -> None:
                signalled.append(signum)
                stop()

            if sys.platform != "win32":  # (its loop takes no signal handlers; the client kills hard)
                # the loop's own handlers: it wakes for them whichever thread the signal hits;
                # removed (default action) when the loop closes
                loop = asyncio.get_running_loop()
                for signum in STOP_SIGNALS:
                    loop.add_signal_handler(signum, on_signal, signum)
            tasks.start_soon(watch_store, backend.root, backend.snapshot, feed, stop_watching)
            await _serve_stdio(server)  # until the client closes stdin
            stop()

    try:
        anyio.run(serve)
    finally:
        with stop_signals_exit(signalled.append):  # a stop signal meanwhile waits for the close
            backend.close()
    if signalled:
        raise SystemExit(128 + signal.SIGTERM)  # SIGHUP too, as in serve and chat


async def _serve_stdio(server: MCPServer) -> None:
    """MCPServer.run_stdio_async, with stdin read on a daemon thread (POSIX; on Windows the
    SDK's own reader: no stop signal reaches the process there, the client's kill is hard)."""
    if sys.platform == "win32":
        await server.run_stdio_async()
        return
    from mcp.server.stdio import stdio_server

    low = server._lowlevel_server  # noqa: SLF001 - run_stdio_async has no way to pass stdin
    checked_send, checked = anyio.create_memory_object_stream[str](0)
    sdk_stdin: Any = checked  # the SDK iterates it as it would its own AsyncFile
    async with _stdin_lines() as lines, stdio_server(stdin=sdk_stdin) as (read, write), \
            anyio.create_task_group() as tasks:
        tasks.start_soon(_pass_within_limits, lines, checked_send, write)
        await low.run(read, write, low.create_initialization_options())
        tasks.cancel_scope.cancel()


async def _pass_within_limits(lines: MemoryObjectReceiveStream[str], to_sdk: MemoryObjectSendStream[str],
                              answer: MemoryObjectSendStream[Any]) -> None:
    """Each client line to the SDK if it is within MESSAGE_LIMITS; otherwise its request (when its
    id can be read) is answered with an "invalid request" error saying which limit, at once."""
    from mcp.shared.message import SessionMessage
    from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError

    async with to_sdk:
        async for line in lines:
            try:
                bounded_json.check(line, MESSAGE_LIMITS, "the message")
            except bounded_json.JSONLimitError as exc:
                found = _ID.search(line[:2000])
                print(f"desktop-mem mcp: refused a message: {exc}", file=sys.stderr)
                if found:
                    ident = bounded_json.loads(found.group(1), MESSAGE_LIMITS)
                    error = JSONRPCError(jsonrpc="2.0", id=ident, error=ErrorData(code=INVALID_REQUEST,
                                                                                  message=str(exc)))
                    await answer.send(SessionMessage(message=error))
                continue
            await to_sdk.send(line)


@contextlib.asynccontextmanager
async def _stdin_lines() -> AsyncIterator[MemoryObjectReceiveStream[str]]:
    """The client's lines, read from stdin on a daemon thread; the stream ends when stdin does.

    fd 0 is pointed at the null device first and the client's pipe kept on a private descriptor
    (as the SDK's reader does), so a child process can never take the client's bytes."""
    send, receive = anyio.create_memory_object_stream[str](0)
    wire = _claim_stdin()
    async with BlockingPortal() as portal, receive:
        threading.Thread(target=_read_lines, args=(wire, portal, send), name="mcp-stdin",
                         daemon=True).start()
        try:
            yield receive
        finally:
            await portal.stop(cancel_remaining=True)  # a line the session no longer takes


def _claim_stdin() -> int:
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    return wire


def _read_lines(wire: int, portal: BlockingPortal, send: MemoryObjectSendStream[str]) -> None:
    """The daemon thread: each line of `wire` into `send`; at EOF the stream ends, and with it
    the SDK's reader and the session."""
    limit = MESSAGE_LIMITS.max_chars
    try:
        with open(wire, encoding="utf-8", errors="replace", closefd=False) as lines:
            while line := lines.readline(limit + 1):
                if len(line) > limit and not line.endswith("\n"):  # too long: its head, the rest skipped
                    while (rest := lines.readline(limit)) and not rest.endswith("\n"):
                        pass
                portal.call(send.send, line)
        portal.call(send.aclose)
    except Exception:  # noqa: BLE001 - the session ended first (its portal stopped, the stream closed)
        return
