"""Bring existing history in: a ChatGPT export, a JSON list of memories (ours or anyone's), or
Markdown bullet lists -> conversations, turns and facts.

`plan_import` reads and checks the whole file and writes nothing (the dry run shows it);
`apply_import` writes every file under the writer lock and makes one commit. Ids are derived
from the source (uuid5 of the ChatGPT message id, or of the entry's content), so importing the
same file again adds nothing. A file that cannot be read at all raises ImportFileError; entries
that are bad are left out and listed in `skipped` with where and why.
"""

from __future__ import annotations

import json
import re
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from desktop_mem.engine.conversation_ids import slugify_conversation_id, validate_conversation_id
from desktop_mem.engine.extraction import ChatModel, extract_facts, kind_of, pattern_facts
from desktop_mem.engine.markdown_store import parse_when
from desktop_mem.engine.models import GLOBAL_CONVERSATION, KINDS, Memory, ValidationError

if TYPE_CHECKING:
    from desktop_mem.engine.facade import MemoryEngine

FORMATS = ("chatgpt", "json", "markdown")
EXPORT_FORMAT = "desktop-mem-export"  # the `format` key of our own JSON export
NAMESPACE = uuid.UUID("6f2b8d1e-3c57-4e8a-9a41-0d5c7e2f9b13")  # fixed: ids must stay stable
PREVIEW_LINES = 8
Progress = Callable[[int, int], None]


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


@dataclass(frozen=True)
class ImportPlan:
    """What an import would add (already-present entries left out), and what it skips."""

    source: Path
    format: str
    titles: Mapping[str, str]
    entries: tuple[Entry, ...]
    skipped: tuple[Skipped, ...] = ()
    already_present: int = 0
    notes: tuple[str, ...] = ()
    extract: bool = False

    @property
    def conversations(self) -> int:
        """Conversations that get at least one new memory or a new title."""
        return len({e.conversation_id for e in self.entries} | set(self.titles))

    @property
    def turns(self) -> int:
        """New user and assistant turns."""
        return sum(1 for e in self.entries if e.role in ("user", "assistant"))

    @property
    def facts(self) -> int:
        """New facts (before any extraction at import time)."""
        return sum(1 for e in self.entries if e.role == "memory")

    def preview(self, n: int = PREVIEW_LINES) -> list[str]:
        """The first new entries as one line each, for the dry run."""
        lines = []
        for e in self.entries[:n]:
            text = " ".join(e.text.split())
            lines.append(f"{e.conversation_id:<20} {e.role:<9} {text[:70]}")
        return lines


@dataclass(frozen=True)
class ImportResult:
    """What an import wrote and its commit (None when nothing was new)."""

    conversations: int
    turns: int
    facts: int
    memories: tuple[Memory, ...]
    commit: str | None
    skipped: tuple[Skipped, ...]
    already_present: int
    notes: tuple[str, ...] = ()


# ---------------------------------------------------------------------------- planning


def plan_import(
    engine: MemoryEngine, path: Path, fmt: str | None = None, *, extract: bool = False
) -> ImportPlan:
    """Read `path` (format sniffed unless given) and say what importing it would add."""
    path = Path(path)
    if fmt is not None and fmt not in FORMATS:
        raise ImportFileError(f"unknown import format {fmt!r}; use one of {', '.join(FORMATS)}")
    raw = _read(path)
    fmt = fmt or _sniff(path, raw)
    if fmt == "markdown":
        titles, entries, skipped = _parse_markdown(raw, path)
        notes: list[str] = []
    else:
        data = _load_json(raw, path)
        if fmt == "chatgpt":
            titles, entries, skipped, notes = _parse_chatgpt(data, path)
        else:
            titles, entries, skipped = _parse_memory_list(data, path)
            notes = []
    return _finish_plan(engine, path, fmt, titles, entries, skipped, notes, extract)


def _finish_plan(
    engine: MemoryEngine, path: Path, fmt: str, titles: dict[str, str], entries: list[Entry],
    skipped: list[Skipped], notes: list[str], extract: bool,
) -> ImportPlan:
    limit = engine.store.max_file_bytes - 4096  # room for the front matter
    fresh: list[Entry] = []
    seen: set[str] = set()
    present = 0
    for e in entries:
        if len(e.text.encode("utf-8")) > limit:
            skipped.append(Skipped(_where(e), f"the text is over the store.max_file_bytes limit ({limit:,})"))
        elif e.id in seen or engine.lookup(e.id) is not None:
            present += 1
        else:
            seen.add(e.id)
            fresh.append(e)
    # A title is written only for a conversation that has none yet (never overwrite the user's).
    new_titles = {c: t for c, t in titles.items() if not engine.store.conversation_meta(c).get("title")}
    return ImportPlan(path, fmt, new_titles, tuple(fresh), tuple(skipped), present, tuple(notes), extract)


def _where(e: Entry) -> str:
    return str(e.extra.get("imported_from") or f"{e.conversation_id} {e.id}")


def _read(path: Path) -> bytes:
    try:
        if path.suffix.lower() == ".zip":  # a ChatGPT export as downloaded
            with zipfile.ZipFile(path) as archive:
                names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == "conversations.json"]
                if not names:
                    raise ImportFileError(f"{path} has no conversations.json inside; is it a ChatGPT export?")
                return archive.read(names[0])
        return path.read_bytes()
    except FileNotFoundError:
        raise ImportFileError(f"{path} does not exist") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise ImportFileError(f"cannot read {path}: {exc}") from None


def _sniff(path: Path, raw: bytes) -> str:
    if path.suffix.lower() in (".md", ".markdown", ".txt"):
        return "markdown"
    head = raw.lstrip()[:1]
    if head not in (b"[", b"{"):
        if path.suffix.lower() == ".json" or not raw.strip():
            return "json"  # let the JSON reader give its precise error
        return "markdown"
    try:
        data = json.loads(raw)
    except ValueError:
        return "json"
    first = data[0] if isinstance(data, list) and data else None
    return "chatgpt" if isinstance(first, dict) and "mapping" in first else "json"


def _load_json(raw: bytes, path: Path) -> Any:
    try:
        return json.loads(raw.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise ImportFileError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        cut = " - the file looks cut off; export it again" if exc.pos >= len(raw.rstrip()) - 1 else ""
        raise ImportFileError(
            f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{cut}"
        ) from None


def _stable_id(*parts: object) -> str:
    return str(uuid.uuid5(NAMESPACE, "\x1f".join(str(p) for p in parts)))


def _conversation_for(title: str, source_id: str) -> str:
    """A readable, stable conversation id: the title's slug plus a hash of the source id."""
    return f"{slugify_conversation_id(title)[:52].rstrip('-._')}-{_stable_id(source_id)[:8]}"


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    return None


# ------------------------------------------------------------------------- ChatGPT


def _parse_chatgpt(
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
        conv_id = _conversation_for(title, source_id)
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
            if role not in ("user", "assistant") or meta.get("is_visually_hidden_from_conversation"):
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
            entries.append(Entry(_stable_id("chatgpt", mid), conv_id, role, text, when,
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


def _parse_memory_list(data: Any, path: Path) -> tuple[dict[str, str], list[Entry], list[Skipped]]:
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
    if role not in ("memory", "user", "assistant") and not (ours and role == "summary"):
        raise ValidationError(f"role {role!r} is not one of memory, user, assistant")
    kind = item.get("kind", item.get("type"))
    if role != "memory":
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
        mid = _stable_id("json", conv, role, created.isoformat() if created else "", text.strip())
    extra: dict[str, Any] = {}
    if ours:
        extra = dict(item.get("extra") or {})
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


def _parse_markdown(raw: bytes, path: Path) -> tuple[dict[str, str], list[Entry], list[Skipped]]:
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
        Entry(_stable_id("markdown", c, body), c, "memory", body, None, kind_of(body),
              extra={"imported_from": f"line {n}"})
        for n, c, body in facts if "\x00" not in body
    ]
    if not entries:
        raise ImportFileError(f"{path} has no '- ' bullet lines to import")
    return {c: t for c, t in titles.items() if any(e.conversation_id == c for e in entries)}, entries, skipped


# ------------------------------------------------------------------------- applying


def apply_import(
    engine: MemoryEngine, plan: ImportPlan, progress: Progress | None = None, llm: ChatModel | None = None
) -> ImportResult:
    """Write the plan's entries (+ extracted facts if the plan asks) and make one commit.

    If a write fails, the files this import already wrote are removed again and the error is
    raised: an import is all or nothing.
    """
    engine._require_writer()
    entries = list(plan.entries)
    notes = list(plan.notes)
    if plan.extract:
        facts, note = _extract(engine, entries, llm)
        entries += facts
        notes += [note] if note else []
    written: list[Memory] = []
    titles_written: list[Path] = []
    with engine._write_lock:
        todo = [e for e in entries if engine.lookup(e.id) is None]
        try:
            for conv, title in plan.titles.items():
                if not engine.store.conversation_meta(conv).get("title"):
                    meta = {**engine.store.conversation_meta(conv), "title": title}
                    titles_written.append(engine.root / engine.store.write_conversation_meta(conv, meta))
            for i, entry in enumerate(todo, 1):
                written.append(_write(engine, entry))
                if progress is not None:
                    progress(i, len(todo))
        except BaseException:
            for memory in written:
                engine.store.remove_file(memory)
                engine._forget(memory)
            for title_file in titles_written:
                title_file.unlink(missing_ok=True)
            raise
        for memory in written:
            engine._remember(memory)
        turns = sum(1 for m in written if m.role in ("user", "assistant"))
        facts_n = sum(1 for m in written if m.role == "memory")
        convs = len({m.conversation_id for m in written} | set(plan.titles))
        sha = None
        if written or titles_written:
            subject = f"Import {plan.source.name}: {convs} conversations, {turns} turns, {facts_n} facts"
            only = {m.conversation_id for m in written} | set(plan.titles)
            sha = engine._after_write(written, [], "import", subject, only.pop() if len(only) == 1 else None,
                                      {"Import-Format": plan.format})
    return ImportResult(convs, turns, facts_n, tuple(written), sha, plan.skipped,
                        plan.already_present + len(entries) - len(todo), tuple(notes))


def _write(engine: MemoryEngine, e: Entry) -> Memory:
    store = engine.store
    extra = {k: v for k, v in e.extra.items() if k != "imported_from"}
    if e.role == "summary":
        memory = store.write_summary(e.conversation_id, e.text, e.summarized_count)
        return store.rewrite(memory, {"created_at": e.created_at, **extra} if e.created_at else extra)
    memory = store.new_memory(e.text, conversation_id=e.conversation_id, role=e.role, kind=e.kind,
                              source=e.source, created_at=e.created_at, memory_id=e.id, extra=extra)
    if e.deleted_at is None:
        return memory
    try:
        tomb = store.soft_delete(memory, replaced_by=e.replaced_by)
    except BaseException:
        store.remove_file(memory)
        raise
    return store.rewrite(tomb, {"deleted_at": e.deleted_at})


def _extract(engine: MemoryEngine, entries: list[Entry], llm: ChatModel | None) -> tuple[list[Entry], str]:
    """Facts from every imported user turn (the write path's extraction), ids stable per turn."""
    if llm is None and engine.config["llm.base_url"]:
        llm = engine.chat_service.memory_llm
    facts: list[Entry] = []
    failures = 0
    for turn in (e for e in entries if e.role == "user"):
        if llm is None:
            found = pattern_facts(turn.text)
        else:
            result = extract_facts(llm, turn.text)
            found, failures = result.facts, failures + (1 if result.error else 0)
        for i, fact in enumerate(found):
            facts.append(Entry(_stable_id("fact", turn.id, i), turn.conversation_id, "memory", fact.text,
                               turn.created_at, fact.kind, extra={"imported_from": f"facts of {turn.id}"}))
    note = f"fact extraction by the LLM failed for {failures} messages; pattern rules were used" \
        if failures else ""
    return facts, note


def iter_plan_lines(plan: ImportPlan) -> Iterator[str]:
    """The dry run's report: counts, a preview and every skipped entry with its reason."""
    yield (f"{plan.source.name} ({plan.format}): would add {plan.conversations} conversations, "
           f"{plan.turns} turns, {plan.facts} facts")
    if plan.already_present:
        yield f"already in the store (left out): {plan.already_present}"
    if plan.extract:
        users = sum(1 for e in plan.entries if e.role == "user")
        yield f"facts would also be extracted from {users} user turns"
    for line in plan.preview():
        yield f"  {line}"
    if len(plan.entries) > PREVIEW_LINES:
        yield f"  ... and {len(plan.entries) - PREVIEW_LINES} more"
    for note in plan.notes:
        yield f"note: {note}"
    for s in plan.skipped:
        yield f"skipped: {s.where}: {s.reason}"

