"""What a coding agent's hook captured (hook_capture.py), sent to the write path.

The user's messages of a coding session are read as a chat turn's are: facts extracted (the
memory model, or the pattern rules without one), a fact about the user filed globally and the
rest under the project's scope, each group weighed against similar stored facts (ADD / UPDATE /
DELETE / NONE) and applied as one commit, with `source: mcp` and the agent's name, so the app
shows "Claude Code added 2 memories" with Undo and the Timeline names the agent. The messages
themselves are not stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from desktop_mem.api import mcp_tools
from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.models import GLOBAL_CONVERSATION, ValidationError

AGENTS = {"claude-code": "Claude Code", "codex": "Codex"}
MAX_MESSAGES = 20


def remember(engine: MemoryEngine, messages: Sequence[str], *, project: str, agent: str) -> dict[str, Any]:
    """Extract and store the facts of a session's user messages; what was added, updated, deleted."""
    from desktop_mem.engine.api import project_scope

    if agent not in AGENTS:
        raise ValidationError(f"agent {agent!r} is not one of {', '.join(AGENTS)}")
    scope = str(project_scope(project))
    texts = [m for m in messages if isinstance(m, str) and m.strip()][:MAX_MESSAGES]
    by_scope: dict[str, list[str]] = {}
    notes: list[str] = []
    for text in texts:
        found = engine.extract_facts(text)
        if found.error:
            notes.append(found.error)
        for fact in found.facts:
            by_scope.setdefault(GLOBAL_CONVERSATION if fact.scope == "user" else scope, []).append(fact.text)
    out: dict[str, Any] = {"project": scope, "added": [], "updated": [], "deleted": [], "notes": notes}
    for conv, facts in by_scope.items():
        done = mcp_tools.add(engine, facts, conv, None, AGENTS[agent], reconcile=True)
        for key in ("added", "updated", "deleted"):
            out[key] += done.get(key, [])
    return out
