"""Paging and filtering of the classified history for the timeline pane, plus diff helpers.

A page is read newest first, a batch of commits at a time without their files (one `git log`;
a conversation's: only the commits touching its folders); when filters are set, further batches
are read until the page is full or history ends. Commits never change, so what they changed is
cached by sha: classified in memory (scrolling back and forth or re-filtering costs no blob
reads), and on disk what git listed (history/commit_summaries.py): git lists the files of a
commit once, in the first session that shows it, or never for the app's own bulk commits.
"""

from __future__ import annotations

import difflib
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Literal

import yaml
from git.exc import GitError
from gitdb.exc import ODBError

from desktop_mem.engine.history import commit_summaries, timeline
from desktop_mem.engine.history.git_history import GitHistory, RawCommit
from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.history.timeline import classify, commit_source
from desktop_mem.engine.models import CommitInfo, EventType, TimelineEvent
from desktop_mem.engine.store import front_matter, layout

DiffOp = Literal["equal", "insert", "delete"]
DELETES_AND_REPLACEMENTS = frozenset({EventType.DELETE, EventType.EVICT, EventType.UPDATE})
_MAX_BATCH = 400
# Words, runs of punctuation and runs of whitespace: a diff of these keeps spacing exact.
_TOKEN_RE = re.compile(r"\w+|[^\w\s]+|\s+")


@dataclass(frozen=True)
class TimelineQuery:
    """What the pane asks for; every field left at its default means "no filter"."""

    conversation: str | None = None
    event_types: AbstractSet[EventType] | None = None
    since: datetime | None = None
    until: datetime | None = None
    text: str | None = None
    only_deletes_and_replacements: bool = False
    source: str | None = None  # "mcp", "app" or "git" (timeline.commit_source)

    def __post_init__(self) -> None:
        # A frozenset keeps the query hashable (the pane keys "latest wins" requests by it).
        if self.event_types is not None:
            object.__setattr__(self, "event_types", frozenset(EventType(t) for t in self.event_types))
        for name in ("since", "until"):
            when = getattr(self, name)
            if when is not None and when.tzinfo is None:  # naive means UTC, as in front matter
                object.__setattr__(self, name, when.replace(tzinfo=UTC))

    @property
    def filtered(self) -> bool:
        """True when some commits may be left out."""
        return bool(self.conversation or self.event_types or self.since or self.until
                    or (self.text or "").strip() or self.only_deletes_and_replacements or self.source)

    def event_matches(self, commit: CommitInfo, event: TimelineEvent) -> bool:
        """True when one event passes the event-level filters (conversation, type, text)."""
        return self._kept(commit, event.type, event.conversation_id,
                          (event.old_text, event.new_text, event.memory_id, event.new_id))

    def _kept(self, commit: CommitInfo, kind: EventType, conversation: str | None,
              texts: Iterable[str | None]) -> bool:
        if self.conversation is not None and conversation != self.conversation:
            return False
        if self.event_types and kind not in self.event_types:
            return False
        if self.only_deletes_and_replacements and kind not in DELETES_AND_REPLACEMENTS:
            return False
        needle = (self.text or "").strip().casefold()
        if needle:
            hay = (commit.subject, *texts)
            if not any(needle in h.casefold() for h in hay if h):
                return False
        return True

    def filters_events(self) -> bool:
        """True when some event of a commit may be left out (conversation, type or text set)."""
        return bool(self.conversation or self.event_types or (self.text or "").strip()
                    or self.only_deletes_and_replacements)

    def kept_positions(self, commit: CommitInfo, events: Sequence[TimelineEvent] | None = None
                       ) -> Iterator[int]:
        """The positions of the commit's events (or of `events`, the same unpacked) the filters
        keep, in order (every one without an event filter). A bulk commit's are read from its
        packed fields: no event is built (an import's 100,000 were built, and kept, to dim the
        others on the GUI thread)."""
        events = commit.events if events is None else events
        if not self.filters_events():
            yield from range(len(events))
        elif isinstance(events, timeline.PathEvents):
            for i, (kind, memory_id, conversation) in enumerate(events.brief()):
                # Its events carry no texts: the memory id is all a text filter can find.
                if self._kept(commit, kind, conversation, (memory_id,)):
                    yield i
        else:
            yield from (i for i, e in enumerate(events) if self.event_matches(commit, e))

    def rows(self, commit: CommitInfo) -> tuple[Sequence[TimelineEvent], frozenset[int] | None]:
        """The commit's events as the pane lists them, and the positions the filters keep (None:
        all). A bulk commit's come unpacked in an object of their own (PathEvents.unpacked), read
        off the GUI thread: the rows drawn are built in it and go when another commit is shown."""
        events = commit.events
        if isinstance(events, timeline.PathEvents):
            events = events.unpacked()
        kept = frozenset(self.kept_positions(commit, events)) if self.filters_events() else None
        return events, kept

    def first_match(self, commit: CommitInfo) -> int:
        """The position of the commit's first event the filters keep (0 when none or no filter)."""
        return next(self.kept_positions(commit), 0)

    def matching_events(self, commit: CommitInfo) -> tuple[TimelineEvent, ...]:
        """The events of a commit the filters keep (the pane can dim the others)."""
        events = commit.events
        if isinstance(events, timeline.PathEvents):
            events = events.unpacked()  # unpacked once: a held one unpacks on every index
        return tuple(events[i] for i in self.kept_positions(commit, events))

    def matches(self, commit: CommitInfo) -> bool:
        """True when the commit belongs on the filtered timeline."""
        if not self._date_ok(commit.committed_at) or not self._source_ok(commit.trailers):
            return False
        if not self.filters_events():
            return True
        if commit.event_counts is not None:  # a bulk commit: ruled out by its counts, unread
            kinds = commit.event_counts.keys()
            if (self.event_types and not kinds & self.event_types) or (
                    self.only_deletes_and_replacements and not kinds & DELETES_AND_REPLACEMENTS):
                return False
        if isinstance(commit.events, timeline.PathEvents) and self.conversation is not None:
            # ... or by the conversations its events belong to; in, if that is all that is asked.
            if self.conversation not in commit.events.conversations:
                return False
            if not (self.event_types or self.only_deletes_and_replacements or (self.text or "").strip()):
                return True
        # The first match will do (a bulk commit's fields are read, no event is built).
        return next(self.kept_positions(commit), None) is not None

    def meta_could_match(self, raw: RawCommit) -> bool:
        """A pre-check on a commit's date and source alone (read without its files)."""
        return self._date_ok(raw.committed_at) and self._source_ok(raw.trailers)

    def could_match(self, raw: RawCommit) -> bool:
        """A cheap pre-check on the raw commit (no blob reads); False means surely not."""
        if not self.meta_could_match(raw):
            return False
        paths = [p for c in raw.changes for p in (c.old_path, c.new_path) if p]
        folders = self.folders()
        if folders is None or (folders and not any(p.startswith(folders) for p in paths)):
            return False
        if self.only_deletes_and_replacements:
            # Every delete, evict or replacement removes a file or puts one under deleted/.
            touches = any(c.status == "D" or layout.in_deleted(c.new_path) for c in raw.changes)
            if not touches:
                return False
        return True

    def folders(self) -> tuple[str, ...] | None:
        """The folders a commit must touch to hold an event of the conversation asked for (()
        without one; None for a name no folder can have: nothing matches)."""
        name = self.conversation
        if name is None:
            return ()
        if not name or name in (".", "..") or any(c in name for c in "/\\\0"):
            return None
        return (layout.conversation_root(name), f"{layout.ENTRIES}/{layout.DELETED}/{name}/")

    def _source_ok(self, trailers: Mapping[str, str]) -> bool:
        return self.source is None or commit_source(trailers) == self.source

    def _date_ok(self, when: datetime) -> bool:
        return (self.since is None or when >= self.since) and (self.until is None or when <= self.until)


@dataclass(frozen=True)
class TimelineCursor:
    """Where the next page starts: a git offset, and HEAD when it was counted.

    If commits were made since (new ones appear at the top), the offset is moved down by their
    number so the next page neither repeats nor skips a commit.
    """

    offset: int
    head: str | None


@dataclass(frozen=True)
class TimelinePage:
    """A page of commits, newest first; `next_cursor` is None when history has ended."""

    commits: tuple[CommitInfo, ...]
    next_cursor: TimelineCursor | None
    scanned: int


class CommitCache:
    """A small thread-safe LRU of classified commits by sha (commits are immutable)."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._items: OrderedDict[str, CommitInfo] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, sha: str) -> CommitInfo | None:
        """The cached commit, marked as recently used."""
        with self._lock:
            info = self._items.get(sha)
            if info is not None:
                self._items.move_to_end(sha)
            return info

    def put(self, info: CommitInfo) -> None:
        """Remember a commit, dropping the least recently used beyond capacity."""
        with self._lock:
            self._items[info.sha] = info
            self._items.move_to_end(info.sha)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def classified(self, source: HistorySource, raw: RawCommit) -> CommitInfo:
        """The classified commit, from the cache or classified now."""
        info = self.get(raw.sha)
        if info is None:
            info = classify(raw, source.git.blob)
            self.put(info)
        return info

    def commit(self, source: HistorySource, sha: str) -> CommitInfo:
        """One commit by sha (any revision git understands), classified; its files are listed
        by git only if no earlier session kept them (a lineage names an import's commit: 100,000
        files)."""
        info = self.get(sha)
        if info is None:
            meta = source.git.commit_info(sha, files=False)
            known, listed = _resolved(source, self, [meta])
            info = known.get(meta.sha) or self.classified(source, listed[meta.sha])
        return info


_CACHES: weakref.WeakKeyDictionary[HistorySource, CommitCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_for(source: HistorySource) -> CommitCache:
    """The commit cache shared by everything that reads this source's timeline."""
    with _CACHES_LOCK:
        cache = _CACHES.get(source)
        if cache is None:
            cache = _CACHES[source] = CommitCache()
        return cache


def timeline_page(
    source: HistorySource,
    query: TimelineQuery | None = None,
    cursor: TimelineCursor | None = None,
    page_size: int = 50,
    cache: CommitCache | None = None,
) -> TimelinePage:
    """One page of the (filtered) timeline, newest first, starting at `cursor`."""
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, not {page_size}")
    query = query or TimelineQuery()
    cache = cache if cache is not None else cache_for(source)
    head = source.git.head() if source.git.exists() else None
    if head is None:
        return TimelinePage((), None, 0)
    folders = query.folders()
    if folders is None:
        return TimelinePage((), None, 0)
    offset = _shifted_offset(source, cursor, head, folders)
    found: list[CommitInfo] = []
    scanned = 0
    batch = page_size if not query.filtered else max(page_size, 100)
    while True:
        # The batch without its files first (a few ms); what each commit changed comes from
        # memory, from commit_summaries (kept on disk by sha), and only for commits never seen
        # from git (issue #25: git's listing was 0.1 s of a page of small commits at 100,000
        # commits, and with two migration commits listing, parsing and classifying their 58,930
        # files was 1.2 s of a 1.23 s page).
        # A conversation asked for: git walks only the commits that touch its folders (it prunes
        # the other folders' trees; a scan of every commit listed each one's files: 1.6 s first).
        raws = source.git.log(limit=batch, offset=offset, files=False, folders=folders)
        known, listed = _resolved(source, cache, [r for r in raws if query.meta_could_match(r)])
        for i, meta in enumerate(raws):
            scanned += 1
            info = known.get(meta.sha)
            raw = listed.get(meta.sha)
            if info is None and raw is not None and query.could_match(raw):
                info = cache.classified(source, raw)
            if info is not None and query.matches(info):
                found.append(info)
            if len(found) == page_size:
                more = i + 1 < len(raws) or len(raws) == batch
                next_cursor = TimelineCursor(offset + i + 1, head) if more else None
                return TimelinePage(tuple(found), next_cursor, scanned)
        if len(raws) < batch:
            return TimelinePage(tuple(found), None, scanned)
        offset += len(raws)
        batch = min(batch * 2, _MAX_BATCH)


# One background thread, for what a page need not wait for (issue #25): keeping what git listed
# (commit_summaries, a SQLite write). Tasks run in order; nothing in them is needed for a page to
# be right. (A bulk commit's events are no longer built ahead: the pane builds the rows it draws
# and reads a filter from the packed fields, and an import's 100,000 built events held ~100 MB.)
_BACKGROUND = ThreadPoolExecutor(max_workers=1, thread_name_prefix="timeline-background")


def _resolved(source: HistorySource, cache: CommitCache, raws: Sequence[RawCommit]
              ) -> tuple[dict[str, CommitInfo], dict[str, RawCommit]]:
    """For commits read without their files: those already classified (in memory, or bulk commits
    kept on disk), and the others with their files (kept on disk, else listed by git now and
    kept). A bulk commit listed now is classified now, so it is never listed again."""
    known: dict[str, CommitInfo] = {}
    for raw in raws:
        info = cache.get(raw.sha)
        if info is not None:
            known[raw.sha] = info
    kept, listed = commit_summaries.load(source.git, [r for r in raws if r.sha not in known])
    for info in kept.values():
        cache.put(info)
    known |= kept
    new = source.git.with_files([r.sha for r in raws if r.sha not in known and r.sha not in listed])
    small: list[RawCommit] = []
    bulk: list[CommitInfo] = []
    for raw in new:
        if timeline.is_bulk(raw):
            info = known[raw.sha] = cache.classified(source, raw)
            bulk.append(info)
        else:
            listed[raw.sha] = raw
            small.append(raw)
    if small or bulk:  # written after the page is handed over
        _BACKGROUND.submit(_keep, source.git, small, bulk)
    return known, listed


def _keep(git: GitHistory, small: list[RawCommit], bulk: list[CommitInfo]) -> None:
    commit_summaries.save_files(git, small)
    for info in bulk:
        commit_summaries.save_bulk(git, info)


def wait_for_background() -> None:
    """Wait until what earlier pages left to do in the background is done (tests, benchmarks)."""
    _BACKGROUND.submit(lambda: None).result()


def _shifted_offset(source: HistorySource, cursor: TimelineCursor | None, head: str,
                    folders: Sequence[str]) -> int:
    if cursor is None:
        return 0
    if cursor.head is None or cursor.head == head:
        return cursor.offset
    try:
        # Commits made since the cursor was handed out sit on top; skip past them too (counted
        # as the page's log counts them: only those touching `folders`, if any).
        new = source.git.count_between(cursor.head, head, folders)
    except Exception:  # noqa: BLE001 - history rewritten under us: keep the plain offset
        return cursor.offset
    return cursor.offset + new


# ---------------------------------------------------------------- diff helpers


@dataclass(frozen=True)
class FieldChange:
    """One front-matter key that differs: its value before and after as YAML text (None = absent)."""

    key: str
    old: str | None
    new: str | None

    @property
    def change(self) -> str:
        """'added', 'removed' or 'changed' - how the diff view labels the row."""
        if self.old is None:
            return "added"
        if self.new is None:
            return "removed"
        return "changed"


def word_diff(old: str, new: str) -> list[tuple[DiffOp, str]]:
    """Word-level diff of two texts; concatenating equal+delete gives `old`, equal+insert `new`.

    A bare space left "equal" between two changes is folded into them, so a changed phrase reads
    as one deletion and one insertion rather than a confetti of single words.
    """
    a, b = _TOKEN_RE.findall(old), _TOKEN_RE.findall(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    # Runs of (old text, new text); equal runs have both the same.
    runs: list[tuple[str, str, bool]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        runs.append(("".join(a[i1:i2]), "".join(b[j1:j2]), tag == "equal"))
    for i in range(1, len(runs) - 1):
        text, _, equal = runs[i]
        if equal and not text.strip() and not runs[i - 1][2] and not runs[i + 1][2]:
            runs[i] = (text, text, False)
    out: list[tuple[DiffOp, str]] = []
    deleted: list[str] = []
    inserted: list[str] = []
    for before, after, equal in [*runs, ("", "", True)]:
        if not equal:
            deleted.append(before)
            inserted.append(after)
            continue
        _append(out, "delete", "".join(deleted))
        _append(out, "insert", "".join(inserted))
        deleted, inserted = [], []
        _append(out, "equal", before)
    return out


def _append(out: list[tuple[DiffOp, str]], op: DiffOp, text: str) -> None:
    if not text:
        return
    if out and out[-1][0] == op:
        out[-1] = (op, out[-1][1] + text)
    else:
        out.append((op, text))


def front_matter_changes(old_bytes: bytes | None, new_bytes: bytes | None) -> list[FieldChange]:
    """Keys whose values differ between two versions of a file (known keys first, then unknown).

    A missing side (an added or removed file) counts as no keys. Raises FrontMatterError when a
    side cannot be parsed; the diff view then falls back to the raw git diff.
    """
    old = _meta(old_bytes)
    new = _meta(new_bytes)
    keys = [k for k in front_matter.KNOWN_KEYS if k in old or k in new]
    keys += [k for k in _unique([*old, *new]) if k not in front_matter.KNOWN_KEYS]
    changes = []
    for key in keys:
        before = _show(old[key]) if key in old else None
        after = _show(new[key]) if key in new else None
        if before != after:
            changes.append(FieldChange(key, before, after))
    return changes


def _meta(raw: bytes | None) -> dict[str, Any]:
    if raw is None:
        return {}
    return dict(front_matter.parse(front_matter.decode(raw)).meta)


def _unique(keys: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, datetime | date):
        return value.isoformat()
    dumped: str = yaml.safe_dump(value, allow_unicode=True, default_flow_style=True, width=4096)
    return dumped.removesuffix("\n...\n").strip()


def file_bytes_at(source: HistorySource, path: str, revision: str) -> bytes | None:
    """A file's exact bytes at a revision, None if it did not exist there.

    Read from the commit's tree through GitPython's object database (not `git show`, whose output
    GitPython strips of the final newline), so content hashes match the file on disk.
    """
    try:
        with source.git.locked() as repo:
            blob = repo.commit(revision).tree / path
            data: bytes = blob.data_stream.read()
    except (KeyError, ValueError, GitError, ODBError):
        return None
    return data


def event_bytes(source: HistorySource, event: TimelineEvent) -> tuple[bytes | None, bytes | None]:
    """The file before and after an event (None for a side that did not exist), for the diff view."""
    old = file_bytes_at(source, event.old_path, f"{event.commit}^") if event.old_path else None
    new = None if event.hard_delete else file_bytes_at(source, event.path, event.commit)
    return old, new


def event_texts(event: TimelineEvent, old_bytes: bytes | None, new_bytes: bytes | None) -> tuple[str, str]:
    """The memory's text before and after an event, for the diff view: the event's own, or for an
    event of a bulk commit (classified from its paths, without texts) the bodies of the two files
    `event_bytes` read. A side that is missing, or whose front matter cannot be read, is ""."""
    return (_text_of(event.old_text, old_bytes if event.old_path else None),
            _text_of(event.new_text, new_bytes))


def _text_of(text: str | None, raw: bytes | None) -> str:
    if text is not None or raw is None:
        return text or ""
    try:
        return front_matter.parse(front_matter.decode(raw)).body
    except front_matter.FrontMatterError:
        return ""  # the raw git diff shows it (the view says so)
