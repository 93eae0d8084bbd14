"""What leaves the engine: one set of response shapes and one query for listing memories.

CLI `--json`, the REST API and the MCP tools all answer from here, so a memory has the same keys
everywhere (issue 23). Two keys have an older alias kept for clients written against one front
end: `content` (REST) is `text`, `conversation` (MCP) is `conversation_id`.

To add a field (e.g. validity or an `as_of` read): add it to `MemoryJSON` and `memory_json`, and a
filter to `MemoryQuery` (its `select`); every front end then carries it. The TypedDicts are
typing_extensions ones because pydantic (the MCP SDK's output schemas) needs them below 3.12.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any, NotRequired, Protocol

from typing_extensions import TypedDict

from desktop_mem.engine.models import KINDS, ROLES, CommitInfo, Memory, Role, TimelineEvent, ValidationError
from desktop_mem.engine.store.conversation_ids import validate_conversation_id

if TYPE_CHECKING:
    from desktop_mem.engine.chat.review import Proposal
    from desktop_mem.engine.index.retrieval import SearchFilters, SearchResult

MAX_PAGE = 1000
# Events a `history` lists per commit (MCP, the CLI's text); the rest are counted by type. One
# import of 100,000 memories is one commit: every event would flood a client's context.
HISTORY_EVENTS_SHOWN = 50


class MemoryJSON(TypedDict):
    """One memory file as every front end shows it (timestamps ISO 8601, absent values null)."""

    id: str
    text: str
    content: str  # = text (the REST API's name)
    conversation_id: str
    conversation: str  # = conversation_id (the MCP tools' name)
    role: str
    kind: str | None
    type: str  # kind for a fact, else the role (REST)
    source: str | None
    client: str | None  # the MCP client that wrote it
    created_at: str
    updated_at: str | None
    expires_at: str | None
    deleted: bool
    deleted_at: str | None
    replaced_by: str | None
    valid_from: str | None
    valid_to: str | None
    summary_kind: str | None
    summarized_count: int | None
    path: str
    content_hash: str


class ScoresJSON(TypedDict):
    """Why a search hit ranks where it does (None: that signal did not take part), to 4 places."""

    final: float
    relevance: float
    keyword: float | None
    dense: float | None
    fused: float
    rerank: float | None
    recency: float
    mmr_rank: int | None  # its place in the diversified (MMR) order, 1 first; None without MMR


class SearchHitJSON(MemoryJSON):
    """One search hit, the same in REST, MCP and the CLI: the memory's own keys (MemoryJSON), its
    final `score` and the `scores` that made it. `memory` is the older nested key of REST and
    the CLI (the same MemoryJSON again), kept for their clients; MCP leaves it out (a client's
    context pays for every repeated text)."""

    score: float
    scores: ScoresJSON
    memory: NotRequired[MemoryJSON]


class SearchJSON(TypedDict):
    query: str
    results: list[SearchHitJSON]


class MemoryPageJSON(TypedDict):
    """One page of a listing, newest first."""

    memories: list[MemoryJSON]
    total: int
    offset: int
    limit: int
    has_more: bool
    note: NotRequired[str]  # e.g. how many held-back hand edits were left out


def _when(d: datetime | None) -> str | None:
    return d.isoformat() if d else None


def memory_json(m: Memory) -> MemoryJSON:
    """A memory as JSON. Front-matter keys beyond the known ones are not given out (they are the
    user's own and never screened for secrets), except `client`."""
    client = m.extra.get("client")
    return {
        "id": m.id, "text": m.text, "content": m.text,
        "conversation_id": m.conversation_id, "conversation": m.conversation_id,
        "role": str(m.role), "kind": str(m.kind) if m.kind else None, "type": str(m.kind or m.role),
        "source": str(m.source) if m.source else None, "client": client if isinstance(client, str) else None,
        "created_at": m.created_at.isoformat(), "updated_at": _when(m.updated_at),
        "expires_at": _when(m.expires_at), "deleted": m.deleted, "deleted_at": _when(m.deleted_at),
        "replaced_by": m.replaced_by, "valid_from": m.valid_from, "valid_to": m.valid_to,
        "summary_kind": m.summary_kind, "summarized_count": m.summarized_count, "path": m.path,
        "content_hash": m.content_hash,
    }


def _round(value: float | None) -> float | None:
    return round(value, 4) if value is not None else None


def search_hit_json(result: SearchResult, *, nested_memory: bool = False) -> SearchHitJSON:
    """A search result: the memory plus its score breakdown (rounded to 4 places); with
    `nested_memory`, also under the older `memory` key (REST, the CLI)."""
    s = result.scores
    scores: ScoresJSON = {"final": round(s.final, 4), "relevance": round(s.relevance, 4),
                          "keyword": _round(s.keyword), "dense": _round(s.dense), "fused": round(s.fused, 4),
                          "rerank": _round(s.rerank), "recency": round(s.recency, 4), "mmr_rank": s.mmr_rank}
    memory = memory_json(result.memory)
    hit: dict[str, Any] = {**memory, "score": scores["final"], "scores": scores}
    if nested_memory:
        hit["memory"] = memory
    return hit  # type: ignore[return-value]  # MemoryJSON + the keys above


class EventJSON(TypedDict):
    """One thing a commit did to one memory (history.timeline's classification), with its diff."""

    type: str  # ADD, UPDATE, DELETE, RESTORE, EDIT, EVICT, SUMMARY ...
    commit: str
    memory_id: str | None
    conversation_id: str | None
    conversation: str | None  # alias of conversation_id (MCP)
    path: str
    old_path: str | None
    old_text: str | None
    new_text: str | None
    diff: str  # unified diff of old_text -> new_text ("" when the text did not change)
    replaced_by: str | None
    new_id: str | None
    role: str | None
    hard_delete: bool
    valid_from: str | None
    valid_to: str | None
    validity_changed: bool


class CommitJSON(TypedDict):
    """A classified commit: who (source, client), when, and its events. `events` may be the first
    `events_shown` of `events_total` (an import of 100,000 memories is one commit); `event_counts`
    counts every event by type."""

    sha: str
    commit: str  # alias of sha (MCP)
    subject: str
    author: str
    committed_at: str
    at: str  # alias of committed_at (MCP)
    trailers: dict[str, str]
    source: str | None
    client: str | None
    made_by_app: bool
    events_from_paths: bool  # a bulk commit: events from the file paths alone, without texts
    events_total: int
    event_counts: dict[str, int]
    events: list[EventJSON]


def event_json(e: TimelineEvent) -> EventJSON:
    """One event of a commit, with the diff of its text."""
    diff = "".join(difflib.unified_diff(
        (e.old_text or "").splitlines(keepends=True), (e.new_text or "").splitlines(keepends=True),
        "before", "after")) if e.old_text != e.new_text else ""
    return {"type": e.type.value, "commit": e.commit, "memory_id": e.memory_id,
            "conversation_id": e.conversation_id, "conversation": e.conversation_id, "path": e.path,
            "old_path": e.old_path, "old_text": e.old_text, "new_text": e.new_text, "diff": diff,
            "replaced_by": e.replaced_by, "new_id": e.new_id, "role": e.role, "hard_delete": e.hard_delete,
            "valid_from": e.valid_from, "valid_to": e.valid_to, "validity_changed": e.validity_changed}


def commit_json(c: CommitInfo, events_shown: int | None = HISTORY_EVENTS_SHOWN) -> CommitJSON:
    """A commit as the CLI (`history --json`: every event), REST and MCP (the first
    HISTORY_EVENTS_SHOWN events, the rest counted) give it."""
    at = c.committed_at.isoformat()
    events = c.events if events_shown is None else islice(c.events, events_shown)
    return {"sha": c.sha, "commit": c.sha, "subject": c.subject, "author": c.author, "committed_at": at,
            "at": at, "trailers": dict(c.trailers), "source": c.trailers.get("Source"),
            "client": c.trailers.get("Client"), "made_by_app": c.made_by_app,
            "events_from_paths": c.events_from_paths, "events_total": len(c.events),
            "event_counts": {t.value: n for t, n in c.type_counts().items()},
            "events": [event_json(e) for e in events]}


def proposal_json(p: Proposal) -> dict[str, Any]:
    """A review proposal (chat/review.py): its fields, and `summary`, one line saying what
    accepting it would do."""
    return {**asdict(p), "summary": p.describe()}


class Searcher(Protocol):
    """The searches a request runs on (MemoryEngine)."""

    def search(self, query: str, *, conversation_id: str | None = ..., top_k: int | None = ...,
               filters: SearchFilters | None = ..., rerank: bool = ...) -> list[SearchResult]: ...

    def search_as_of(self, query: str, moment: datetime, **options: Any) -> list[SearchResult]: ...


@dataclass(frozen=True)
class SearchRequest:
    """One search as a front end asks it (REST, MCP, the CLI and its forward to the holder): the
    read path, or with `as_of` the read path over what was live then (history/as_of.py).

    `project` is a project's scope (store/projects.py); over the past it scopes the search when
    no conversation does. `roles` limits the hits (MCP: facts only); `rerank`: the cross-encoder.
    """

    query: str
    conversation_id: str | None = None
    top_k: int | None = None
    include_deleted: bool = False
    project: str | None = None
    roles: tuple[str, ...] | None = None
    rerank: bool = True
    as_of: datetime | None = None

    def run(self, engine: Searcher) -> list[SearchResult]:
        """The hits, best first."""
        if self.as_of is not None:
            roles: dict[str, Any] = {"roles": self.roles} if self.roles else {}
            return engine.search_as_of(self.query, self.as_of, top_k=self.top_k,
                                       conversation_id=self.conversation_id or self.project, **roles)
        from desktop_mem.engine.index.retrieval import SearchFilters  # numpy: off the window's start path

        filters = SearchFilters(include_deleted=self.include_deleted, roles=self.roles, project=self.project)
        return engine.search(self.query, conversation_id=self.conversation_id, top_k=self.top_k,
                             filters=filters, rerank=self.rerank)


class MemoryLister(Protocol):
    """The read a query runs on (MemoryEngine; safe by default: held-back hand edits left out)."""

    def list_memories(self, *, conversation_id: str | None = ..., role: str | None = ...,
                      kind: str | None = ..., include_deleted: bool = ...,
                      include_summaries: bool = ...) -> list[Memory]: ...


@dataclass(frozen=True)
class MemoryPage:
    items: tuple[Memory, ...]
    total: int
    offset: int
    limit: int
    has_more: bool

    def json(self) -> MemoryPageJSON:
        return {"memories": [memory_json(m) for m in self.items], "total": self.total,
                "offset": self.offset, "limit": self.limit, "has_more": self.has_more}


@dataclass(frozen=True)
class MemoryQuery:
    """Which memories to list and which page of them: the one filter + paging of every front end.

    `roles` limits the listing when `role` is not given (REST without `type`: facts and
    summaries). Expired memories (TTL passed, not yet dropped) are left out unless deleted ones
    are asked for too. `contains` is a case-insensitive substring of the text.
    """

    conversation_id: str | None = None
    role: str | None = None
    kind: str | None = None
    roles: tuple[str, ...] | None = None
    include_deleted: bool = False
    include_summaries: bool = True
    contains: str | None = None
    newest_first: bool = True
    limit: int | None = None
    offset: int = 0

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in KINDS:
            raise ValidationError(f"kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.role is not None and self.role not in ROLES:
            raise ValidationError(f"role {self.role!r} is not one of {', '.join(ROLES)}")
        if self.conversation_id is not None:
            validate_conversation_id(self.conversation_id)  # "../x" is an error, not an empty list
        if self.limit is not None and not 1 <= self.limit <= MAX_PAGE:
            raise ValidationError(f"limit must be between 1 and {MAX_PAGE}, not {self.limit}")
        if self.offset < 0:
            raise ValidationError(f"offset must be 0 or more, not {self.offset}")

    @classmethod
    def of_type(cls, type_: str | None, **fields: Any) -> MemoryQuery:
        """REST's `type`: a kind (fact, preference, context) or a role; none = facts + summaries."""
        if type_ is not None and type_ not in KINDS and type_ not in ROLES:
            raise ValidationError(f"type {type_!r} is not one of {', '.join(KINDS + ROLES)}")
        if type_ is None:
            return cls(roles=(Role.MEMORY.value, Role.SUMMARY.value), **fields)
        if type_ in KINDS:
            return cls(kind=type_, **fields)
        return cls(role=type_, **fields)

    def filters(self) -> dict[str, Any]:
        """The store-level filters (`list_memories` keywords) of this query."""
        return {"conversation_id": self.conversation_id, "role": self.role, "kind": self.kind,
                "include_deleted": self.include_deleted, "include_summaries": self.include_summaries}

    def select(self, memories: Iterable[Memory], now: datetime | None = None) -> list[Memory]:
        """The filters the store does not apply, then the order."""
        now = now or datetime.now(UTC)
        needle = self.contains.casefold() if self.contains else None
        items = [m for m in memories
                 if (self.roles is None or m.role in self.roles)
                 and (self.include_deleted or not m.expired(now))
                 and (needle is None or needle in m.text.casefold())]
        items.sort(key=lambda m: (m.created_at, m.path), reverse=self.newest_first)
        return items

    def page(self, items: Sequence[Memory]) -> MemoryPage:
        """This query's page of already selected `items`."""
        n = self.limit if self.limit is not None else max(len(items), 1)
        page = tuple(items[self.offset: self.offset + n])
        return MemoryPage(page, len(items), self.offset, n, self.offset + n < len(items))

    def run(self, reads: MemoryLister) -> MemoryPage:
        """List, filter, order and page."""
        return self.page(self.select(reads.list_memories(**self.filters())))
