"""Crash consistency: SIGKILL a writer at random points, reopen, and check nothing was lost.

The child runs the real write path against the scripted LLM server (chat turns with extraction,
reconciliation, rolling summary and eviction; app edits, hand edits, delete + restore, replace)
and prints an ack after each operation returns. The parent kills it at a random moment, then:
every visible .md parses (no partial file), reopening leaves no temp file, every acknowledged
turn and memory is present, `git fsck` is clean with nothing uncommitted, and the index holds
exactly the catalog's ids after the start-up sync.

    .venv/bin/python reliability/crash_harness.py --trials 300 --seed 1
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from reliability.common import (  # noqa: E402
    ROOT,
    check_engine,
    make_config,
    start_llm,
    table,
    unparsable_files,
)

CHILD = r"""
import os, random, sys
sys.path.insert(0, sys.argv[4])
from reliability.common import make_config
from desktop_mem.engine.facade import MemoryEngine
store, base_url, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
from pathlib import Path
rng = random.Random(seed)
eng = MemoryEngine.open(make_config(Path(store), base_url))
print("ready", flush=True)
i = 0
while True:
    i += 1
    op = rng.choices(["turn", "add", "edit", "hand", "restore", "replace"], [6, 2, 2, 2, 1, 1])[0]
    facts = eng.list_memories(role="memory")
    if op == "turn":
        msg = f"turn {seed}-{i} #{i}: I like topic {i % 7} and visited place {i}"
        reply = eng.chat(f"c{i % 3}", msg)
        print("ack turn", f"c{i % 3}", msg, flush=True)
        if reply.ok:
            print("ack reply", f"c{i % 3}", reply.text, flush=True)
    elif op == "add" or not facts:
        m = eng.add(f"note {seed}-{i} " + "word " * rng.randint(1, 300), conversation_id=f"c{i % 3}")
        print("ack id", m.id, flush=True)
    elif op == "edit":
        m = rng.choice(facts)
        text = f"edited {seed}-{i}"
        print("begin edit", m.id, flush=True)
        eng.edit(m.id, text=text)
        print("ack edit", m.id, text, flush=True)
    elif op == "hand":
        m = rng.choice(facts)
        path = eng.root / m.path
        raw = path.read_text(encoding="utf-8")
        text = f"hand edited {seed}-{i}"
        new = raw[: raw.rindex("---") + 3] + "\n\n" + text + "\n"
        tmp = eng.root.parent / "editor-swap.tmp"  # an editor's own temp file, outside the store
        tmp.write_text(new, encoding="utf-8")
        print("begin edit", m.id, flush=True)
        os.replace(tmp, path)
        eng.apply_external_changes([m.path])
        print("ack edit", m.id, text, flush=True)
    elif op == "restore":
        m = rng.choice(facts)
        eng.delete(m.id)
        eng.restore(m.id)
        print("ack id", m.id, flush=True)
    else:
        m = rng.choice(facts)
        tomb, new = eng.replace(m.id, f"replaced {seed}-{i}")
        print("ack id", new.id, flush=True)
"""


def run_trial(
    store: Path, base_url: str, seed: int, rng: random.Random, max_wait: float
) -> dict[str, object]:
    """One child run killed at a random moment, then the checks; returns what was found."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(store), base_url, str(seed), str(ROOT)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    ready = proc.stdout.readline().strip()
    if ready != "ready":
        err = proc.stderr.read() if proc.stderr else ""
        proc.kill()
        raise RuntimeError(f"child did not start: {ready!r} {err[-2000:]}")
    time.sleep(rng.uniform(0.0, max_wait))
    os.kill(proc.pid, signal.SIGKILL)
    out, _err = proc.communicate()
    lines = out.splitlines()
    partial = unparsable_files(store)
    in_flight: set[str] = set()
    last_edit: dict[str, str] = {}
    for line in lines:
        parts = line.split(" ", 3)
        if parts[:2] == ["begin", "edit"]:
            in_flight = {parts[2]}
        elif parts[:2] == ["ack", "edit"]:
            last_edit[parts[2]] = parts[3]
            in_flight = set()
        elif parts[:1] == ["ack"]:
            in_flight = set()
    acks = Counter(line.split(" ", 2)[1] for line in lines if line.startswith("ack "))
    lost: list[str] = []
    with MemoryEngine.open(make_config(store, base_url)) as eng:
        everything = eng.list_memories(include_deleted=True, include_summaries=True)
        texts = {(m.conversation_id, m.role, m.text) for m in everything}
        for line in lines:
            parts = line.split(" ", 3)
            if len(parts) == 4:
                parts[3] = parts[3].strip()  # a body is stored without surrounding whitespace
            role = {"turn": "user", "reply": "assistant"}.get(parts[1]) if parts[0] == "ack" else None
            missing_turn = role is not None and (parts[2], role, parts[3]) not in texts
            missing_id = parts[:2] == ["ack", "id"] and eng.lookup(parts[2]) is None
            if missing_turn or missing_id:
                lost.append(line)
        for mid, text in last_edit.items():
            current = eng.lookup(mid)
            if current is None or (current.text != text and mid not in in_flight):
                lost.append(f"edit of {mid}: expected {text!r}, found {current.text if current else None!r}")
        check = check_engine(eng)
    return {"acks": acks, "lost": lost, "partial": partial, "check": check, "ops": len(lines)}


def main(argv: list[str] | None = None) -> int:
    """Run the trials and print the summary table; exit 1 if anything was lost or inconsistent."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-wait", type=float, default=2.5, help="longest child run before the kill (s)")
    parser.add_argument("--fresh-every", type=int, default=25, help="start a new store every N trials")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    llm = start_llm()
    totals: Counter[str] = Counter()
    failures: list[str] = []
    started = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="crash-harness-"))
    try:
        store = workdir / "s0" / "store"
        for trial in range(args.trials):
            if trial % args.fresh_every == 0:
                store = workdir / f"s{trial}" / "store"
                store.parent.mkdir(parents=True)
            found = run_trial(store, llm.base_url, args.seed * 100_000 + trial, rng, args.max_wait)
            check = found["check"]
            totals.update(found["acks"])  # type: ignore[arg-type]
            totals["trials"] += 1
            totals["operations acknowledged"] += sum(found["acks"].values())  # type: ignore[union-attr]
            totals["memories checked"] += check.memories  # type: ignore[union-attr]
            problems = [*found["lost"], *found["partial"], *(check.partial_files + check.temp_files  # type: ignore[union-attr]
                                                              + check.problems + check.dirty)]  # type: ignore[union-attr]
            if check.git != "ok":  # type: ignore[union-attr]
                problems.append(f"git: {check.git}")  # type: ignore[union-attr]
            if check.index_missing or check.index_extra:  # type: ignore[union-attr]
                problems.append(f"index: {check.index_missing} missing, {check.index_extra} extra")  # type: ignore[union-attr]
            if problems:
                failures.append(f"trial {trial}: " + "; ".join(problems[:5]))
            print(f"trial {trial + 1}/{args.trials}: {sum(found['acks'].values())} acks, "  # type: ignore[union-attr]
                  f"{'OK' if not problems else 'FAIL ' + problems[0]}", flush=True)
    finally:
        llm.stop()
    elapsed = time.monotonic() - started
    rows = [
        ["trials (SIGKILL at a random moment)", totals["trials"]],
        ["acknowledged chat turns (user)", totals["turn"]],
        ["acknowledged replies (assistant)", totals["reply"]],
        ["acknowledged adds / restores / replaces", totals["id"]],
        ["acknowledged edits (app + hand)", totals["edit"]],
        ["memories checked after reopen", totals["memories checked"]],
        ["trials with a partial file, temp file, lost ack, fsck error, dirty path or index mismatch",
         len(failures)],
        ["run time (s)", round(elapsed)],
    ]
    print()
    print(table(["crash harness", "value"], rows))
    for failure in failures:
        print("FAIL", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
