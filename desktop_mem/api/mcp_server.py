"""`desktop-mem mcp`: the memory as an MCP server (official `mcp` SDK), over stdio or HTTP.

Tools are named and shaped like OpenMemory's (`add_memories`, `search_memory`, `list_memories`,
`delete_memories` ...) so existing prompts work. Where they run depends on who holds the store:

- in `serve` and the app (`/mcp`), on the open engine of that process (`EngineBackend`);
- in a `desktop-mem mcp` process an MCP client spawned (`StdioBackend`): reads open the store
  read-only; writes and searches run where the writer is: in the process holding the lock,
  forwarded to its loopback endpoint, or, when nobody holds it, here under the lock for the one
  call (so the app can still open the store between calls).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Annotated, Any, Protocol

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Implementation, ToolAnnotations
from pydantic import Field

from desktop_mem import __version__
from desktop_mem.api import mcp_tools
from desktop_mem.engine.api import MemoryEngine, clean_client_name, describe_holder, read_holder
from desktop_mem.engine.config import Config
from desktop_mem.engine.models import EngineError, StoreLockedError

EngineCall = Callable[[MemoryEngine], dict[str, Any]]
LOCK_WAIT_S = 15.0  # how long a call waits for a writer that advertises no endpoint (a CLI command)

INSTRUCTIONS = (
    "desktop-mem is the user's long-term memory, shared by all their AI tools and reviewed by them "
    "in the desktop-mem app (every change is a Markdown file and a git commit they can undo). "
    "Search it before answering questions that may depend on the user's preferences, facts about "
    "them or earlier work; add short, self-contained facts the user would want remembered; update "
    "or delete memories that became wrong. Never store secrets."
)


class Backend(Protocol):
    """Where tool calls run: `read` needs only the files; `at_writer` needs the store's writer."""

    async def read(self, call: EngineCall) -> dict[str, Any]: ...

    async def at_writer(self, tool: str, arguments: dict[str, Any], client: Implementation | None,
                        call: EngineCall) -> dict[str, Any]: ...


class EngineBackend:
    """Calls on this process's open engine (serve, the app), in worker threads."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine

    async def read(self, call: EngineCall) -> dict[str, Any]:
        return await _run(call, self.engine)

    async def at_writer(self, tool: str, arguments: dict[str, Any], client: Implementation | None,
                        call: EngineCall) -> dict[str, Any]:
        return await _run(call, self.engine)


async def _run(call: EngineCall, engine: MemoryEngine) -> dict[str, Any]:
    try:
        return await anyio.to_thread.run_sync(call, engine)
    except EngineError as exc:
        raise ToolError(str(exc)) from exc


class StdioBackend:
    """Calls from a `desktop-mem mcp` process, which never keeps the writer lock between calls."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._lock = threading.Lock()  # one engine at a time in this process

    async def read(self, call: EngineCall) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(self._read_sync, call)

    def _read_sync(self, call: EngineCall) -> dict[str, Any]:
        with self._lock:
            try:
                engine = MemoryEngine(self.config, read_only=True)
            except EngineError as exc:
                raise ToolError(str(exc)) from exc
            try:
                return call(engine)
            except EngineError as exc:
                raise ToolError(str(exc)) from exc
            finally:
                engine.close()

    async def at_writer(self, tool: str, arguments: dict[str, Any], client: Implementation | None,
                        call: EngineCall) -> dict[str, Any]:
        from desktop_mem.api.mcp_forward import WriterUnreachable, forward_call, writer_endpoint

        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            done, value = await anyio.to_thread.run_sync(self._write_sync, call)
            if done:
                return value
            root = self.config.store_path.expanduser().resolve()
            endpoint = writer_endpoint(root)
            if endpoint is not None:
                token = str(self.config["server.token"]) or None
                try:
                    return await forward_call(endpoint, tool, arguments, client, token)
                except WriterUnreachable:  # the writer is starting or stopping: ask again
                    if time.monotonic() > deadline:
                        raise ToolError(f"the desktop-mem process at {endpoint} does not answer") from None
            elif time.monotonic() > deadline:
                raise ToolError(
                    f"The store {root} is open for writing by {describe_holder(read_holder(root))}, "
                    "which does not accept forwarded writes; close it, or open the store in the "
                    "desktop-mem app or `desktop-mem serve` instead.")
            await anyio.sleep(0.2)

    def _write_sync(self, call: EngineCall) -> tuple[bool, dict[str, Any]]:
        """Run `call` as the writer if the lock is free: (True, result); (False, {}) if held."""
        with self._lock:
            try:
                engine = MemoryEngine(self.config)
            except StoreLockedError:
                return False, {}
            except EngineError as exc:
                raise ToolError(str(exc)) from exc
            try:
                return True, call(engine)
            except EngineError as exc:
                raise ToolError(str(exc)) from exc
            finally:
                engine.close()


def client_of(ctx: Context) -> Implementation | None:
    """The client's `initialize` info (name, title, version), if it sent one."""
    params = ctx.session.client_params
    return params.client_info if params is not None else None


def client_name(info: Implementation | None) -> str:
    """What the app shows for a client: its title (e.g. "Claude Desktop"), else its name."""
    if info is None:
        return "MCP client"
    return clean_client_name(info.title or info.name) or "MCP client"


# --------------------------------------------------------------------------------- the server

Conversation = Annotated[str | None, Field(
    description="Conversation id to scope to (its memories plus the global ones). Omit for all.")]
AsOf = Annotated[str | None, Field(
    description="ISO date (2024-03-15) or date-time: answer with what was true then (validity and "
    "the store's history) instead of now. Omit for now.")]
ReadOnly = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                           open_world_hint=False)


def build_server(backend: Backend) -> MCPServer:
    """The MCP server with the memory tools and resources, running calls through `backend`."""
    server: MCPServer = MCPServer(
        "desktop-mem", title="desktop-mem memory", version=__version__, instructions=INSTRUCTIONS,
        log_level="WARNING",
    )

    @server.tool(
        name="search_memory",
        description="Search the user's long-term memory by meaning and keywords. Use it before "
        "answering anything that may depend on the user's preferences, facts about them, or "
        "earlier conversations. Returns the best memories with ids and score breakdowns.",
        annotations=ReadOnly,
    )
    async def search_memory(
        ctx: Context,
        query: Annotated[str, Field(description="What to look for, in natural language.")],
        conversation: Conversation = None,
        top_k: Annotated[int | None, Field(ge=1, le=50, description="How many hits (default 5).")] = None,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        args = {"query": query, "conversation": conversation, "top_k": top_k, "as_of": as_of}
        return await backend.at_writer("search_memory", args, client_of(ctx),
                                       lambda e: mcp_tools.search(e, query, conversation, top_k, as_of))

    @server.tool(
        name="add_memories",
        description="Remember new facts about the user or their work, each a short self-contained "
        "sentence (\"Prefers tea over coffee\"). Use when the user tells you something worth "
        "remembering across conversations or asks you to remember it. Likely secrets are redacted. "
        "Each fact becomes a Markdown file and a commit the user can review and undo.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                    open_world_hint=False),
    )
    async def add_memories(
        ctx: Context,
        texts: Annotated[list[str] | None, Field(description="Facts to store, one per item.")] = None,
        text: Annotated[str | None, Field(description="One fact to store (instead of `texts`).")] = None,
        conversation: Annotated[str | None, Field(
            description="Conversation id to file them under (default: global, shared by all).")] = None,
        kind: Annotated[str | None, Field(
            description="fact, preference or context (default: guessed from the text).")] = None,
        reconcile: Annotated[bool, Field(
            description="Let desktop-mem's memory model merge them with similar stored memories "
            "(update or drop outdated ones, skip duplicates), as it does for chat.")] = False,
    ) -> dict[str, Any]:
        items = [*(texts or []), *([text] if text else [])]
        info = client_of(ctx)
        args = {"texts": items, "conversation": conversation, "kind": kind, "reconcile": reconcile}
        return await backend.at_writer("add_memories", args, info, lambda e: mcp_tools.add(
            e, items, conversation, kind, client_name(info), reconcile))

    @server.tool(
        name="list_memories",
        description="List stored memories (facts, preferences, context), newest first, a page at a "
        "time. Use to review what is remembered; use search_memory to find something specific.",
        annotations=ReadOnly,
    )
    async def list_memories(
        conversation: Conversation = None,
        kind: Annotated[str | None, Field(description="fact, preference or context.")] = None,
        limit: Annotated[int | None, Field(ge=1, le=500, description="Page size (default 50).")] = None,
        offset: Annotated[int | None, Field(ge=0, description="Skip this many (paging).")] = None,
        as_of: AsOf = None,
    ) -> dict[str, Any]:
        return await backend.read(lambda e: mcp_tools.list_memories(e, conversation, kind, limit, offset,
                                                                    as_of))

    @server.tool(name="get_memory", description="Get one memory by id (also a deleted one).",
                 annotations=ReadOnly)
    async def get_memory(
        id: Annotated[str, Field(description="The memory's id (or a unique prefix of 6+ chars).")],  # noqa: A002
    ) -> dict[str, Any]:
        return await backend.read(lambda e: mcp_tools.get(e, id))

    @server.tool(
        name="update_memory",
        description="Correct a memory that became wrong or outdated. The old version is kept as a "
        "tombstone (replaced_by the new id) so the user can see and revert the change.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                    open_world_hint=False),
    )
    async def update_memory(
        ctx: Context,
        id: Annotated[str, Field(description="The memory to change.")],  # noqa: A002
        text: Annotated[str, Field(description="The corrected text.")],
    ) -> dict[str, Any]:
        info = client_of(ctx)
        return await backend.at_writer("update_memory", {"id": id, "text": text}, info,
                                       lambda e: mcp_tools.update(e, id, text, client_name(info)))

    @server.tool(
        name="delete_memories",
        description="Forget memories that are wrong or that the user asks to forget. Soft delete: "
        "files move under deleted/ and can be brought back with restore_memory.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                    open_world_hint=False),
    )
    async def delete_memories(
        ctx: Context,
        ids: Annotated[list[str], Field(description="Ids of the memories to delete.")],
    ) -> dict[str, Any]:
        info = client_of(ctx)
        return await backend.at_writer("delete_memories", {"ids": ids}, info,
                                       lambda e: mcp_tools.delete(e, ids, client_name(info)))

    @server.tool(
        name="restore_memory",
        description="Bring back a memory deleted earlier (by you, another tool or the user).",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),
    )
    async def restore_memory(
        ctx: Context,
        id: Annotated[str, Field(description="The deleted memory's id.")],  # noqa: A002
    ) -> dict[str, Any]:
        info = client_of(ctx)
        return await backend.at_writer("restore_memory", {"id": id}, info,
                                       lambda e: mcp_tools.restore(e, id, client_name(info)))

    @server.tool(
        name="memory_history",
        description="What changed in memory and who changed it: classified events (ADD, UPDATE, "
        "DELETE, RESTORE, EDIT, SUMMARY, EVICT, TURN) with text diffs, newest first; for one memory "
        "if `id` is given.",
        annotations=ReadOnly,
    )
    async def memory_history(
        id: Annotated[str | None, Field(description="Only this memory's history.")] = None,  # noqa: A002
        limit: Annotated[int | None, Field(ge=1, le=200,
                                           description="How many commits (default 20).")] = None,
    ) -> dict[str, Any]:
        return await backend.read(lambda e: mcp_tools.history(e, id, limit))

    @server.resource("memory://memories/{memory_id}", name="memory", mime_type="application/json",
                     description="One memory by id, with its front matter.")
    async def memory_resource(memory_id: str) -> dict[str, Any]:
        return await backend.read(lambda e: mcp_tools.get(e, memory_id))

    @server.resource("memory://conversations/{conversation}/summary", name="conversation summary",
                     mime_type="application/json",
                     description="The rolling summary of a conversation.")
    async def summary_resource(conversation: str) -> dict[str, Any]:
        return await backend.read(lambda e: {"conversation": conversation,
                                             "summary": mcp_tools.summary(e, conversation)})

    return server


def run_stdio(config: Config) -> None:
    """Serve MCP over stdin/stdout until the client closes it (`desktop-mem mcp`)."""
    build_server(StdioBackend(config)).run()


def mcp_http_app(engine: MemoryEngine) -> tuple[list[Any], Callable[[], Any]]:
    """The `/mcp` route (streamable HTTP) over an open engine, and its session manager's runner.

    The caller's own middleware (server_security.Guard: loopback, bearer token, Origin) protects
    the route, so the SDK's separate Host check is off: it would refuse a token-holding remote
    client that the Guard lets in.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    app = build_server(EngineBackend(engine)).streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return list(app.routes), lambda: app.router.lifespan_context(app)
