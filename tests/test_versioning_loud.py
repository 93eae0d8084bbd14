"""Issue #34: when git cannot commit, the user is told (the CLI's exit code, `doctor`, the
window's status bar); a write is never saved and silently not versioned.

A real failure: another git process's `index.lock` left in the store's repository while the
store is open (git refuses to commit; the app removes a stale lock only when it opens).
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EngineError


def _git(store: Any, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store), *args], capture_output=True, text=True, check=True).stdout


def test_a_failing_commit_is_said_by_the_write_doctor_and_the_engine_until_one_works(engine: Any) -> None:
    store = engine.config.store_path
    engine.add("The user likes tea")
    lock = store / ".git" / "index.lock"
    lock.write_bytes(b"")
    with pytest.raises(EngineError, match="git could not commit"):
        engine.add("The user likes coffee")
    assert "git could not commit" in (engine.versioning_problem() or "")
    report = engine.doctor()
    assert report.git.startswith("cannot commit") and not report.ok
    assert any("coffee" in p.read_text("utf-8") for p in (store / "entries").rglob("*.md"))  # kept
    lock.unlink()
    engine.add("The user likes cake")
    assert engine.versioning_problem() is None
    assert engine.doctor().git.startswith("ok")
    assert any("coffee" in (store / p).read_text("utf-8") for p in engine.doctor().uncommitted)  # listed
    engine.close()
    MemoryEngine.open(engine.config).close()  # the next open commits what was saved meanwhile
    assert "coffee" in _git(store, "log", "-p") and _git(store, "status", "--porcelain") == ""


def test_the_status_bar_says_in_red_that_changes_are_not_versioned(qtbot: Any, engine: Any) -> None:
    pytest.importorskip("PySide6")
    from desktop_mem.ui.status_bar import StatusBar
    from desktop_mem.ui.task_runner import SyncTaskRunner

    runner = SyncTaskRunner()
    status = StatusBar(runner)
    qtbot.addWidget(status)
    changes: list[Any] = []
    unsubscribe = engine.subscribe(changes.append)
    status.set_engine(engine)
    lock = engine.config.store_path / ".git" / "index.lock"
    lock.write_bytes(b"")
    with pytest.raises(EngineError):
        engine.add("The user likes coffee")
    status.on_store_changed(changes[-1])  # what the window's bridge delivers
    assert status.commit_label.text().startswith("Not versioned: the change is saved in the files")
    assert status.commit_label.property("state") == "bad"
    status.refresh()  # a later refresh keeps saying so while git still cannot commit
    qtbot.waitUntil(lambda: not runner.busy, timeout=20000)
    assert status.commit_label.property("state") == "bad"
    lock.unlink()
    engine.add("The user likes cake")
    status.on_store_changed(changes[-1])
    assert status.commit_label.text().startswith("Last change:")
    assert status.commit_label.property("state") == ""
    unsubscribe()
    status.set_engine(None)
    runner.deleteLater()
