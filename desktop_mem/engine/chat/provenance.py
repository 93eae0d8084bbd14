"""Why the app knows a fact: the turns it was taken from, the commit that wrote it, where it was
sent. Read from the fact's own front matter (`from_turns`, `source`, `client`), its file's git
history and the sent log; every part may be missing (a fact typed by hand has no turn) and a
turn that was removed since is reported by id, never raised."""

from __future__ import annotations

from dataclasses import dataclass

from desktop_mem.engine.chat.currency import from_turns
from desktop_mem.engine.chat.sent_log import SentLog, SentTo
from desktop_mem.engine.history.git_history import GitHistoryError
from desktop_mem.engine.history.ports import HistorySource
from desktop_mem.engine.history.timeline import classify
from desktop_mem.engine.models import CommitInfo, Memory, Source
from desktop_mem.engine.store import layout

_LOG_LIMIT = 200


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from and where it went."""

    memory: Memory
    turns: tuple[Memory, ...]  # the user turns it was taken from (and the replies to them)
    missing_turns: tuple[str, ...]  # ids named in from_turns that no file holds any more
    commit: CommitInfo | None  # the commit that first wrote it (None without git)
    sent_to: tuple[SentTo, ...]

    @property
    def how(self) -> str:
        """One line: "said in chat “trip”", "added by hand", "added by MCP client Cursor" ..."""
        client = self.memory.extra.get("client")
        if self.turns:
            return f"said in chat “{self.turns[0].conversation_id}”"
        if self.memory.source == Source.MCP:
            return f"added by MCP client {client}" if isinstance(client, str) else "added by an MCP client"
        return {"manual": "added by hand", "import": "imported", "pattern": "taken from a chat message",
                "llm": "taken from a chat message"}.get(str(self.memory.source or ""), "written to the store")


def provenance(source: HistorySource, sent: SentLog, memory_id: str) -> Provenance:
    """The provenance of a memory (NotFoundError for an unknown id, HeldBackError as `get`)."""
    memory = source.get(memory_id)
    turns: list[Memory] = []
    missing: list[str] = []
    for turn_id in from_turns(memory):
        turn = source.lookup(turn_id)
        if turn is None:
            missing.append(turn_id)
        else:
            turns.append(turn)
    return Provenance(memory, tuple(turns), tuple(missing), _first_commit(source, memory),
                      tuple(sent.sent_to(memory.id)))


def _first_commit(source: HistorySource, memory: Memory) -> CommitInfo | None:
    if not source.config["store.git_versioning"] or not source.git.exists():
        return None
    try:
        log = source.git.log(limit=_LOG_LIMIT, paths=layout.both_places(memory.path, memory.conversation_id))
    except GitHistoryError:
        return None
    return classify(log[-1], source.git.blob) if log else None
