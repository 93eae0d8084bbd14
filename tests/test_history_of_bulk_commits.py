"""`history` after an import: one commit of thousands of memories is listed by its first events
and counted, not dumped whole into an MCP client's context or a terminal (issue #25)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import Operation
from desktop_mem.engine.schema import HISTORY_EVENTS_SHOWN
from tests.mcp_clients import CLAUDE, call, stdio_session

pytestmark = pytest.mark.timeout(300)
IMPORTED = HISTORY_EVENTS_SHOWN + 25


def _imported_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    with MemoryEngine.open(load_config(flags={"store.path": str(store), "watcher.enabled": False})) as eng:
        with eng._parts.writer.transaction(Operation.IMPORT, f"Import {IMPORTED} facts") as tx:
            for i in range(IMPORTED):
                tx.add(f"The user mentioned hobby number {i}", conversation_id="hobbies", kind="fact")
        eng.add("The user plays the cello")
    return store


def test_mcp_history_lists_the_first_events_of_an_import_and_counts_them_all(tmp_path: Path) -> None:
    store = _imported_store(tmp_path)

    async def scenario() -> dict[str, Any]:
        async with stdio_session(store, CLAUDE) as s:
            return await call(s, "memory_history", limit=5)

    commits = anyio.run(scenario)["commits"]
    latest, imported = commits[0], next(c for c in commits if c["subject"].startswith("Import"))
    assert latest["events_total"] == len(latest["events"]) == 1
    assert len(imported["events"]) == HISTORY_EVENTS_SHOWN
    assert imported["events_total"] == IMPORTED and imported["event_counts"] == {"ADD": IMPORTED}


def test_cli_history_shows_the_first_events_then_how_many_more(tmp_path: Path) -> None:
    store = _imported_store(tmp_path)

    def cli(*args: str) -> str:
        command = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "history", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout

    lines = cli().splitlines()
    at = next(i for i, line in enumerate(lines) if "Import" in line)
    events = [line for line in lines[at + 1:at + 1 + HISTORY_EVENTS_SHOWN + 1] if line.startswith("    ")]
    assert all(e.split()[0] == "ADD" for e in events[:-1])
    assert events[-1].strip() == f"… {IMPORTED - HISTORY_EVENTS_SHOWN} more (ADD {IMPORTED} in all; " \
                                 "`history --json` lists every event)"
    full = json.loads(cli("--json"))
    imported = next(c for c in full if c["subject"].startswith("Import"))
    assert len(imported["events"]) == IMPORTED  # scripts get every event


def test_cli_history_json_lists_every_event_of_a_commit_too_big_to_read_in_detail(tmp_path: Path) -> None:
    # Over DETAIL_LIMIT files a commit's events come from its paths, built as they are read (a
    # lazy sequence holding the git reader); `--json` crashed copying it (seen on a 100k import).
    from desktop_mem.engine.history.timeline import DETAIL_LIMIT

    store = tmp_path / "store"
    many = DETAIL_LIMIT + 10
    config = load_config(flags={"store.path": str(store), "watcher.enabled": False})
    subject = f"Import {many} facts"
    with MemoryEngine.open(config) as eng, eng._parts.writer.transaction(Operation.IMPORT, subject) as tx:
        for i in range(many):
            tx.add(f"The user kept note number {i}", conversation_id="notes", kind="fact")
    command = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "history", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (imported,) = [c for c in json.loads(done.stdout) if c["subject"].startswith("Import")]
    assert imported["events_from_paths"] is True and imported["event_counts"] == {"ADD": many}
    assert len(imported["events"]) == many
    assert {e["type"] for e in imported["events"]} == {"ADD"} and all(e["path"] for e in imported["events"])
