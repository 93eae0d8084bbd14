"""An import of many memories is one commit that holds exactly its files, also when an ignore
rule matches them (issue #22). The paths are staged with
`git update-index --stdin` (linear), not `git add --pathspec-from-file` (quadratic: 100,000
paths took minutes; docs/benchmarks.md)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import Operation


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def test_many_memories_are_one_commit_even_under_an_ignore_rule(make_config: Callable[..., Any]) -> None:
    with MemoryEngine.open(make_config()) as eng:
        root = eng.root
        eng.add("The user has a cat.", conversation_id="c0")  # the store's first commit, before the rule
        (root / ".git" / "info").mkdir(parents=True, exist_ok=True)
        (root / ".git" / "info" / "exclude").write_text("entries/\n", encoding="utf-8")
        before = int(_git(root, "rev-list", "--count", "--all"))
        with eng._parts.writer.transaction(Operation.IMPORT, "Import 300 facts") as tx:
            written = [tx.add(f"Fact {i}: the user likes item {i}.", conversation_id=f"c{i % 7}", kind="fact",
                              source="import") for i in range(300)]
        assert int(_git(root, "rev-list", "--count", "--all")) == before + 1
        in_commit = set(_git(root, "show", "--name-only", "--format=", "HEAD").split())
        assert in_commit == {m.path for m in written}
        assert _git(root, "status", "--porcelain", "--ignored", "--", "entries").strip() == ""
