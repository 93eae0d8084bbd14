"""Every script in benchmarks/ still runs: a benchmark no test runs breaks silently (scale.py did,
when the timeline benchmark's `measure()` it calls changed). Each script is run as a user runs it,
in a process of its own, at a tiny size, and must exit 0 and print its figures (at least one
number). Nothing here judges a figure: performance lives in the scripts and docs/benchmarks.md.

How a script is smoke-run (what a new benchmark must offer):
- it accepts `--smoke` (a run of a few seconds at a tiny size that prints its figures) and takes
  its model, if it needs one, from OPENAI_BASE_URL / OPENAI_MODEL / OPENAI_API_KEY (the test sets
  them to the scripted OpenAI-compatible server); or
- it has an entry in SMOKE_ARGS below: its arguments at a tiny size, with `{llm}` (the scripted
  server's base URL), `{store}` (a small store with git history, made once), `{locomo}` (a tiny
  LoCoMo-format file with evidence) and `{tmp}` (a fresh folder) filled in.
A script with neither fails `test_every_benchmark_script_has_a_smoke_run`. A module without
`if __name__ == "__main__":` is a helper of the scripts, not a script.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from tests.scripted_llm import ScriptedLLM

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
SECONDS = 240  # a hard stop per script: a hang is a failure, not a slow suite

SMOKE_ARGS: dict[str, list[str]] = {
    "catalog_scans.py": ["--memories", "8", "--turns", "1"],
    "cli_reads.py": ["--store", "{store}", "--runs", "1", "--settle", "0.5"],
    "current_vs_stale.py": ["--llm-url", "{llm}", "--model", "test-model", "--asks", "1"],
    "forget_match.py": ["--smoke"],
    "forget_reply.py": ["--base-url", "{llm}", "--model", "test-model", "--api-key", "test",
                        "--samples", "1"],
    "gui_start.py": ["--memories", "20", "--shape", "facts", "--runs", "1", "--workdir", "{tmp}"],
    "indexing.py": ["--cold", "10", "--warm", "10", "--runs", "1", "--edits", "1"],
    "locomo_retrieval.py": ["--data", "{locomo}"],
    "mcp_session.py": ["--memories", "5"],
    "memory_qa.py": ["--smoke"],
    "multilingual_retrieval.py": ["--smoke"],
    # its --smoke is declared by told_as_true.odds_model, which it shares
    "passing_remark.py": ["--llm-url", "{llm}", "--model", "test-model", "--smoke"],
    "phrasing.py": ["--smoke"],
    "read_before_after.py": ["--store", "{store}", "--queries", "2", "--rerank-queries", "1"],
    "read_latency.py": ["--sizes", "20", "--queries", "2", "--rerank-queries", "1", "--dir", "{tmp}"],
    "scale.py": ["--size", "40", "--queries", "2", "--rerank-queries", "1", "--workers", "1",
                 "--skip", "gui,hand_edit", "--workdir", "{tmp}"],
    "serve_memory.py": ["--store", "{store}", "--turns", "1", "--settle", "0.5"],
    "temporal_read_cost.py": ["--data", "{locomo}"],
    "time_scenarios.py": ["--llm-url", "{llm}", "--model", "test-model", "--only", "ghent-leuven"],
    "timeline_pages.py": ["--commits", "40", "--runs", "1"],
    "validity_migration.py": ["{store}", "--sample", "2"],
    "write_path.py": ["--llm-url", "{llm}", "--model", "test-model", "--no-locomo", "--only", "car"],
}

EVIDENCE = (["D1:2"], ["D1:1"], ["D1:3"], ["D1:2", "D2:1"])  # of SMOKE_SAMPLE's questions 1-4


def tiny_locomo() -> list[dict[str, Any]]:
    """memory_qa.py's built-in conversation as a LoCoMo file, with evidence for the retrieval scripts."""
    from benchmarks.memory_qa import SMOKE_SAMPLE

    qa = [{**q, "evidence": list(e)} for q, e in zip(SMOKE_SAMPLE["qa"], EVIDENCE, strict=False)]
    return [{**SMOKE_SAMPLE, "qa": qa}]


def scripts() -> list[str]:
    """The runnable scripts of benchmarks/ (a helper module has no `__main__` block)."""
    return sorted(path.name for path in BENCHMARKS.glob("*.py")
                  if re.search(r'^if __name__ == "__main__":', path.read_text(encoding="utf-8"), re.M))


def offers_smoke(name: str) -> bool:
    return '"--smoke"' in (BENCHMARKS / name).read_text(encoding="utf-8")


def test_every_benchmark_script_has_a_smoke_run() -> None:
    """A new script without `--smoke` or an entry in SMOKE_ARGS would rot unnoticed: it fails here."""
    found = scripts()
    assert "scale.py" in found and "synthetic.py" not in found
    missing = [name for name in found if name not in SMOKE_ARGS and not offers_smoke(name)]
    assert missing == [], f"benchmarks without a smoke run (add --smoke or a SMOKE_ARGS entry): {missing}"
    gone = [name for name in SMOKE_ARGS if name not in found]
    assert gone == [], f"SMOKE_ARGS names scripts that are no longer there: {gone}"


@pytest.fixture(scope="module")
def llm() -> Iterator[ScriptedLLM]:
    server = ScriptedLLM().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def small_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of a few facts and turns over a few commits (git on, indexed)."""
    store = tmp_path_factory.mktemp("bench-store") / "store"
    config = load_config(flags={"store.path": str(store), "watcher.enabled": False, "llm.base_url": ""})
    with MemoryEngine.open(config) as engine:
        first = engine.add("The user's sister lives in Porto", conversation_id="family")
        engine.add("The user likes green tea")
        engine.add("I walked the dog this morning", conversation_id="family", role="user")
        engine.replace(first.id, "The user's sister lives in Lisbon")
        engine.open_index()
    return store


Run = tuple[list[str], "subprocess.CompletedProcess[str]", float]
TEST = "test_a_benchmark_runs_at_a_tiny_size_and_prints_its_figures"
WORKERS = 2  # the scripts run two at a time: much of each is waiting (a server starting, a settle)


def _run_script(name: str, llm: ScriptedLLM, store: Path, folder: Path) -> Run:
    """One script as a user runs it, in a process of its own, with a copy of the small store."""
    folder.mkdir(parents=True)
    locomo = folder / "locomo.json"
    locomo.write_text(json.dumps(tiny_locomo()), encoding="utf-8")
    work = folder / "work"
    work.mkdir()
    own_store = folder / "store"
    shutil.copytree(store, own_store, symlinks=True)
    (folder / "config.yaml").write_text("", encoding="utf-8")  # no user settings reach a run
    fill = {"{llm}": llm.base_url, "{store}": str(own_store), "{locomo}": str(locomo), "{tmp}": str(work)}
    args = [fill.get(arg, arg) for arg in SMOKE_ARGS.get(name, ["--smoke"])]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen",
           "OPENAI_BASE_URL": llm.base_url, "OPENAI_MODEL": "test-model", "OPENAI_API_KEY": "test",
           "DESKTOP_MEM_CONFIG": str(folder / "config.yaml"), "TMPDIR": str(folder)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(BENCHMARKS / name), *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=SECONDS, check=False)
    return args, done, time.monotonic() - started


@pytest.fixture(scope="module")
def smoke_runs(request: pytest.FixtureRequest, llm: ScriptedLLM, small_store: Path,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future[Run]]]:
    """The selected scripts, started WORKERS at a time as soon as the first test asks."""
    chosen = [item.callspec.params["name"] for item in request.session.items
              if getattr(item, "originalname", "") == TEST and hasattr(item, "callspec")]
    root = tmp_path_factory.mktemp("bench-runs")
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {name: pool.submit(_run_script, name, llm, small_store, root / name.removesuffix(".py"))
                   for name in chosen}
        yield futures
        for future in futures.values():
            future.cancel()


@pytest.mark.parametrize("name", scripts())
def test_a_benchmark_runs_at_a_tiny_size_and_prints_its_figures(
    name: str, smoke_runs: dict[str, Future[Run]],
) -> None:
    args, done, spent = smoke_runs[name].result()
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{name} {' '.join(args)} exited {done.returncode}:\n{output[-3000:]}"
    assert re.search(r"\d", done.stdout), f"{name} printed no figures:\n{output[-3000:]}"
    print(f"{name}: {spent:.1f} s")
