"""Bring existing history in: a ChatGPT or Claude data export, a mem0 / OpenMemory memory export,
a JSON list of memories (ours or anyone's), or Markdown bullet lists -> conversations, turns and
facts.

`plan_import` reads and checks the whole file and writes nothing (the dry run shows it);
`apply_import` writes every file under the writer lock, one commit per 5,000 memories. Ids are derived
from the source (uuid5 of the ChatGPT message id, or of the entry's content), so importing the
same file again adds nothing. A file that cannot be read at all raises ImportFileError; entries
that are bad are left out and listed in `skipped` with where and why.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import yaml

from desktop_mem.engine import bounded_json
from desktop_mem.engine.chat.extraction import extract_facts
from desktop_mem.engine.chat.fact_types import ChatModel
from desktop_mem.engine.chat.pattern_rules import pattern_facts
from desktop_mem.engine.models import (
    TURN_ROLES,
    EngineError,
    Memory,
    Operation,
    Role,
    SecretsPolicy,
    ValidationError,
)
from desktop_mem.engine.store import front_matter
from desktop_mem.engine.store.conversation_ids import slugify_conversation_id, validate_conversation_id
from desktop_mem.engine.store.front_matter import FrontMatterError
from desktop_mem.engine.store.markdown_store import durable_batch
from desktop_mem.engine.store.ports import StoreFiles
from desktop_mem.engine.store.secrets_scan import SecretDetectedError, describe, redact, scan
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
from desktop_mem.engine.transfer.peer_exports import (
    is_claude_conversations,
    is_mem0,
    parse_claude,
    parse_mem0,
)
from desktop_mem.engine.transfer.ports import TransferSource

# An id from an import file: printable, one line, not too long (a NUL wrote the file and then
# crashed the commit; a newline or escape would mislead every listing).
_ID = re.compile(r"[^\x00-\x1f\x7f-\x9f]{1,200}")

FORMATS = ("chatgpt", "claude", "mem0", "json", "markdown")
PREVIEW_LINES = 8
# Limits on what an import may read: a 300 KB zip expanding to 300 MB took 706 MB of memory on
# a dry run. The decompressed size is checked while reading (a zip's header may lie).
MAX_IMPORT_BYTES = 100 * 1024 * 1024
MAX_IMPORT_ENTRIES = 200_000
MAX_ZIP_MEMBERS = 10_000
# What a JSON file may hold, counted before it is parsed: a 100 MiB file of tiny items
# (`[{}, {}, ...]`, from a small zip) became tens of millions of objects, over 1 GB, before the
# entry count was checked; a deeply nested one raised RecursionError. A real export of 100 MiB
# holds a few million values, nested a dozen deep.
IMPORT_JSON_LIMITS = bounded_json.JSONLimits(max_chars=MAX_IMPORT_BYTES, max_depth=64, max_values=8_000_000)
# Memories per commit: one commit for most imports; a 100k history lands as 20 commits, so a kill
# loses at most one batch's work (re-running the import finishes it).
IMPORT_BATCH = 5_000
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
        return sum(1 for e in self.entries if e.role in TURN_ROLES)

    @property
    def facts(self) -> int:
        """New facts (before any extraction at import time)."""
        return sum(1 for e in self.entries if e.role == Role.MEMORY)

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
    commits: tuple[str, ...] = ()  # one per batch written (`commit` is the last)


# ---------------------------------------------------------------------------- planning


def plan_import(
    source: TransferSource, path: Path, fmt: str | None = None, *, extract: bool = False,
    secrets: str | None = None,
) -> ImportPlan:
    """Read `path` (format sniffed unless given) and say what importing it would add.

    Every entry is checked here, as the store would write it, so applying the plan cannot fail
    half way on a bad entry. Likely secrets follow `secrets` (default: the `security.secrets`
    setting): ``ask`` raises SecretDetectedError naming where, ``redact`` redacts texts, titles
    and conversation ids, ``keep`` keeps them.
    """
    path = Path(path)
    if fmt is not None and fmt not in FORMATS:
        raise ImportFileError(f"unknown import format {fmt!r}; use one of {', '.join(FORMATS)}")
    files = _read(path)
    fmt = fmt or _sniff(path, files)
    raw = files.get("", files.get("conversations.json", files.get("memories.json", b"")))
    notes: list[str] = []
    if fmt == "markdown":
        titles, entries, skipped = parse_markdown(raw, path)
    elif fmt == "claude":
        titles, entries, skipped, notes = parse_claude(_claude_members(files, path), path)
    else:
        data = _load_json(raw, path)
        if fmt == "chatgpt":
            titles, entries, skipped, notes = parse_chatgpt(data, path)
        elif fmt == "mem0":
            titles, entries, skipped, notes = parse_mem0(data, path)
        else:
            titles, entries, skipped = parse_memory_list(data, path)
    if len(entries) > MAX_IMPORT_ENTRIES:
        raise ImportFileError(f"{path} holds {len(entries):,} entries, over the limit of "
                              f"{MAX_IMPORT_ENTRIES:,} per import; split it")
    policy = secrets or str(source.config["security.secrets"])
    titles, entries = apply_secret_policy(titles, entries, policy, notes)
    return _finish_plan(source, path, fmt, titles, entries, skipped, notes, extract)


def _finish_plan(
    source: TransferSource, path: Path, fmt: str, titles: dict[str, str], entries: list[Entry],
    skipped: list[Skipped], notes: list[str], extract: bool,
) -> ImportPlan:
    fresh: list[Entry] = []
    seen: dict[str, Entry] = {}
    summaries: set[str] = set()
    present = 0
    for e in entries:
        problem = entry_problem(source.store, e)
        # raw: a held-back id is taken too
        stored = None if problem or e.id in seen else source.raw.lookup(e.id)
        if problem:
            skipped.append(Skipped(_where(e), problem))
        elif e.id in seen:  # never dropped in silence, never called "already in the store"
            first = seen[e.id]
            same = first.text == e.text and first.conversation_id == e.conversation_id
            skipped.append(Skipped(_where(e), f"id {e.id[:60]} appears twice in this import"
                                   + (" (the same memory again)" if same else
                                      " with another text; the first one was kept")))
        elif stored is not None:
            present += 1
        elif e.role == Role.SUMMARY and (e.conversation_id in summaries
                                      or _has_summary(source, e.conversation_id)):
            current = source.raw.summary(e.conversation_id)
            if current is not None and current.text == e.text:
                present += 1
            else:  # never replaced silently: the user keeps the current one and is told
                skipped.append(Skipped(_where(e), f"conversation {e.conversation_id} already has a summary; "
                                       "the imported one would replace it and was left out"))
        else:
            seen[e.id] = e
            summaries.update([e.conversation_id] if e.role == Role.SUMMARY else [])
            fresh.append(e)
    # A title is written only for a conversation that has none yet (never overwrite the user's).
    new_titles = {c: t for c, t in titles.items() if not source.store.conversation_meta(c).get("title")}
    return ImportPlan(path, fmt, new_titles, tuple(fresh), tuple(skipped), present, tuple(notes), extract)


def _has_summary(source: TransferSource, conversation_id: str) -> bool:
    """On disk, not only in the catalog: a summary written a moment ago must never be replaced."""
    if source.raw.summary(conversation_id) is not None:
        return True
    try:
        return os.path.lexists(source.store.abspath(f"entries/{conversation_id}/summaries/summary.md"))
    except ValidationError:
        return True  # a linked folder: the write would be refused anyway


def _where(e: Entry) -> str:
    where = str(e.extra.get("imported_from") or f"{e.conversation_id} {e.id[:60]}")
    return re.sub(r"[\x00-\x1f\x7f-\x9f]", "?", where)  # printed as is by the CLI


# What a downloaded export zip holds that an importer reads: ChatGPT's and Claude's
# conversations.json, Claude's memories.json (+ projects.json for project names), OpenMemory's
# memories.json. Members are found by base name: exports nest them in a dated folder.
_ZIP_MEMBERS = ("conversations.json", "memories.json", "projects.json")


def _read(path: Path) -> dict[str, bytes]:
    """The file's bytes (under ""), or for a zip the members an importer reads, by base name;
    the sizes are capped while reading."""
    try:
        if path.suffix.lower() == ".zip":
            return _read_zip(path)
        with open(path, "rb") as handle:
            return {"": _capped(handle, path, os.fstat(handle.fileno()).st_size)}
    except FileNotFoundError:
        raise ImportFileError(f"{path} does not exist") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise ImportFileError(f"cannot read {path}: {exc}") from None


def _read_zip(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise ImportFileError(f"{path} holds {len(members):,} files, over the limit of "
                                  f"{MAX_ZIP_MEMBERS:,}; is it a ChatGPT, Claude or OpenMemory export?")
        wanted = {}
        for member in members:
            name = member.filename.rsplit("/", 1)[-1]
            if name in _ZIP_MEMBERS and name not in wanted and not member.is_dir():
                wanted[name] = member
        if "conversations.json" not in wanted and "memories.json" not in wanted:
            raise ImportFileError(f"{path} has no conversations.json or memories.json inside; is it a "
                                  "ChatGPT, Claude or OpenMemory export?")
        out: dict[str, bytes] = {}
        budget = MAX_IMPORT_BYTES
        for name, member in wanted.items():
            with archive.open(member) as handle:
                out[name] = _capped(handle, path, member.file_size, budget)
            budget -= len(out[name])
        return out


def _claude_members(files: Mapping[str, bytes], path: Path) -> dict[str, Any]:
    if "" in files:  # conversations.json (or memories.json) given on its own
        data = _load_json(files[""], path)
        return {"conversations.json" if isinstance(data, list) and is_claude_conversations(data)
                else "memories.json": data}
    _check_together(files, path)  # the members are bounded as one file is: split, each could pass
    return {name: _load_json(raw, path / name) for name, raw in files.items()}


def _check_together(files: Mapping[str, bytes], path: Path) -> None:
    """ImportFileError when the members' JSON, counted together, is over the limits."""
    try:
        bounded_json.check(",".join(raw.decode("utf-8", "replace") for raw in files.values()),
                           IMPORT_JSON_LIMITS, str(path))
    except bounded_json.JSONLimitError as exc:
        raise ImportFileError(f"{exc}; nothing was imported") from None


def _capped(handle: IO[bytes], path: Path, declared: int, limit: int | None = None) -> bytes:
    """All of `handle`, refusing (before and while reading) more than `limit` bytes (what is left
    of MAX_IMPORT_BYTES for this import; all of it by default)."""
    limit = MAX_IMPORT_BYTES if limit is None else limit
    too_big = ImportFileError(f"{path} expands to more than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB, the "
                              "limit of one import; split it")
    if declared > limit:
        raise too_big
    data = handle.read(limit + 1)
    if len(data) > limit:
        raise too_big
    return data


def entry_problem(store: StoreFiles, e: Entry) -> str | None:
    """Why `e` cannot be written as it is (None when it can): its id, its text, its `extra`,
    tried by rendering and reading back the very file the store would write."""
    if not _ID.fullmatch(e.id):
        return f"the id {e.id[:60]!r} has control characters or is over 200 characters"
    try:
        validate_conversation_id(e.conversation_id)
        meta = {**_written_extra(e), "id": e.id, "role": e.role, "kind": e.kind, "source": e.source,
                "created_at": e.created_at, "deleted_at": e.deleted_at, "replaced_by": e.replaced_by}
        raw = front_matter.render(meta, e.text).encode("utf-8")
        if len(raw) > store.max_file_bytes:
            return f"the memory would be {len(raw):,} bytes, over the store.max_file_bytes limit"
        folder = ("facts" if e.role == Role.MEMORY else "summaries" if e.role == Role.SUMMARY
                  else f"turns/{e.role}")
        store.memory_from_bytes(f"entries/{e.conversation_id}/{folder}/x.md", raw)
    except UnicodeEncodeError:
        return "it holds text that is not valid Unicode (a lone surrogate)"
    except (ValidationError, FrontMatterError, yaml.YAMLError, ValueError, TypeError, RecursionError) as exc:
        return " ".join(str(exc).split())[:200] or type(exc).__name__
    return None


def apply_secret_policy(
    titles: dict[str, str], entries: list[Entry], policy: str, notes: list[str]
) -> tuple[dict[str, str], list[Entry]]:
    """The same secret policy as every other write, over everything an import writes: texts,
    `extra` values, titles and conversation ids (a ChatGPT title becomes a folder name)."""
    if policy == SecretsPolicy.KEEP:
        return titles, entries
    places = [(f"the title of {c}", t) for c, t in titles.items()]
    places += [(f"conversation id {c}", c) for c in {*titles, *(e.conversation_id for e in entries)}]
    places += [(_where(e), e.text) for e in entries]
    places += [(f"{_where(e)} (extra)", json.dumps(e.extra, default=str)) for e in entries if e.extra]
    found = [(where, scan(text)) for where, text in places]
    found = [(where, hits) for where, hits in found if hits]
    if not found:
        return titles, entries
    if policy == SecretsPolicy.ASK:
        where, hits = found[0]
        more = f" (and {len(found) - 1} more places)" if len(found) > 1 else ""
        raise SecretDetectedError(hits, f"the import ({where}{more})")
    renamed = {c: _redacted_id(c) for c in {*titles, *(e.conversation_id for e in entries)} if scan(c)}
    titles = {renamed.get(c, c): redact(t) for c, t in titles.items()}
    entries = [replace(e, conversation_id=renamed.get(e.conversation_id, e.conversation_id),
                       text=redact(e.text), extra=_redact_values(e.extra)) for e in entries]
    notes.append(f"likely secrets were redacted in {len(found)} places ({describe(found[0][1])}, ...)")
    return titles, entries


def _redacted_id(conversation_id: str) -> str:
    slug = slugify_conversation_id(redact(conversation_id).replace("[redacted:", "redacted-"))
    return f"{slug[:52].rstrip('-._')}-{stable_id(conversation_id)[:8]}"


def _redact_values(extra: Mapping[str, Any]) -> dict[str, Any]:
    return {k: redact(v) if isinstance(v, str) else v for k, v in extra.items()}


def _sniff(path: Path, files: Mapping[str, bytes]) -> str:
    if "" not in files:  # a zip: what it holds says whose export it is
        if "conversations.json" in files:
            data = _json_or_none(files["conversations.json"])
            return "claude" if is_claude_conversations(data) else "chatgpt"
        return "claude" if _is_claude_memories(_json_or_none(files["memories.json"])) else "mem0"
    raw = files[""]
    if path.suffix.lower() in (".md", ".markdown", ".txt"):
        return "markdown"
    head = raw.lstrip()[:1]
    if head not in (b"[", b"{"):
        if path.suffix.lower() == ".json" or not raw.strip():
            return "json"  # let the JSON reader give its precise error
        return "markdown"
    data = _json_or_none(raw)
    first = data[0] if isinstance(data, list) and data else None
    if isinstance(first, dict) and "mapping" in first:
        return "chatgpt"
    if is_claude_conversations(data) or _is_claude_memories(data):
        return "claude"
    return "mem0" if is_mem0(data) else "json"


def _json_or_none(raw: bytes) -> Any:
    try:
        return bounded_json.loads(raw, IMPORT_JSON_LIMITS)
    except ValueError:  # over a limit too: the reader says which, with the file's name
        return None


def _is_claude_memories(data: Any) -> bool:
    first = data[0] if isinstance(data, list) and data else data
    return isinstance(first, dict) and "conversations_memory" in first


def _load_json(raw: bytes, path: Path) -> Any:
    try:
        return bounded_json.loads(raw, IMPORT_JSON_LIMITS, str(path))
    except bounded_json.JSONLimitError as exc:
        raise ImportFileError(f"{exc}; nothing was imported") from None
    except UnicodeDecodeError as exc:
        raise ImportFileError(f"{path} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        cut = " - the file looks cut off; export it again" if exc.pos >= len(raw.rstrip()) - 1 else ""
        raise ImportFileError(
            f"{path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}{cut}"
        ) from None


# ------------------------------------------------------------------------- applying


def apply_import(
    source: TransferSource, plan: ImportPlan, progress: Progress | None = None, llm: ChatModel | None = None,
    *, batch_size: int = IMPORT_BATCH,
) -> ImportResult:
    """Write the plan's entries (+ extracted facts if the plan asks), one commit per batch of
    `batch_size` (one commit for most imports).

    Each batch is all or nothing: if a write fails, the files of that batch are removed again and
    the error is raised; the batches before it stay committed. A batch's files are made durable
    once, before its commit (durable_batch), not file by file. An import that was killed is
    finished by running it again: what is on disk is left out (ids are stable), the rest written.
    """
    source.writer.require_writer()
    entries = list(plan.entries)
    notes = list(plan.notes)
    if plan.extract:
        facts, note = _extract(source, entries, llm)
        entries += facts
        notes += [note] if note else []
    todo = [e for e in entries if source.raw.lookup(e.id) is None]
    size = max(1, batch_size)
    parts = [todo[i:i + size] for i in range(0, len(todo), size)] or [[]]
    written: list[Memory] = []
    commits: list[str] = []
    done = 0
    for n, part in enumerate(parts, 1):
        # One transaction per batch: if a write fails, every file of the batch is put back as it was.
        with _says_what_was_saved(n, len(parts), len(written), len(todo), list(commits)), \
                source.writer.transaction(Operation.IMPORT, trailers={"Import-Format": plan.format},
                                          publish=False) as tx:
            with durable_batch(source.root):
                if n == 1:
                    for conv, title in plan.titles.items():
                        if not source.store.conversation_meta(conv).get("title"):
                            tx.write_conversation_meta(
                                conv, {**source.store.conversation_meta(conv), "title": title})
                for entry in part:
                    _write(tx, entry)
                    done += 1
                    if progress is not None:
                        progress(done, len(todo))
            batch = list(tx.written)
            written += batch
            if tx.paths:
                only = {m.conversation_id for m in batch} | (set(plan.titles) if n == 1 else set())
                tx.conversation = only.pop() if len(only) == 1 else None
                tx.subject = _subject(plan, batch, n, len(parts))
                sha = tx.publish().commit
                commits += [sha] if sha else []
    turns = sum(1 for m in written if m.role in TURN_ROLES)
    facts_n = sum(1 for m in written if m.role == Role.MEMORY)
    convs = len({m.conversation_id for m in written} | set(plan.titles))
    return ImportResult(convs, turns, facts_n, tuple(written), commits[-1] if commits else None, plan.skipped,
                        plan.already_present + len(entries) - len(todo), tuple(notes), tuple(commits))


class ImportIncomplete(EngineError):
    """An import failed after some of its batches were committed (they stay; the message says
    how many, and running the same import again imports the rest)."""


@contextlib.contextmanager
def _says_what_was_saved(n: int, parts: int, saved: int, total: int, commits: list[str]) -> Iterator[None]:
    """Batch `n` of an import failed: with earlier batches committed, say exactly what was saved
    and what was not (issue #22). A failure in the first batch is raised as it is: nothing saved."""
    try:
        yield
    except (EngineError, OSError) as exc:
        if not commits:
            raise
        reason = f"{exc.strerror}: {exc.filename}" if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ImportIncomplete(
            f"{saved:,} of {total:,} memories were imported ({len(commits)} commit"
            f"{'s' if len(commits) > 1 else ''}, the last {commits[-1][:10]}); part {n} of {parts} failed "
            f"and the other {total - saved:,} were not imported: {reason}. Run the same import again "
            "to import the rest (what is in the store is left out).") from exc


def _subject(plan: ImportPlan, batch: list[Memory], n: int, parts: int) -> str:
    convs = len({m.conversation_id for m in batch} | (set(plan.titles) if n == 1 else set()))
    turns = sum(1 for m in batch if m.role in TURN_ROLES)
    facts = sum(1 for m in batch if m.role == Role.MEMORY)
    part = f" (part {n} of {parts})" if parts > 1 else ""
    return f"Import {plan.source.name}{part}: {convs} conversations, {turns} turns, {facts} facts"


def _written_extra(e: Entry) -> dict[str, Any]:
    """The entry's `extra` as its file gets it (where it came from is for reports only)."""
    return {k: v for k, v in e.extra.items() if k != "imported_from"}


def _write(tx: Transaction, e: Entry) -> Memory:
    extra = _written_extra(e)
    if e.role == Role.SUMMARY:
        memory = tx.write_summary(e.conversation_id, e.text, e.summarized_count)
        return tx.rewrite(memory, {"created_at": e.created_at, **extra} if e.created_at else extra)
    memory = tx.add(e.text, conversation_id=e.conversation_id, role=e.role, kind=e.kind, source=e.source,
                    created_at=e.created_at, memory_id=e.id, extra=extra)
    if e.deleted_at is None:
        return memory
    tomb = tx.soft_delete(memory, replaced_by=e.replaced_by)
    return tx.rewrite(tomb, {"deleted_at": e.deleted_at})


def _extract(source: TransferSource, entries: list[Entry], llm: ChatModel | None) -> tuple[list[Entry], str]:
    """Facts from every imported user turn (the write path's extraction), ids stable per turn."""
    if llm is None and source.config["llm.base_url"]:
        llm = source.memory_llm
    facts: list[Entry] = []
    failures = 0
    for turn in (e for e in entries if e.role == Role.USER):
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
        users = sum(1 for e in plan.entries if e.role == Role.USER)
        yield f"facts would also be extracted from {users} user turns"
    for line in plan.preview():
        yield f"  {line}"
    if len(plan.entries) > PREVIEW_LINES:
        yield f"  ... and {len(plan.entries) - PREVIEW_LINES} more"
    for note in plan.notes:
        yield f"note: {note}"
    for s in plan.skipped:
        yield f"skipped: {s.where}: {s.reason}"

