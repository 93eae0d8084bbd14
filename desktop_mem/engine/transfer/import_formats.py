"""Import formats parsed into Entries: a ChatGPT export, a JSON list of memories (ours or
anyone's) and Markdown bullet lists (Claude and mem0 exports: peer_exports.py). Pure parsing:
nothing here writes to a store."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from desktop_mem.engine.chat.fact_types import kind_of
from desktop_mem.engine.models import GLOBAL_CONVERSATION, KINDS, TURN_ROLES, Role, ValidationError
from desktop_mem.engine.store import front_matter
from desktop_mem.engine.store.conversation_ids import slugify_conversation_id, validate_conversation_id
from desktop_mem.engine.store.markdown_store import parse_when

EXPORT_FORMAT = "desktop-mem-export"  # the `format` key of our own JSON export
NAMESPACE = uuid.UUID("6f2b8d1e-3c57-4e8a-9a41-0d5c7e2f9b13")  # fixed: ids must stay stable


class ImportFileError(ValidationError):
    """The file as a whole cannot be imported (not JSON, wrong shape, unreadable)."""


@dataclass(frozen=True)
class Skipped:
    """An entry left out of the import: where it is in the file and why."""

    where: str
    reason: str


@dataclass(frozen=True)
class Entry:
    """One memory to write: its stable id and everything its front matter will say."""

    id: str
    conversation_id: str
    role: str
    text: str
    created_at: datetime | None = None
    kind: str | None = None
    source: str = "import"
    extra: Mapping[str, Any] = field(default_factory=dict)
    deleted_at: datetime | None = None
    replaced_by: str | None = None
    summarized_count: int = 0


def stable_id(*parts: object) -> str:
    name = "\x1f".join(str(p) for p in parts)
    try:
        return str(uuid.uuid5(NAMESPACE, name))
    except UnicodeEncodeError:  # a lone surrogate from a JSON file: the entry is refused later
        return str(uuid.uuid5(NAMESPACE, name.encode("utf-8", "surrogatepass").hex()))


def conversation_for(title: str, source_id: str) -> str:
    """A readable, stable conversation id: the title's slug plus a hash of the source id."""
    return f"{slugify_conversation_id(title)[:52].rstrip('-._')}-{stable_id(source_id)[:8]}"


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


# ------------------------------------------------------------------------- ChatGPT


def parse_chatgpt(
    data: Any, path: Path
) -> tuple[dict[str, str], list[Entry], list[Skipped], list[str]]:
    if not isinstance(data, list):
        raise ImportFileError(f"{path} is not a ChatGPT export: expected a list of conversations")
    titles: dict[str, str] = {}
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    hidden = 0
    for n, conv in enumerate(data, 1):
        if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
            skipped.append(Skipped(f"conversation {n}", "has no 'mapping' of messages (not a conversation)"))
            continue
        title = str(conv.get("title") or "").strip() or "Untitled"
        label = f"conversation {n} {title!r}"
        source_id = str(conv.get("conversation_id") or conv.get("id") or f"{title}:{conv.get('create_time')}")
        conv_id = conversation_for(title, source_id)
        nodes, problem = _branch(conv["mapping"], conv.get("current_node"))
        if problem:
            skipped.append(Skipped(label, problem))
        last = _epoch(conv.get("create_time")) or datetime(1970, 1, 1, tzinfo=UTC)
        count = 0
        for i, node in enumerate(nodes, 1):
            message = node.get("message")
            if not isinstance(message, dict):
                continue
            author = message.get("author")
            role = author.get("role") if isinstance(author, dict) else None
            meta = message.get("metadata")
            meta = meta if isinstance(meta, dict) else {}
            if role not in TURN_ROLES or meta.get("is_visually_hidden_from_conversation"):
                hidden += 1
                continue
            text, why = _message_text(message)
            if text is None:
                skipped.append(Skipped(f"{label}: message {i}", why))
                continue
            # Turns must sort in the order they were said, even with missing or equal times.
            when = _epoch(message.get("create_time")) or last
            when = max(when, last + timedelta(microseconds=1)) if count else when
            last = when
            mid = str(message.get("id") or node.get("id") or f"{source_id}:{i}")
            entries.append(Entry(stable_id("chatgpt", mid), conv_id, role, text, when,
                                 extra={"imported_from": f"{label}: message {i}"}))
            count += 1
        if count:
            titles[conv_id] = title
        elif not problem:
            skipped.append(Skipped(label, "has no user or assistant message with text"))
    notes = [f"{hidden} system, tool and hidden messages were left out (not part of the chat you saw)"] \
        if hidden else []
    return titles, entries, skipped, notes


def _branch(mapping: Mapping[str, Any], current: Any) -> tuple[list[Mapping[str, Any]], str]:
    """The messages of the branch the user last saw, root first: current_node's parent chain,
    else from the root following the last child at each fork."""
    nodes = {k: v for k, v in mapping.items() if isinstance(v, dict)}
    chain: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    if isinstance(current, str) and current in nodes:
        key: Any = current
        while isinstance(key, str) and key in nodes and key not in seen:
            seen.add(key)
            chain.append(nodes[key])
            key = nodes[key].get("parent")
        if isinstance(key, str) and key in seen:
            return [], "its message chain loops back on itself"
        return chain[::-1], ""
    roots = [k for k, v in nodes.items() if v.get("parent") not in nodes]
    if not roots:
        return [], "has no first message (every message points to a parent)"
    key = roots[0]
    while isinstance(key, str) and key in nodes and key not in seen:
        seen.add(key)
        chain.append(nodes[key])
        children = nodes[key].get("children")
        key = children[-1] if isinstance(children, list) and children else None
    return chain, ""


def _message_text(message: Mapping[str, Any]) -> tuple[str | None, str]:
    content = message.get("content")
    if not isinstance(content, dict):
        return None, "has no content"
    parts = content.get("parts")
    if content.get("content_type") not in ("text", "multimodal_text") or not isinstance(parts, list):
        kind = content.get("content_type") or "unknown"
        return None, f"has {kind} content, not text"
    texts = [p for p in parts if isinstance(p, str) and p.strip()]
    if not texts:
        return None, "has no text parts" + (" (only images or files)" if parts else "")
    text = "\n\n".join(t.strip() for t in texts)
    return (text, "") if "\x00" not in text else (None, "contains a NUL character")


# -------------------------------------------------------------------- JSON memories


def parse_memory_list(data: Any, path: Path) -> tuple[dict[str, str], list[Entry], list[Skipped]]:
    titles: dict[str, str] = {}
    ours = isinstance(data, dict) and data.get("format") == EXPORT_FORMAT
    if isinstance(data, dict) and isinstance(data.get("memories"), list):
        for conv in data.get("conversations") or []:
            if isinstance(conv, dict) and isinstance(conv.get("id"), str) and conv.get("title"):
                titles[conv["id"]] = str(conv["title"])
        items = data["memories"]
    elif isinstance(data, list):
        items = data
    else:
        raise ImportFileError(
            f"{path} is not a list of memories: expected [{{\"text\": ...}}, ...] or a desktop-mem export"
        )
    entries: list[Entry] = []
    skipped: list[Skipped] = []
    for n, item in enumerate(items, 1):
        try:
            entries.append(_memory_entry(item, n, ours))
        except ValidationError as exc:
            skipped.append(Skipped(f"memory {n}", str(exc)))
    for conv_id in list(titles):
        try:
            validate_conversation_id(conv_id)
        except ValidationError as exc:
            skipped.append(Skipped(f"conversation {conv_id!r}", str(exc)))
            del titles[conv_id]
    return titles, entries, skipped


def _memory_entry(item: Any, n: int, ours: bool) -> Entry:
    if not isinstance(item, dict):
        raise ValidationError("is not an object with a \"text\"")
    text = item.get("text", item.get("content"))
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("has no \"text\" (or \"content\")")
    if "\x00" in text:
        raise ValidationError("the text contains a NUL character")
    role = str(item.get("role") or "memory")
    if role not in (Role.MEMORY, *TURN_ROLES) and not (ours and role == Role.SUMMARY):
        raise ValidationError(f"role {role!r} is not one of memory, user, assistant")
    kind = item.get("kind", item.get("type"))
    if role != Role.MEMORY:
        kind = None
    elif kind is None:
        kind = kind_of(text)
    elif kind not in KINDS:
        raise ValidationError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    conv = item.get("conversation_id") or GLOBAL_CONVERSATION
    if not isinstance(conv, str):
        raise ValidationError(f"conversation_id {conv!r} is not text")
    try:
        validate_conversation_id(conv)
    except ValidationError:
        conv = slugify_conversation_id(conv)  # e.g. "Trip to Rome" from another tool
    created = parse_when(item.get("created_at"), "created_at")
    mid = item.get("id")
    if not isinstance(mid, str) or not mid.strip():
        mid = stable_id("json", conv, role, created.isoformat() if created else "", text.strip())
    extra: dict[str, Any] = {}
    if ours:
        given = item.get("extra") or {}
        if not isinstance(given, dict):
            raise ValidationError("\"extra\" is not an object of keys and values")
        # extra holds the user's own keys; it can never set what identifies a memory
        extra = {str(k): v for k, v in given.items() if k not in front_matter.KNOWN_KEYS}
        for key in ("updated_at", "expires_at"):
            when = parse_when(item.get(key), key)
            if when is not None:
                extra[key] = when
        if item.get("summary_kind"):
            extra["summary_kind"] = item["summary_kind"]
    deleted = parse_when(item.get("deleted_at"), "deleted_at")
    if deleted is None and item.get("deleted"):
        deleted = created or datetime.now(UTC)
    count = item.get("summarized_count")
    return Entry(
        mid.strip(), conv, role, text.strip(), created, kind,
        source=str(item.get("source") or "import") if ours else "import",
        extra={**extra, "imported_from": f"memory {n}"} if not ours else extra,
        deleted_at=deleted, replaced_by=str(item["replaced_by"]) if item.get("replaced_by") else None,
        summarized_count=count if isinstance(count, int) and not isinstance(count, bool) else 0,
    )


# ------------------------------------------------------------------------- Markdown

_BULLET = re.compile(r"^(\s*)[-*+]\s+(?:\[[ xX]\]\s+)?(.*)$")
_HEADING = re.compile(r"^#\s+(.+?)\s*#*\s*$")


def parse_markdown(raw: bytes, path: Path) -> tuple[dict[str, str], list[Entry], list[Skipped]]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportFileError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    titles: dict[str, str] = {}
    skipped: list[Skipped] = []
    facts: list[tuple[int, str, str]] = []  # (line, conversation, text)
    conv = GLOBAL_CONVERSATION
    for n, line in enumerate(text.splitlines(), 1):
        heading, bullet = _HEADING.match(line), _BULLET.match(line)
        if heading:
            title = heading.group(1)
            conv = slugify_conversation_id(title)
            titles[conv] = title
        elif bullet and bullet.group(2).strip():
            facts.append((n, conv, bullet.group(2).strip()))
        elif line.startswith((" ", "\t")) and line.strip() and facts and facts[-1][1] == conv:
            first, where, body = facts[-1]  # an indented line continues the bullet above it
            facts[-1] = (first, where, f"{body} {line.strip()}")
        elif line.strip() and not line.lstrip().startswith("#") and not bullet:
            skipped.append(Skipped(f"line {n}", "is not a '- ' or '* ' bullet (only bullets become facts)"))
    entries = [
        Entry(stable_id("markdown", c, body), c, "memory", body, None, kind_of(body),
              extra={"imported_from": f"line {n}"})
        for n, c, body in facts if "\x00" not in body
    ]
    if not entries:
        raise ImportFileError(f"{path} has no '- ' bullet lines to import")
    return {c: t for c, t in titles.items() if any(e.conversation_id == c for e in entries)}, entries, skipped
