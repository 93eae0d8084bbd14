"""Issue #22, all or nothing, for imports: a large import is written in batches, one commit each.
When a later batch fails (here: the disk fills while it is written), the batches before it stay
committed, and the error must say exactly that: how many memories were imported, which part
failed, how many were not, and that running the same import again brings the rest. Before, the
user saw only the disk error, as if nothing had been saved."""

from __future__ import annotations

import errno
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.transfer.importers import ImportIncomplete, apply_import, plan_import


def _facts(path: Path, n: int) -> Path:
    path.write_text(json.dumps([{"text": f"The user visited city number {i} in 2024", "role": "memory"}
                                for i in range(n)]), encoding="utf-8")
    return path


def _disk_fills_at(item: int) -> Callable[[int, int], None]:
    def progress(done: int, _total: int) -> None:
        if done == item:  # the moment the item is on disk: the next write finds the disk full
            raise OSError(errno.ENOSPC, "No space left on device", "entries/global/facts")
    return progress


def test_an_import_failing_in_a_later_batch_says_what_was_and_was_not_saved(
    make_config: Callable[..., Any], tmp_path: Path,
) -> None:
    source = _facts(tmp_path / "facts.json", 7)
    with MemoryEngine.open(make_config()) as eng:
        plan = plan_import(eng._parts, source, "json")
        with pytest.raises(ImportIncomplete) as failed:
            apply_import(eng._parts, plan, _disk_fills_at(4), batch_size=3)  # 3 | 3 | 1: fails in part 2
        message = str(failed.value)
        assert message.startswith("3 of 7 memories were imported (1 commit, the last ")
        assert "part 2 of 3 failed and the other 4 were not imported: No space left on device" in message
        assert "Run the same import again" in message
        assert len(eng.list_memories()) == 3  # exactly what it says: part 1, committed
        log = subprocess.run(["git", "log", "--format=%s"], cwd=eng.root, capture_output=True, text=True,
                             check=True).stdout.splitlines()
        assert [s.split(":")[0] for s in log] == ["Import facts.json (part 1 of 3)"]
        assert subprocess.run(["git", "status", "--porcelain", "entries"], cwd=eng.root, capture_output=True,
                              text=True, check=True).stdout == ""  # part 2 was put back whole

        parts = eng._parts
        again = apply_import(parts, plan_import(parts, source, "json"), batch_size=3)  # as the message says
        assert len(again.memories) == 4 and len(eng.list_memories()) == 7


def test_an_import_failing_in_its_first_batch_raises_the_reason_itself(
    make_config: Callable[..., Any], tmp_path: Path,
) -> None:
    source = _facts(tmp_path / "facts.json", 4)
    with MemoryEngine.open(make_config()) as eng:
        with pytest.raises(OSError, match="No space left") as failed:
            apply_import(eng._parts, plan_import(eng._parts, source, "json"), _disk_fills_at(2), batch_size=3)
        assert not isinstance(failed.value, ImportIncomplete)
        assert eng.list_memories() == []  # nothing was saved, as the plain error implies
