"""The Markdown tree under <store>/entries: the source of truth.

Files are written atomically (temp file in the same folder, fsync, rename, fsync folder). A soft
delete is a rename into `deleted/` followed by stamping `deleted_at`; if the process dies between
the two, the file is already (correctly) in `deleted/` and only lacks the stamp. Files that cannot
be read are reported as problems and never modified.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

import yaml

from desktop_mem.engine.models import (
    KINDS,
    ROLES,
    TURN_ROLES,
    ConflictError,
    Listing,
    Memory,
    Problem,
    Role,
    ValidationError,
    utc_now,
)
from desktop_mem.engine.store import file_scan, front_matter, layout, validity
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.front_matter import FrontMatterError
from desktop_mem.engine.store.layout import DELETED, ENTRIES, ROLE_DIRS

DEFAULT_MAX_FILE_BYTES = 2 * 1024 * 1024
SYMLINK_REASON = (
    "is a symbolic link; the store never follows links (they can lead outside it). Replace it "
    "with the real file or folder, or remove it"
)
_IDENTITY_KEYS = frozenset({"id", "role", "conversation_id", "kind", "source", "created_at", "deleted_at",
                            "replaced_by", "summarized_count"})
_NAME_RE = re.compile(r"^(?P<ts>\d{8}T\d{6}(?:\d{6})?Z)__(?P<id>[^/]+)\.md$")


def content_hash(raw: bytes) -> str:
    """The hash recorded in memory_index.json to notice changed files."""
    return hashlib.sha256(raw).hexdigest()


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so a reader (or a crash) sees the old file or the new, never half."""
    atomic_replace(path, lambda handle: handle.write(data))


_BATCH = threading.local()  # this thread's durable_batch: the paths written in it, or None


@contextlib.contextmanager
def durable_batch(root: Path) -> Iterator[None]:
    """Within the block this thread's atomic writes skip their own fsyncs; when it ends without
    an error, everything written is made durable at once: one syncfs of `root`'s file system
    (Linux), else os.sync, else an fsync of each file and folder. A bulk import's batch: fsync per
    file cost 2-5 ms here, 100k files minutes. A crash inside the block keeps whole files only (the
    rename still comes after the write); the caller commits after the block."""
    if getattr(_BATCH, "paths", None) is not None:  # nested: the outer block syncs
        yield
        return
    written: set[Path] = set()
    _BATCH.paths = written
    try:
        yield
    finally:
        _BATCH.paths = None
    if written:
        _sync_all(root, written)


def _sync_all(root: Path, paths: set[Path]) -> None:
    syncfs = getattr(_libc(), "syncfs", None) if sys.platform.startswith("linux") else None
    if syncfs is not None:
        fd = os.open(root, os.O_RDONLY)
        try:
            if syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    if hasattr(os, "sync") and sys.platform != "win32":
        os.sync()
        return
    for path in paths:
        with contextlib.suppress(OSError), open(path, "rb+") as handle:
            os.fsync(handle.fileno())
    for folder in {p.parent for p in paths}:
        fsync_dir(folder)


def _libc() -> Any:
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    except OSError:
        return None


def atomic_replace(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Let `write` fill a temp file beside `path`, fsync it, then rename it over `path` (inside a
    durable_batch the fsyncs wait for the batch's end)."""
    batch: set[Path] | None = getattr(_BATCH, "paths", None)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        # 0600: memory is private to its user whatever the umask (issue #22); O_EXCL: never
        # through a link or file someone placed at the temp name
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            if batch is None:
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if batch is None:
        fsync_dir(path.parent)
    else:
        batch.add(path)


def fsync_dir(folder: Path) -> None:
    """Make a rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# Front matter of a fact a chat message deleted ("forget my cat": that message's turn id), and of
# a deleted fact brought back (when). Together they tell a chat that its "forget ..." was undone.
DELETED_BY_TURN = "deleted_by_turn"
RESTORED_AT = "restored_at"


def forget_undone(memory: Memory) -> str | None:
    """The id of the user turn whose message deleted this fact, when the fact was restored since
    (live, with `restored_at`); None otherwise or when a hand edit made the stamps unreadable
    (they only inform the chat's context, chat/forgetting.py)."""
    by_turn = memory.extra.get(DELETED_BY_TURN)
    if memory.deleted or RESTORED_AT not in memory.extra or not isinstance(by_turn, str) or not by_turn:
        return None
    try:
        restored = parse_when(memory.extra.get(RESTORED_AT), RESTORED_AT)
    except ValidationError:
        return None
    return by_turn if restored is not None else None


def parse_when(value: Any, key: str) -> datetime | None:
    """Read a timestamp from front matter (YAML datetime or ISO text); naive means UTC."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        result = value
    elif isinstance(value, date):
        result = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            result = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(f"{key} {value!r} is not an ISO 8601 date-time") from None
    else:
        raise ValidationError(f"{key} {value!r} is not a date-time")
    validity.within_calendar(result, key, value)  # year 1 or 9999 with an offset: a problem file
    return result if result.tzinfo else result.replace(tzinfo=UTC)


class MarkdownStore:
    """Read and write memory files under `<root>/entries`."""

    def __init__(self, root: Path, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> None:
        self.root = root
        self.entries = root / ENTRIES
        self.max_file_bytes = max_file_bytes

    # ----------------------------------------------------------------- reading

    def abspath(self, rel: str) -> Path:
        """The absolute path of a store-relative path, refusing anything outside entries/.

        Refuses a path through a symbolic link too (entries/, a conversation folder, the file
        itself): a link, e.g. one delivered by a sync remote, would lead reads and writes out of
        the store. Each part is checked with lstat, so a link is never followed.
        """
        pure = PurePosixPath(rel)
        if (pure.is_absolute() or ".." in pure.parts or not rel.startswith(f"{ENTRIES}/")
                or "\x00" in rel):
            raise ValidationError(f"{rel!r} is not a path inside the store's entries/ folder")
        path = self.root
        for part in pure.parts:
            path = path / part
            if path.is_symlink():
                raise ValidationError(f"{self.relpath(path)} {SYMLINK_REASON}")
        return path

    def relpath(self, path: Path) -> str:
        """The store-relative POSIX path of an absolute path."""
        return path.relative_to(self.root).as_posix()

    def read(self, rel: str) -> Memory:
        """Parse one file. Raises FrontMatterError/ValidationError/OSError with the reason."""
        path = self.abspath(rel)
        size = path.lstat().st_size
        if size > self.max_file_bytes:
            raise FrontMatterError(
                f"the file is {size:,} bytes, over the {self.max_file_bytes:,}-byte limit "
                "(store.max_file_bytes)"
            )
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))  # no link swapped in since
        with os.fdopen(fd, "rb") as handle:
            raw = handle.read(self.max_file_bytes + 1)
        if len(raw) > self.max_file_bytes:
            raise FrontMatterError(f"the file is over the {self.max_file_bytes:,}-byte limit "
                                   "(store.max_file_bytes)")
        return self.memory_from_bytes(rel, raw)

    def memory_from_bytes(self, rel: str, raw: bytes) -> Memory:
        """Build a Memory from a file's bytes; missing keys are inferred from its path."""
        doc = front_matter.parse(front_matter.decode(raw))
        return _memory_from_document(rel, doc, content_hash(raw))

    def iter_paths(self) -> Iterator[str]:
        """Every candidate memory file (*.md, not hidden, not temp), store-relative."""
        for rel, _entry in self.iter_entries():
            yield rel

    def iter_entries(self, temp_files: list[str] | None = None) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """Like iter_paths, with each file's DirEntry (its stat needs no path parsing) and every
        link (to be reported, never read). Temp files of interrupted atomic writes found on the
        way are added to `temp_files` (absolute paths), if given: start-up walks the folders once."""
        return file_scan.entries(str(self.root), str(self.entries), temp_files)

    def odd_folders(self) -> list[Problem]:
        """Entries of entries/ that are not conversation folders: links, names that are not
        valid conversation ids (e.g. a hand-made "My Notes") and plain files."""
        problems: list[Problem] = []
        if not self.entries.is_dir() or self.entries.is_symlink():
            return problems
        with os.scandir(self.entries) as it:
            for entry in sorted(it, key=lambda e: e.name):
                if entry.name.startswith("."):
                    continue
                rel = f"{ENTRIES}/{entry.name}"
                if entry.is_symlink():
                    problems.append(Problem(rel, f"{rel} {SYMLINK_REASON}"))
                    continue
                if not entry.is_dir(follow_symlinks=False):
                    problems.append(Problem(rel, "is a file where only conversation folders belong"))
                    continue
                try:
                    validate_conversation_id(entry.name)
                except ValidationError as exc:
                    problems.append(Problem(rel, f"is not a valid conversation id, so it is skipped: {exc}"))
        return problems

    def links(self) -> list[Problem]:
        """Every symbolic link under entries/ (never entered), as a Problem; for `doctor`."""
        if self.entries.is_symlink():
            return [Problem(ENTRIES, f"{ENTRIES} {SYMLINK_REASON}")]
        found: list[Problem] = []
        for folder, dirs, files in os.walk(self.entries):  # followlinks=False
            for name in [*dirs, *files]:
                path = Path(folder, name)
                if path.is_symlink():
                    rel = self.relpath(path)
                    found.append(Problem(rel, f"{rel} {SYMLINK_REASON}"))
        return found

    def scan(self) -> Listing:
        """Read every file; unreadable ones become Problems with their path and reason."""
        memories: list[Memory] = []
        problems: list[Problem] = []
        for rel in sorted(self.iter_paths()):
            try:
                memories.append(self.read(rel))
            except (FrontMatterError, ValidationError) as exc:
                problems.append(Problem(rel, str(exc)))
            except OSError as exc:
                problems.append(Problem(rel, f"cannot read the file: {exc.strerror or exc}"))
        return Listing(tuple(memories), tuple(problems))

    def conversations(self) -> list[str]:
        """Conversation ids that have a folder under entries/ (links and odd names left out)."""
        if not self.entries.is_dir() or self.entries.is_symlink():
            return []
        with os.scandir(self.entries) as it:
            names = [e.name for e in it if e.is_dir(follow_symlinks=False) and _is_conversation_id(e.name)
                     and e.name != DELETED]  # agent-cli's entries/deleted/<conv>/ tombstones
        return sorted(names)

    # ----------------------------------------------------------------- writing

    def new_memory(
        self,
        text: str,
        *,
        conversation_id: str,
        role: str = "memory",
        kind: str | None = None,
        source: str | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        memory_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> Memory:
        """Write a new fact or turn file and return it."""
        validate_conversation_id(conversation_id)
        _check_text(text)
        if role not in ROLES or role == Role.SUMMARY:
            raise ValidationError(f"role {role!r} is not one of memory, user, assistant")
        if kind is not None and kind not in KINDS:
            raise ValidationError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
        # Turns keep microseconds so a user message and its reply always sort in order.
        created = created_at or (datetime.now(UTC) if role in TURN_ROLES else utc_now())
        mid = memory_id or str(uuid.uuid4())
        stamp = created.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        rel = f"{layout.role_dir(conversation_id, role)}/{stamp}__{_safe_name(mid)}.md"
        meta: dict[str, Any] = {
            "id": mid,
            "role": role,
            "conversation_id": conversation_id,
            "kind": kind if role == Role.MEMORY else None,
            "source": source,
            "created_at": created,
            "expires_at": expires_at,
        }
        # extra may add the user's own keys (or updated_at/expires_at), never who or where it is
        meta.update({k: v for k, v in (extra or {}).items() if k not in _IDENTITY_KEYS})
        if role == Role.MEMORY:  # a fact is true from when it was said, unless a date was given
            given = validity.normalize(meta.get(validity.VALID_FROM), validity.VALID_FROM)
            stated = given or validity.stated_start(text, created)
            meta[validity.VALID_FROM] = validity.for_file(stated or validity.stamp(created))
            ended = validity.stated_end(text, created) if not meta.get(validity.VALID_TO) else None
            if ended and stated and validity.start(ended) >= validity.start(stated):
                meta[validity.VALID_TO] = validity.for_file(ended)  # "worked at Acme from 2018 until 2020"
        return self._write(self._unique(rel), meta, text)

    def write_summary(self, conversation_id: str, text: str, summarized_count: int) -> Memory:
        """Create or rewrite the conversation's single rolling summary (deterministic id)."""
        validate_conversation_id(conversation_id)
        _check_text(text)
        rel = layout.summary_path(conversation_id)
        path = self.abspath(rel)
        now = utc_now()
        if path.exists():
            self.read(rel)  # a summary that no longer parses is reported, never overwritten
            doc = front_matter.parse(front_matter.decode(path.read_bytes()))
            updates = {"summarized_count": summarized_count, "updated_at": now}
            return self._write(rel, updates, text, doc.yaml_text)
        meta = {
            "id": f"summary-{conversation_id}",
            "role": "summary",
            "conversation_id": conversation_id,
            "summary_kind": "rolling",
            "created_at": now,
            "updated_at": now,
            "summarized_count": summarized_count,
        }
        return self._write(rel, meta, text)

    def rewrite(
        self,
        memory: Memory,
        updates: Mapping[str, Any],
        text: str | None = None,
        *,
        expected_hash: str | None = None,
    ) -> Memory:
        """Apply front-matter `updates` and/or a new body; unknown keys keep their bytes.

        With `expected_hash`, refuses (ConflictError) if the file changed since it was read.
        """
        path = self.abspath(memory.path)
        raw = path.read_bytes()
        if expected_hash is not None and content_hash(raw) != expected_hash:
            raise ConflictError(
                f"{memory.path} changed on disk since it was opened; reload it or keep your "
                "version explicitly"
            )
        doc = front_matter.parse(front_matter.decode(raw))
        body = doc.body if text is None else text
        _check_text(body)
        return self._write(memory.path, updates, body, doc.yaml_text)

    def moved_path(self, memory: Memory) -> str:
        """Where a soft delete (or a restore) of `memory` puts its file: the counterpart place,
        numbered if another file already sits there."""
        return self._unique(layout.counterpart(memory.path, memory.conversation_id))

    def soft_delete(
        self, memory: Memory, *, replaced_by: str | None = None, target: str | None = None,
        ended: str | None = None, by_turn: str | None = None,
    ) -> Memory:
        """Move the file under `deleted/` (same relative place, or `target`) and stamp it.

        A fact gets `valid_to`: `ended` (when its replacement says it began), else now, and
        `deleted_by_turn`: `by_turn`, the chat message that asked for the delete (an earlier
        one's stamp goes: this delete was not asked for by it)."""
        if memory.deleted:
            raise ValidationError(f"memory {memory.id} is already deleted")
        moved = self._move(memory, target or self.moved_path(memory))
        now = utc_now()
        stamps: dict[str, Any] = {"deleted_at": now, "replaced_by": replaced_by}
        if memory.role == Role.MEMORY and not memory.valid_to:  # replaced or forgotten: true until now
            stamps[validity.VALID_TO] = validity.for_file(_ended(memory, ended) or validity.stamp(now))
        if memory.role == Role.MEMORY:
            stamps[DELETED_BY_TURN] = by_turn  # None: no such key written, an old one removed
        if memory.role == Role.SUMMARY:
            # The live summary's id is fixed (summary-<conversation>); a deleted version gets its
            # own, or it could not be named for restore once a newer summary holds that id.
            stamps["id"] = f"{memory.id}-{now.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
        return self.rewrite(moved, stamps)

    def restore(self, memory: Memory, *, target: str | None = None) -> Memory:
        """Move a soft-deleted file back to its live place (or `target`) and clear the stamps."""
        if not memory.deleted:
            raise ValidationError(f"memory {memory.id} is not deleted")
        live = layout.counterpart(memory.path, memory.conversation_id)
        target = target or self._unique(live)
        moved = self._move(memory, target)
        now = utc_now()
        updates: dict[str, Any] = {"deleted_at": None, "replaced_by": None, "updated_at": now}
        if memory.role == Role.MEMORY:
            # A chat that asked to forget it is told it is remembered again (forget_undone), where
            # a small model repeated its "it's forgotten" reply with the fact in front of it.
            updates[RESTORED_AT] = now
        if memory.role == Role.MEMORY and memory.valid_to and memory.deleted_at is not None \
                and validity.start(memory.valid_to) >= memory.deleted_at:
            updates[validity.VALID_TO] = None  # true again (a valid_to the user gave stays)
        if memory.role == Role.SUMMARY and target == live:
            updates["id"] = f"summary-{memory.conversation_id}"  # back in place: the fixed id again
        return self.rewrite(moved, updates)

    # ----------------------------------------------------------- conversations

    def conversation_meta(self, conversation_id: str) -> dict[str, Any]:
        """Title and saved settings of a conversation ({} when none are saved)."""
        validate_conversation_id(conversation_id)
        try:
            path = self.abspath(layout.conversation_file(conversation_id))
            text = path.read_text("utf-8")
            if len(text) > front_matter.MAX_FRONT_MATTER_CHARS:
                return {}
            data = yaml.load(text, Loader=front_matter.SAFE_LOADER)  # noqa: S506 - a safe loader
            front_matter.check_depth(data)
        except (OSError, yaml.YAMLError, ValueError, TypeError, RecursionError):
            # unreadable settings fall back to defaults (UnicodeDecodeError is a ValueError,
            # and so is a timestamp PyYAML matches but cannot build, e.g. year 0)
            return {}
        return data if isinstance(data, dict) else {}

    def write_conversation_meta(self, conversation_id: str, meta: Mapping[str, Any]) -> str:
        """Save a conversation's title/settings; returns the store-relative path."""
        validate_conversation_id(conversation_id)
        path = self.abspath(layout.conversation_file(conversation_id))
        atomic_write(path, yaml.safe_dump(dict(meta), sort_keys=True, allow_unicode=True).encode())
        return self.relpath(path)

    # ---------------------------------------------------------------- helpers

    def _write(
        self,
        rel: str,
        updates: Mapping[str, Any],
        body: str,
        original_yaml: str = "",
    ) -> Memory:
        text = front_matter.render(updates, body, original_yaml)
        raw = text.encode("utf-8")
        if len(raw) > self.max_file_bytes:
            raise ValidationError(
                f"the memory would be {len(raw):,} bytes, over the {self.max_file_bytes:,}-byte limit"
            )
        atomic_write(self.abspath(rel), raw)
        return self.memory_from_bytes(rel, raw)

    def _move(self, memory: Memory, target_rel: str) -> Memory:
        source = self.abspath(memory.path)
        target = self.abspath(target_rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.rename(source, target)
        fsync_dir(target.parent)
        fsync_dir(source.parent)
        return self.read(target_rel)

    def _unique(self, rel: str) -> str:
        """`rel`, or `rel` with a numeric suffix if a file already sits there."""
        if not self.abspath(rel).exists():
            return rel
        stem, dot, ext = rel.rpartition(".")
        n = 2
        while self.abspath(f"{stem}.{n}{dot}{ext}").exists():
            n += 1
        return f"{stem}.{n}{dot}{ext}"


def _ended(memory: Memory, ended: str | None) -> str | None:
    """`ended` when it is a usable end for `memory` (not before it began, not in the future)."""
    if not ended:
        return None
    end = validity.start(ended)
    return ended if validity.valid_from(memory) <= end <= utc_now() else None


def _is_conversation_id(name: str) -> bool:
    try:
        validate_conversation_id(name)
    except ValidationError:
        return False
    return True


def _safe_name(memory_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", memory_id)[:80] or "memory"


def _check_text(text: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise ValidationError("the memory text is empty")
    if "\x00" in text:
        raise ValidationError("the memory text contains a NUL character")


def _infer_role(parts: tuple[str, ...]) -> str | None:
    joined = "/".join(parts)
    for role, folder in ROLE_DIRS.items():
        if f"/{folder}/" in f"/{joined}/":
            return role
    return None


def _memory_from_document(rel: str, doc: front_matter.Document, digest: str) -> Memory:
    meta = dict(doc.meta)
    parts = PurePosixPath(rel).parts
    if len(parts) < 3 or parts[0] != ENTRIES:
        raise ValidationError(f"{rel} is not inside entries/<conversation>/")
    conversation_id = parts[1]
    if conversation_id == DELETED and len(parts) >= 4:
        # agent-cli 0.112 (the reference proxy) tombstones into entries/deleted/<conversation>/...
        # rather than entries/<conversation>/deleted/...; both read (and restore) the same way.
        conversation_id = parts[2]
    if not _is_conversation_id(conversation_id):
        raise ValidationError(
            f"the folder entries/{conversation_id} is not a valid conversation id (letters, digits, "
            "'.', '_', '-'); rename the folder"
        )
    match = _NAME_RE.match(parts[-1])
    role = meta.get("role") or _infer_role(parts[2:-1])
    if role not in ROLES:
        raise ValidationError(f"role {role!r} is not one of {', '.join(ROLES)}")
    mid = meta.get("id") or (match.group("id") if match else PurePosixPath(rel).stem)
    if not isinstance(mid, str | int) or not str(mid).strip():
        raise ValidationError(f"id {mid!r} is not a usable id")
    created = parse_when(meta.get("created_at"), "created_at")
    if created is None and match:
        named = datetime.strptime(match.group("ts")[:15], "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
        created = validity.within_calendar(named, "the file name's time", match.group("ts"))
    if created is None:
        created = datetime(1970, 1, 1, tzinfo=UTC)
    kind = meta.get("kind")
    if kind is not None and kind not in KINDS:
        raise ValidationError(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    if not doc.body.strip():
        raise ValidationError("the memory has front matter but no text")
    count = meta.get("summarized_count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
        raise ValidationError(f"summarized_count {count!r} is not a whole number")
    known = set(front_matter.KNOWN_KEYS)
    since = validity.normalize(meta.get(validity.VALID_FROM), validity.VALID_FROM)
    until = validity.normalize(meta.get(validity.VALID_TO), validity.VALID_TO)
    parse_when(meta.get(RESTORED_AT), RESTORED_AT)  # the app's stamp: a date a file gives is checked
    if since and until and validity.start(until) < validity.start(since):
        raise ValidationError(f"valid_to {until} is before valid_from {since}")
    return Memory(
        id=str(mid),
        role=Role(role),
        conversation_id=conversation_id,
        text=doc.body,
        created_at=created,
        path=rel,
        kind=kind if kind is not None else ("fact" if role == Role.MEMORY else None),
        source=_opt_str(meta.get("source")),
        updated_at=parse_when(meta.get("updated_at"), "updated_at"),
        deleted_at=parse_when(meta.get("deleted_at"), "deleted_at"),
        expires_at=parse_when(meta.get("expires_at"), "expires_at"),
        replaced_by=_opt_str(meta.get("replaced_by")),
        summary_kind=_opt_str(meta.get("summary_kind")),
        summarized_count=count,
        valid_from=since,
        valid_to=until,
        extra={k: v for k, v in meta.items() if k not in known},
        content_hash=digest,
    )


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
