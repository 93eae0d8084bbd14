"""The CLI as a user runs it: a real subprocess over a real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def run(store: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def run_json(store: Path, *args: str) -> Any:
    return json.loads(run(store, *args, "--json").stdout)


def test_add_edit_delete_restore_then_history(tmp_path: Path) -> None:
    store = tmp_path / "s"
    added = run_json(store, "add", "User lives in Berlin")
    mid = added["id"]
    run(store, "edit", mid[:8], "--text", "User lives in Munich")
    run(store, "delete", mid)
    listed = run_json(store, "list", "--deleted")
    assert listed["memories"][0]["deleted"] is True
    run(store, "restore", mid)
    history = run_json(store, "history")
    events = [e for c in reversed(history) for e in c["events"]]
    assert [e["type"] for e in events] == ["ADD", "EDIT", "DELETE", "RESTORE"]
    assert events[0]["new_text"] == "User lives in Berlin"
    assert events[1]["old_text"] == "User lives in Berlin" and events[1]["new_text"] == "User lives in Munich"
    assert all(e["memory_id"] == mid for e in events)
    shown = run_json(store, "show", mid)
    assert shown["text"] == "User lives in Munich" and not shown["deleted"]
    diff = run(store, "diff", history[0]["sha"]).stdout
    assert "entries/global/deleted/facts" in diff
    doctor = run_json(store, "doctor")
    assert doctor["problems"] == [] and doctor["git"].startswith("ok (4 commits)")


def test_errors_are_one_line_and_non_zero(tmp_path: Path) -> None:
    store = tmp_path / "s"
    run(store, "add", "x")
    proc = run(store, "show", "nope-nope", ok=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "no memory with id" in proc.stderr
    proc = run(store, "add", "x", "--conversation", "../etc", ok=False)
    assert proc.returncode == 1 and "path separator" in proc.stderr
    proc = run(store, "--set", "retrieval.top_k=lots", "list", ok=False)
    assert proc.returncode == 1 and "retrieval.top_k" in proc.stderr and "'lots'" in proc.stderr
    assert not (tmp_path / "etc").exists()


def test_problems_show_in_list_and_doctor(tmp_path: Path) -> None:
    store = tmp_path / "s"
    run(store, "add", "good one")
    bad = store / "entries/global/facts/bad.md"
    bad.write_bytes(b"---\nid: [\n---\n\nx\n")
    listed = run_json(store, "list")
    assert [p["path"] for p in listed["problems"]] == ["entries/global/facts/bad.md"]
    proc = run(store, "doctor", ok=False)
    assert proc.returncode == 1 and "bad.md" in proc.stdout and "not valid YAML" in proc.stdout
    assert bad.read_bytes() == b"---\nid: [\n---\n\nx\n"


def test_bare_command_prints_help_or_opens_the_window(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "history" in proc.stdout and "doctor" in proc.stdout
