"""Exports of the tools people leave: Claude's data export and mem0 / OpenMemory memory exports,
parsed into Entries. Pure parsing, like import_formats: nothing here writes to a store.

Claude (Settings -> Privacy -> Export data) sends a zip holding `conversations.json` (a list of
conversations, each with `uuid`, `name`, `created_at` and `chat_messages`: `uuid`, `sender`
"human" | "assistant", `text`, `content` blocks, `created_at`), `memories.json` (a list, one per
account, with `conversations_memory`: the Markdown Claude kept about the user, and
`project_memories`: project uuid -> Markdown) and `projects.json` (names of those projects).

mem0 answers `get_all()` / `GET /v1/memories/` with `{"results": [...]}` or a bare list of
`{"id", "memory", "user_id", "metadata", "categories", "created_at", "updated_at"}`; OpenMemory's
backup export is a zip whose `memories.json` holds `{"user", "memories": [{"id", "content",
"state", "created_at", "deleted_at", ...}], "categories", "memory_categories", "export_meta"}`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from desktop_mem.engine.chat.fact_types import kind_of
from desktop_mem.engine.models import GLOBAL_CONVERSATION, ValidationError
from desktop_mem.engine.store.markdown_store import parse_when
from desktop_mem.engine.transfer.import_formats import (
    Entry,
    ImportFileError,
    Skipped,
    conversation_for,
    stable_id,
)

Parsed = tuple[dict[str, str], list[Entry], list[Skipped], list[str]]

# mem0 / OpenMemory states: archived and deleted memories are kept as soft deletes (restorable
# from the timeline), never as live facts the model would be told.
_GONE_STATES = ("archived", "deleted")
_LIVE_STATES = ("active", "paused")


def _when(value: Any, key: str) -> datetime | None:
    try:
        return parse_when(value, key)
    except ValidationError:
        return None


# --------------------------------------------------------------------------- Claude


def is_claude_conversations(data: Any) -> bool:
    first = data[0] if isinstance(data, list) and data else None
    return isinstance(first, dict) and "chat_messages" in first


def parse_claude(members: Mapping[str, Any], path: Path) -> Parsed:
    """`members`: the parsed JSON of conversations.json, memories.json and projects.json
    (whichever the export holds; at least one of the first two)."""
    conversations = members.get("conversations.json")
    memories = members.get("memories.json")
    if conversations is None and memories is None:
        raise ImportFileError(f"{path} has neither conversations.json nor memories.json; "
                              "is it a Claude data export?")
    if conversations is not None and not isinstance(conversations, list):
        raise ImportFileError(f"{path}: conversations.json is not a list of conversations")
    titles: dict[str, str] = {}
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    left_out = 0
    for n, conv in enumerate(conversations or [], 1):
        left_out += _claude_conversation(conv, n, titles, entries, skipped)
    projects = _project_names(members.get("projects.json"))
    _claude_memories(memories, projects, titles, entries, skipped)
    notes = [f"{left_out} tool calls, tool results and attachments were left out (only the text "
             "you and Claude wrote is imported)"] if left_out else []
    return titles, entries, skipped, notes


def _claude_conversation(conv: Any, n: int, titles: dict[str, str], entries: list[Entry],
                         skipped: list[Skipped]) -> int:
    if not isinstance(conv, dict) or not isinstance(conv.get("chat_messages"), list):
        skipped.append(Skipped(f"conversation {n}", "has no 'chat_messages' (not a conversation)"))
        return 0
    title = str(conv.get("name") or "").strip() or "Untitled"
    label = f"conversation {n} {title!r}"
    source_id = str(conv.get("uuid") or f"{title}:{conv.get('created_at')}")
    conv_id = conversation_for(title, source_id)
    last = _when(conv.get("created_at"), "created_at") or datetime(1970, 1, 1, tzinfo=UTC)
    count = left_out = 0
    for i, message in enumerate(conv["chat_messages"], 1):
        if not isinstance(message, dict):
            skipped.append(Skipped(f"{label}: message {i}", "is not a message object"))
            continue
        role = {"human": "user", "user": "user", "assistant": "assistant"}.get(str(message.get("sender")))
        if role is None:
            skipped.append(Skipped(f"{label}: message {i}", f"sender {message.get('sender')!r} is "
                                   "neither human nor assistant"))
            continue
        text, dropped = _claude_text(message)
        left_out += dropped
        if not text:
            skipped.append(Skipped(f"{label}: message {i}", "has no text (only tools or files)"))
            continue
        if "\x00" in text:
            skipped.append(Skipped(f"{label}: message {i}", "contains a NUL character"))
            continue
        when = _when(message.get("created_at"), "created_at") or last
        when = max(when, last + timedelta(microseconds=1)) if count else when  # said order
        last = when
        mid = str(message.get("uuid") or f"{source_id}:{i}")
        entries.append(Entry(stable_id("claude", mid), conv_id, role, text, when,
                             extra={"imported_from": f"{label}: message {i}"}))
        count += 1
    if count:
        titles[conv_id] = title
    else:
        skipped.append(Skipped(label, "has no human or assistant message with text"))
    return left_out


def _claude_text(message: Mapping[str, Any]) -> tuple[str, int]:
    """The message's text blocks joined (tool use, tool results and attachments counted, not
    imported); older exports have only the flat `text`."""
    blocks = message.get("content")
    if isinstance(blocks, list) and blocks:
        texts = [b["text"].strip() for b in blocks
                 if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
                 and b["text"].strip()]
        dropped = sum(1 for b in blocks if isinstance(b, dict) and b.get("type") != "text")
        dropped += len(message.get("attachments") or []) + len(message.get("files") or [])
        if texts:
            return "\n\n".join(texts), dropped
    text = message.get("text")
    return (text.strip() if isinstance(text, str) else ""), 0


def _project_names(data: Any) -> dict[str, str]:
    items = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
    return {str(p["uuid"]): str(p.get("name") or "Project").strip() or "Project"
            for p in items if isinstance(p, dict) and p.get("uuid")}


def _claude_memories(data: Any, projects: Mapping[str, str], titles: dict[str, str],
                     entries: list[Entry], skipped: list[Skipped]) -> None:
    if data is None:
        return
    accounts = data if isinstance(data, list) else [data]
    for n, account in enumerate(accounts, 1):
        if not isinstance(account, dict):
            skipped.append(Skipped(f"memories.json item {n}", "is not an object"))
            continue
        text = account.get("conversations_memory")
        if isinstance(text, str):
            for j, fact in enumerate(memory_statements(text), 1):
                entries.append(_fact(GLOBAL_CONVERSATION, fact, f"Claude's memory, statement {j}"))
        project_memories = account.get("project_memories")
        for uuid, text in (project_memories.items() if isinstance(project_memories, dict) else ()):
            if not isinstance(text, str):
                continue
            name = projects.get(str(uuid), "Claude project")
            conv_id = conversation_for(name, f"claude-project:{uuid}")
            facts = memory_statements(text)
            for j, fact in enumerate(facts, 1):
                entries.append(_fact(conv_id, fact, f"memory of project {name!r}, statement {j}"))
            if facts:
                titles[conv_id] = name


def _fact(conversation_id: str, text: str, where: str) -> Entry:
    return Entry(stable_id("claude-memory", conversation_id, text), conversation_id, "memory", text,
                 None, kind_of(text), extra={"imported_from": where})


_MARKUP = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+|[*_`]+")
_HEADING_LINE = re.compile(r"^\s*(#{1,6}\s+.*|\*\*[^*]+\*\*:?|__[^_]+__:?)\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def memory_statements(markdown: str) -> list[str]:
    """The statements of a Markdown memory note: each bullet, else each sentence of a paragraph;
    headings ("**Work context**") are context, not facts."""
    out: list[str] = []
    for line in markdown.splitlines():
        if not line.strip() or _HEADING_LINE.match(line):
            continue
        plain = _MARKUP.sub("", line).strip()
        parts = [plain] if re.match(r"^\s*(?:[-*+]|\d+[.)])\s", line) else _SENTENCE_END.split(plain)
        out.extend(p.strip() for p in parts if len(p.strip()) > 2 and "\x00" not in p)
    return list(dict.fromkeys(out))  # a note repeating itself makes one fact


# ----------------------------------------------------------------------------- mem0


def is_mem0(data: Any) -> bool:
    if isinstance(data, dict):
        if isinstance(data.get("results"), list):
            return all(isinstance(i, dict) and "memory" in i for i in data["results"][:5])
        return isinstance(data.get("memories"), list) and ("export_meta" in data or "user" in data)
    first = data[0] if isinstance(data, list) and data else None
    return isinstance(first, dict) and "memory" in first and "text" not in first


def parse_mem0(data: Any, path: Path) -> Parsed:
    """mem0's `get_all` JSON or OpenMemory's backup export (its memories.json)."""
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        items, categories = data["results"], {}
    elif isinstance(data, dict) and isinstance(data.get("memories"), list):
        items, categories = data["memories"], _openmemory_categories(data)
    elif isinstance(data, list):
        items, categories = data, {}
    else:
        raise ImportFileError(f"{path} is not a mem0 export: expected {{\"results\": [...]}}, a list "
                              "of memories or OpenMemory's memories.json")
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    gone = 0
    users: set[str] = set()
    for n, item in enumerate(items, 1):
        try:
            entry = _mem0_entry(item, n, categories)
        except ValidationError as exc:
            skipped.append(Skipped(f"memory {n}", str(exc)))
            continue
        gone += entry.deleted_at is not None
        users.update(str(item[k]) for k in ("user_id",) if item.get(k))
        entries.append(entry)
    notes = []
    if gone:
        notes.append(f"{gone} archived or deleted memories are kept as deleted (restorable on the "
                     "timeline), never shown to the model")
    if len(users) > 1:
        notes.append(f"the file holds memories of {len(users)} mem0 users; all are imported as yours")
    return {}, entries, skipped, notes


def _openmemory_categories(data: Mapping[str, Any]) -> dict[str, list[str]]:
    names = {str(c.get("id")): str(c.get("name")) for c in data.get("categories") or []
             if isinstance(c, dict) and c.get("name")}
    by_memory: dict[str, list[str]] = {}
    for link in data.get("memory_categories") or []:
        if isinstance(link, dict) and str(link.get("category_id")) in names:
            by_memory.setdefault(str(link.get("memory_id")), []).append(names[str(link["category_id"])])
    return by_memory


def _mem0_entry(item: Any, n: int, categories: Mapping[str, list[str]]) -> Entry:
    if not isinstance(item, dict):
        raise ValidationError("is not an object with a \"memory\"")
    text = item.get("memory", item.get("content"))
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("has no \"memory\" (or \"content\") text")
    if "\x00" in text:
        raise ValidationError("the text contains a NUL character")
    state = str(item.get("state") or "active")
    if state not in _LIVE_STATES + _GONE_STATES:
        raise ValidationError(f"state {state!r} is not one of {', '.join(_LIVE_STATES + _GONE_STATES)}")
    created = _when(item.get("created_at"), "created_at")
    deleted = None
    if state in _GONE_STATES:
        deleted = (_when(item.get("deleted_at"), "deleted_at")
                   or _when(item.get("archived_at"), "archived_at")
                   or _when(item.get("updated_at"), "updated_at") or created or datetime.now(UTC))
    mid = item.get("id")
    source_id = str(mid) if isinstance(mid, str | int) and str(mid).strip() else text.strip()
    extra: dict[str, Any] = {"imported_from": f"mem0 memory {n}"}
    cats = item.get("categories") if isinstance(item.get("categories"), list) else categories.get(str(mid))
    if cats:
        extra["categories"] = [str(c) for c in cats if isinstance(c, str | int)][:20]
    updated = _when(item.get("updated_at"), "updated_at")
    if updated is not None and deleted is None:
        extra["updated_at"] = updated
    return Entry(stable_id("mem0", source_id), GLOBAL_CONVERSATION, "memory", text.strip(), created,
                 kind_of(text), extra=extra, deleted_at=deleted)
