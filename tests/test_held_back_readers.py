"""A hand edit held back for a likely secret stays out of everything a reader outside the app gets:
a read-only engine (CLI reads while the app holds the store), the `desktop-mem mcp` process (which
reads on its own), the REST API and exports. The reader decides which files are held as the writer
does, and writes nothing while deciding."""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver.exceptions import ToolError

from desktop_mem.api import mcp_tools
from desktop_mem.api.mcp_server import StdioBackend
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import HeldBackChoice, Operation
from desktop_mem.engine.store.held_back import HeldBackError
from desktop_mem.engine.transfer.exporters import export_json, export_zip
from tests.test_cli import run, run_json
from tests.test_hand_edit_secrets import KEY, _hand_edit

pytestmark = pytest.mark.timeout(300)


def _local_state(store: Path) -> dict[str, Any]:
    """What a reader must leave as it is: git's index and refs, and the store's local state files."""
    watched = [store / ".git" / "index", store / ".git" / "HEAD", store / "memory_index.json.sqlite3",
               store / "kept_secrets.json"]
    return {str(p): (p.stat().st_mtime_ns, p.read_bytes()) if p.exists() else None for p in watched}


def test_a_read_only_engine_and_the_mcp_process_never_give_out_a_held_back_hand_edit(
    make_config: Callable[..., Any], tmp_path: Path,
) -> None:
    config = make_config()
    with MemoryEngine(config) as app:  # the app holds the store's writer lock
        tea = app.add("User likes tea")
        coffee = app.add("User likes coffee")
        _hand_edit(app, tea.path, f"The staging key is {KEY}")
        app.apply_external_changes([tea.path])
        assert app.held_back_ids() == {tea.id}
        before = _local_state(app.root)

        with MemoryEngine(config, read_only=True) as reader:
            assert reader.held_back_ids() == {tea.id}
            assert [h.path for h in reader.held_back_files()] == [tea.path]
            with pytest.raises(HeldBackError) as refused:
                mcp_tools.get(reader, tea.id[:8])  # a prefix finds it too, and is refused too
            message = str(refused.value)
            assert tea.path in message and f"desktop-mem secrets redact {tea.path}" in message
            assert "Redact or Keep" in message and KEY not in message
            listed = mcp_tools.list_memories(reader, None, None, None, None)
            assert [m["id"] for m in listed["memories"]] == [coffee.id]
            assert listed["total"] == 1 and "1 hand-edited" in listed["note"]
            assert mcp_tools.get(reader, coffee.id)["text"] == "User likes coffee"
            assert KEY not in json.dumps(listed)
            assert all(m.id != tea.id for m in reader.list_memories())
        with pytest.raises(HeldBackError):  # the app's own MCP / REST readers refuse it too
            app.get(tea.id)

        # The `desktop-mem mcp` process: each read opens its own read-only engine.
        backend = StdioBackend(config)

        async def mcp_reads() -> tuple[dict[str, Any], str]:
            listed = await backend.read(lambda e: mcp_tools.list_memories(e, None, None, 10, 0))
            try:
                await backend.read(lambda e: mcp_tools.get(e, tea.id))
            except ToolError as exc:
                return listed, str(exc)
            raise AssertionError("get_memory returned a held-back memory")

        listed, error = anyio.run(mcp_reads)
        assert KEY not in json.dumps(listed) and [m["id"] for m in listed["memories"]] == [coffee.id]
        assert tea.path in error and "desktop-mem secrets" in error and KEY not in error

        with MemoryEngine(config, read_only=True) as reader:  # exports leave it out
            done = export_json(reader._parts, tmp_path / "out.json")
            zipped = export_zip(reader._parts, tmp_path / "out.zip")
        assert done.held_back == (tea.path,) and done.memories == 1 and zipped.held_back == (tea.path,)
        assert KEY.encode() not in (tmp_path / "out.json").read_bytes()
        with zipfile.ZipFile(tmp_path / "out.zip") as archive:
            assert tea.path not in archive.namelist() and coffee.path in archive.namelist()
            assert all(KEY.encode() not in archive.read(n) for n in archive.namelist())

        assert _local_state(app.root) == before, "readers wrote nothing"
        assert app._parts.git.dirty_paths() == [tea.path]

        # Once the user answers, readers see the answer.
        app.resolve_held_back(tea.path, HeldBackChoice.REDACT)
        with MemoryEngine(config, read_only=True) as reader:
            assert reader.held_back_ids() == frozenset()
            assert mcp_tools.get(reader, tea.id)["text"] == "The staging key is [redacted:openai_key]"


def test_a_held_back_summary_is_refused_as_an_mcp_resource(make_config: Callable[..., Any]) -> None:
    config = make_config()
    with MemoryEngine(config) as app:
        with app._parts.writer.transaction(Operation.SUMMARY, "Summary", "trip") as tx:
            summary = tx.write_summary("trip", "The user plans a trip.", 0)
        _hand_edit(app, summary.path, f"The user plans a trip; portal key {KEY}")
        app.apply_external_changes([summary.path])
        assert app.held_back_ids() == {summary.id}
        reader = MemoryEngine(config, read_only=True)
        with reader, pytest.raises(HeldBackError, match="secrets redact"):
            mcp_tools.summary(reader, "trip")


def test_a_reader_decides_like_the_writer_before_the_writer_has_seen_the_edit(
    make_config: Callable[..., Any],
) -> None:
    """The watcher has not fired yet (or the writer runs none): the reader still holds the file
    back under ask, shows it redacted under redact, and as written once the user kept that key."""
    config = make_config()
    with MemoryEngine(config) as app:
        tea = app.add("User likes tea")
        coffee = app.add("User likes coffee")
        path = _hand_edit(app, tea.path, f"Tea shop key {KEY}")
        with MemoryEngine(config, read_only=True) as reader:
            assert reader.held_back_ids() == {tea.id}
            with pytest.raises(HeldBackError):
                reader.get(tea.id)
        redacting = make_config(**{"security.secrets": "redact"})
        with MemoryEngine(redacting, read_only=True) as reader:
            assert reader.held_back_ids() == frozenset()
            assert mcp_tools.get(reader, tea.id)["text"] == "Tea shop key [redacted:openai_key]"
            assert KEY not in json.dumps(mcp_tools.list_memories(reader, None, None, None, None))
        assert KEY in path.read_text(encoding="utf-8"), "the reader left the file as written"

        app.apply_external_changes([tea.path])
        app.resolve_held_back(tea.path, HeldBackChoice.KEEP)  # this key is kept as written from now on
        _hand_edit(app, coffee.path, f"Coffee shop uses the same key {KEY}")
        with MemoryEngine(config, read_only=True) as reader:
            assert reader.held_back_ids() == frozenset(), "a kept key is not held back, as by the writer"
            assert KEY in reader.get(coffee.id).text
        app.apply_external_changes([coffee.path])
        assert app.held_back_ids() == frozenset() and app._parts.git.dirty_paths() == []


def test_read_only_search_never_returns_a_held_back_hand_edit(make_config: Callable[..., Any]) -> None:
    config = make_config()
    with MemoryEngine(config) as app:
        app.open_index()
        tea = app.add("User likes green tea from Japan")
        app.add("User likes strong coffee")
        # Not seen by the writer yet: the index still has the old text under the memory's id.
        _hand_edit(app, tea.path, f"User likes green tea from Japan; shop key {KEY}")
        for seen in (False, True):
            if seen:
                app.apply_external_changes([tea.path])
                assert app.held_back_ids() == {tea.id}
            with MemoryEngine(config, read_only=True) as reader:
                results = reader.search("green tea from Japan", top_k=5)
                found = mcp_tools.search(reader, "green tea from Japan", None, 5)
            assert results, "the search itself works"
            assert tea.id not in {r.memory.id for r in results}, f"seen by the writer: {seen}"
            assert KEY not in json.dumps(found) and tea.id not in {h["id"] for h in found["results"]}


def test_cli_reads_while_the_app_holds_the_store_never_show_a_held_back_hand_edit(
    make_config: Callable[..., Any], tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    with MemoryEngine(make_config(store=store)) as app:
        app.open_index()
        tea = app.add("User likes green tea from Japan")
        coffee = app.add("User likes strong coffee")
        _hand_edit(app, tea.path, f"User likes green tea from Japan; shop key {KEY}")
        app.apply_external_changes([tea.path])

        shown = run(store, "show", tea.id, ok=False)
        assert shown.returncode == 1 and KEY not in shown.stdout + shown.stderr
        assert tea.path in shown.stderr and "desktop-mem secrets redact" in shown.stderr
        assert run_json(store, "show", coffee.id)["text"] == "User likes strong coffee"

        listed = run(store, "list")
        assert KEY not in listed.stdout + listed.stderr and tea.id[:8] not in listed.stdout
        assert f"held back: {tea.path}" in listed.stderr and coffee.id[:8] in listed.stdout
        as_json = run_json(store, "list")
        assert [m["id"] for m in as_json["memories"]] == [coffee.id]
        assert [h["path"] for h in as_json["held_back"]] == [tea.path]

        found = run(store, "search", "green tea from Japan")
        assert KEY not in found.stdout + found.stderr and tea.id[:8] not in found.stdout

        exported = run(store, "export", "--output", str(tmp_path / "out.json"))
        assert f"left out: {tea.path}" in exported.stderr
        assert KEY.encode() not in (tmp_path / "out.json").read_bytes()
        assert app._parts.git.dirty_paths() == [tea.path] and os.path.exists(store / tea.path)
        assert not subprocess.run(["git", "-C", str(store), "log", "-p", "--all"], capture_output=True,
                                  check=True, text=True).stdout.count(KEY)


def test_a_reader_whose_git_cannot_answer_still_opens_and_hides_every_unkept_secret(
    make_config: Callable[..., Any],
) -> None:
    config = make_config()
    with MemoryEngine(config) as app:
        plain = app.add("User likes tea")
        keyed = app.add(f"Tea shop key {KEY}", secrets="keep")  # committed as typed
        head = app.root / ".git" / "HEAD"
    head.write_text("garbage\n", encoding="utf-8")  # a broken repository, as `doctor` must report it
    with MemoryEngine(config, read_only=True) as reader:
        assert "not a git repository" in reader.doctor().git
        assert reader.held_back_ids() == {keyed.id}, "unknown: kept back, on the safe side"
        assert reader.get(plain.id).text == "User likes tea"
