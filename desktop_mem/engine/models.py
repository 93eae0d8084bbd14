"""Values shared by every layer: memories, problems, history events. All frozen."""

from __future__ import annotations

import errno
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from itertools import repeat
from typing import Any, Literal, NotRequired, TypedDict, get_args


class Role(StrEnum):
    """Who a memory file speaks for: a remembered fact, a turn of the transcript, or the summary."""

    MEMORY = "memory"
    USER = "user"
    ASSISTANT = "assistant"
    SUMMARY = "summary"


class Kind(StrEnum):
    """What a remembered fact is (002): a fact, a standing preference, or context."""

    FACT = "fact"
    PREFERENCE = "preference"
    CONTEXT = "context"


class Source(StrEnum):
    """Who wrote a memory (front matter `source`)."""

    LLM = "llm"
    PATTERN = "pattern"
    MANUAL = "manual"
    IMPORT = "import"
    MCP = "mcp"


class SecretsPolicy(StrEnum):
    """`security.secrets`: what happens to a likely secret in text to be saved."""

    ASK = "ask"  # refuse (or, for a hand edit, hold back) until the user chooses
    REDACT = "redact"  # replace each likely secret by [redacted:<kind>]
    KEEP = "keep"  # save it as written

    @classmethod
    def unattended(cls, setting: str) -> SecretsPolicy:
        """The policy for text written with nobody there to ask (turns, extracted facts, an AI
        tool's write): redact, unless the setting keeps secrets as written."""
        return cls.KEEP if setting == cls.KEEP else cls.REDACT


# The in-session context strategies (003) and what triggers trimming or compacting: chat/context.py
# implements them, config.py offers them as the settings' choices.
StrategyName = Literal["none", "trimming", "sliding_window", "summarizing", "compacting"]
ContextTrigger = Literal["turns", "tokens"]
STRATEGY_NAMES: tuple[str, ...] = get_args(StrategyName)


class Decision(StrEnum):
    """What reconciliation decided for an extracted fact (001 §4.3)."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    NONE = "NONE"


class Message(TypedDict):
    """One chat message as an OpenAI-compatible endpoint takes it (and as REST / MCP carry it)."""

    role: str  # "system", "user", "assistant" (a Role for stored turns), "tool"
    content: str


class ChatMessage(TypedDict):
    """A message as the chat path carries it (chat/context.py's strategies, the 004 interface,
    an API client's history): a chat message, what a tool call carries, and two keys that never
    leave the app (`memory_id`: the stored turn it is; `incomplete`: a reply stopped or cut)."""

    role: str  # "system", "user", "assistant", "tool"
    content: NotRequired[Any]  # text; an OpenAI client may send a list of parts, or None beside tool_calls
    name: NotRequired[str]
    tool_calls: NotRequired[list[dict[str, Any]]]
    tool_call_id: NotRequired[str]
    memory_id: NotRequired[str]
    incomplete: NotRequired[bool]


class StoredMessage(Message):
    """A stored turn of a conversation as a chat message: its memory id and when it was said."""

    id: str
    created_at: str  # ISO 8601


# StrEnum members equal their strings: files, JSON and settings read and write the same text.
ROLES: tuple[str, ...] = tuple(r.value for r in Role)
TURN_ROLES: frozenset[str] = frozenset({Role.USER.value, Role.ASSISTANT.value})
KINDS: tuple[str, ...] = tuple(k.value for k in Kind)
SOURCES: tuple[str, ...] = tuple(s.value for s in (Source.LLM, Source.PATTERN, Source.MANUAL, Source.IMPORT))
GLOBAL_CONVERSATION = "global"


def flag(value: object) -> bool:
    """A yes/no front matter value: YAML's true/false, or the same written as text by hand
    ("true", "yes", "on", "1"; "false", "no" ... are False). Anything else is False."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().casefold() in {"true", "yes", "on", "1"}
    return isinstance(value, int | float) and value != 0


def utc_now() -> datetime:
    """The current time, timezone-aware UTC, to the second (front matter stays readable)."""
    return datetime.now(UTC).replace(microsecond=0)


class _NoExtra(dict[str, Any]):
    """The empty `extra` that most memories share: one object, not an empty dict per memory
    (64 bytes each, 6 MB at 100,000; issue #25). It refuses changes, so sharing it is safe; a
    plain dict still compares equal to it and JSON writes it as {}."""

    def _refuse(self, *_args: Any, **_kwargs: Any) -> Any:
        raise TypeError("a memory's extra is read-only: build a new dict")

    __setitem__ = __delitem__ = __ior__ = update = setdefault = pop = popitem = clear = _refuse

    def __reduce__(self) -> Any:
        return (_no_extra, ())


def _no_extra() -> _NoExtra:
    return NO_EXTRA


NO_EXTRA = _NoExtra()


@dataclass(frozen=True, slots=True)  # slots: no __dict__ per memory (100k in a catalog; issue #25)
class Memory:
    """One Markdown file of the store, parsed. `path` is relative to the store root (POSIX)."""

    id: str
    role: Role  # given as a Role or its string ("memory", "user" ...): always a Role after
    conversation_id: str
    text: str
    created_at: datetime
    path: str
    kind: str | None = None
    source: str | None = None
    updated_at: datetime | None = None
    deleted_at: datetime | None = None
    expires_at: datetime | None = None
    replaced_by: str | None = None
    summary_kind: str | None = None
    summarized_count: int | None = None
    # When the fact was true (store/validity.py): "2024", "2024-03", "2024-03-15" or an ISO instant.
    valid_from: str | None = None
    valid_to: str | None = None
    extra: Mapping[str, Any] = field(default_factory=_no_extra)
    content_hash: str = ""

    def __post_init__(self) -> None:
        # Files, the manifest's JSON and callers give the role as a string; compared and passed
        # on it is the enum (equal to its string, so front matter and JSON stay the same text).
        if type(self.role) is not Role:
            object.__setattr__(self, "role", Role(self.role))
        if not self.extra and self.extra is not NO_EXTRA:
            object.__setattr__(self, "extra", NO_EXTRA)

    @property
    def interrupted(self) -> bool:
        """A reply the user stopped or whose stream failed (front matter `interrupted`)."""
        return flag(self.extra.get("interrupted"))

    @property
    def truncated(self) -> bool:
        """A reply the server cut at its length limit (front matter `truncated`)."""
        return flag(self.extra.get("truncated"))

    @property
    def complete(self) -> bool:
        """False for a reply that was interrupted or cut: never summarised, never sent as said."""
        return not (self.interrupted or self.truncated)

    @property
    def deleted(self) -> bool:
        """Soft-deleted memories live under `deleted/` and carry `deleted_at`."""
        return "/deleted/" in f"/{self.path}"

    @property
    def is_turn(self) -> bool:
        """A user or assistant turn of a conversation's transcript."""
        return self.role in TURN_ROLES

    @property
    def is_fact(self) -> bool:
        """A remembered fact, preference or context (role `memory`)."""
        return self.role == Role.MEMORY

    @property
    def is_summary(self) -> bool:
        """A conversation's rolling summary."""
        return self.role == Role.SUMMARY

    def expired(self, now: datetime | None = None) -> bool:
        """True when a TTL (`expires_at`) has passed."""
        return self.expires_at is not None and self.expires_at <= (now or utc_now())


class ListFilters(TypedDict, total=False):
    """Which memories a listing holds: the keywords of every `list_memories` (the catalog, the
    shared and raw reads, a chat turn's snapshot, the engine), declared once. Absent = no limit;
    deleted ones and summaries: `include_deleted` False, `include_summaries` True by default."""

    conversation_id: str | None
    role: str | None
    kind: str | None
    include_deleted: bool
    only_deleted: bool
    include_summaries: bool
    since: datetime | None  # created at or after
    until: datetime | None  # created at or before


def select_memories(items: Sequence[Memory], filters: ListFilters) -> list[Memory]:
    """The memories of `items` that belong in a listing with these filters, in their order (one
    pass with the values read once: a call per memory costs ~50 % more at 100,000)."""
    if unknown := filters.keys() - ListFilters.__optional_keys__:
        raise TypeError(f"list_memories got unknown filters: {', '.join(sorted(unknown))}")
    conversation, role, kind = filters.get("conversation_id"), filters.get("role"), filters.get("kind")
    since, until = filters.get("since"), filters.get("until")
    deleted, only_deleted = filters.get("include_deleted", False), filters.get("only_deleted", False)
    summaries = filters.get("include_summaries", True)
    if (deleted and summaries and not only_deleted and conversation is None and role is None and kind is None
            and since is None and until is None):
        return list(items)  # everything (a chat path's snapshot): no test per memory
    return [
        m for m in items
        if (conversation is None or m.conversation_id == conversation)
        and (role is None or m.role == role)
        and (kind is None or m.kind == kind)
        and (deleted or only_deleted or not m.deleted)
        and (not only_deleted or m.deleted)
        and (summaries or m.role != Role.SUMMARY)
        and (since is None or m.created_at >= since)
        and (until is None or m.created_at <= until)
    ]


_SLOT_SETTERS = tuple(getattr(Memory, f.name).__set__ for f in fields(Memory))


def memory_from_values(values: Sequence[Any]) -> Memory:
    """Memory(*values) for values in field order, all of them given, the role already a Role
    and an empty extra already NO_EXTRA (the manifest's rows at start). Stores the slots
    directly: the frozen dataclass's __init__ calls object.__setattr__ once per field, ~40 % of
    reading 100,000 cached memories (issue #25)."""
    if len(values) != len(_SLOT_SETTERS) or type(values[1]) is not Role:
        return Memory(*values)  # the checked way: raises what __init__ raises
    memory = object.__new__(Memory)
    any(map(operator.call, _SLOT_SETTERS, repeat(memory), values))  # each store returns None
    return memory


@dataclass(frozen=True)
class Problem:
    """A file the store could not read. It is reported and left untouched."""

    path: str
    reason: str
    hint: str = "Open the file in a text editor, fix it, and save; it is picked up automatically."


@dataclass(frozen=True)
class Listing:
    """The result of scanning the store: readable memories plus files that failed to parse."""

    memories: tuple[Memory, ...]
    problems: tuple[Problem, ...]


class EventType(StrEnum):
    """What a commit did to a memory, as the timeline shows it."""

    ADD = "ADD"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    RESTORE = "RESTORE"
    EDIT = "EDIT"
    SUMMARY = "SUMMARY"
    EVICT = "EVICT"
    TURN = "TURN"


class Operation(StrEnum):
    """What a write did, recorded as the commit's `Desktop-Mem-Operation` trailer and on StoreChange."""

    ADD = "add"
    EDIT = "edit"
    UPDATE = "update"
    DELETE = "delete"
    EVICT = "evict"
    RESTORE = "restore"
    REVERT = "revert"
    REVERT_UPDATE = "revert-update"
    RESTORE_SUMMARY = "restore-summary"
    SUMMARY = "summary"
    TURN = "turn"
    IMPORT = "import"
    EXTERNAL_EDIT = "external-edit"
    CONVERSATION = "conversation"
    SYNC = "sync"
    PROBLEM = "problem"
    MIGRATE = "migrate"  # a one-time rewrite of old files (e.g. validity recorded)
    REVIEW = "review"  # a proposal the model made, kept for the user, or rejected by them


@dataclass(frozen=True)
class StoreChange:
    """Told to subscribers after every change: which memories, which commit, why.

    `turn_id` (the user turn's id) ties a chat turn's write outcome to its reply.
    """

    operation: Operation
    memory_ids: tuple[str, ...]
    conversation_id: str | None
    commit: str | None
    paths: tuple[str, ...] = ()
    turn_id: str | None = None
    source: str | None = None  # who asked, from the `Source` trailer: "mcp" for an AI tool
    client: str | None = None  # the MCP client's name (`Client` trailer)
    # why git could not commit it (the files are written, not versioned yet): said loudly (#34)
    commit_error: str | None = None


class HeldBackChoice(StrEnum):
    """What the user decided about a hand-edited file held back for a likely secret."""

    REDACT = "redact"  # replace each likely secret by [redacted:<kind>], then commit
    KEEP = "keep"  # commit the file as written; the same secret is not asked about again


@dataclass(frozen=True)
class SecretHeldBack:
    """A hand-edited memory file left uncommitted (and out of the index) because it holds a
    likely secret, until the user chooses to redact or keep it. Never carries the secret:
    `kinds` names what was found, `preview` is the text's start with every secret redacted."""

    path: str
    memory_id: str | None
    conversation_id: str | None
    kinds: tuple[str, ...]
    preview: str
    content_hash: str  # of the file when it was held: a choice made for it is refused after an edit


@dataclass(frozen=True)
class TimelineEvent:
    """One classified change inside a commit."""

    type: EventType
    commit: str
    memory_id: str | None
    conversation_id: str | None
    path: str
    old_path: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    replaced_by: str | None = None
    new_id: str | None = None
    role: str | None = None
    hard_delete: bool = False
    valid_from: str | None = None  # the memory's validity after the change, as written
    valid_to: str | None = None
    validity_changed: bool = False


@dataclass(frozen=True)
class CommitInfo:
    """A commit of the store with its classified events."""

    sha: str
    subject: str
    author: str
    committed_at: datetime
    trailers: Mapping[str, str]
    # A tuple; a bulk commit's events (events_from_paths) are a lazy sequence that builds an event
    # when it is first read (history.timeline.PathEvents): its length and counts cost nothing.
    events: Sequence[TimelineEvent]
    made_by_app: bool
    # True for a commit of more memory files than history.timeline.DETAIL_LIMIT (an import, a
    # migration): its events come from the file paths alone, without texts.
    events_from_paths: bool = False
    event_counts: Mapping[EventType, int] | None = None  # counted when classified (bulk commits)

    def type_counts(self) -> dict[EventType, int]:
        """How many events of each type (a bulk commit's without reading its events)."""
        if self.event_counts is not None:
            return dict(self.event_counts)
        counts: dict[EventType, int] = {}
        for event in self.events:
            counts[event.type] = counts.get(event.type, 0) + 1
        return counts


class EngineError(Exception):
    """Base of the engine's errors: the message is one line a user can act on."""


class NotFoundError(EngineError):
    """No memory with that id."""


class ValidationError(EngineError):
    """Bad input from a user or a file (front matter, conversation id, ...)."""


class ConflictError(EngineError):
    """The file changed on disk since it was read; nothing was overwritten."""


class StoreLockedError(EngineError):
    """Another process is the writer of this store."""


class ReadOnlyError(EngineError):
    """A write was attempted on an engine opened read-only."""


# ---- a full disk, a read-only store or a lost permission, said in one line at every layer (#34):
# the same failure arrives as an OSError (ENOSPC, EROFS, EACCES ...) from a file write, as a sqlite
# error ("database or disk is full") from the keyword index, the manifest or chroma, or in git's
# words; `disk_problem` names it the same way whichever layer met it, so no layer tells a user with
# a full disk to delete and rebuild an index that is fine.

_FULL = "the disk holding the store is full: free some space and try again (nothing saved is lost)"
_READ_ONLY = ("the store is on a read-only file system: it can be read, not changed (nothing saved "
              "is lost)")
_DENIED = ("permission to write in the store was lost (a folder or file is not writable by you): "
           "give it back and try again (nothing saved is lost)")
_ERRNOS = {errno.ENOSPC: _FULL, errno.EDQUOT: _FULL, errno.EROFS: _READ_ONLY,
           errno.EACCES: _DENIED, errno.EPERM: _DENIED}
_WORDS = (("database or disk is full", _FULL), ("no space left on device", _FULL),
          ("disk quota exceeded", _FULL), ("read-only file system", _READ_ONLY),
          ("readonly database", _READ_ONLY), ("permission denied", _DENIED))


def disk_problem(exc: BaseException) -> str | None:
    """One line for a storage failure anywhere in `exc`'s chain (its cause, its context), or None
    when it is not one."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _ERRNOS:
            return _ERRNOS[current.errno]
        text = str(current).lower()
        for words, line in _WORDS:
            if words in text:
                return line
        current = current.__cause__ or current.__context__
    return None
