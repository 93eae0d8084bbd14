"""`desktop-mem mcp`: the memory as an MCP server (official `mcp` SDK), over stdio or HTTP.

Tools are named and shaped like OpenMemory's (`add_memories`, `search_memory`, `list_memories`,
`delete_memories` ...) so existing prompts work. Where they run depends on who holds the store:

- in `serve` and the app (`/mcp`), on the open engine of that process (`EngineBackend`);
- in a `desktop-mem mcp` process an MCP client spawned (`StdioBackend`): one warm engine for the
  session; writes and searches run where the writer is: in the process holding the lock,
  forwarded to its loopback endpoint, or, when nobody holds it, here under the lock for the one
  call (so the app can still open the store between calls). See mcp_backends.py; the process
  itself, its stdin and how it stops: mcp_stdio.py.

Protocol revisions (mcp SDK 2.3.0, both transports): 2024-11-05, 2025-03-26, 2025-06-18 and
2025-11-25 through the `initialize` handshake, and 2026-07-28 (stateless, `server/discover`; a
delete's confirmation comes back as an `input_required` result). search_memory, list_memories
and get_memory declare an `outputSchema` and answer with `structuredContent`; every tool carries
the four annotation hints; resource changes are notified (mcp_changes.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.elicitation import ElicitationResult
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import (
    EmptyResult,
    Implementation,
    SubscribeRequestParams,
    ToolAnnotations,
    UnsubscribeRequestParams,
)
from pydantic import BaseModel, Field

from desktop_mem import __version__
from desktop_mem.api import mcp_tools
from desktop_mem.api.mcp_backends import Backend, EngineBackend, StdioBackend
from desktop_mem.api.mcp_changes import LIST_URI, ChangeFeed
from desktop_mem.engine.api import MemoryEngine, clean_client_name
from desktop_mem.engine.schema import MemoryJSON, MemoryPageJSON, SearchJSON

__all__ = ["Backend", "EngineBackend", "StdioBackend", "build_server", "mcp_http_app"]

INSTRUCTIONS = (
    "desktop-mem is the user's long-term memory, shared by all their AI tools and reviewed by them "
    "in the desktop-mem app (every change is a Markdown file and a git commit they can undo). "
    "Search it before answering questions that may depend on the user's preferences, facts about "
    "them or earlier work; add short, self-contained facts the user would want remembered; update "
    "or delete memories that became wrong. Never store secrets."
)


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
Project = Annotated[str | None, Field(
    description="The project you work in (e.g. the repository's name, or \".\" for the folder this "
    "client works in, from its roots): its memories are read beside the conversation's and the "
    "global ones. Omit for none.")]


async def resolve_project(ctx: Context, project: str | None) -> str | None:
    """`project`, or for "." the project of the client's first file root (MCP roots), resolved
    here, before a forward: the process holding the store cannot ask this client."""
    if project != ".":
        return project
    from urllib.parse import unquote, urlparse

    from desktop_mem.engine.api import project_of_folder

    params = ctx.session.client_params
    if params is None or params.capabilities.roots is None:
        raise ToolError('project "." needs the client\'s roots, and this client offers none: give the '
                        "project's name")
    try:
        roots = (await ctx.session.list_roots()).roots
    except Exception as exc:  # noqa: BLE001 - a client that cannot answer (no back-channel ...)
        raise ToolError(f"the client did not list its roots ({type(exc).__name__}); give the project's "
                        "name") from None
    for root in roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file" and uri.path:
            return str(project_of_folder(unquote(uri.path)))
    raise ToolError("the client's roots name no folder (file://); give the project's name")


ReadOnly = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                           open_world_hint=False)


class ConfirmDelete(BaseModel):
    """The question a delete asks the user (a client with elicitation shows it as a form)."""

    forget: bool = Field(description="Forget them (they move to deleted/ and can be restored)")


async def ask_before_deleting(ids: list[str], ctx: Context) -> Elicit[ConfirmDelete] | str:
    """Ask the user before a delete when the client can ask (elicitation: a request during the
    call up to 2025-11-25, an `input_required` result at 2026-07-28); else go ahead (see the tool)."""
    caps = ctx.client_capabilities
    if caps is None or caps.elicitation is None or (caps.elicitation.form is None
                                                    and caps.elicitation.url is not None):
        return "not asked"
    shown = [f"- {t[:120]}" for t in await _texts(ctx, ids)]
    lines = "\n".join(shown[:10]) + (f"\n(+{len(shown) - 10} more)" if len(shown) > 10 else "")
    who = client_name(client_of(ctx))
    return Elicit(f"{who} wants to forget {len(ids)} memor{'y' if len(ids) == 1 else 'ies'} in "
                  f"desktop-mem:\n{lines or '(ids not found)'}\nForget them?", ConfirmDelete)


async def _texts(ctx: Context, ids: list[str]) -> list[str]:
    backend: Backend = ctx.mcp_server.backend  # type: ignore[attr-defined]

    def read(engine: MemoryEngine) -> list[str]:
        found = []
        for memory_id in ids:
            try:
                found.append(engine.get(memory_id).text)
            except Exception:  # unknown ids are reported by the delete itself
                continue
        return found

    try:
        return list(await backend.read(read))
    except Exception:
        return []


def build_server(backend: Backend, feed: ChangeFeed | None = None) -> MCPServer:
    """The MCP server with the memory tools and resources, running calls through `backend`;
    `feed` delivers change notifications (a new one if not given)."""
    feed = feed or ChangeFeed()

    async def observe(ctx: Any, call_next: Any) -> Any:
        feed.saw(ctx.session, ctx.protocol_version)  # the loop, and 2025-era sessions to notify
        return await call_next(ctx)

    server: MCPServer = MCPServer(
        "desktop-mem", title="desktop-mem memory", version=__version__, instructions=INSTRUCTIONS,
        log_level="WARNING", subscriptions=feed.bus, middleware=[observe],
    )
    server.backend = backend  # type: ignore[attr-defined]  # for the delete confirmation's resolver

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
        project: Project = None,
    ) -> SearchJSON:
        project = await resolve_project(ctx, project)
        args = {"query": query, "conversation": conversation, "top_k": top_k, "as_of": as_of,
                "project": project}
        info = client_of(ctx)
        return await backend.at_writer("search_memory", args, info, lambda e: mcp_tools.search(
            e, query, conversation, top_k, as_of, client=client_name(info), project=project))

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
        project: Annotated[str | None, Field(
            description="File them under this project (e.g. the repository's name) instead: read by "
            "every tool working in it. Facts about the user belong to no project.")] = None,
    ) -> dict[str, Any]:
        items = [*(texts or []), *([text] if text else [])]
        project = await resolve_project(ctx, project)
        info = client_of(ctx)
        args = {"texts": items, "conversation": conversation, "kind": kind, "reconcile": reconcile,
                "project": project}
        return await backend.at_writer("add_memories", args, info, lambda e: mcp_tools.add(
            e, items, conversation, kind, client_name(info), reconcile, project))

    @server.tool(
        name="list_memories",
        description="List stored memories (facts, preferences, context), newest first, a page at a "
        "time. Use to review what is remembered; use search_memory to find something specific.",
        annotations=ReadOnly,
    )
    async def list_memories(
        ctx: Context,
        conversation: Conversation = None,
        kind: Annotated[str | None, Field(description="fact, preference or context.")] = None,
        limit: Annotated[int | None, Field(ge=1, le=500, description="Page size (default 50).")] = None,
        offset: Annotated[int | None, Field(ge=0, description="Skip this many (paging).")] = None,
        as_of: AsOf = None,
        project: Annotated[str | None, Field(description="Only this project's memories.")] = None,
    ) -> MemoryPageJSON:
        project = await resolve_project(ctx, project)
        return await backend.read(lambda e: mcp_tools.list_memories(e, conversation, kind, limit, offset,
                                                                    as_of, project))

    @server.tool(name="get_memory", description="Get one memory by id (also a deleted one), with its "
                 "front matter: kind, source, the client that wrote it, validity, what replaced it.",
                 annotations=ReadOnly)
    async def get_memory(
        id: Annotated[str, Field(description="The memory's id (or a unique prefix of 6+ chars).")],  # noqa: A002
    ) -> MemoryJSON:
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
        expected_hash: Annotated[str | None, Field(
            max_length=128, description="The content_hash of the memory as you read it: if its "
            "file changed since (e.g. the user edited it), the update is refused with what "
            "changed.")] = None,
    ) -> dict[str, Any]:
        info = client_of(ctx)
        arguments = {"id": id, "text": text, **({"expected_hash": expected_hash} if expected_hash else {})}
        return await backend.at_writer("update_memory", arguments, info,
                                       lambda e: mcp_tools.update(e, id, text, client_name(info),
                                                                  expected_hash))

    @server.tool(
        name="delete_memories",
        description="Forget memories that are wrong or that the user asks to forget. Soft delete: "
        "files move under deleted/ and can be brought back with restore_memory. Clients that "
        "support elicitation are asked to confirm with the user first.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                                    open_world_hint=False),
    )
    async def delete_memories(
        ctx: Context,
        ids: Annotated[list[str], Field(description="Ids of the memories to delete.")],
        confirmation: Annotated[ElicitationResult[ConfirmDelete], Resolve(ask_before_deleting)],
    ) -> dict[str, Any]:
        asked = confirmation.action == "accept" and isinstance(confirmation.data, ConfirmDelete)
        if confirmation.action != "accept" or (asked and not confirmation.data.forget):
            return {"deleted": [], "skipped": [{"id": i, "reason": "the user said no"} for i in ids],
                    "confirmed": "declined"}
        info = client_of(ctx)
        out = await backend.at_writer("delete_memories", {"ids": ids}, info,
                                      lambda e: mcp_tools.delete(e, ids, client_name(info)))
        # A client that cannot ask its user (no elicitation) deletes at once: soft, restorable,
        # and shown in the app with Undo.
        return {**out, "confirmed": "by the user" if asked else "not asked: the client cannot ask; "
                "restore_memory brings them back"}

    @server.tool(
        name="restore_memory",
        description="Bring back a memory deleted earlier (by you, another tool or the user).",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),
    )
    async def restore_memory(
        ctx: Context,
        id: Annotated[str, Field(description="The deleted memory's id.")],  # noqa: A002
        expected_hash: Annotated[str | None, Field(
            max_length=128, description="The content_hash of the deleted memory as you read it "
            "(refused with what changed if its file changed since).")] = None,
    ) -> dict[str, Any]:
        info = client_of(ctx)
        arguments = {"id": id, **({"expected_hash": expected_hash} if expected_hash else {})}
        return await backend.at_writer("restore_memory", arguments, info,
                                       lambda e: mcp_tools.restore(e, id, client_name(info), expected_hash))

    @server.tool(
        name="memory_history",
        description="What changed in memory and who changed it: classified events (ADD, UPDATE, "
        "DELETE, RESTORE, EDIT, SUMMARY, EVICT, TURN) with text diffs, newest first; for one memory "
        "if `id` is given. A commit lists its first 50 events; `events_total` and `event_counts` "
        "count them all (an import is one commit).",
        annotations=ReadOnly,
    )
    async def memory_history(
        id: Annotated[str | None, Field(description="Only this memory's history.")] = None,  # noqa: A002
        limit: Annotated[int | None, Field(ge=1, le=200,
                                           description="How many commits (default 20).")] = None,
    ) -> dict[str, Any]:
        return await backend.read(lambda e: mcp_tools.history(e, id, limit))

    @server.tool(
        name="review_memory_changes",
        description="Review mode (setting memory.review): changes the memory model proposed that wait "
        "for the user. action=list shows them; accept (optionally with your own `text`) or reject one "
        "by id, one commit each. Ask the user before accepting or rejecting on their behalf.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                                    open_world_hint=False),
    )
    async def review_memory_changes(
        ctx: Context,
        action: Annotated[str, Field(description="list, accept or reject.")] = "list",
        id: Annotated[str | None, Field(description="The proposal's id (accept, reject).")] = None,  # noqa: A002
        text: Annotated[str | None, Field(description="Accept with this text instead.")] = None,
    ) -> dict[str, Any]:
        if action == "list":
            return await backend.read(lambda e: mcp_tools.review(e, "list", None, None))
        return await backend.at_writer("review_memory_changes", {"action": action, "id": id, "text": text},
                                       client_of(ctx), lambda e: mcp_tools.review(e, action, id, text))

    @server.tool(
        name="tidy_memory",
        description="Look at the whole memory and propose a clean-up: duplicates to merge, junk to "
        "drop, stale facts to retire, facts the summaries state that no fact holds. Each becomes a "
        "proposal with its reason that waits for the user (review_memory_changes lists them); "
        "nothing changes until accepted. Slow with a local model (one call per similar pair).",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                    open_world_hint=False),
    )
    async def tidy_memory(ctx: Context) -> dict[str, Any]:
        return await backend.at_writer("tidy_memory", {}, client_of(ctx), mcp_tools.tidy)

    _register_connector_tools(server, backend)

    @server.resource("memory://memories/{memory_id}", name="memory", mime_type="application/json",
                     description="One memory by id, with its front matter.")
    async def memory_resource(memory_id: str) -> MemoryJSON:
        return await backend.read(lambda e: mcp_tools.get(e, memory_id))

    @server.resource(LIST_URI, name="memories", mime_type="application/json",
                     description="The newest live memories (first page of list_memories); updated "
                     "whenever a memory is added, changed or deleted, by anyone.")
    async def list_resource() -> dict[str, Any]:
        return dict(await backend.read(lambda e: mcp_tools.list_memories(e, None, None, 50, 0)))

    @server.resource("memory://conversations/{conversation}/summary", name="conversation summary",
                     mime_type="application/json",
                     description="The rolling summary of a conversation.")
    async def summary_resource(conversation: str) -> dict[str, Any]:
        def read(e: Any) -> dict[str, Any]:
            # no summary yet (a new or short conversation) is an empty summary, not an error (#22)
            text = mcp_tools.summary(e, conversation) if e.summary(conversation) is not None else ""
            return {"conversation": conversation, "summary": text}

        return dict(await backend.read(read))

    _serve_change_notifications(server, feed)
    return server


def _register_connector_tools(server: MCPServer, backend: Backend) -> None:
    """`search` and `fetch`, the two tools ChatGPT connectors and deep research call, in the
    shapes they require (mcp_tools.connector_search / connector_fetch), beside ours."""

    @server.tool(
        name="search",
        description="Search the user's long-term memory (facts, preferences, context) by meaning and "
        "keywords. Returns matching memories as {results: [{id, title, url}]}; `fetch` an id for "
        "its full text.",
        annotations=ReadOnly,
    )
    async def search(
        ctx: Context,
        query: Annotated[str, Field(description="What to look for, in natural language.")],
    ) -> dict[str, Any]:
        info = client_of(ctx)
        return await backend.at_writer("search", {"query": query}, info, lambda e: mcp_tools.connector_search(
            e, query, client=client_name(info)))

    @server.tool(
        name="fetch",
        description="Fetch one memory found by `search`, by its id: {id, title, text, url, metadata} "
        "with its kind, scope, dates and who wrote it.",
        annotations=ReadOnly,
    )
    async def fetch(
        id: Annotated[str, Field(description="The id of a result from `search`.")],  # noqa: A002
    ) -> dict[str, Any]:
        return await backend.read(lambda e: mcp_tools.connector_fetch(e, id))


def mcp_http_app(engine: MemoryEngine) -> tuple[list[Any], Callable[[], Any]]:
    """The `/mcp` route (streamable HTTP) over an open engine, and its session manager's runner.

    The caller's own middleware (server_security.Guard: loopback, bearer token, Origin) protects
    the route, so the SDK's separate Host check is off: it would refuse a token-holding remote
    client that the Guard lets in.
    """
    from mcp.server.transport_security import TransportSecuritySettings

    backend, feed = EngineBackend(engine), ChangeFeed()
    backend.subscribe(feed.store_changed)  # every change of the store, whoever made it
    app = build_server(backend, feed).streamable_http_app(
        streamable_http_path="/mcp",
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return list(app.routes), lambda: app.router.lifespan_context(app)


def _serve_change_notifications(server: MCPServer, feed: ChangeFeed) -> None:
    """`resources/subscribe` / `unsubscribe` for 2025-era clients, and `listChanged` in their
    capabilities. MCPServer registers neither and has no public hook for it: its lowlevel server
    (whose `add_request_handler` is public) is reached through the private attribute."""
    low = server._lowlevel_server  # noqa: SLF001

    async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
        feed.subscribe(ctx.session, str(params.uri))
        return EmptyResult()

    async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
        feed.unsubscribe(ctx.session, str(params.uri))
        return EmptyResult()

    low.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
    low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)
    options = low.create_initialization_options

    def with_list_changed(notification_options: NotificationOptions | None = None, *args: Any,
                          **kwargs: Any) -> Any:
        chosen = notification_options or NotificationOptions(resources_changed=True)
        return options(chosen, *args, **kwargs)

    low.create_initialization_options = with_list_changed  # type: ignore[method-assign]
