"""Helpers for MCP tests: the official SDK client over stdio (`desktop-mem mcp`) and over
streamable HTTP, and a real `desktop-mem serve` process holding a store."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation, TextContent

from desktop_mem.engine.config import load_config

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = Implementation(name="claude-ai", title="Claude Desktop", version="0.14.0")
CURSOR = Implementation(name="cursor-vscode", version="1.0.0")


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a desktop-mem child process: this tree first on the path."""
    env = {k: v for k, v in os.environ.items() if k != "DESKTOP_MEM_TOKEN"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(extra)
    return env


@asynccontextmanager
async def stdio_session(store: Path, client: Implementation = CLAUDE, *, env: dict[str, str] | None = None,
                        extra_args: tuple[str, ...] = ()) -> AsyncIterator[ClientSession]:
    """A session with a `desktop-mem mcp` process the SDK spawns, as an MCP client app does."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "desktop_mem.cli", "--store", str(store), *extra_args, "mcp"],
        env=env or cli_env(),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write, client_info=client) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def http_session(url: str, client: Implementation = CLAUDE,
                       headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    """A session with the streamable HTTP endpoint at `url` (…/mcp)."""
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(120)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write, client_info=client) as session,
    ):
        await session.initialize()
        yield session


def result_json(result: CallToolResult) -> dict[str, Any]:
    """The JSON object a tool returned (fails the test on a tool error)."""
    text = "".join(c.text for c in result.content if isinstance(c, TextContent))
    assert not result.is_error, text
    value = json.loads(text)
    assert isinstance(value, dict)
    return value


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    return result_json(await session.call_tool(tool, arguments))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServeProcess:
    """`desktop-mem serve` in its own process, holding the store's writer lock."""

    def __init__(self, store: Path, *, token: str | None = None, extra_args: tuple[str, ...] = (),
                 no_token: bool = False) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = token
        args = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *extra_args, "serve",
                "--port", str(self.port)]
        if token:
            args += ["--token", token]
        if no_token:  # the explicit opt-out (loopback only): for clients that cannot send a header
            args += ["--no-token"]
        self.no_token = no_token
        self.log = store.parent / f"serve-{self.port}.log"
        self._log = self.log.open("wb")
        self.proc = subprocess.Popen(args, env=cli_env(), stdout=self._log, stderr=subprocess.STDOUT)

    @property
    def headers(self) -> dict[str, str]:
        """What a client sends: serve requires a bearer token by default (issue #22)."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def wait_ready(self, timeout: float = 120) -> ServeProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited: {self.log.read_text(errors='replace')}")
            if self.token is None and not self.no_token:  # generated, kept in the settings file
                self.token = str(load_config()["server.token"]) or None
            try:
                if httpx.get(f"{self.url}/health", headers=self.headers, timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"serve did not start: {self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def git(store: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=store, capture_output=True, text=True, check=True).stdout
