"""Long-use benchmark (issue #37): what memory looks like after a year of daily use, and after a
tidy-up. Never run in CI (it needs a real model); `--smoke` runs a few turns against any
OpenAI-compatible server (the suite's scripted one) to keep it working.

    python benchmarks/long_use.py --llm-url http://127.0.0.1:8765/v1 --store DIR [--limit N] [--json]
    python benchmarks/long_use.py --store DIR --tidy-only     # score and tidy what DIR holds
    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 python benchmarks/long_use.py --smoke

With `--store DIR` the replayed store and its progress (DIR/progress.json, written after every
turn) are kept: run the same command again and it goes on after the last finished turn, so a run
stopped at turn N is a valid N-turn result (`--tidy-only` scores it). Tidy-up runs on a copy of
the store, which stays as the replay left it. The score needs only the write path: each reply is
still streamed (later turns read it as context) but cut at `--reply-tokens` (default 48).

One user's year (benchmarks/long_use_story.py: 150 turns over twelve simulated months: moves, a
job change, family events, changing preferences, small talk, questions, requests for work, other
people's news, forget requests in varied wordings) goes through the real chat turn and write path,
as `desktop-mem chat` sends it. At each checkpoint, and after tidy-up's proposals are all
accepted, the live facts are measured against the story's answer key by names and numbers:

- live facts; junk rate (live facts that match no fact of the story and name nobody in it);
  others (facts about someone else's news: reported, not junk); duplicate rate (extra live facts
  for one fact of the story); stale-but-live (facts the story made untrue, still live); coverage
  (facts true at that point that some live fact holds);
- tidy-up's precision: of what it proposed to drop, retire or merge away, how much was really
  junk, stale or a duplicate.

The last stdout line is one JSON object with every checkpoint and the tidy-up figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from long_use_story import FACTS, PEOPLE, STORY, AnswerKey, answer_key  # noqa: E402
from phrasing import matches as _matches  # noqa: E402
from write_path import store_engine  # noqa: E402

from desktop_mem.engine.facade import MemoryEngine  # noqa: E402

CONVERSATION = "daily"


def matches(key: str, fact: str) -> bool:
    """Any "|" alternative of `key` matches `fact` (phrasing.matches: "+" terms, "*" prefixes)."""
    return any(_matches(alt.strip(), fact) for alt in key.split("|"))


def classify(fact: str, key: AnswerKey) -> str:
    """What one live fact is, by the answer key: "good", "stale", "other" (someone else's news)
    or "junk". A fact holding one made untrue is stale even when it holds a true one too ("Noor,
    the user's daughter, is 5"), unless it also holds what was said instead (history)."""
    for k in key.gone:
        still = FACTS[k].still or FACTS[k].key  # "sold the Volvo" is history, "drives a Volvo" stale
        if matches(still, fact) and not any(matches(FACTS[n].key, fact) for n in key.instead[k]):
            return "stale"
    if any(matches(FACTS[k].key, fact) for k in key.live):
        return "good"
    if any(matches(k, fact) for k in FACTS_KEYS_EVER):
        return "good"  # a fact of the story said at another point (e.g. a checkpoint before it)
    if any(matches(p, fact) for p in PEOPLE):
        return "other"
    return "junk"


FACTS_KEYS_EVER = [f.key for f in FACTS.values()]


def measure(texts: list[str], upto: int | None) -> dict[str, Any]:
    """The figures for these live facts against the story's first `upto` turns."""
    key = answer_key(upto)
    kinds = [classify(t, key) for t in texts]
    per_fact = {k: sum(1 for t in texts if matches(FACTS[k].key, t)) for k in key.live}
    duplicates = sum(max(n - 1, 0) for n in per_fact.values())
    n = len(texts)
    return {
        "live_facts": n,
        "junk_rate": round(kinds.count("junk") / n, 3) if n else 0.0,
        "others": kinds.count("other"),
        "duplicate_rate": round(duplicates / n, 3) if n else 0.0,
        "stale_but_live": kinds.count("stale"),
        "coverage": round(sum(1 for c in per_fact.values() if c) / len(per_fact), 3) if per_fact else 1.0,
        "missing": [k for k, c in per_fact.items() if not c],
        "stale": [t for t, k in zip(texts, kinds, strict=True) if k == "stale"],
        "junk": [t for t, k in zip(texts, kinds, strict=True) if k == "junk"],
    }


def live_texts(engine: MemoryEngine) -> list[str]:
    return [m.text for m in engine.list_memories(role="memory")]


def tidy_precision(engine: MemoryEngine, proposals: list[Any]) -> dict[str, Any]:
    """Of each proposal's dropped facts, how many were really junk, stale or a duplicate. A fact
    merged away is right when what stays (the merged text, or the fact kept) holds every fact of
    the story it held; a merge that rewrites the kept fact must keep what that one held too."""
    key = answer_key()
    right = wrong = 0
    wrong_items: list[str] = []
    live = live_texts(engine)
    texts = {m.id: m.text for m in engine.list_memories(role="memory")}
    for p in proposals:
        meta = p.extra.get("tidy", {})
        dropped = [p.target_text] if p.event == "DELETE" and p.target_text else []
        dropped += [str(r.get("text", "")) for r in meta.get("retire") or []]
        survivor = None
        if meta.get("kind") == "duplicate":
            survivor = p.text if p.event == "UPDATE" else texts.get(str(meta.get("replaced_by")), "")
        if p.event == "UPDATE" and meta.get("kind") == "stale":
            # what the user said later: the old fact must be stale, and what holds now must keep
            # every true fact the old one held ("Ghent with partner Tomas" -> "Leuven with ...")
            ok = classify(p.target_text, key) == "stale" and not any(
                matches(FACTS[k].key, p.target_text) and not matches(FACTS[k].key, p.text) for k in key.live)
            right, wrong = right + ok, wrong + (not ok)
            if not ok:
                wrong_items.append(f"stale update: {p.target_text!r} -> {p.text!r}")
            continue
        if p.event == "UPDATE" and meta.get("kind") == "junk":
            # a wrong fact set right (another person's news as the user's): wrong before, not after
            ok = classify(p.target_text, key) == "junk" and classify(p.text, key) != "junk"
            right, wrong = right + ok, wrong + (not ok)
            if not ok:
                wrong_items.append(f"junk update: {p.target_text!r} -> {p.text!r}")
            continue
        # a merge rewrites the kept one: it must say the same
        if p.event == "UPDATE" and p.target_text and _lost(p.target_text, p.text):
            wrong += 1
            wrong_items.append(f"merge lost a fact: {p.target_text!r} -> {p.text!r}")
            continue
        for text in dropped:
            kind = classify(text, key)
            duplicate = kind == "good" and sum(1 for t in live if _same_fact(t, text, key.live)) > 1
            merged = survivor is not None and not _lost(text, survivor)
            if kind in ("junk", "stale") or duplicate or merged:
                right += 1
            else:
                wrong += 1
                wrong_items.append(f"{meta.get('kind')}: {text!r} ({meta.get('reason')})")
        if p.event == "ADD":
            ok = any(matches(FACTS[k].key, p.text) for k in key.live)
            right, wrong = right + ok, wrong + (not ok)
            if not ok:
                wrong_items.append(f"gap: {p.text!r}")
    total = right + wrong
    return {"proposals": len(proposals), "judged": total,
            "precision": round(right / total, 3) if total else None, "wrong": wrong_items}


def _lost(text: str, survivor: str) -> bool:
    """`text` holds a fact of the story that `survivor` does not."""
    return any(matches(f.key, text) and not matches(f.key, survivor) for f in FACTS.values())


def _same_fact(a: str, b: str, keys: list[str]) -> bool:
    return any(matches(FACTS[k].key, a) and matches(FACTS[k].key, b) for k in keys)


def replay(engine: MemoryEngine, state: dict[str, Any], turns: int, checkpoints: list[int],
           reply_tokens: int, save: Callable[[dict[str, Any]], None], log: Any,
           stop: Path | None = None) -> bool:
    """Send the story's turns after `state["turns_done"]` up to `turns`, saving progress after each.
    False when the file `stop` appeared: the replay then stops between two turns (a kill may fall
    inside a turn's memory update, and that turn's facts are never written)."""
    stored = len(engine.list_memories(role="user", conversation_id=CONVERSATION))
    if stored > state["turns_done"]:  # stopped inside a turn's write path: its message is stored
        log(f"  turn {stored} was stopped during its memory update; it counts as sent")
        state["turns_done"] = stored
    for i, turn in enumerate(STORY[state["turns_done"]:turns], start=state["turns_done"] + 1):
        if stop is not None and stop.exists():
            stop.unlink()
            log(f"  stopped before turn {i} ({stop.name} was found); the same command goes on")
            return False
        t0 = time.perf_counter()
        reply = engine.chat(CONVERSATION, turn.text, **_capped(reply_tokens))
        engine.wait_idle(900)
        seconds = time.perf_counter() - t0
        state["turns_done"] = i
        state["write_path_seconds"] = round(state["write_path_seconds"] + seconds, 1)
        log(f"  {i:3d} m{turn.month:02d} {seconds:5.1f}s {turn.text[:60]!r}"
            + (f" ERROR {reply.error}" if reply.error else ""))
        if i in checkpoints or i == turns:
            figures = measure(live_texts(engine), i)
            state["checkpoints"][str(i)] = figures
            log(f"  checkpoint {i}: " + json.dumps({k: v for k, v in figures.items()
                                                      if k not in ("stale", "junk")}))
        save(state)
    return True


def _capped(tokens: int) -> dict[str, Any]:
    """chat() options that stop the reply's stream after `tokens` pieces (0: never)."""
    if tokens <= 0:
        return {}
    cancel, seen = threading.Event(), [0]

    def on_token(_piece: str) -> None:
        seen[0] += 1
        if seen[0] >= tokens:
            cancel.set()

    return {"on_token": on_token, "cancel": cancel}


def tidy_and_measure(engine: MemoryEngine, turns: int) -> dict[str, Any]:
    """Tidy-up's proposals, all accepted, and the figures before and after (changes `engine`'s store)."""
    results: dict[str, Any] = {"before_tidy": measure(live_texts(engine), turns)}
    t0 = time.perf_counter()
    report = engine.tidy_up(progress=lambda step, done, total: None)
    results["tidy_seconds"] = round(time.perf_counter() - t0, 1)
    results["tidy_counts"] = report.counts()
    results["tidy_note"] = report.model_error
    results["tidy"] = tidy_precision(engine, report.proposals)
    failed: list[str] = []
    for p in report.proposals:
        try:
            engine.accept_proposal(p.id)
        except Exception as exc:  # noqa: BLE001 - a proposal that no longer applies is reported
            failed.append(f"{p.id}: {exc}")
    results["accept_failed"] = failed
    results["after_tidy"] = measure(live_texts(engine), turns)
    return results


def tidy_on_copy(store: Path, url: str, model: str, turns: int) -> dict[str, Any]:
    """`tidy_and_measure` on a copy of `store`: the replayed store stays as it was, to go on."""
    with tempfile.TemporaryDirectory(prefix="long-use-tidy-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store, copy, ignore=shutil.ignore_patterns(".desktop_mem.lock*"))
        with store_engine(copy, url, model) as engine:
            return tidy_and_measure(engine, turns)


def load_state(path: Path, model: str) -> dict[str, Any]:
    fresh = {"turns_done": 0, "model": model, "checkpoints": {}, "write_path_seconds": 0.0}
    if not path.exists():
        return fresh
    state = json.loads(path.read_text("utf-8"))
    return {**fresh, **state} if isinstance(state, dict) else fresh


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm-url", default=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8765/v1"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "local"))
    parser.add_argument("--limit", type=int, default=len(STORY), help="turns to replay (default: all)")
    parser.add_argument("--checkpoints", default="50,100", help="turn numbers to measure at")
    parser.add_argument("--store", type=Path, help="keep the store and progress here; go on if present "
                        "(a file named stop there ends the replay between two turns)")
    parser.add_argument("--tidy-only", action="store_true", help="send no turn: score and tidy the store")
    parser.add_argument("--reply-tokens", type=int, default=48, help="cut each reply after this many "
                        "streamed pieces (0: whole replies); the score reads only the write path")
    parser.add_argument("--smoke", action="store_true", help="4 turns (the suite runs it)")
    parser.add_argument("--json", action="store_true", help="only the JSON line on stdout")
    args = parser.parse_args()
    turns = 4 if args.smoke else min(args.limit, len(STORY))
    checkpoints = [int(c) for c in args.checkpoints.split(",") if c.strip()]

    def log(line: str) -> None:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    with contextlib.ExitStack() as stack:
        folder = args.store or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="long-use-")))
        folder.mkdir(parents=True, exist_ok=True)
        progress = folder / "progress.json"
        state = load_state(progress, args.model)

        def save(s: dict[str, Any]) -> None:
            progress.write_text(json.dumps(s, ensure_ascii=False, indent=1), "utf-8")

        if not args.tidy_only:
            log(f"long use: turns {state['turns_done'] + 1}..{turns} of {len(STORY)}, model {args.model} "
                f"at {args.llm_url}, store {folder / 'store'}")
            with store_engine(folder / "store", args.llm_url, args.model) as engine:
                if not replay(engine, state, turns, checkpoints, args.reply_tokens, save, log,
                              folder / "stop"):
                    return 0
        done = state["turns_done"]
        log(f"tidy-up over the store after {done} turns (on a copy)")
        results = {"turns": done, "model": args.model, "checkpoints": state["checkpoints"],
                   "write_path_seconds": state["write_path_seconds"],
                   **tidy_on_copy(folder / "store", args.llm_url, args.model, done)}
    if not args.json:
        for name in ("before_tidy", "after_tidy"):
            f = results[name]
            print(f"{name}: live {f['live_facts']}, junk {f['junk_rate']:.1%}, duplicates "
                  f"{f['duplicate_rate']:.1%}, stale-but-live {f['stale_but_live']}, coverage "
                  f"{f['coverage']:.1%}, others {f['others']}")
        print(f"tidy-up: {results['tidy']['proposals']} proposals {results['tidy_counts']}, precision "
              f"{results['tidy']['precision']}")
    print(json.dumps(results, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
