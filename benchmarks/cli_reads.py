"""The command line's read commands on a large store, as a user runs them (issue #25).

Times `desktop-mem history`, `diff`, `show` and `search` in fresh processes, first with nothing
holding the store, then while `desktop-mem serve` holds it (as the window would): each command's
wall time and peak RSS (the child's ru_maxrss), medians of --runs. `--code DIR` runs another tree's
code the same way (an old checkout made with `git archive`), so two versions can be compared side
by side in one period: pass it twice, e.g. `--code /tmp/old --code .` (without a holder the trees
alternate run by run; with one, each tree's commands run while its own `serve` holds the store).

    python benchmarks/cli_reads.py --store /tmp/scale/work/store-100000 --code /tmp/old --code .

The store is only read (`search` with nothing holding it syncs the index first: nothing to write
when the index is up to date; serve takes the lock and writes nothing while nobody calls it). Prints
progress on stderr and one JSON line on stdout: {code: {command: {holder: {wall_s, rss_mb}}}}.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable

# The child reports its own peak RSS: the CLI runs in-process via runpy, then prints ru_maxrss.
CHILD = """
import resource, runpy, sys
sys.argv = ["desktop-mem", *sys.argv[1:]]
try:
    runpy.run_module("desktop_mem.cli", run_name="__main__")
except SystemExit:
    pass
print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


# The defaults, whatever the user's own settings say: an empty settings file of our own.
SETTINGS = Path(tempfile.mkdtemp(prefix="desktop-mem-cli-reads-")) / "config.yaml"
SETTINGS.write_text("{}\n", encoding="utf-8")


def _env(code: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "DESKTOP_MEM_"))}
    env["PYTHONPATH"] = str(code)
    env["DESKTOP_MEM_CONFIG"] = str(SETTINGS)
    return env


def _run(code: Path, store: Path, args: list[str]) -> tuple[float, float]:
    began = time.perf_counter()
    done = subprocess.run([PYTHON, "-c", CHILD, "--store", str(store), *args], cwd=code, env=_env(code),
                          capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {code}: {done.stderr[-800:]}")
    kb = [int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("MAXRSS_KB")]
    return wall, kb[-1] / 1024 if kb else float("nan")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Serve:
    """`desktop-mem serve` of `code` holding `store`, until stop()."""

    def __init__(self, code: Path, store: Path, settle: float = 5.0) -> None:
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "desktop_mem.cli", "--store", str(store), "serve", "--no-token", "--port",
             str(self.port)], cwd=code, env=_env(code), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"serve of {code} exited with {self.proc.returncode}")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2).read()
                break
            except OSError:
                time.sleep(0.3)
        time.sleep(settle)  # the index sync after start

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--code", type=Path, action="append", help="a tree to run (default: this one)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--query", default="where does the user's sister live")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds for serve's index sync after it starts; the smoke run: 0.5")
    args = parser.parse_args()
    codes = [c.resolve() for c in (args.code or [ROOT])]
    store = args.store.resolve()
    commit = subprocess.run(["git", "-C", str(store), "rev-parse", "HEAD~1"], capture_output=True,
                            text=True, check=True).stdout.strip()
    shown = subprocess.run([PYTHON, "-m", "desktop_mem.cli", "--store", str(store), "history", "--limit", "1",
                            "--json"], cwd=codes[-1], env=_env(codes[-1]), capture_output=True, text=True,
                           check=True).stdout
    memory_id = next(e["memory_id"] for e in json.loads(shown)[0]["events"] if e.get("memory_id"))
    commands = {"history": ["history", "--limit", "5"], "diff": ["diff", commit],
                "show": ["show", memory_id[:8]], "search": ["search", args.query]}
    results: dict[str, Any] = {str(c): {n: {} for n in commands} for c in codes}

    def measure(holder: str, code_sets: list[list[Path]]) -> None:
        for group in code_sets:
            serve = Serve(group[0], store, args.settle) if holder == "serve" else None
            try:
                for name, command in commands.items():
                    samples: dict[Path, list[tuple[float, float]]] = {c: [] for c in group}
                    for _ in range(args.runs):  # interleaved: every tree once per round
                        for code in group:
                            samples[code].append(_run(code, store, command))
                    for code in group:
                        walls, rss = zip(*samples[code], strict=True)
                        row = {"wall_s": round(statistics.median(walls), 2),
                               "rss_mb": round(statistics.median(rss), 1),
                               "walls": [round(w, 2) for w in walls]}
                        results[str(code)][name][holder] = row
                        print(f"{holder:5s} {name:7s} {code}: {row}", file=sys.stderr)
            finally:
                if serve is not None:
                    serve.stop()

    measure("none", [codes])
    # A tree's commands while its own `serve` holds the store (a restart per round would cost
    # ~30 s at 100k): one tree after the other.
    measure("serve", [[c] for c in codes])
    results["load_avg"] = os.getloadavg()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
