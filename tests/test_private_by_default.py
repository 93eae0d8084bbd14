"""Issue #22: private by default. Another user of the same machine must not read the memories:
not from the store's files, and not through `serve`."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from desktop_mem.api.loopback import server_token
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from tests.mcp_clients import free_port


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_store_and_its_memory_files_are_readable_by_their_user_only(
    make_config: Callable[..., Any], tmp_path: Path
) -> None:
    old = os.umask(0o022)  # the usual umask, which made the store 0755 and its files 0644
    try:
        with MemoryEngine(make_config(store=tmp_path / "fresh")) as eng:
            memory = eng.add("The user's bank is Argenta")
            edited = eng.edit(memory.id, text="The user's bank is KBC")
            assert _mode(eng.root) == 0o700
            assert _mode(eng.root / edited.path) == 0o600
            kinds = {p: _mode(p) for p in (eng.root / "entries").rglob("*.md")}
            assert kinds and set(kinds.values()) == {0o600}, kinds
    finally:
        os.umask(old)


def test_the_generated_token_is_kept_private_and_reused(tmp_path: Path) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text("", encoding="utf-8")
    config = load_config(settings, env={})
    token = server_token(config)
    assert len(token) >= 24
    assert _mode(settings) == 0o600
    assert server_token(load_config(settings, env={})) == token  # the same token next time
    assert load_config(settings, env={})["server.token"] == token  # what Settings shows


def test_serve_without_a_token_is_an_explicit_loopback_only_choice(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "DESKTOP_MEM_CONFIG": str(tmp_path / "none.yaml")}
    (tmp_path / "none.yaml").write_text("", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "desktop_mem.cli", "--store", str(tmp_path / "s"),
                             "--set", "watcher.enabled=false", "serve", "--no-token", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "no token" in line, line
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        assert status == 200
        assert load_config(env={"DESKTOP_MEM_CONFIG": str(tmp_path / "none.yaml")})["server.token"] == ""
    finally:
        proc.terminate()
        proc.wait(30)
