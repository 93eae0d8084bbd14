"""Concurrency and load: hand edits during write paths, a 1,000-file burst under the watcher,
a second app instance, and a soak of many turns with RSS over time. Afterwards files == index ==
git and RSS stays bounded.

    .venv/bin/python reliability/load.py --turns 5000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from desktop_mem.engine.models import StoreLockedError  # noqa: E402
from reliability.common import check_engine, make_config, rss_kib, start_llm, table  # noqa: E402


def hand_edits_during_write_paths(workdir: Path, base_url: str, turns: int) -> list[list[Any]]:
    """Chat turns on one thread while a user edits fact files by hand on another."""
    store = workdir / "edits" / "store"
    store.parent.mkdir(parents=True)
    engine = MemoryEngine.open(make_config(store, base_url, **{"memory.max_entries": 10_000}))
    facts = [engine.add(f"The user owns plant number {i}", conversation_id="home") for i in range(20)]
    expected: dict[str, str] = {}
    done = threading.Event()
    errors: list[str] = []

    def chat() -> None:
        try:
            for i in range(turns):
                engine.chat("home", f"Message #{i}: I like topic {i}")
        except Exception as exc:  # reported in the table
            errors.append(f"chat: {exc}")
        finally:
            done.set()

    thread = threading.Thread(target=chat)
    thread.start()
    edits = 0
    while not done.is_set() or edits < 40:
        m = facts[edits % len(facts)]
        current = engine.get(m.id)
        text = f"The user owns plant number {edits % len(facts)}, edited by hand ({edits})"
        path = engine.root / current.path
        raw = path.read_text(encoding="utf-8")
        tmp = workdir / "swap.tmp"
        tmp.write_text(raw[: raw.rindex("---") + 3] + "\n\n" + text + "\n", encoding="utf-8")
        os.replace(tmp, path)  # what an editor does; the watcher would then call this:
        engine.apply_external_changes([current.path])
        expected[m.id] = text
        edits += 1
    thread.join()
    engine.wait_idle(300)
    lost = [mid for mid, text in expected.items() if engine.get(mid).text != text]
    user_turns = len(engine.list_memories(conversation_id="home", role="user"))
    check = check_engine(engine)
    engine.close()
    return [["hand edits while write paths ran", f"{edits} hand edits, {turns} turns",
             f"lost edits {len(lost)}, turns stored {user_turns}/{turns}, errors {len(errors)}",
             "ok" if check.ok and not lost and user_turns == turns and not errors else f"FAIL {check}"]]


def burst_under_watcher(workdir: Path, base_url: str, n: int) -> list[list[Any]]:
    """Write n files at once with the watcher running; wait until all are indexed and committed."""
    store = workdir / "burst" / "store"
    store.parent.mkdir(parents=True)
    config = make_config(store, base_url, **{"watcher.enabled": True, "memory.max_entries": 10_000})
    engine = MemoryEngine.open(config)
    engine.open_index()
    if not engine.start_watcher():
        engine.close()
        return [["1,000-file burst under the watcher", n, "watcher not available", "SKIPPED"]]
    folder = store / "entries" / "burst" / "facts"
    folder.mkdir(parents=True)
    started = time.monotonic()
    for i in range(n):
        (folder / f"20250101T000000Z__burst-{i:05d}.md").write_text(
            f"---\nid: burst-{i:05d}\nrole: memory\n---\n\nThe user wrote burst note {i}\n", encoding="utf-8")
    seen = 0
    deadline = started + 300
    while time.monotonic() < deadline:
        seen = len(engine.list_memories(conversation_id="burst"))
        if seen == n and not engine._parts.git.dirty_paths():
            break
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    time.sleep(1.0)
    engine.stop_watcher()
    check = check_engine(engine)
    engine.close()
    verdict = "ok" if check.ok and seen == n else f"FAIL seen={seen} {check}"
    return [["1,000-file burst under the watcher", f"{n} files", f"all picked up, indexed, committed in "
             f"{elapsed:.1f} s" if seen == n else f"{seen}/{n} picked up", verdict]]


def second_instance(workdir: Path, base_url: str) -> list[list[Any]]:
    """A second writer on the same store is refused clearly; a reader still works."""
    store = workdir / "second" / "store"
    store.parent.mkdir(parents=True)
    config = make_config(store, base_url)
    first = MemoryEngine.open(config)
    first.add("The user likes tea")
    try:
        try:
            MemoryEngine.open(config)
            outcome, verdict = "second writer opened!", "FAIL"
        except StoreLockedError as exc:
            reader = MemoryEngine.open(config, read_only=True)
            ok = [m.text for m in reader.list_memories()] == ["The user likes tea"]
            listed = len(reader.list_memories())
            outcome = f"StoreLockedError: {str(exc)[:70]}...; read-only open lists {listed}"
            verdict = "ok" if ok else "FAIL"
    finally:
        first.close()
    return [["second app instance", "1 writer + 1 more", outcome.replace("|", "/"), verdict]]


def soak(workdir: Path, base_url: str, turns: int, samples: int) -> tuple[list[list[Any]], list[list[Any]]]:
    """Many turns over a few conversations; RSS sampled; consistency checked at the end."""
    store = workdir / "soak" / "store"
    store.parent.mkdir(parents=True)
    engine = MemoryEngine.open(make_config(store, base_url, **{"memory.max_entries": 200}))
    engine.open_index()
    every = max(turns // samples, 1)
    rss: list[list[Any]] = [[0, rss_kib() // 1024, 0]]
    started = time.monotonic()
    failed = 0
    for i in range(1, turns + 1):
        reply = engine.chat(f"soak-{i % 5}", f"Message #{i}: I like topic {i % 13} and visited place {i}")
        failed += not reply.ok
        if i % 10 == 0:
            engine.wait_idle(300)
        if i % every == 0:
            engine.wait_idle(300)
            rss.append([i, rss_kib() // 1024, round(time.monotonic() - started)])
            print(f"soak: {i}/{turns} turns, RSS {rss[-1][1]} MiB", flush=True)
    engine.wait_idle(300)
    elapsed = time.monotonic() - started
    users = len(engine.list_memories(role="user", include_deleted=True))
    check = check_engine(engine)
    files = sum(1 for _ in (store / "entries").rglob("*.md"))
    commits = engine._parts.git.count()
    engine.close()
    later = [r[1] for r in rss[len(rss) // 2:]]
    growth = (max(later) - min(later)) if later else 0
    verdict = "ok" if check.ok and users == turns and not failed else f"FAIL {check}"
    rows = [[f"soak: {turns} turns through the scripted server", f"{turns} turns, 5 conversations",
             f"{users} user turns stored, {files} files, {commits} commits, index {check.memories} ids, "
             f"{check.index_missing} missing / {check.index_extra} extra, dirty {len(check.dirty)}, "
             f"{elapsed / turns * 1000:.0f} ms/turn; RSS {rss[1][1] if len(rss) > 1 else rss[0][1]} -> "
             f"{rss[-1][1]} MiB (second half varies by {growth} MiB)", verdict]]
    return rows, rss


def main(argv: list[str] | None = None) -> int:
    """Run the four scenarios; print the tables; exit 1 on any failure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=500, help="soak turns (the report uses 5000)")
    parser.add_argument("--burst", type=int, default=1000)
    parser.add_argument("--edit-turns", type=int, default=30)
    parser.add_argument("--samples", type=int, default=10, help="RSS samples over the soak")
    args = parser.parse_args(argv)
    llm = start_llm()
    workdir = Path(tempfile.mkdtemp(prefix="load-"))
    rows: list[list[Any]] = []
    try:
        rows += second_instance(workdir, llm.base_url)
        rows += hand_edits_during_write_paths(workdir, llm.base_url, args.edit_turns)
        try:
            rows += burst_under_watcher(workdir, llm.base_url, args.burst)
        except Exception as exc:  # the watcher is new; report rather than stop the run
            rows.append(["1,000-file burst under the watcher", args.burst, f"{type(exc).__name__}: {exc}",
                         "FAIL"])
        soak_rows, rss = soak(workdir, llm.base_url, args.turns, args.samples)
        rows += soak_rows
    finally:
        llm.stop()
    print()
    print(table(["scenario", "load", "result", "verdict"], rows))
    print()
    print(table(["turns done", "RSS (MiB)", "elapsed (s)"], rss))
    return 0 if all(r[-1] in ("ok", "SKIPPED") for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
