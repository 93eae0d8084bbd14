"""Shared parts of the reliability scripts: the scripted LLM with a realistic script, the
config of a store under test, and the consistency check files == index == git."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from desktop_mem.engine.config import Config, load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from desktop_mem.engine.models import ValidationError  # noqa: E402
from desktop_mem.engine.store.front_matter import FrontMatterError  # noqa: E402
from desktop_mem.engine.store.markdown_store import MarkdownStore  # noqa: E402
from tests.scripted_llm import ScriptedLLM  # noqa: E402

FACTS = "You extract facts about the user"
RECONCILE = "You keep a memory of facts about the user"
SUMMARY = "You maintain a short running summary"

# Tests and scripts never read the developer's git identity, hooks or endpoints.
os.environ["GIT_CONFIG_GLOBAL"] = os.devnull
os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
for _var in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "DESKTOP_MEM_STORE"):
    os.environ.pop(_var, None)


def is_chat(body: dict[str, Any]) -> bool:
    """True for the reply request (not one of the write path's prompts)."""
    messages = body.get("messages", [])
    system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    return FACTS not in system and RECONCILE not in system and SUMMARY not in system


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    return str(users[-1].get("content", "")) if users else ""


def _facts(body: dict[str, Any]) -> str:
    """One or two facts from the message, so reconciliation has work (UPDATEs, DELETEs)."""
    text = _last_user(body)
    n = int(re.findall(r"#(\d+)", text)[-1]) if re.findall(r"#(\d+)", text) else 0
    return json.dumps([f"The user likes topic {n % 7}", f"The user visited place {n}"][: 1 + n % 2])


def _reconcile(body: dict[str, Any]) -> str:
    text = _last_user(body)
    n = len(text)
    choice = n % 4
    if choice == 0:
        return '[{"event": "UPDATE", "id": "0", "text": "The user likes topic ' + str(n) + '"}]'
    if choice == 1:
        return '[{"event": "DELETE", "id": "1"}, {"event": "ADD", "text": "The user saw ' + str(n) + '"}]'
    if choice == 2:
        return '[{"event": "NONE", "id": "0"}, {"event": "UPDATE", "id": "99", "text": "unknown id"}]'
    return '[{"event": "ADD", "text": "The user wrote message ' + str(n) + '"}]'


def start_llm() -> ScriptedLLM:
    """The scripted OpenAI-compatible server with a script that exercises the whole write path."""
    llm = ScriptedLLM().start()
    llm.script(FACTS, _facts)
    llm.script(RECONCILE, _reconcile)
    llm.script(SUMMARY, lambda body: "The user talked about " + str(len(_last_user(body))) + " things.")
    llm.default_reply = lambda body: "Reply to: " + _last_user(body)[:60]
    return llm


def store_flags(store: Path, base_url: str, **extra: Any) -> dict[str, Any]:
    """Settings of a store under test: small limits so eviction and summaries really happen."""
    flags: dict[str, Any] = {
        "store.path": str(store), "watcher.enabled": False, "llm.base_url": base_url,
        "llm.model": "test-model", "llm.api_key": "test", "llm.timeout": 10,
        "memory.max_entries": 14, "memory.summary_threshold": 4, "memory.summary_keep_last": 2,
        "embedding.provider": "openai", "embedding.model": "test-model",
    }
    flags.update(extra)
    return flags


def make_config(store: Path, base_url: str, **extra: Any) -> Config:
    """A Config for the store under test (no config file of the user is read)."""
    os.environ["DESKTOP_MEM_CONFIG"] = str(store.parent / "config.yaml")
    (store.parent / "config.yaml").touch()
    return load_config(flags=store_flags(store, base_url, **extra))


@dataclass
class Check:
    """What a consistency check found; `ok` when nothing."""

    partial_files: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    git: str = "ok"
    dirty: list[str] = field(default_factory=list)
    index_missing: int = 0
    index_extra: int = 0
    memories: int = 0

    @property
    def ok(self) -> bool:
        """True when files, git and index agree."""
        return not (self.partial_files or self.temp_files or self.problems or self.dirty
                    or self.index_missing or self.index_extra) and self.git == "ok"


def unparsable_files(store: Path) -> list[str]:
    """Visible .md files that do not parse (before any recovery runs)."""
    md = MarkdownStore(store, max_file_bytes=50 * 1024 * 1024)
    bad = []
    for rel in md.iter_paths():
        try:
            md.read(rel)
        except (FrontMatterError, ValidationError, OSError) as exc:
            bad.append(f"{rel}: {exc}")
    return bad


def check_engine(engine: MemoryEngine, with_index: bool = True) -> Check:
    """files == index == git for an open engine (the index is opened and synced first)."""
    result = Check()
    result.temp_files = [str(p) for p in engine._parts.store.orphan_temp_files()]
    result.problems = [f"{p.path}: {p.reason}" for p in engine.problems()]
    try:
        engine._parts.git.fsck()
    except Exception as exc:  # reported, not raised: the harness counts it
        result.git = str(exc)
    result.dirty = list(engine._parts.git.dirty_paths())
    catalog = {m.id for m in engine.list_memories(include_deleted=True, include_summaries=True)}
    result.memories = len(catalog)
    if with_index:
        engine.open_index()
        index = engine._parts.search_index.index
        for ids in (index.vectors.ids(), index.keywords.ids()):
            result.index_missing += len(catalog - ids)
            result.index_extra += len(ids - catalog)
    return result


def rss_kib() -> int:
    """Resident set size of this process in KiB, from /proc/self/status (Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table (the scripts print it; docs/reliability.md pastes it)."""
    cells = [[str(c) for c in row] for row in rows]
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in cells]
    return "\n".join(out)
