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
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from desktop_mem.engine.chat.extraction import ChatModel, extract_facts, pattern_facts
from desktop_mem.engine.models import Memory, Operation
from desktop_mem.engine.store.transaction import Transaction
from desktop_mem.engine.transfer.import_formats import (  # noqa: F401 - Entry, ImportFileError, Skipped re-exported
    Entry,
    ImportFileError,
    Skipped,
    parse_chatgpt,
    parse_markdown,
    parse_memory_list,
    stable_id,
)
from desktop_mem.engine.transfer.ports import TransferSource

FORMATS = ("chatgpt", "json", "markdown")
PREVIEW_LINES = 8
Progress = Callable[[int, int], None]


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
    engine: TransferSource, path: Path, fmt: str | None = None, *, extract: bool = False
) -> ImportPlan:
    """Read `path` (format sniffed unless given) and say what importing it would add."""
    path = Path(path)
    if fmt is not None and fmt not in FORMATS:
        raise ImportFileError(f"unknown import format {fmt!r}; use one of {', '.join(FORMATS)}")
    raw = _read(path)
    fmt = fmt or _sniff(path, raw)
    if fmt == "markdown":
        titles, entries, skipped = parse_markdown(raw, path)
        notes: list[str] = []
    else:
        data = _load_json(raw, path)
        if fmt == "chatgpt":
            titles, entries, skipped, notes = parse_chatgpt(data, path)
        else:
            titles, entries, skipped = parse_memory_list(data, path)
            notes = []
    return _finish_plan(engine, path, fmt, titles, entries, skipped, notes, extract)


def _finish_plan(
    engine: TransferSource, path: Path, fmt: str, titles: dict[str, str], entries: list[Entry],
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


# ------------------------------------------------------------------------- applying


def apply_import(
    engine: TransferSource, plan: ImportPlan, progress: Progress | None = None, llm: ChatModel | None = None
) -> ImportResult:
    """Write the plan's entries (+ extracted facts if the plan asks) and make one commit.

    If a write fails, the files this import already wrote are removed again and the error is
    raised: an import is all or nothing.
    """
    engine.writer.require_writer()
    entries = list(plan.entries)
    notes = list(plan.notes)
    if plan.extract:
        facts, note = _extract(engine, entries, llm)
        entries += facts
        notes += [note] if note else []
    todo = [e for e in entries if engine.lookup(e.id) is None]
    # One transaction: if any write fails, every file this import wrote is put back as it was.
    with engine.writer.transaction(Operation.IMPORT, trailers={"Import-Format": plan.format},
                                   publish=False) as tx:
        for conv, title in plan.titles.items():
            if not engine.store.conversation_meta(conv).get("title"):
                tx.write_conversation_meta(conv, {**engine.store.conversation_meta(conv), "title": title})
        for i, entry in enumerate(todo, 1):
            _write(tx, entry)
            if progress is not None:
                progress(i, len(todo))
        written = list(tx.written)
        turns = sum(1 for m in written if m.role in ("user", "assistant"))
        facts_n = sum(1 for m in written if m.role == "memory")
        convs = len({m.conversation_id for m in written} | set(plan.titles))
        sha = None
        if tx.paths:
            only = {m.conversation_id for m in written} | set(plan.titles)
            tx.conversation = only.pop() if len(only) == 1 else None
            tx.subject = f"Import {plan.source.name}: {convs} conversations, {turns} turns, {facts_n} facts"
            sha = tx.publish().commit
    return ImportResult(convs, turns, facts_n, tuple(written), sha, plan.skipped,
                        plan.already_present + len(entries) - len(todo), tuple(notes))


def _write(tx: Transaction, e: Entry) -> Memory:
    extra = {k: v for k, v in e.extra.items() if k != "imported_from"}
    if e.role == "summary":
        memory = tx.write_summary(e.conversation_id, e.text, e.summarized_count)
        return tx.rewrite(memory, {"created_at": e.created_at, **extra} if e.created_at else extra)
    memory = tx.add(e.text, conversation_id=e.conversation_id, role=e.role, kind=e.kind, source=e.source,
                    created_at=e.created_at, memory_id=e.id, extra=extra)
    if e.deleted_at is None:
        return memory
    tomb = tx.soft_delete(memory, replaced_by=e.replaced_by)
    return tx.rewrite(tomb, {"deleted_at": e.deleted_at})


def _extract(engine: TransferSource, entries: list[Entry], llm: ChatModel | None) -> tuple[list[Entry], str]:
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
            facts.append(Entry(stable_id("fact", turn.id, i), turn.conversation_id, "memory", fact.text,
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

