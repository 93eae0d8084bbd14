"""Issue #34, class 1: nothing acknowledged is lost in a race with an outside editor.

An editor saves a memory (temp file + rename, as vim and VS Code do) a moment before an edit of
the same memory arrives through a front end. Each test makes that race for real, ten times: the
editor's text reaches git as its own commit before the edit, or the edit is refused naming what
changed; a file deleted by hand under an edit gives "deleted meanwhile" and its deletion is
committed. The window's editor goes through the facade (`engine.edit(expected_hash=...)`),
REST, MCP (streamable HTTP) and the CLI (forwarded to `serve`) through a real `serve` process
whose watcher runs.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import ConflictError
from tests.mcp_clients import ServeProcess, cli_env, git, http_session, result_json

ROUNDS = 10


def editor_save(path: Path, text: str) -> None:
    """Save as an editor does: the whole file to a temp file beside it, then rename over it."""
    raw = path.read_text("utf-8")
    head, sep, _body = raw.partition("\n---\n")
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(f"{head}{sep}{text}\n", "utf-8")
    os.replace(tmp, path)


def subjects(store: Path) -> list[str]:
    return git(store, "log", "--format=%s").splitlines()


def committed_texts(store: Path, rel: str) -> list[str]:
    """Every committed version of one file's body, newest first."""
    shas = git(store, "log", "--format=%H", "--", rel).split()
    return [git(store, "show", f"{sha}:{rel}").partition("\n---\n")[2].strip() for sha in shas]


def test_facade_edit_records_the_editors_save_first_then_applies(engine: MemoryEngine) -> None:
    store = engine.config.store_path
    memory = engine.add("The user lives in Ghent")
    for i in range(ROUNDS):
        editor_save(store / memory.path, f"The user lives in Bruges {i}")
        edited = engine.edit(memory.id, text=f"The user lives in Leuven {i}")  # no base: apply on top
        assert edited.text == f"The user lives in Leuven {i}"
        assert committed_texts(store, memory.path)[:2] == [f"The user lives in Leuven {i}",
                                                           f"The user lives in Bruges {i}"]
    assert subjects(store)[:2] == ["Edit fact: The user lives in Leuven 9",
                                   "Edit outside the app: The user lives in Bruges 9"]
    assert git(store, "status", "--porcelain", "--", "entries") == ""


def test_facade_edit_from_a_stale_base_is_refused_naming_the_change(engine: MemoryEngine) -> None:
    store = engine.config.store_path
    memory = engine.add("The user lives in Ghent")
    for i in range(ROUNDS):
        base = engine.get(memory.id).content_hash  # what the window's editor opened
        editor_save(store / memory.path, f"The user lives in Bruges {i}")
        with pytest.raises(ConflictError, match=rf"changed since it was read: its text \(now “The user "
                                                rf"lives in Bruges {i}”\).*not applied"):
            engine.edit(memory.id, text="The user lives in Leuven", expected_hash=base)
        assert (store / memory.path).read_text("utf-8").rstrip().endswith(f"Bruges {i}")
        assert committed_texts(store, memory.path)[0] == f"The user lives in Bruges {i}"
    assert git(store, "status", "--porcelain", "--", "entries") == ""


@pytest.mark.parametrize("write", ["edit", "delete", "replace"])
def test_a_file_deleted_by_hand_under_a_write_is_committed_and_named(engine: MemoryEngine,
                                                                     write: str) -> None:
    store = engine.config.store_path
    calls: dict[str, Callable[[str], Any]] = {
        "edit": lambda mid: engine.edit(mid, text="new text"),
        "delete": engine.delete,
        "replace": lambda mid: engine.replace(mid, "new text"),
    }
    for i in range(ROUNDS):
        memory = engine.add(f"The user has {i} cats")
        (store / memory.path).unlink()
        with pytest.raises(ConflictError, match="deleted outside the app while this change was on its way"):
            calls[write](memory.id)
        assert subjects(store)[0] == f"Edit outside the app: The user has {i} cats"
        assert git(store, "ls-files", "--", memory.path) == ""
    assert git(store, "status", "--porcelain", "--", "entries") == ""


# ------------------------------------------------------------------ a real `serve` process

@pytest.fixture
def served(tmp_path: Path) -> Any:
    store = tmp_path / "store"
    proc = ServeProcess(store, token="t0ken").wait_ready()
    yield store, proc
    proc.stop()


def _add(client: httpx.Client, text: str) -> dict[str, Any]:
    answer = client.post("/api/memories", json={"content": text})
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


def test_rest_mcp_and_cli_never_overwrite_an_editors_save(served: Any) -> None:
    store, proc = served
    with httpx.Client(base_url=proc.url, headers=proc.headers, timeout=60) as client:
        memory = _add(client, "The user lives in Ghent")
        path = store / memory["path"]
        for i in range(ROUNDS):  # REST without a base: the save is committed, then the edit
            editor_save(path, f"Bruges {i}")
            answer = client.patch(f"/api/memories/{memory['id']}", json={"content": f"Leuven {i}"})
            assert answer.status_code == 200, answer.text
            assert committed_texts(store, memory["path"])[:2] == [f"Leuven {i}", f"Bruges {i}"]
        for i in range(ROUNDS):  # REST from a stale base: 409 naming the change
            base = client.get(f"/api/memories/{memory['id']}").json()["content_hash"]
            editor_save(path, f"Antwerp {i}")
            answer = client.patch(f"/api/memories/{memory['id']}",
                                  json={"content": "Leuven", "expected_hash": base})
            assert answer.status_code == 409, answer.text
            assert f"“Antwerp {i}”" in answer.json()["error"]["message"]
            assert committed_texts(store, memory["path"])[0] == f"Antwerp {i}"
        for i in range(ROUNDS):  # deleted by hand under a REST delete: 409, no path, committed
            gone = _add(client, f"The user has {i} dogs")
            (store / gone["path"]).unlink()
            answer = client.delete(f"/api/memories/{gone['id']}")
            # 409 when the delete meets the missing file; 404 when serve's watcher recorded the
            # hand deletion first (a quiet machine): either way one clear answer and no path
            assert answer.status_code in (404, 409), answer.text
            assert ("deleted outside the app" in answer.text or "no memory with id" in answer.text)
            assert str(store) not in answer.text
            deadline = time.monotonic() + 10  # the watcher's commit may still be on its way (404)
            while git(store, "ls-files", "--", gone["path"]) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert git(store, "ls-files", "--", gone["path"]) == ""

        async def mcp_rounds() -> None:
            async with http_session(f"{proc.url}/mcp", headers=proc.headers) as session:
                current = memory
                for i in range(ROUNDS):
                    editor_save(store / current["path"], f"Namur {i}")
                    result = await session.call_tool("update_memory",
                                                     {"id": current["id"], "text": f"Liège {i}"})
                    assert not result.is_error, result.content
                    assert subjects(store)[:2] == [f"Update fact: Namur {i} -> Liège {i}",
                                                   f"Edit outside the app: Namur {i}"]
                    current = client.get(f"/api/memories/{result_json(result)['updated']['id']}").json()
                for i in range(ROUNDS):
                    base = client.get(f"/api/memories/{current['id']}").json()["content_hash"]
                    editor_save(store / current["path"], f"Mons {i}")
                    result = await session.call_tool("update_memory", {"id": current["id"], "text": "Liège",
                                                                       "expected_hash": base})
                    assert result.is_error
                    assert f"“Mons {i}”" in result.content[0].text  # type: ignore[union-attr]
                    assert committed_texts(store, current["path"])[0] == f"Mons {i}"

        asyncio.run(mcp_rounds())
        target = _add(client, "The user likes tea")
    for i in range(ROUNDS):  # the CLI, forwarded to serve: a stale base is a message and exit 1
        base = httpx.get(f"{proc.url}/api/memories/{target['id']}",
                         headers=proc.headers).json()["content_hash"]
        editor_save(store / target["path"], f"coffee {i}")
        done = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "edit",
                               target["id"], "--text", "water", "--expected-hash", base],
                              env=cli_env(), capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"“coffee {i}”" in done.stderr
        assert committed_texts(store, target["path"])[0] == f"coffee {i}"
    editor_save(store / target["path"], "milk")
    done = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "edit",
                           target["id"], "--text", "water"], env=cli_env(), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert committed_texts(store, target["path"])[:2] == ["water", "milk"]


def test_a_hand_edit_held_back_for_a_secret_is_never_overwritten_by_a_racing_edit(
    engine: MemoryEngine,
) -> None:
    from tests.test_hand_edit_secrets import KEY

    store = engine.config.store_path
    memory = engine.add("The user's deploy key is kept in the vault")
    editor_save(store / memory.path, f"The deploy key is {KEY}")
    with pytest.raises(ConflictError, match="just edited outside the app: .*likely .*nothing was changed"):
        engine.edit(memory.id, text="The user has no deploy key")
    assert KEY in (store / memory.path).read_text("utf-8")  # the user's edit, kept for their answer
    assert KEY not in git(store, "log", "-p")
