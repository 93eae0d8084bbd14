"""What each MCP tool does to an open store, as plain JSON values.

The MCP server (mcp_server.py) registers these under OpenMemory-like names; they run on the
process that holds the store's writer lock, either directly or after a forward (mcp_forward.py).
Every write carries `source: mcp` and the client's name into front matter and commit trailers.
A hand edit held back for a likely secret (until the user answers Redact / Keep) is never given
out: lists and searches leave it out, asking for it by id is an error that says how to answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from desktop_mem.engine.api import MemoryEngine, Planned, SearchFilters, kind_of, parse_as_of
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    KINDS,
    ConflictError,
    NotFoundError,
    SecretsPolicy,
    ValidationError,
)
from desktop_mem.engine.schema import (
    MemoryJSON,
    MemoryPageJSON,
    MemoryQuery,
    SearchJSON,
    SearchRequest,
    commit_json,
    memory_json,
    proposal_json,
    search_hit_json,
)

SOURCE = "mcp"
MAX_LIST = 500
NEIGHBOURS = 5  # similar stored facts per new fact shown to the reconciling LLM


def scope_of(project: str | None) -> str | None:
    """A project's scope from the name (or scope) a client gave; None for none."""
    from desktop_mem.engine.api import project_scope

    return str(project_scope(project)) if project else None


def search(engine: MemoryEngine, query: str, conversation: str | None, top_k: int | None,
           as_of: str | None = None, *, client: str | None = None, project: str | None = None) -> SearchJSON:
    """The read path over facts and preferences (not chat turns), best first, with scores;
    `as_of` (ISO date or date-time): over what was live then. What reaches `client` (the AI
    tool that asked) is noted in the sent log, as what reaches a chat model is."""
    if not query.strip():
        raise ValidationError("query is empty")
    k = max(1, min(int(top_k or engine.config["retrieval.top_k"]), 50))
    request = SearchRequest(query, conversation, k, project=scope_of(project), roles=("memory",),
                            rerank=False, as_of=parse_as_of(as_of) if as_of else None)
    results = request.run(engine)
    if client:
        engine.note_sent([r.memory.id for r in results], "MCP", client)
    return {"query": query, "results": [search_hit_json(r) for r in results]}


def add(
    engine: MemoryEngine, texts: Sequence[str], conversation: str | None, kind: str | None, client: str,
    reconcile: bool = False, project: str | None = None,
) -> dict[str, Any]:
    """Store the texts as facts, all in one commit or none, with provenance.

    As for the facts a chat turn extracts, nobody is there to ask about a likely secret: it is
    redacted unless `security.secrets` is "keep". With `reconcile`, the facts are first weighed
    against similar stored ones by the memory LLM, as a chat turn's facts are (ADD / UPDATE /
    DELETE / NONE); without a reachable LLM they are added as they are.
    """
    items = [t.strip() for t in texts if t and t.strip()]
    if not items:
        raise ValidationError("nothing to add: give `text` or a non-empty `texts` list")
    if kind is not None and kind not in KINDS:
        raise ValidationError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    policy = SecretsPolicy.unattended(engine.config["security.secrets"])
    if project and conversation:
        raise ValidationError("give `conversation` or `project`, not both: a memory has one scope")
    conv = scope_of(project) or conversation or GLOBAL_CONVERSATION
    if reconcile and engine.config["llm.base_url"]:
        return _add_reconciled(engine, items, conv, kind, client, policy)
    # one commit for the whole batch, or nothing: a retry after a failure makes no duplicates (#22)
    memories = engine.add_many(items, conversation_id=conv, kinds=[kind or str(kind_of(t)) for t in items],
                               source=SOURCE, client=client, secrets=policy)
    return {"added": [memory_json(m) for m in memories]}


def _add_reconciled(
    engine: MemoryEngine, items: Sequence[str], conv: str, kind: str | None, client: str, policy: str
) -> dict[str, Any]:
    """Reconcile against the similar stored facts (the LLM runs without the lock), then apply
    every decision as ONE commit through the write path's own apply step."""
    existing: dict[str, str] = {}
    for text in items:  # the neighbourhood a chat turn's facts are reconciled against
        for r in engine.search(text, conversation_id=conv, top_k=NEIGHBOURS,
                               filters=SearchFilters(roles=("memory",)), use_mmr=False):
            existing.setdefault(r.memory.id, r.memory.text)
    result = engine.reconcile(items, list(existing.items()))
    planned = [Planned(str(d.event), d.text, d.target_id, kind or str(kind_of(d.text)), SOURCE)
               for d in result.decisions]
    applied = engine.apply_decisions(conv, planned, source=SOURCE, client=client, secrets=policy)
    out: dict[str, Any] = {
        "added": [memory_json(m) for m in applied.added],
        "updated": [{"updated": memory_json(new), "replaced": tomb.id} for tomb, new in applied.updated],
        "deleted": [memory_json(m) for m in applied.deleted], "unchanged": applied.unchanged,
        "commit": applied.commit,
    }
    if result.error:
        out["note"] = result.error
    return out


def list_memories(
    engine: MemoryEngine, conversation: str | None, kind: str | None, limit: int | None, offset: int | None,
    as_of: str | None = None, project: str | None = None,
) -> MemoryPageJSON:
    """Live facts/preferences/context, newest first, one page; `as_of`: those live then;
    `project`: that project's own (instead of a conversation's)."""
    if project and conversation:
        raise ValidationError("give `conversation` or `project`, not both")
    query = MemoryQuery(conversation_id=scope_of(project) or conversation, role="memory", kind=kind,
                        include_summaries=False,
                        limit=max(1, min(int(limit or 50), MAX_LIST)), offset=max(0, int(offset or 0)))
    if as_of:
        items = engine.list_as_of(parse_as_of(as_of), **query.filters())
        return query.page(query.select(items)).json()
    out = query.run(engine).json()
    if left_out := engine.held_back_left_out(**query.filters()):
        out["note"] = (f"{left_out} hand-edited memories are not listed: they hold a likely "
                       "secret and wait for the user's Redact / Keep answer in desktop-mem")
    return out


def get(engine: MemoryEngine, memory_id: str) -> MemoryJSON:
    """One memory, live or deleted (not a held-back hand edit)."""
    return memory_json(engine.get(memory_id))


def update(engine: MemoryEngine, memory_id: str, text: str, client: str,
           expected_hash: str | None = None) -> dict[str, Any]:
    """UPDATE as the write path does it: the old memory is kept as a tombstone, a new id is made.
    `expected_hash`: the content_hash the client read; other content now is a ConflictError that
    names what changed (without it a change made outside the app is committed first)."""
    if not text.strip():
        raise ValidationError("text is empty")
    current = engine.get(memory_id)
    if current.deleted:
        raise ValidationError(f"memory {current.id} is deleted; restore_memory it first")
    policy = SecretsPolicy.unattended(engine.config["security.secrets"])
    tomb, new = engine.replace(current.id, text, source=SOURCE, secrets=policy, client=client,
                               expected_hash=expected_hash)
    return {"updated": memory_json(new), "replaced": tomb.id}


def delete(engine: MemoryEngine, ids: Sequence[str], client: str) -> dict[str, Any]:
    """Soft-delete each id (restorable); unknown or already deleted ids are reported, not fatal."""
    if not ids:
        raise ValidationError("ids is empty")
    deleted, skipped = [], []
    for memory_id in ids:
        try:
            current = engine.get(memory_id)
        except NotFoundError as exc:
            skipped.append({"id": memory_id, "reason": str(exc)})
            continue
        if current.deleted:
            skipped.append({"id": current.id, "reason": "already deleted"})
            continue
        try:
            deleted.append(memory_json(engine.delete(current.id, source=SOURCE, client=client)))
        except ConflictError as exc:  # e.g. its file was deleted by hand meanwhile (committed)
            skipped.append({"id": current.id, "reason": str(exc)})
    return {"deleted": deleted, "skipped": skipped}


def restore(engine: MemoryEngine, memory_id: str, client: str,
            expected_hash: str | None = None) -> dict[str, Any]:
    """Bring a soft-deleted memory back (`expected_hash`: as for update)."""
    current = engine.get(memory_id)
    if not current.deleted:
        raise ValidationError(f"memory {current.id} is not deleted")
    return {"restored": memory_json(engine.restore(current.id, source=SOURCE, client=client,
                                                   expected_hash=expected_hash))}


def history(engine: MemoryEngine, memory_id: str | None, limit: int | None) -> dict[str, Any]:
    """Classified events (ADD / UPDATE / DELETE / RESTORE / EDIT ...) with text diffs, newest first."""
    n = max(1, min(int(limit or 20), 200))
    if memory_id:
        commits = engine.memory_history(engine.get(memory_id).id, limit=n)
    else:
        commits = engine.history(limit=n)
    return {"commits": [commit_json(c) for c in commits]}


# ChatGPT connectors and deep research call exactly two tools, `search` and `fetch`, with fixed
# shapes: search(query) -> {"results": [{id, title, url}]}, fetch(id) -> {id, title, text, url,
# metadata}, each as one JSON text item. The url is the memory's MCP resource, for citation.
TITLE_CHARS = 80


def _title(text: str) -> str:
    """A memory's first line, cut at TITLE_CHARS on a word boundary."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS].rsplit(" ", 1)[0] + "…"


def resource_url(memory_id: str) -> str:
    return f"memory://memories/{memory_id}"


def connector_search(engine: MemoryEngine, query: str, *, client: str | None = None) -> dict[str, Any]:
    """`search` as ChatGPT connectors require it: the read path's best facts as id, title, url."""
    found = search(engine, query, None, None, client=client)
    return {"results": [{"id": hit["id"], "title": _title(hit["text"]), "url": resource_url(hit["id"])}
                        for hit in found["results"]]}


def connector_fetch(engine: MemoryEngine, memory_id: str) -> dict[str, Any]:
    """`fetch` as ChatGPT connectors require it: one memory's full text, with its front matter
    (kind, scope, when, who wrote it) as metadata."""
    m = memory_json(engine.get(memory_id))
    keys = ("kind", "conversation", "created_at", "updated_at", "valid_from", "valid_to", "source",
            "client", "deleted", "replaced_by")
    return {"id": m["id"], "title": _title(m["text"]), "text": m["text"], "url": resource_url(m["id"]),
            "metadata": {k: m[k] for k in keys if m.get(k) not in (None, "")}}  # type: ignore[literal-required]


def summary(engine: MemoryEngine, conversation: str) -> str:
    """The rolling summary of a conversation as Markdown text."""
    memory = engine.summary(conversation)
    if memory is None:
        raise NotFoundError(f"conversation {conversation!r} has no summary yet")
    return engine.get(memory.id).text  # a held-back summary is refused (HeldBackError), not redacted


def review(engine: MemoryEngine, action: str, proposal_id: str | None, text: str | None) -> dict[str, Any]:
    """Review mode's proposals: list them, or accept (optionally with `text`) / reject one."""
    if action == "list":
        found, broken = engine.proposals()
        return {"proposals": [proposal_json(p) for p in found], "unreadable": broken}
    if action not in ("accept", "reject"):
        raise ValidationError(f"action {action!r} is not one of list, accept, reject")
    if not proposal_id:
        raise ValidationError(f"{action} needs the proposal's id; action=list shows them")
    if action == "accept":
        proposal, commit = engine.accept_proposal(proposal_id, text)
    else:
        proposal, commit = engine.reject_proposal(proposal_id)
    return {action + "ed": proposal_json(proposal), "commit": commit}


def tidy(engine: MemoryEngine) -> dict[str, Any]:
    """Propose a clean-up as review proposals (one commit); what was proposed and why."""
    report = engine.tidy_up()
    return {"proposed": [{**dict(p.extra.get("tidy", {})), "id": p.id, "summary": p.describe()}
                         for p in report.proposals],
            "counts": report.counts(), "not_proposed_again": report.skipped_rejected,
            "already_waiting": report.skipped_pending, "commit": report.commit, "note": report.model_error}
