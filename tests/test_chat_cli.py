"""`desktop-mem chat` as a user runs it: a subprocess over a real store and the scripted LLM server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from desktop_mem.engine.facade import MemoryEngine
from tests.llm_roles import FACTS, SUMMARY
from tests.scripted_llm import ScriptedLLM


def chat(
    store: Path, base_url: str, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    settings = [f"llm.base_url={base_url}", "llm.model=test-model", "llm.timeout=5", "watcher.enabled=false"]
    flags = [part for s in settings for part in ("--set", s)]
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *flags, "chat", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )


def stored(store: Path, config: Any, conv: str, role: str) -> list[str]:
    """The conversation's turns of `role`; for facts, those it reads: its own and the user's."""
    with MemoryEngine(config(store=store), read_only=True) as engine:
        if role == "memory":
            facts = [m for c in (conv, "global") for m in engine.list_memories(conversation_id=c, role=role)]
            return [m.text for m in sorted(facts, key=lambda m: (m.created_at, m.path))]
        return [m.text for m in engine.list_memories(conversation_id=conv, role=role)]


def test_one_message_shows_reply_injected_memory_and_outcome(
    tmp_path: Path, make_config: Any, scripted_llm: ScriptedLLM
) -> None:
    store = tmp_path / "store"
    with MemoryEngine(make_config(store=store)) as engine:
        engine.add("The user lives in Berlin", conversation_id="trip")
    scripted_llm.script(FACTS, '["The user has a cat named Tom"]')
    scripted_llm.script(SUMMARY, "The user lives in Berlin and has a cat.")
    scripted_llm.default_reply = "Tom sounds lovely, and Berlin is a fine city for cats."

    proc = chat(
        store, scripted_llm.base_url, "--conversation", "trip", "--message", "Where do I live? My cat is Tom."
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Tom sounds lovely, and Berlin is a fine city for cats." in out
    injected = [
        line
        for line in out.splitlines()
        if line.startswith("[memory] ") and "The user lives in Berlin" in line
    ]
    assert injected and injected[0].split()[1].replace(".", "").isdigit(), out
    assert out.index("The user lives in Berlin") < out.index("Tom sounds lovely")
    assert "[memory] Memory updated: added “The user has a cat named Tom”" in out
    assert stored(store, make_config, "trip", "memory") == [
        "The user lives in Berlin",
        "The user has a cat named Tom",
    ]


def test_unreachable_llm_is_one_clear_line_and_the_turn_is_kept(tmp_path: Path, make_config: Any) -> None:
    store = tmp_path / "store"
    proc = chat(store, "http://127.0.0.1:9/v1", "--conversation", "c1", "--message", "My name is Alice.")
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("desktop-mem: Cannot reach the LLM at http://127.0.0.1:9/v1")
    assert "Traceback" not in proc.stdout + proc.stderr
    assert stored(store, make_config, "c1", "user") == ["My name is Alice."]
    assert any("Alice" in text for text in stored(store, make_config, "c1", "memory"))


def test_interactive_loop_reads_lines_until_quit(
    tmp_path: Path, make_config: Any, scripted_llm: ScriptedLLM
) -> None:
    store = tmp_path / "store"
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(lambda b: "second" in str(b["messages"][-1]["content"]), "Reply two.")
    scripted_llm.default_reply = "Reply one."
    proc = chat(
        store, scripted_llm.base_url, "--conversation", "loop", stdin="first\n\nsecond\n/quit\nthird\n"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.index("Reply one.") < proc.stdout.index("Reply two.")
    assert proc.stdout.count("Memory unchanged") == 2
    assert stored(store, make_config, "loop", "user") == ["first", "second"]


def test_bad_conversation_id_and_empty_message_are_refused(tmp_path: Path, scripted_llm: ScriptedLLM) -> None:
    store = tmp_path / "store"
    proc = chat(store, scripted_llm.base_url, "--conversation", "../x", "--message", "hi")
    assert proc.returncode == 1 and "path separator" in proc.stderr
    proc = chat(store, scripted_llm.base_url, "--message", "  ")
    assert proc.returncode == 1 and "--message is empty" in proc.stderr
    assert scripted_llm.chat_requests == []


def test_a_temporary_chat_answers_from_memory_and_stores_nothing(
    tmp_path: Path, make_config: Any, scripted_llm: ScriptedLLM
) -> None:
    store = tmp_path / "store"
    with MemoryEngine(make_config(store=store)) as engine:
        engine.add("The user lives in Berlin", conversation_id="trip")
        commits = [c.sha for c in engine.history(limit=20)]
    scripted_llm.script(FACTS, '["The user has a cat named Tom"]')
    scripted_llm.default_reply = "You live in Berlin."
    proc = chat(store, scripted_llm.base_url, "--temporary", "--conversation", "trip",
                "--message", "Where do I live? My cat is Tom.")
    assert proc.returncode == 0, proc.stderr
    assert "You live in Berlin." in proc.stdout and "temporary chat" in proc.stdout
    assert "Memory updated" not in proc.stdout
    assert stored(store, make_config, "trip", "user") == []
    assert stored(store, make_config, "trip", "memory") == ["The user lives in Berlin"]
    with MemoryEngine(make_config(store=store), read_only=True) as engine:
        assert [c.sha for c in engine.history(limit=20)] == commits
    assert not any(FACTS in r.system_text for r in scripted_llm.requests)
