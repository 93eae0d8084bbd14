"""Coding-agent capture: `desktop-mem hooks install|uninstall claude-code|codex` writes the agent's
own config with mcp setup's care, and the hook sends the user's messages (never tool output) to
the write path under the project's scope, in the background, forwarded to `serve` when it holds
the store; a failed delivery is kept and reported, never shown to the agent. Real CLI processes,
real store, the scripted LLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from desktop_mem.engine.api import project_of_folder
from tests.mcp_clients import ServeProcess, cli_env, git
from tests.scripted_llm import ScriptedLLM

pytestmark = pytest.mark.timeout(400)
FACTS_CALL = "You extract facts about the user"


def _env(tmp_path: Path) -> dict[str, str]:
    return cli_env(XDG_STATE_HOME=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "xdg"))


def _cli(
    tmp_path: Path, store: Path, *args: str, ok: bool = True, config: Path | None = None
) -> subprocess.CompletedProcess[str]:
    extra = ["--config", str(config)] if config else []
    proc = subprocess.run(
        [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *extra, *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=_env(tmp_path),
    )
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def _hook_command(settings: Path) -> str:
    groups = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"]
    return next(h["command"] for g in groups for h in g["hooks"] if "hook_capture" in h["command"])


def _run_hook(tmp_path: Path, command: str, event: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """As Claude Code runs a command hook: through the shell, the event on stdin."""
    return subprocess.run(
        command,
        shell=True,
        input=json.dumps(event),
        capture_output=True,
        text=True,  # noqa: S602
        timeout=30,
        env=_env(tmp_path),
    )


def _wait_for(check: Callable[[], Any], timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.5)
    raise AssertionError("the background delivery did not finish")


def test_claude_code_install_merges_backs_up_and_uninstall_removes_only_ours(tmp_path: Path) -> None:
    store, settings = tmp_path / "store", tmp_path / "claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {
        "model": "opus",
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "lint-prompt"}]}],
        },
    }
    settings.write_text(json.dumps(theirs, indent=4))
    dry = _cli(tmp_path, store, "hooks", "install", "claude-code", "--config", str(settings), "--dry-run")
    assert "+" in dry.stdout and "hook_capture" in dry.stdout and json.loads(settings.read_text()) == theirs
    shown = _cli(
        tmp_path, store, "hooks", "install", "claude-code", "--config", str(settings), "--project", "shop"
    )
    assert "Restart Claude Code" in shown.stdout and "hook_capture" in shown.stdout  # the diff
    after = json.loads(settings.read_text())
    assert after["model"] == "opus" and after["hooks"]["Stop"] == theirs["hooks"]["Stop"]
    commands = [h["command"] for g in after["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert commands[0] == "lint-prompt" and "--project shop" in commands[1] and len(commands) == 2
    assert [p.name for p in settings.parent.glob("settings.json.*.bak")] and json.loads(
        next(settings.parent.glob("*.bak")).read_text()
    ) == theirs
    again = _cli(
        tmp_path, store, "hooks", "install", "claude-code", "--config", str(settings), "--project", "shop"
    )
    assert "nothing to change" in again.stdout
    _cli(tmp_path, store, "hooks", "uninstall", "claude-code", "--config", str(settings))
    assert json.loads(settings.read_text()) == theirs
    settings.write_text('{"hooks": {}, // a comment\n}')
    refused = _cli(tmp_path, store, "hooks", "install", "claude-code", "--config", str(settings), ok=False)
    assert refused.returncode == 1 and "not valid JSON" in refused.stderr
    assert settings.read_text() == '{"hooks": {}, // a comment\n}'


def test_codex_notify_is_added_beside_comments_and_another_program_is_not_replaced(tmp_path: Path) -> None:
    store, config = tmp_path / "store", tmp_path / "codex" / "config.toml"
    config.parent.mkdir()
    theirs = '# my settings\nmodel = "o4"  # fast\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n'
    config.write_text(theirs)
    _cli(tmp_path, store, "hooks", "install", "codex", "--config", str(config))
    text = config.read_text()
    assert (
        text.startswith('# my settings\nmodel = "o4"  # fast\n')
        and '[mcp_servers.docs]\ncommand = "docs-mcp"' in text
    )
    doc = tomllib.loads(text)
    assert doc["model"] == "o4" and doc["mcp_servers"] == {"docs": {"command": "docs-mcp"}}
    assert doc["notify"][1:3] == ["-m", "desktop_mem.hook_capture"] and "codex" in doc["notify"]
    _cli(tmp_path, store, "hooks", "uninstall", "codex", "--config", str(config))
    assert tomllib.loads(config.read_text()) == tomllib.loads(theirs)
    config.write_text('notify = ["say", "done"]\n' + theirs)
    refused = _cli(tmp_path, store, "hooks", "install", "codex", "--config", str(config), ok=False)
    assert refused.returncode == 1 and "another notify program" in refused.stderr
    assert config.read_text().startswith('notify = ["say", "done"]')


def test_the_hook_sends_user_messages_to_the_project_scope_in_the_background(
    tmp_path: Path, scripted_llm: ScriptedLLM
) -> None:
    store, settings, repo = tmp_path / "store", tmp_path / "settings.json", tmp_path / "work" / "shop"
    (repo / ".git").mkdir(parents=True)
    conf = tmp_path / "desktop-mem.yaml"
    conf.write_text(f"llm:\n  base_url: {scripted_llm.base_url}\n  model: test-model\n  api_key: test\n")
    scripted_llm.script(
        FACTS_CALL,
        json.dumps(
            {
                "user": ["The user prefers tabs over spaces"],
                "task": ["The user's orders service uses PostgreSQL 16"],
            }
        ),
    )
    _cli(tmp_path, store, "hooks", "install", "claude-code", "--config", str(settings), config=conf)
    command = _hook_command(settings)

    tool_output = {
        "session_id": "s1",
        "cwd": str(repo),
        "hook_event_name": "PostToolUse",
        "tool_name": "Read",
        "tool_response": {"content": "SECRET_FILE_CONTENTS"},
    }
    assert _run_hook(tmp_path, command, tool_output).stdout == ""
    prompt = {
        "session_id": "s1",
        "cwd": str(repo / "src"),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "I prefer tabs over spaces. The orders service uses PostgreSQL 16. Please fix its tests.",
    }
    ran = _run_hook(tmp_path, command, prompt)
    assert ran.returncode == 0 and ran.stdout == "" and ran.stderr == ""  # nothing reaches the agent

    def stored() -> dict[str, str]:
        listed = _cli(tmp_path, store, "list", "--json").stdout if store.exists() else '{"memories": []}'
        return {m["text"]: m["conversation_id"] for m in json.loads(listed)["memories"]}

    found = _wait_for(lambda: len(stored()) >= 2 and stored())
    assert found == {
        "The user prefers tabs over spaces": "global",
        "The user's orders service uses PostgreSQL 16": project_of_folder(repo),
    }
    sent = [r.last_user_text for r in scripted_llm.chat_requests]
    assert not any("SECRET_FILE_CONTENTS" in t for t in sent)  # tool output never left the agent
    assert "Claude Code" in git(store, "log", "-1", "--format=%B")
    assert _cli(tmp_path, store, "hooks", "status").stdout.endswith("0 waiting, 0 failed\n")


def test_forwarded_to_serve_and_a_failed_delivery_is_kept_and_reported(tmp_path: Path) -> None:
    store, settings = tmp_path / "store", tmp_path / "settings.json"
    serve = ServeProcess(store).wait_ready()
    try:
        _cli(
            tmp_path, store, "hooks", "install", "claude-code", "--config", str(settings), "--project", "shop"
        )
        event = {
            "session_id": "s2",
            "cwd": str(tmp_path),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "I prefer dark roast coffee.",
        }
        assert _run_hook(tmp_path, _hook_command(settings), event).returncode == 0

        def at_serve() -> list[dict[str, Any]]:
            answer = httpx.get(f"{serve.url}/api/memories", headers=serve.headers, timeout=10).json()
            return [m for m in answer["data"] if m["content"] == "The user prefers dark roast coffee"]

        memory = _wait_for(at_serve)[0]
        assert memory["source"] == "mcp" and memory["client"] == "Claude Code"
    finally:
        serve.stop()

    broken = tmp_path / "not-a-store"
    broken.write_text("a file, not a folder")
    _cli(tmp_path, broken, "hooks", "install", "claude-code", "--config", str(settings))
    ran = _run_hook(tmp_path, _hook_command(settings), event)
    assert ran.returncode == 0 and ran.stdout == "" and ran.stderr == ""
    report = _wait_for(
        lambda: (
            (p := _cli(tmp_path, broken, "hooks", "status", ok=False)).returncode == 1
            and "1 failed" in p.stdout
            and p
        )
    )
    assert "not-a-store" in report.stdout or "Error" in report.stdout
    assert os.path.isfile(broken)
