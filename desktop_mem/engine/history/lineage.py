"""The `replaced_by` chain of a memory both ways, each step with its text and its commits.

The chain is read from the files alone (tombstones under deleted/ carry `replaced_by`); git only
adds when each step happened. Backwards the chain can fork (two old facts merged into one), so
earlier steps carry a depth. Cycles (a hand edit can make A -> B -> A) and a `replaced_by` naming
no memory (a hard-deleted or never-written target) end the walk and are reported, never raised.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from desktop_mem.engine.history.git_history import GitHistoryError, RawCommit
from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.history.timeline_query import CommitCache, cache_for
from desktop_mem.engine.models import CommitInfo, EventType, Memory, TimelineEvent
from desktop_mem.engine.store import layout

_FILE_LOG_LIMIT = 500


@dataclass(frozen=True)
class LineageStep:
    """One memory of the chain: live, a tombstone, or missing (only its id is known)."""

    memory_id: str
    memory: Memory | None
    text: str | None
    depth: int
    created_in: CommitInfo | None = None
    created_event: TimelineEvent | None = None
    replaced_in: CommitInfo | None = None
    replaced_event: TimelineEvent | None = None

    @property
    def missing(self) -> bool:
        """True when no file holds this id any more (the chain dangles here)."""
        return self.memory is None

    @property
    def live(self) -> bool:
        """True for a memory that is in use (not under deleted/)."""
        return self.memory is not None and not self.memory.deleted


@dataclass(frozen=True)
class Lineage:
    """What a memory replaced (`earlier`, oldest first) and what replaced it (`later`, in order).

    `depth` is negative for earlier steps (-1 = replaced directly by the memory), 0 for the
    memory itself and positive for later ones. `dangling` lists `replaced_by` ids that name no
    memory; `cycle` is True when the chain loops back on itself.
    """

    memory_id: str
    earlier: tuple[LineageStep, ...]
    current: LineageStep
    later: tuple[LineageStep, ...]
    cycle: bool
    dangling: tuple[str, ...]

    @property
    def chain(self) -> tuple[LineageStep, ...]:
        """Every step, oldest first."""
        return (*self.earlier, self.current, *self.later)


def lineage(source: HistorySource, memory_id: str, cache: CommitCache | None = None) -> Lineage:
    """The chain of `replaced_by` through `memory_id` (NotFoundError for an unknown id)."""
    start = source.get(memory_id)
    cache = cache if cache is not None else cache_for(source)
    pointing: defaultdict[str, list[Memory]] = defaultdict(list)
    for memory in source.list_memories(include_deleted=True, include_summaries=True):
        if memory.replaced_by:
            pointing[memory.replaced_by].append(memory)

    seen = {start.id}
    cycle = False
    dangling: list[str] = []
    forward: list[tuple[str, Memory | None, int]] = []
    current: Memory = start
    while current.replaced_by:
        target = current.replaced_by
        if target in seen:
            cycle = True
            break
        seen.add(target)
        found = source.lookup(target)
        forward.append((target, found, len(forward) + 1))
        if found is None:
            dangling.append(target)
            break
        current = found

    backward: list[tuple[Memory, int]] = []
    frontier = [start.id]
    depth = 0
    while frontier:
        depth -= 1
        next_frontier: list[str] = []
        for target in frontier:
            for older in sorted(pointing.get(target, []), key=lambda m: (m.created_at, m.path)):
                if older.id in seen:
                    cycle = True
                    continue
                seen.add(older.id)
                backward.append((older, depth))
                next_frontier.append(older.id)
        frontier = next_frontier
    backward.sort(key=lambda item: (item[1], item[0].created_at, item[0].path))

    builder = _StepBuilder(source, cache)
    earlier = tuple(builder.step(m.id, m, d) for m, d in backward)
    here = builder.step(start.id, start, 0)
    later: list[LineageStep] = []
    previous = here
    for target, found, d in forward:
        step = builder.step(target, found, d, previous)
        later.append(step)
        previous = step
    return Lineage(start.id, earlier, here, tuple(later), cycle, tuple(dangling))


class _StepBuilder:
    """Finds the commits of each step from the memory's own file history (renames followed)."""

    def __init__(self, source: HistorySource, cache: CommitCache) -> None:
        self.source = source
        self.cache = cache
        self.git_ok = bool(source.config["store.git_versioning"]) and source.git.exists()

    def step(
        self, memory_id: str, memory: Memory | None, depth: int, previous: LineageStep | None = None
    ) -> LineageStep:
        if memory is None:
            # The target file is gone: the commit that replaced the previous step still shows it.
            commit = previous.replaced_in if previous else None
            event = previous.replaced_event if previous else None
            text = event.new_text if event else None
            return LineageStep(memory_id, None, text, depth, commit, event)
        created, replaced = self._commits(memory)
        created_info = self._classified(created)
        replaced_info = self._classified(replaced)
        return LineageStep(
            memory_id, memory, memory.text, depth,
            created_info, _event_for(created_info, memory_id, created=True),
            replaced_info, _event_for(replaced_info, memory_id, created=False),
        )

    def _commits(self, memory: Memory) -> tuple[RawCommit | None, RawCommit | None]:
        if not self.git_ok:
            return None, None
        # Both places the file can have lived (live and under deleted/), without `--follow`:
        # git's follow pairs an added fact with any similar removed file, e.g. the fact it replaced.
        try:
            places = layout.both_places(memory.path, memory.conversation_id)
            log = self.source.git.log(limit=_FILE_LOG_LIMIT, paths=places)
        except GitHistoryError:
            return None, None
        if not log:
            return None, None
        created = log[-1]
        replaced = None
        if memory.deleted:
            replaced = next((c for c in log if moves_into_deleted(c)), None)
        return created, replaced

    def _classified(self, raw: RawCommit | None) -> CommitInfo | None:
        if raw is None:
            return None
        # The file log shows only this file's change: classify the whole commit instead, so an
        # UPDATE is paired with its new fact.
        try:
            return self.cache.commit(self.source, raw.sha)
        except GitHistoryError:
            return None


def moves_into_deleted(raw: RawCommit) -> bool:
    """True when the commit moved a file into deleted/ (a soft delete)."""
    return any(
        c.new_path is not None and layout.in_deleted(c.new_path)
        and (c.old_path is None or not layout.in_deleted(c.old_path))
        for c in raw.changes
    )


def _event_for(commit: CommitInfo | None, memory_id: str, *, created: bool) -> TimelineEvent | None:
    if commit is None:
        return None
    for event in commit.events:
        if created and event.new_id == memory_id:
            return event  # the UPDATE whose new fact this is
    for event in commit.events:
        if event.memory_id != memory_id:
            continue
        if created and event.type in (EventType.ADD, EventType.TURN, EventType.SUMMARY):
            return event
        if not created and event.type in (EventType.UPDATE, EventType.DELETE, EventType.EVICT):
            return event
    return None
