"""Bounded work on an import (issue #34): what an import file holds is measured before any object
is built from it, and every entry that is left out says why. Real files, real CLI processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.transfer.importers import iter_plan_lines, plan_import

ROOT = Path(__file__).resolve().parent.parent
# Runs `desktop-mem` and reports its peak memory (ru_maxrss, KiB) on the last line of stderr.
PEAK = ("import resource, runpy, sys\nsys.argv = ['desktop-mem', *sys.argv[1:]]\ntry:\n"
        "    runpy.run_module('desktop_mem.cli', run_name='__main__')\nfinally:\n"
        "    print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n")


def _import(store: Path, source: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    done = subprocess.run([sys.executable, "-c", PEAK, "--store", str(store), "--set", "llm.base_url=",
                           "import", str(source), "--dry-run"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    peak_kib = int(done.stderr.strip().splitlines()[-1].split()[-1])
    return done, peak_kib


def test_a_small_zip_of_millions_of_tiny_items_is_refused_before_it_is_built(tmp_path: Path) -> None:
    """A 100 KB zip whose conversations.json is 60 MB of `{},` (20 million items): refused in one
    line naming the limit, with the process's peak memory a fraction of what building them took
    (over 1 GB before any limit applied)."""
    bomb = tmp_path / "export.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("conversations.json", b"[" + b"{}," * 20_000_000 + b"{}]")
    assert bomb.stat().st_size < 400 * 1024
    done, peak_kib = _import(tmp_path / "store", bomb)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "values, over the limit" in done.stderr, done.stderr[-2000:]
    # against the same command on a one-memory file in the same environment: the bomb adds
    # little (building its items took over 1 GB); an absolute cap failed in the full suite
    small = tmp_path / "small.json"
    small.write_text(json.dumps([{"id": "m-1", "text": "The user lives in Ghent"}]), encoding="utf-8")
    _done, baseline_kib = _import(tmp_path / "store2", small)
    assert peak_kib - baseline_kib < 300 * 1024, \
        f"peak {peak_kib // 1024} MiB, baseline {baseline_kib // 1024} MiB"


def test_deeply_nested_json_in_an_import_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    deep = tmp_path / "memories.json"
    deep.write_text("[" * 50_000 + "]" * 50_000, encoding="utf-8")
    done, _peak = _import(tmp_path / "store", deep)
    assert done.returncode == 1 and "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert "nested 50,000 levels deep" in done.stderr, done.stderr[-2000:]


def test_two_memories_with_one_id_are_reported_never_dropped_as_already_present(
    tmp_path: Path, make_config: object,
) -> None:
    """Two different memories with the same id in one import: the second was dropped in silence and
    counted as "already in the store". Now the first is planned, the second is listed as left out
    with its reason; an exact repeat says so too; nothing is counted as present."""
    source = tmp_path / "memories.json"
    source.write_text(json.dumps([
        {"id": "m-1", "text": "The user lives in Ghent"},
        {"id": "m-1", "text": "The user lives in Leuven"},
        {"id": "m-2", "text": "The user has a cat"},
        {"id": "m-2", "text": "The user has a cat"},
    ]), encoding="utf-8")
    with MemoryEngine(make_config()) as engine:  # type: ignore[operator]
        plan = plan_import(engine._parts, source)
        assert [e.text for e in plan.entries] == ["The user lives in Ghent", "The user has a cat"]
        assert plan.already_present == 0
        reasons = [s.reason for s in plan.skipped]
        assert any("m-1 appears twice in this import with another text; the first one was kept" in r
                   for r in reasons), reasons
        assert any("m-2 appears twice in this import (the same memory again)" in r for r in reasons), reasons
        report = "\n".join(iter_plan_lines(plan))
        assert "already in the store" not in report and "appears twice" in report
