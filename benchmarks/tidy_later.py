"""Stale facts found in what the user said later (chat/tidy_later.py), on the long-use story.

    python benchmarks/tidy_later.py [--llm-url URL] [--json]     # cosines; with a model, findings
    python benchmarks/tidy_later.py --smoke                       # the suite: no model, 3 turns

The story's 150 user turns (benchmarks/long_use_story.py) are stored in one conversation, a month
apart as told, with each fact of the story written as the write path writes it, just after the
turn that told it (the user's scope). Nothing is replayed: this measures tidy-up's reading of the
later turns alone, with every other turn of the year as a distractor.

Printed: for each fact the story makes untrue, the cosine of the turn that did so and its rank
among the later turns; the closest later turn of each fact that stays true (what LATER_SIMILARITY
must keep out, or the model must refuse). With `--llm-url`, tidy_later.said_later runs over every
live fact: which facts it would update or retire (right: the story ended them), and what it
would write for what holds now. The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from llm_cache import cached_endpoint  # noqa: E402
from long_use_story import STORY  # noqa: E402

from desktop_mem.engine.chat import tidy_later  # noqa: E402
from desktop_mem.engine.chat.tidy_findings import Stepper, live_facts  # noqa: E402
from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from desktop_mem.engine.models import GLOBAL_CONVERSATION  # noqa: E402

CONVERSATION = "daily"
START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
# Each story fact as the write path wrote it in the long-use replays (docs/benchmarks.md)
WRITTEN: dict[str, str] = {
    "name": "The user's name is Ilse.",
    "home_gent": "The user lives in Ghent with partner Tomas.",
    "job_nurse": "The user works as a nurse at the university hospital.",
    "daughter_age_5": "The user's daughter Noor is 5.",
    "vegetarian": "The user is vegetarian.",
    "cat": "The user has a cat named Pixel.",
    "tea": "The user drinks green tea every morning.",
    "cello": "The user plays the cello in an amateur orchestra.",
    "allergy": "The user is allergic to peanuts.",
    "birthday": "The user's birthday is on March 14.",
    "car": "The user drives an old Volvo.",
    "brother": "The user's brother Jonas lives in Antwerp.",
    "diabetes_mum": "The user's mother Greta was diagnosed with diabetes.",
    "language": "The user is learning Spanish.",
    "book_club": "The user joined a book club at the library.",
    "running": "The user runs on Sunday mornings.",
    "garden": "The user grows tomatoes on the balcony.",
    "home_leuven": "The user lives in Leuven.",
    "flat_garden": "The user's new flat has a tiny garden.",
    "job_teacher": "The user is a primary school teacher.",
    "dog": "The user adopted a dog named Bram.",
    "piano": "The user took up the piano.",
    "bike": "The user cycles everywhere.",
    "newsletter": "The user started a newsletter for the parents of their class.",
    "climbing": "The user tries bouldering.",
}
SMOKE = (
    (1, "Our daughter Noor is 5.", ("daughter_age_5",), ()),
    (2, "We have a cat called Pixel.", ("cat",), ()),
    (6, "Noor turned 6 last week!", ("daughter_age_6",), ("daughter_age_5",)),
)


def when(month: int, n: int) -> datetime:
    return START + timedelta(days=30 * (month - 1), minutes=10 * n)


def build(engine: MemoryEngine, story: Any) -> dict[str, str]:
    """The story's turns and its facts; {fact id: key}."""
    keys: dict[str, str] = {}
    for n, (month, text, adds, _ends) in enumerate(story):
        at = when(month, n)
        turn = engine.add(text, conversation_id=CONVERSATION, role="user", created_at=at, source="import")
        for key in adds:
            if key in WRITTEN:
                fact = engine.add(WRITTEN[key], conversation_id=GLOBAL_CONVERSATION, source="llm",
                                  created_at=at + timedelta(minutes=1), meta={"from_turns": [turn.id]})
                keys[fact.id] = key
    engine.open_index()
    return keys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm-url", help="OpenAI-compatible endpoint: also run tidy_later.said_later")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "local"))
    parser.add_argument("--cache", type=Path, help="JSONL of the model's replies by exact request, "
                        "reused across runs (benchmarks/llm_cache.py)")
    parser.add_argument("--json", action="store_true", help="only the JSON line on stdout")
    parser.add_argument("--smoke", action="store_true", help="three turns, no model (the suite runs it)")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.llm_url and args.cache:
            args.llm_url = stack.enter_context(cached_endpoint(args.llm_url, args.cache))
        return run(args)


def run(args: argparse.Namespace) -> int:
    story = SMOKE if args.smoke else tuple((t.month, t.text, t.adds, t.ends) for t in STORY)
    ended = {key: text for _m, text, _a, ends in story for key in ends}
    tmp = Path(tempfile.mkdtemp(prefix="tidy-later-"))
    engine = MemoryEngine.open(load_config(flags={
        "store.path": str(tmp / "store"), "store.git_versioning": False, "watcher.enabled": False,
        "llm.base_url": args.llm_url or "", "llm.model": args.model, "llm.timeout": 120,
        "llm.api_key": os.environ.get("OPENAI_API_KEY", "local")}))
    out: dict[str, Any] = {"turns": len(story), "threshold": tidy_later.LATER_SIMILARITY}
    try:
        keys = build(engine, story)
        source = engine._parts.tidy_view()
        facts = live_facts(source)
        saved = tidy_later.LATER_SIMILARITY
        tidy_later.LATER_SIMILARITY = -1.0  # every fact's closest later turn, to see where they fall
        near: dict[str, list[tuple[float, Any]]] = {}
        for sim, f, t in tidy_later.later_pairs(source, facts, tidy_later.user_turns(source)):
            near.setdefault(f.id, []).append((sim, t))
        tidy_later.LATER_SIMILARITY = saved
        rows = []
        for f in facts:
            ranked = near.get(f.id, [])
            ender = ended.get(keys[f.id])
            hit = next(((i, sim) for i, (sim, t) in enumerate(ranked) if t.text == ender), None)
            rows.append({"key": keys[f.id], "fact": f.text, "ended_by": ender,
                         "closest": ranked[0][1].text if ranked else None,
                         "cosine": round(ranked[0][0], 3) if ranked else None,
                         "ender_rank": hit[0] + 1 if hit else None,
                         "ender_cosine": round(hit[1], 3) if hit else None})
        stale = [r for r in rows if r["ended_by"]]
        true = [r for r in rows if not r["ended_by"] and r["cosine"] is not None]
        out["ended_found"] = sum(r["ender_rank"] is not None for r in stale)
        out["ended"] = len(stale)
        out["ended_cosines"] = sorted(r["ender_cosine"] for r in stale if r["ender_cosine"] is not None)
        out["true_closest_cosines"] = sorted(r["cosine"] for r in true)
        out["true_over_threshold"] = sum(r["cosine"] >= saved for r in true)
        out["rows"] = rows
        if args.llm_url:
            model = engine._parts.memory_llm
            start = time.perf_counter()
            found = tidy_later.said_later(source, model, facts, Stepper(None, lambda: False))
            out["model_seconds"] = round(time.perf_counter() - start, 1)
            out["findings"] = [{"key": keys[f.targets[0].id], "fact": f.targets[0].text, "now": f.text,
                                "replaced_by": f.replaced_by.text if f.replaced_by else None,
                                "right": keys[f.targets[0].id] in ended, "reason": f.reason} for f in found]
            right = sum(x["right"] for x in out["findings"])
            out["precision"] = round(right / len(found), 3) if found else None
            out["recall"] = round(right / len(stale), 3) if stale else None
    finally:
        engine.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if not args.json:
        for r in sorted(out["rows"], key=lambda r: -(r["cosine"] or 0)):
            mark = "ENDED" if r["ended_by"] else "     "
            hit = f"#{r['ender_rank']} {r['ender_cosine']:.3f}" if r["ender_rank"] else " " * 8
            print(f"{mark} {hit} {r['cosine'] or 0:.3f}  {r['fact'][:46]:<46} <- {str(r['closest'])[:56]}")
        for x in out.get("findings", []):
            print(f"{'right' if x['right'] else 'WRONG'}  {x['fact'][:50]} -> {x['now'] or x['replaced_by']}")
        print(f"ended facts whose ending turn is among the {tidy_later.PER_FACT} read: "
              f"{out['ended_found']}/{out['ended']}; "
              f"cosines {out['ended_cosines']}; true facts over {saved}: {out['true_over_threshold']} "
              f"(median closest {statistics.median(out['true_closest_cosines'] or [0]):.3f})")
        if "findings" in out:
            print(f"said_later: {len(out['findings'])} findings, precision {out['precision']}, "
                  f"recall {out['recall']}, {out['model_seconds']} s")
    del out["rows"]
    print(json.dumps(out, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
