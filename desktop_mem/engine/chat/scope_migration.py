"""Migration 2 (after validity): facts about the user learned in a chat move to the user scope.

Before issue 21 every fact the write path found was filed under the conversation it was said in,
so "my daughter is 7" told in one chat was unknown in the next. This moves each live fact the
write path made (source llm or pattern) that is about the user (scopes.classify, the pattern
rules: no LLM at start-up) from `entries/<conversation>/facts/` to `entries/global/facts/`, with
the same file name and id (so `memory_id` keeps working), `conversation_id: global` and
`from_conversation: <conversation>`. Facts stored by hand, by an import or an MCP client stay
where they were put; tombstones stay where they are (ids link a chain, not folders).

All of it is one commit; a failure puts every moved file back. It runs once per clone (a marker
in .git, or beside the store when it is not versioned) and a second run finds nothing to move.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from desktop_mem.engine.chat import scopes
from desktop_mem.engine.chat.chat_types import FROM_CONVERSATION
from desktop_mem.engine.models import GLOBAL_CONVERSATION, Memory, Role
from desktop_mem.engine.store import front_matter, layout
from desktop_mem.engine.store.markdown_store import atomic_write, fsync_dir

log = logging.getLogger(__name__)

SUBJECT = "Move facts about the user to the user scope (read in every conversation)"
MIGRATION = "user-scope"
MOVED_SOURCES = frozenset({"llm", "pattern"})
Commit = Callable[[str, Mapping[str, str], Sequence[str]], str | None]


def marker(root: Path) -> Path:
    """Where this clone records that the migration ran."""
    git = root / ".git"
    return git / "desktop_mem" / "user-scope-migrated" if git.is_dir() else root / ".desktop_mem_user_scope"


def needs_migration(root: Path) -> bool:
    """True until the migration ran on this clone."""
    return not marker(root).exists()


def mark_done(root: Path) -> None:
    """Record that the facts of this clone are filed by scope (a new store: from the start)."""
    path = marker(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("facts about the user filed under entries/global/\n", encoding="utf-8")


def to_move(facts: Iterable[Memory], held: frozenset[str] = frozenset()) -> list[Memory]:
    """The live facts the write path filed under a conversation that are about the user."""
    return [m for m in facts
            if m.role == Role.MEMORY and not m.deleted and m.conversation_id != GLOBAL_CONVERSATION
            and m.id not in held and (m.source or "llm") in MOVED_SOURCES
            and scopes.classify(m.text) == scopes.USER]


def migrate_scopes(
    root: Path, facts: Iterable[Memory], *, commit: Commit | None, reload: Callable[[], None],
    held: frozenset[str] = frozenset(),
) -> tuple[str | None, int]:
    """Move the user's facts (see the module docstring); (the commit's sha or None, how many moved).

    ``facts``: every fact of the store (the raw catalog); ``commit`` commits exactly the given
    paths; ``reload`` re-reads the catalog afterwards. The caller holds the writer lock.
    """
    moving = to_move(facts, held)
    done: list[tuple[str, str, bytes]] = []  # (old rel, new rel, old bytes)
    try:
        for memory in moving:
            done.append(_move(root, memory))
    except Exception:
        log.exception("moving facts to the user scope failed; every moved file is put back")
        _undo(root, done)
        reload()
        raise
    reload()
    sha = None
    if done and commit is not None:
        paths = [p for old, new, _raw in done for p in (old, new)]
        sha = commit(f"{SUBJECT}: {len(done)} facts", {"Operation": "migrate", "Migration": MIGRATION}, paths)
    mark_done(root)
    return sha, len(done)


def _move(root: Path, memory: Memory) -> tuple[str, str, bytes]:
    old = root / memory.path
    raw = old.read_bytes()
    doc = front_matter.parse(front_matter.decode(raw))
    updates: dict[str, Any] = {"conversation_id": GLOBAL_CONVERSATION,
                               FROM_CONVERSATION: memory.conversation_id}
    rel = _free(root, f"{layout.role_dir(GLOBAL_CONVERSATION, 'memory')}/{PurePosixPath(memory.path).name}")
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, front_matter.render(updates, doc.body, doc.yaml_text).encode("utf-8"))
    old.unlink()
    fsync_dir(old.parent)
    return memory.path, rel, raw


def _undo(root: Path, done: Sequence[tuple[str, str, bytes]]) -> None:
    for old, new, raw in reversed(done):
        try:
            atomic_write(root / old, raw)
            (root / new).unlink(missing_ok=True)
        except OSError:
            log.exception("could not put %s back; the next start-up reports it", old)


def _free(root: Path, rel: str) -> str:
    if not (root / rel).exists():
        return rel
    stem, dot, ext = rel.rpartition(".")
    n = 2
    while (root / f"{stem}.{n}{dot}{ext}").exists():
        n += 1
    return f"{stem}.{n}{dot}{ext}"
