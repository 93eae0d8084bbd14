"""Classify any commit of the store into memory events, from its diff alone.

Trailers written by the app help (EVICT cannot be told from DELETE otherwise) but are never
required: a commit made by hand with plain git is classified the same way. The rules:

- a file moved into `deleted/`: UPDATE if the tombstone names `replaced_by` (paired with the new
  fact of the same commit), EVICT if the commit says so, else DELETE;
- a file moved out of `deleted/`: RESTORE;
- a new file: SUMMARY under summaries/, TURN under turns/, ADD under facts/;
- a changed file: SUMMARY for summaries, EDIT otherwise; a file removed outright: DELETE (hard).
"""

from __future__ import annotations

import threading
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from itertools import islice
from typing import Any, overload

from desktop_mem.engine.history.git_history import FileChange, RawCommit
from desktop_mem.engine.models import TURN_ROLES, CommitInfo, EventType, Operation, Role, TimelineEvent
from desktop_mem.engine.store import front_matter, layout
from desktop_mem.engine.store.front_matter import FrontMatterError

BlobReader = Callable[[str | None], bytes | None]


class _Unset:
    """Marks "take the new text from the new side" (None is a meaningful value)."""


_UNSET = _Unset()


@dataclass(slots=True)  # not frozen: built twice per file of a commit, frozen init costs 2x
class _Side:
    path: str
    memory_id: str | None
    conversation_id: str | None
    role: str | None
    text: str | None
    replaced_by: str | None
    valid_from: str | None = None
    valid_to: str | None = None


SOURCE_APP = "app"  # the app's own changes (chat write path, editor, CLI, REST API)
SOURCE_OUTSIDE = "git"  # commits made outside desktop-mem with plain git


def commit_source(trailers: Mapping[str, str]) -> str:
    """Who made a commit: its `Source` trailer (e.g. "mcp"), else "app" or "git"."""
    source = trailers.get("Source", "").strip().lower()
    if source:
        return source
    return SOURCE_APP if "Operation" in trailers else SOURCE_OUTSIDE


# A commit that changes more memory files than this (an import, a migration, a sync) is
# classified from its file paths alone: reading and parsing both sides of every file took
# 10 s for the 6,000 files of two migration commits on a timeline's first page, and an import
# of 100,000 memories would take minutes. Its events then carry no texts (the diff view reads
# a file's two sides when it is shown) and a replacement shows as a delete and an add.
DETAIL_LIMIT = 200


def _no_blob(_sha: str | None) -> bytes | None:
    return None


def is_bulk(commit: RawCommit) -> bool:
    """True for a commit `classify` takes from its paths alone (more than DETAIL_LIMIT memory files)."""
    if len(commit.changes) <= DETAIL_LIMIT:
        return False
    memory = (c for c in commit.changes if _is_memory_path(c.new_path or c.old_path))
    return next(islice(memory, DETAIL_LIMIT, None), None) is not None  # stops at the limit


def _memory_changes(commit: RawCommit) -> list[FileChange]:
    return [c for c in commit.changes if _is_memory_path(c.new_path or c.old_path)]


def classify(commit: RawCommit, read_blob: BlobReader, *, detail_limit: int | None | _Unset = _UNSET
             ) -> CommitInfo:
    """Turn a commit into its timeline events (newest-first order is the caller's concern).

    Above `detail_limit` memory files (default DETAIL_LIMIT; None: no limit) no file is read."""
    operation = commit.trailers.get("Operation", "").lower()
    evicted = {i.strip() for i in commit.trailers.get("Evicted", "").split(",") if i.strip()}
    changes = _memory_changes(commit)
    limit = DETAIL_LIMIT if isinstance(detail_limit, _Unset) else detail_limit
    if limit is not None and len(changes) > limit:
        return _from_paths(commit, _pair_moves(changes), operation, evicted)
    changes = _pair_moves(changes)
    events: list[TimelineEvent] = []
    added_by_id: dict[str, tuple[int, _Side]] = {}
    consumed: set[int] = set()
    pending_updates: list[tuple[int, _Side, _Side, FileChange]] = []
    # Each side is read once (the loop below classifies from the same sides).
    sides = [(_side(c.old_path, c.old_blob, read_blob), _side(c.new_path, c.new_blob, read_blob))
             for c in changes]

    for index, change in enumerate(changes):
        old, new = sides[index]
        if change.status == "A" and new and not layout.in_deleted(new.path) and new.memory_id:
            added_by_id[new.memory_id] = (index, new)
        if change.status == "R" and old and new:
            into_deleted = not layout.in_deleted(old.path) and layout.in_deleted(new.path)
            if into_deleted and new.replaced_by and operation != Operation.EVICT:
                pending_updates.append((index, old, new, change))

    update_events: dict[int, TimelineEvent] = {}
    for index, old, new, _change in pending_updates:
        replacement = added_by_id.get(new.replaced_by or "")
        if replacement is not None:
            consumed.add(replacement[0])
        update_events[index] = _event(
            EventType.UPDATE, commit.sha, old, new,
            new_text=replacement[1].text if replacement else None,
            new_id=new.replaced_by,
            replaced_by=new.replaced_by,
        )

    for index, change in enumerate(changes):
        if index in consumed:
            continue
        if index in update_events:
            events.append(update_events[index])
            continue
        event = _classify_change(change, *sides[index], commit.sha, operation, evicted)
        if event is not None:
            events.append(event)
    return commit_info(commit, tuple(events), from_paths=False)


def _from_paths(commit: RawCommit, changes: list[FileChange], operation: str, evicted: set[str]
                ) -> CommitInfo:
    """A bulk commit's events from its paths alone, packed one by one: none is kept (an import of
    100,000 files built ~100 MB of events, issue #25). Without texts no tombstone names its
    replacement, so there is no UPDATE to pair: each file is one event, as `classify` makes it."""
    packer = _Packer()
    for change in changes:
        old = _side(change.old_path, None, _no_blob)
        new = _side(change.new_path, None, _no_blob)
        event = _classify_change(change, old, new, commit.sha, operation, evicted)
        if event is not None:
            packer.add(event)  # from paths: never a text or a validity to refuse
    return commit_info(commit, packer.path_events(commit.sha), packer.counts)


def commit_info(commit: RawCommit, events: Sequence[TimelineEvent],
                counts: Mapping[EventType, int] | None = None, *, from_paths: bool | None = None
                ) -> CommitInfo:
    """A commit's metadata (from git) with its classified events; `counts` only for PathEvents
    (`from_paths` defaults to whether the events are PathEvents)."""
    return CommitInfo(
        sha=commit.sha,
        subject=commit.subject,
        author=commit.author,
        committed_at=commit.committed_at,
        trailers=dict(commit.trailers),
        events=events,
        made_by_app="Operation" in commit.trailers,
        events_from_paths=isinstance(events, PathEvents) if from_paths is None else from_paths,
        event_counts=dict(counts) if counts is not None else None,
    )


_TYPES = {t.value: t for t in EventType}
_FIELDS = 7  # type, memory id, conversation, path, old path, role, hard delete
# _new_event sets every field itself (as PathEvents._build and _event name them): checked against
# the dataclass, with no __post_init__ or __slots__, else it falls back to __init__.
_PLAIN_EVENT = not hasattr(TimelineEvent, "__post_init__") and "__slots__" not in vars(TimelineEvent) and [
    f.name for f in fields(TimelineEvent)] == [
    "type", "commit", "memory_id", "conversation_id", "path", "old_path", "old_text", "new_text",
    "replaced_by", "new_id", "role", "hard_delete", "valid_from", "valid_to", "validity_changed"]


def _new_event(values: dict[str, Any]) -> TimelineEvent:
    """A TimelineEvent of every field's value, built at 40 % of the cost of its __init__ (the
    frozen dataclass sets 15 fields one by one; the pane builds a bulk commit's 41,879 on
    selection). The same object: equal, hashed, frozen and printed alike."""
    if not _PLAIN_EVENT:
        return TimelineEvent(**values)
    event: TimelineEvent = object.__new__(TimelineEvent)
    object.__setattr__(event, "__dict__", values)
    return event


class PathEvents(Sequence[TimelineEvent]):
    """A bulk commit's events (from paths, no texts), kept packed: building 58,930 events took
    most of a first page's 1.2 s, and keeping an import's 100,000 built ~100 MB (issue #25). The
    length is known at once. Nothing built is kept here: an event is built when it is read (an
    index unpacks the text each time, iterating once), and `brief` reads the fields filters need
    without building any. Whoever reads rows one by one (the pane) asks for an `unpacked` copy,
    which keeps its unpacked text and the events read, and drops them with it.

    `packed` is zlib-compressed, NUL-separated fields, _FIELDS per event ("" for None); git
    paths hold no NUL. Unpacking checks the field count: damaged text is read from git again."""

    __slots__ = ("_flat", "_items", "_lock", "_n", "_recover", "_recovered", "conversations", "packed",
                 "sha")

    def __init__(self, sha: str, packed: bytes, count: int, *, conversations: frozenset[str],
                 recover: Callable[[], Sequence[TimelineEvent]] | None = None) -> None:
        """`conversations`: those the events belong to (a filter rules the commit in or out
        without unpacking); `recover`: the events from git, for packed text that turns out
        damaged (kept on disk)."""
        self.sha = sha
        self.packed = packed
        self.conversations = conversations
        self._n = count
        self._recover = recover
        self._recovered: tuple[TimelineEvent, ...] | None = None
        self._flat: list[str] | None = None  # the unpacked fields (an `unpacked` copy only)
        self._items: dict[int, TimelineEvent] = {}  # the events read, by position (a copy only)
        self._lock = threading.Lock()

    @staticmethod
    def pack(events: Iterable[TimelineEvent]) -> bytes | None:
        """The events packed, or None if one carries more than its paths (a text, a validity)."""
        packer = _Packer()
        for event in events:
            if not packer.add(event):
                return None
        return packer.packed()

    def _unpacked(self, *, keep: bool) -> list[str]:
        """The fields of every event; kept for the next read if `keep`. Packed text that does not
        hold this many events is damaged: the events come from `recover` (git) then, else
        ValueError."""
        flat = self._flat
        if flat is not None:
            return flat
        with self._lock:
            if self._flat is not None:
                return self._flat
            try:
                text = zlib.decompress(self.packed).decode("utf-8", "surrogatepass")
            except (zlib.error, UnicodeDecodeError):
                text = "\0"  # not a multiple of _FIELDS: damaged
            flat = text.split("\0") if text else []
            del text
            if len(flat) != self._n * _FIELDS or not set(flat[0::_FIELDS]) <= _TYPES.keys() or not all(
                    flat[3::_FIELDS]):
                if self._recover is None:
                    raise ValueError(f"damaged path events of {self.sha[:10]}")
                events = self._recover()
                if isinstance(events, PathEvents):  # packed again, from git: held packed
                    self.packed, self._n, self._recover = events.packed, len(events), None
                    flat = events._unpacked(keep=False)  # noqa: SLF001 - its own kind
                else:
                    self._n, self._recovered = len(events), tuple(events)
                    flat, keep = [], True
            if keep:
                self._flat = flat
            return flat

    def unpacked(self) -> PathEvents:
        """These events in an object of their own, unpacked now (off the GUI thread: ~0.1 s for
        100,000): the rows the pane reads are built in it and go with it, while this one (cached
        with its commit) keeps only the packed text."""
        rows = PathEvents(self.sha, self.packed, self._n, conversations=self.conversations,
                          recover=self._recover)
        rows._unpacked(keep=True)  # noqa: SLF001 - its own kind
        return rows

    def brief(self) -> Iterator[tuple[EventType, str | None, str | None]]:
        """Each event's type, memory id and conversation, in order, without building the events
        (what the filters read); nothing is kept that was not unpacked already."""
        flat = self._unpacked(keep=False)
        if self._recovered is not None:
            yield from ((e.type, e.memory_id, e.conversation_id) for e in self._recovered)
            return
        for kind, memory_id, conversation in zip(flat[0::_FIELDS], flat[1::_FIELDS], flat[2::_FIELDS],
                                                 strict=True):
            yield _TYPES[kind], memory_id or None, conversation or None

    def _event(self, index: int, flat: list[str]) -> TimelineEvent:
        item = self._items.get(index)
        if item is not None:
            return item
        if self._recovered is not None:
            return self._recovered[index]
        item = self._build(*flat[index * _FIELDS:(index + 1) * _FIELDS])
        if self._flat is not None:  # an unpacked copy: its rows are read again and again
            self._items[index] = item  # a race builds it twice: equal events, either kept
        return item

    def _build(self, kind: str, memory_id: str, conversation: str, path: str, old_path: str, role: str,
               hard: str) -> TimelineEvent:
        return _new_event({
            "type": _TYPES[kind], "commit": self.sha, "memory_id": memory_id or None,
            "conversation_id": conversation or None, "path": path,
            "old_path": path if old_path == "=" else old_path or None, "old_text": None, "new_text": None,
            "replaced_by": None, "new_id": None, "role": role or None, "hard_delete": bool(hard),
            "valid_from": None, "valid_to": None, "validity_changed": False})

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> TimelineEvent: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[TimelineEvent, ...]: ...

    def __getitem__(self, index: int | slice) -> TimelineEvent | tuple[TimelineEvent, ...]:
        flat = self._unpacked(keep=False)
        if isinstance(index, slice):
            return tuple(self._event(i, flat) for i in range(*index.indices(self._n)))
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("path event index out of range")
        return self._event(index, flat)

    def __iter__(self) -> Iterator[TimelineEvent]:
        """Every event in turn, none kept (a lineage or a history listing reads a few, or all
        once)."""
        flat = self._unpacked(keep=False)
        for index in range(self._n):
            yield self._event(index, flat)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PathEvents) and other.packed == self.packed and other.sha == self.sha:
            return True
        return isinstance(other, Sequence) and len(other) == self._n and all(
            a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"PathEvents({self.sha[:10]}, {self._n} events)"


class _Packer:
    """Packs events one at a time (PathEvents' format), compressing as it goes: a bulk commit is
    classified without holding its events or their whole text at once."""

    _CHUNK = 2000  # events joined and compressed at a time

    def __init__(self) -> None:
        self._zip = zlib.compressobj(1)
        self._parts: list[bytes] = []
        self._fields: list[str] = []
        self._pending = 0
        self.count = 0
        self.counts: Counter[EventType] = Counter()
        self.conversations: set[str] = set()

    def add(self, e: TimelineEvent) -> bool:
        """Take one event; False if it carries more than its paths (a text, a validity)."""
        if (e.old_text is not None or e.new_text is not None or e.replaced_by or e.new_id
                or e.valid_from or e.valid_to or e.validity_changed):
            return False
        old_path = "=" if e.old_path == e.path else e.old_path or ""  # "=": moved nowhere (an edit)
        self._fields += [e.type.value, e.memory_id or "", e.conversation_id or "", e.path, old_path,
                         e.role or "", "1" if e.hard_delete else ""]
        self.count += 1
        self.counts[e.type] += 1
        if e.conversation_id:
            self.conversations.add(e.conversation_id)
        self._pending += 1
        if self._pending >= self._CHUNK:
            self._flush()
        return True

    def _flush(self) -> None:
        if self._fields:
            lead = "\0" if self.count > self._pending else ""  # after an earlier chunk
            text = lead + "\0".join(self._fields)
            self._parts.append(self._zip.compress(text.encode("utf-8", "surrogatepass")))
            self._fields, self._pending = [], 0

    def packed(self) -> bytes:
        """The packed text of every event taken."""
        self._flush()
        return b"".join([*self._parts, self._zip.flush()])

    def path_events(self, sha: str) -> PathEvents:
        """The events taken, as a commit's PathEvents."""
        return PathEvents(sha, self.packed(), self.count, conversations=frozenset(self.conversations))


def _classify_change(
    change: FileChange, old: _Side | None, new: _Side | None, sha: str, operation: str, evicted: set[str]
) -> TimelineEvent | None:
    if old is not None and old.memory_id in evicted:
        operation = "evict"
    if change.status == "A" and new:
        if layout.in_deleted(new.path):
            return _event(EventType.DELETE, sha, None, new, old_text=new.text)
        return _event(_kind_of_new(new), sha, None, new)
    if change.status == "D" and old:
        kind = EventType.EVICT if operation == Operation.EVICT else EventType.DELETE
        return _event(kind, sha, old, None, hard_delete=True)
    if change.status == "R" and old and new:
        if not layout.in_deleted(old.path) and layout.in_deleted(new.path):
            kind = EventType.EVICT if operation == Operation.EVICT else EventType.DELETE
            return _event(kind, sha, old, new, new_text=None, replaced_by=new.replaced_by)
        if layout.in_deleted(old.path) and not layout.in_deleted(new.path):
            return _event(EventType.RESTORE, sha, old, new)
        return _event(EventType.EDIT, sha, old, new)
    if change.status == "M" and old and new:
        if new.role == Role.SUMMARY:
            return _event(EventType.SUMMARY, sha, old, new)
        if layout.in_deleted(new.path):
            if old.text == new.text and old.text is not None:
                return None  # a tombstone re-stamped: not a change of memory content
            return _event(EventType.EDIT, sha, old, new)
        return _event(EventType.EDIT, sha, old, new)
    return None


def _kind_of_new(side: _Side) -> EventType:
    if side.role == Role.SUMMARY:
        return EventType.SUMMARY
    if side.role in TURN_ROLES:
        return EventType.TURN
    return EventType.ADD


def _event(
    kind: EventType,
    sha: str,
    old: _Side | None,
    new: _Side | None,
    *,
    old_text: str | None = None,
    new_text: str | None | _Unset = _UNSET,
    new_id: str | None = None,
    replaced_by: str | None = None,
    hard_delete: bool = False,
) -> TimelineEvent:
    main = new or old
    assert main is not None
    first = old or main
    return _new_event(dict(  # every field (a bulk commit builds 100,000 of these)
        type=kind,
        commit=sha,
        memory_id=first.memory_id,
        conversation_id=main.conversation_id,
        path=main.path,
        old_path=old.path if old else None,
        old_text=old_text if old_text is not None else (old.text if old else None),
        new_text=(new.text if new else None) if isinstance(new_text, _Unset) else new_text,
        replaced_by=replaced_by,
        new_id=new_id,
        role=main.role,
        hard_delete=hard_delete,
        valid_from=main.valid_from,
        valid_to=main.valid_to,
        validity_changed=old is not None and new is not None
        and (old.valid_from, old.valid_to) != (new.valid_from, new.valid_to),
    ))


def _pair_moves(changes: list[FileChange]) -> list[FileChange]:
    """Pair a delete and an add of the same file name (a move git did not detect as a rename).

    A file keeps its name when it moves (into deleted/ and back), so a rename git guessed between
    two names is undone when a file of the old name was added: git's similarity can pair a fact
    with its short, similar replacement instead of with its own tombstone."""
    added = {_name(c.new_path) for c in changes if c.status == "A" and c.new_path}
    split: list[FileChange] = []
    for c in changes:
        old_name, new_name = _name(c.old_path), _name(c.new_path)
        if c.status == "R" and c.new_path and old_name in added and old_name != new_name:
            split += [FileChange("D", c.old_path, None, c.old_blob, None),
                      FileChange("A", None, c.new_path, None, c.new_blob)]
        else:
            split.append(c)
    changes = split
    deletes = {_name(c.old_path): c for c in changes if c.status == "D" and c.old_path}
    result: list[FileChange] = []
    paired: set[str] = set()
    for change in changes:
        if change.status == "A" and change.new_path:
            name = _name(change.new_path)
            gone = deletes.get(name)
            if gone is not None and name not in paired:
                paired.add(name)
                result.append(FileChange("R", gone.old_path, change.new_path, gone.old_blob, change.new_blob))
                continue
        result.append(change)
    return [c for c in result if not (c.status == "D" and _name(c.old_path) in paired)]


def _side(path: str | None, blob: str | None, read_blob: BlobReader) -> _Side | None:
    if path is None:
        return None
    parts = tuple(path.split("/"))  # a git path: '/'-separated, never empty parts
    conversation = parts[1] if len(parts) > 2 else None
    if conversation == "deleted" and len(parts) > 3:
        conversation = parts[2]  # agent-cli's entries/deleted/<conv>/... tombstones
    raw = read_blob(blob)
    if raw is None:  # a bulk commit (events from paths) or an unreadable blob: the path alone
        stem = _stem(parts[-1])
        return _Side(path, stem.partition("__")[2] or stem, conversation, _role_from_path(parts), None, None)
    meta: dict[str, object] = {}
    text: str | None = None
    try:
        doc = front_matter.parse(front_matter.decode(raw))
        meta, text = dict(doc.meta), doc.body
    except FrontMatterError:
        text = raw.decode("utf-8", errors="replace")[:2000]
    role = meta.get("role") or _role_from_path(parts)
    stem = _stem(parts[-1])
    memory_id = meta.get("id") or stem.partition("__")[2] or stem
    replaced = meta.get("replaced_by")
    return _Side(
        path=path,
        memory_id=str(memory_id),
        conversation_id=conversation,
        role=str(role) if role else None,
        text=text,
        replaced_by=str(replaced) if replaced else None,
        valid_from=_when(meta.get("valid_from")),
        valid_to=_when(meta.get("valid_to")),
    )


def _stem(name: str) -> str:
    """A file name without its last suffix (as PurePosixPath.stem, without its cost)."""
    dot = name.rfind(".")
    return name[:dot] if dot > 0 else name


def _name(path: str | None) -> str:
    """The last part of a git path (as PurePosixPath.name)."""
    return (path or "").rpartition("/")[2]


def _when(value: object) -> str | None:
    """A validity value as written (a YAML date or date-time as ISO text)."""
    if value is None or value == "":
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _role_from_path(parts: tuple[str, ...]) -> str | None:
    if "summaries" in parts:
        return "summary"
    if "user" in parts and "turns" in parts:
        return "user"
    if "assistant" in parts and "turns" in parts:
        return "assistant"
    if "facts" in parts:
        return "memory"
    return None


def _is_memory_path(path: str | None) -> bool:
    return layout.is_memory_file(path)
