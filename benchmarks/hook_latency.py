"""How long a coding agent waits for desktop-mem's hook on each prompt (issue #38: ~100 ms at most).

    .venv/bin/python benchmarks/hook_latency.py [--runs 30] [--smoke]

Installs the Claude Code hook into a scratch settings.json (`desktop-mem hooks install`), then
runs its command as Claude Code does (through the shell, the UserPromptSubmit event on stdin)
and times it from start to exit: the hook spools the message and starts the delivery in the
background, so this is all the agent waits for. Compared with a bare `python -c pass` (the
interpreter's own start) and `desktop-mem --help` (what a hook through the full CLI would cost).
The background delivery (extraction, commit) is timed apart: it never delays the agent. Between
two prompts the last delivery is let finish, as when a person types them seconds apart.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVENT = {
    "session_id": "bench",
    "hook_event_name": "UserPromptSubmit",
    "prompt": "I prefer small pull requests. Please rename the helper in orders.py.",
}


def timed(command: str, stdin: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        command,
        shell=True,
        input=stdin,
        capture_output=True,
        text=True,
        env=env,  # noqa: S602
        check=True,
        timeout=60,
    )
    return (time.perf_counter() - start) * 1000


def drain(spool_root: Path, limit_s: float = 120) -> None:
    """Wait until the background delivery took every spooled prompt and let go of its lock."""
    import fcntl

    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        folders = [p for p in spool_root.iterdir() if p.is_dir()] if spool_root.is_dir() else []
        busy = any(any(p.glob("*.json")) for p in folders)
        for folder in folders if not busy else ():
            with open(folder / ".deliver.lock", "a") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    fcntl.flock(handle, fcntl.LOCK_UN)
                except OSError:
                    busy = True
        if not busy:
            return
        time.sleep(0.2)


def summary(name: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    return f"{name:<34} median {statistics.median(ms):6.1f} ms   p95 {p95:6.1f} ms   max {ms[-1]:6.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--smoke", action="store_true", help="3 runs, to check the script still works")
    args = parser.parse_args()
    runs = 3 if args.smoke else args.runs
    with tempfile.TemporaryDirectory(prefix="hook-bench-") as tmp:
        base = Path(tmp)
        env = {
            **os.environ,
            "XDG_STATE_HOME": str(base / "state"),
            "XDG_CONFIG_HOME": str(base / "xdg"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        }
        (base / "repo" / ".git").mkdir(parents=True)
        store, settings = base / "store", base / "settings.json"
        cli = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store)]
        subprocess.run(
            [*cli, "hooks", "install", "claude-code", "--config", str(settings)],
            env=env,
            check=True,
            capture_output=True,
        )
        hook = json.loads(settings.read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        event = json.dumps({**EVENT, "cwd": str(base / "repo")})
        python = f"{sys.executable} -c pass"
        full = f"{sys.executable} -m desktop_mem.cli --help"
        rows = {
            "the hook (what the agent waits)": [],
            "python -c pass (interpreter start)": [],
            "desktop-mem --help (full CLI)": [],
        }
        spool_root = base / "state" / "desktop-mem" / "hook-spool"
        for _ in range(runs):
            rows["the hook (what the agent waits)"].append(timed(hook, event, env))
            drain(spool_root)  # prompts come seconds apart: the last delivery is done by the next
            rows["python -c pass (interpreter start)"].append(timed(python, "", env))
            rows["desktop-mem --help (full CLI)"].append(timed(full, "", env))
        spool = next((base / "state" / "desktop-mem" / "hook-spool").iterdir())
        start = time.perf_counter()
        while any(spool.glob("*.json")) and time.perf_counter() - start < 300:
            time.sleep(0.1)
        drained = time.perf_counter() - start
        print(f"{runs} runs on {os.cpu_count()} cores, Python {sys.version.split()[0]}")
        for name, ms in rows.items():
            print(summary(name, ms))
        listed = subprocess.run([*cli, "list", "--json"], env=env, capture_output=True, text=True, check=True)
        stored = len(json.loads(listed.stdout)["memories"])
        print(
            f"background delivery: spool drained {drained:.1f} s after the last prompt; {stored} facts "
            f"stored "
            f"(no LLM configured: pattern rules)"
        )


if __name__ == "__main__":
    main()
