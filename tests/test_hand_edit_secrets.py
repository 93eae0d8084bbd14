"""Issue #13 case 4, hand edits: a key saved into a memory file with an outside editor goes
through the same secret check as every other write before anything is committed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_mem.engine.facade import MemoryEngine

KEY = "sk-proj-Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0HgFeDcBa"


def _history(store: Path) -> bytes:
    return subprocess.run(["git", "-C", str(store), "log", "-p", "--all"], capture_output=True,
                          check=True).stdout


def _hand_edit(engine: MemoryEngine, memory_path: str, text: str) -> Path:
    path = engine.root / memory_path
    raw = path.read_text(encoding="utf-8")
    head, _, _body = raw.partition("\n---\n")
    path.write_text(f"{head}\n---\n\n{text}\n", encoding="utf-8")
    return path


def test_under_ask_a_hand_edit_with_a_key_is_held_back_and_named_by_doctor(
    make_config: Callable[..., Any],
) -> None:
    with MemoryEngine(make_config()) as eng:
        tea = eng.add("User likes tea")
        coffee = eng.add("User likes coffee")
        path = _hand_edit(eng, tea.path, f"The staging key is {KEY}")
        _hand_edit(eng, coffee.path, "User likes strong coffee")
        eng.apply_external_changes([tea.path, coffee.path])
        assert KEY.encode() not in _history(eng.root)
        assert b"strong coffee" in _history(eng.root), "the edit without a secret is committed"
        assert KEY in path.read_text(encoding="utf-8"), "the user's file is left as they wrote it"
        report = eng.doctor()
        notes = "\n".join(report.notes)
        assert tea.path in notes and "secret" in notes and KEY not in notes
        store = eng.root
    with MemoryEngine(make_config(store=store)) as again:  # the start-up commit holds it back too
        assert KEY.encode() not in _history(again.root)
        assert again.git.dirty_paths() == [tea.path]


def test_a_key_saved_while_the_app_was_closed_is_redacted_or_kept_by_policy(
    make_config: Callable[..., Any], tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    with MemoryEngine(make_config(store=store)) as eng:
        tea = eng.add("User likes tea")
    path = store / tea.path
    raw = path.read_text(encoding="utf-8")
    path.write_text(raw.replace("User likes tea", f"The staging key is {KEY}"), encoding="utf-8")
    with MemoryEngine(make_config(store=store, **{"security.secrets": "redact"})) as eng:
        assert KEY.encode() not in _history(store)
        assert "[redacted:openai_key]" in path.read_text(encoding="utf-8")
        assert eng.get(tea.id).text == "The staging key is [redacted:openai_key]"
        assert eng.git.dirty_paths() == []
    path.write_text(raw.replace("User likes tea", f"The staging key is {KEY}"), encoding="utf-8")
    with MemoryEngine(make_config(store=store, **{"security.secrets": "keep"})) as eng:
        assert KEY.encode() in _history(store), "keep: the user's choice is committed as is"
        assert eng.git.dirty_paths() == []
