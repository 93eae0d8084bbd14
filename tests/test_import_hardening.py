"""Issue #13 case 3: imports are validated fully before anything is written, never replace a
summary silently, never let `extra` set core keys, follow the secret policy, and have limits.

Real stores, real git; the import files are built the way the adversarial pass built them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import Operation
from desktop_mem.engine.store.secrets_scan import SecretDetectedError
from desktop_mem.engine.transfer import importers
from desktop_mem.engine.transfer.importers import ImportFileError, apply_import, iter_plan_lines, plan_import

KEY = "sk-proj-Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0HgFeDcBa"


def _state(engine: MemoryEngine) -> tuple[dict[str, bytes], str | None, int]:
    files = {p.relative_to(engine.root).as_posix(): p.read_bytes()
             for p in (engine.root / "entries").rglob("*") if p.is_file() and not p.is_symlink()}
    return files, engine._parts.git.head(), engine._parts.git.count()


def _ours(*memories: dict[str, Any], conversations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"format": "desktop-mem-export", "version": 1, "conversations": conversations or [],
            "memories": list(memories)}


def _write_json(tmp_path: Path, data: Any, name: str = "import.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _chatgpt(title: str, *texts: str) -> list[dict[str, Any]]:
    mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": ["m1"]}}
    for i, text in enumerate(texts, 1):
        mapping[f"m{i}"] = {
            "id": f"m{i}", "parent": "root" if i == 1 else f"m{i - 1}",
            "children": [f"m{i + 1}"] if i < len(texts) else [],
            "message": {"id": f"msg-{i}", "author": {"role": "user" if i % 2 else "assistant"},
                        "create_time": 1_700_000_000.0 + i, "metadata": {},
                        "content": {"content_type": "text", "parts": [text]}}}
    return [{"title": title, "create_time": 1_700_000_000.0, "conversation_id": "c-1",
             "current_node": f"m{len(texts)}", "mapping": mapping}]


# -------------------------------------------------------------------------- all or nothing


def test_3_a_failing_import_leaves_the_store_and_its_history_byte_identical(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    engine._parts.store.write_summary("trip", "We talked about Rome.", 2)
    engine.add("User likes tea", conversation_id="trip")
    engine.commit_all("Summary", Operation.SUMMARY)
    engine.refresh()
    before = _state(engine)
    path = _write_json(tmp_path, _ours(
        {"id": "s-new", "role": "summary", "conversation_id": "trip", "text": "We talked about Paris."},
        {"id": "f1", "role": "memory", "conversation_id": "trip", "text": "User likes coffee"},
        {"id": "t1", "role": "user", "conversation_id": "trip", "text": "hello"},
    ))
    plan = plan_import(engine._parts, path)
    # a write that fails half way: the turns folder became a link after the plan was made
    turns = engine.root / "entries" / "trip" / "turns"
    turns.symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(Exception, match="symbolic link"):
        apply_import(engine._parts, plan)
    turns.unlink()
    assert _state(engine) == before
    assert engine.summary("trip") is not None and engine.summary("trip").text == "We talked about Rome."
    engine.commit_all("next writer", Operation.EDIT)  # the next writer commits no deletion
    assert _state(engine)[0] == before[0]


def test_3_an_imported_summary_never_replaces_the_current_one_silently(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    engine._parts.store.write_summary("trip", "We talked about Rome.", 2)
    engine.commit_all("Summary", Operation.SUMMARY)
    engine.refresh()
    path = _write_json(tmp_path, _ours(
        {"id": "s-new", "role": "summary", "conversation_id": "trip", "text": "We talked about Paris."}))
    plan = plan_import(engine._parts, path)
    lines = "\n".join(iter_plan_lines(plan))
    assert "would add 0 conversations" in lines or plan.entries == ()
    assert "already has a summary" in lines
    apply_import(engine._parts, plan)
    assert engine.summary("trip") is not None and engine.summary("trip").text == "We talked about Rome."


# -------------------------------------------------------------------------- extra and core keys


def test_3_extra_never_sets_core_keys(engine: MemoryEngine, tmp_path: Path) -> None:
    existing = engine.add("User likes tea")
    path = _write_json(tmp_path, _ours(
        {"id": "imp-1", "role": "memory", "conversation_id": "global", "text": "User likes coffee",
         "extra": {"id": existing.id, "role": "summary", "conversation_id": "other",
                   "replaced_by": existing.id, "deleted_at": "2020-01-01T00:00:00Z", "mood": "happy"}}))
    for _ in range(3):
        apply_import(engine._parts, plan_import(engine._parts, path))
    engine.refresh()
    memories = engine.list_memories(include_deleted=True)
    assert sorted(m.id for m in memories) == sorted([existing.id, "imp-1"])
    imported = engine.get("imp-1")
    assert imported.role == "memory" and imported.conversation_id == "global" and not imported.deleted
    assert imported.replaced_by is None and imported.extra.get("mood") == "happy"
    assert engine.get(existing.id).text == "User likes tea"


@pytest.mark.parametrize("bad", [
    {"id": "nul\x00id", "text": "x"},
    {"id": "ok-1", "text": "lone \ud800 surrogate"},
    {"id": "ok-2", "text": "x", "extra": {"v": "lone \udfff"}},
    {"id": "ok-3", "text": "x", "extra": ["not", "a", "mapping"]},
    {"id": "ok-4", "text": "x", "extra": {"deep": json.loads("[" * 40 + "1" + "]" * 40)}},
    {"id": "ok-5", "text": "x", "created_at": "yesterday"},
    {"id": "ok-6", "text": "x", "kind": "gossip"},
    {"id": "ok-7", "text": "x", "updated_at": "2024-13-45"},
    {"id": "bad\nid", "text": "x"},
    {"id": "x" * 500, "text": "x"},
    {"id": "ok-8", "text": "x", "role": "admin"},
])
def test_3_a_bad_entry_is_skipped_with_a_reason_never_a_traceback_or_a_problem_file(
    engine: MemoryEngine, tmp_path: Path, bad: dict[str, Any]
) -> None:
    before = _state(engine)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_ours({"role": "memory", **bad}), ensure_ascii=True), encoding="utf-8")
    plan = plan_import(engine._parts, path)
    assert plan.entries == () and len(plan.skipped) == 1 and plan.skipped[0].reason
    apply_import(engine._parts, plan)
    engine.refresh()
    assert engine.problems() == [] and _state(engine) == before


# -------------------------------------------------------------------------- secrets


def test_3_imports_follow_the_secret_policy(make_config: Callable[..., Any], tmp_path: Path) -> None:
    path = _write_json(tmp_path, _chatgpt(f"keys {KEY}", f"my key is {KEY}", "Noted."), "conversations.json")
    with MemoryEngine(make_config()) as eng:
        before = _state(eng)
        with pytest.raises(SecretDetectedError) as caught:
            plan_import(eng._parts, path)
        assert KEY not in str(caught.value)
        assert _state(eng) == before
        plan = plan_import(eng._parts, path, secrets="redact")
        apply_import(eng._parts, plan)
        store = eng.root
    assert KEY.encode() not in subprocess.run(["git", "-C", str(store), "log", "-p", "--all"],
                                              capture_output=True, check=True).stdout
    for p in store.rglob("*"):
        assert KEY not in p.name
        if p.is_file() and ".git" not in p.parts:
            assert KEY.encode() not in p.read_bytes(), p


def test_3_the_cli_import_names_the_secret_flags(tmp_path: Path) -> None:
    path = _write_json(tmp_path, _chatgpt("keys", f"my key is {KEY}", "Noted."), "conversations.json")
    cmd = [sys.executable, "-m", "desktop_mem.cli", "--store", str(tmp_path / "s"), "import", str(path)]
    refused = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), timeout=120)
    assert refused.returncode == 1 and "--redact-secret" in refused.stderr and KEY not in refused.stderr
    assert "Traceback" not in refused.stderr
    ok = subprocess.run([*cmd, "--redact-secret"], capture_output=True, text=True, env=os.environ.copy(),
                        timeout=120)
    assert ok.returncode == 0, ok.stderr


# -------------------------------------------------------------------------- limits


def test_3_a_zip_bomb_is_refused_before_it_is_expanded(engine: MemoryEngine, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importers, "MAX_IMPORT_BYTES", 4 * 1024 * 1024)
    bomb = tmp_path / "export.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", b"[" + b" " * (40 * 1024 * 1024) + b"]")
    assert bomb.stat().st_size < 200 * 1024
    with pytest.raises(ImportFileError, match="limit"):
        plan_import(engine._parts, bomb)
    big = tmp_path / "big.json"
    big.write_bytes(b"[" + b" " * (5 * 1024 * 1024) + b"]")
    with pytest.raises(ImportFileError, match="limit"):
        plan_import(engine._parts, big)


def test_3_the_number_of_entries_is_limited(engine: MemoryEngine, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importers, "MAX_IMPORT_ENTRIES", 50)
    path = _write_json(tmp_path, [{"text": f"fact {i}"} for i in range(51)])
    with pytest.raises(ImportFileError, match="50"):
        plan_import(engine._parts, path)
