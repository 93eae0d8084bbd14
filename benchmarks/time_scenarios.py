"""Memory over time with a real model: moves, job changes, dates the user gives, forgetting and
re-adding, and "what did I say before".

Each scenario is one user's story in a store of its own, run through the real MemoryEngine chat
(read path, streamed reply, background write path with the model's extraction and
reconciliation). It passes when
  (1) live: every ``live`` regex matches a live fact and no ``absent`` one does;
  (2) as of: the listing as of the moment after turn ``asof_turn`` (history/as_of.py) holds a fact
      matching each ``then`` regex and none matching ``then_absent`` (or, with ``asof_date``, the
      listing as of that date does);
  (3) validity: with ``since``, a live fact matching ``since[0]`` has valid_from == ``since[1]``;
  (4) the question, asked in the same conversation but without its transcript (``history=[]``,
      as an API client that sends only the new message: the answer must come from what the read
      path recalls from memory, not from the conversation), gets a reply matching one of
      ``answer`` and none of ``answer_not``.
Pass rate per category, and per check.

Summaries are off (``memory.enable_summarization=false``): a rolling summary is not what is
measured here and it is the slowest call on a 1.5B CPU model. The chat system prompt asks for
short answers, as in write_path.py. Usage:

    python benchmarks/time_scenarios.py --llm-url http://127.0.0.1:8765/v1 [--model local]
        [--only move,job] [--json]
"""
# ruff: noqa: E501 - one scenario per line pair reads better than wrapped data

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.store.validity import parse_as_of

SHORT_ANSWERS = (
    "You are a helpful assistant with a long-term memory of the user. Keep answers short: one or "
    "two sentences."
)


@dataclass(frozen=True)
class TimeScenario:
    name: str
    category: str
    turns: tuple[str, ...]
    live: tuple[str, ...]
    absent: tuple[str, ...]
    question: str
    answer: tuple[str, ...]
    answer_not: tuple[str, ...] = ()
    asof_turn: int | None = None  # 1-based: the listing as of just after this turn
    asof_date: str | None = None  # or as of this date
    then: tuple[str, ...] = ()
    then_absent: tuple[str, ...] = ()
    since: tuple[str, str] | None = None
    notes: dict[str, Any] = field(default_factory=dict)


def _t(name: str, category: str, turns: list[str], live: list[str], absent: list[str], question: str,
       answer: list[str], *, answer_not: list[str] | None = None, asof_turn: int | None = None,
       asof_date: str | None = None, then: list[str] | None = None, then_absent: list[str] | None = None,
       since: tuple[str, str] | None = None) -> TimeScenario:
    return TimeScenario(name, category, tuple(turns), tuple(live), tuple(absent), question, tuple(answer),
                        tuple(answer_not or ()), asof_turn, asof_date, tuple(then or ()),
                        tuple(then_absent or ()), since)


SCENARIOS: tuple[TimeScenario, ...] = (
    # -- moves: the new city is live, the old one is remembered as the past ----------------------
    _t("ghent-leuven", "move", ["Hi! I'm Mara and I live in Ghent.", "Big news: I moved to Leuven."],
       [r"leuven"], [r"lives? in ghent"], "Which city did I live in before Leuven?", [r"ghent"],
       asof_turn=1, then=[r"ghent"], then_absent=[r"leuven"]),
    _t("porto-lisbon", "move", ["I live in Porto.", "I just moved to Lisbon."],
       [r"lisbon"], [r"lives? in porto"], "Where did I live before Lisbon?", [r"porto"],
       asof_turn=1, then=[r"porto"], then_absent=[r"lisbon"]),
    _t("three-cities", "move", ["I live in Berlin.", "I moved to Munich.", "I moved again, now I live in Hamburg."],
       [r"hamburg"], [r"lives? in (berlin|munich)"], "Where did I live before Munich?", [r"berlin"],
       asof_turn=2, then=[r"munich"], then_absent=[r"hamburg"]),
    # -- job changes -----------------------------------------------------------------------------
    _t("teacher-nurse", "job", ["I work as a teacher at a primary school.", "I just started a new job as a nurse."],
       [r"nurse"], [r"works? as a teacher"], "What was my job before I became a nurse?", [r"teach"],
       asof_turn=1, then=[r"teacher"], then_absent=[r"nurse"]),
    _t("acme-globex", "job", ["I work at Acme.", "I left Acme and joined Globex."],
       [r"globex"], [r"works? at acme"], "Which company did I use to work for?", [r"acme"],
       asof_turn=1, then=[r"acme"], then_absent=[r"globex"]),
    _t("job-present", "job", ["I work at Initech.", "I changed jobs: I work at Hooli now."],
       [r"hooli"], [r"works? at initech"], "Where do I work?", [r"hooli"], answer_not=[r"initech"],
       asof_turn=1, then=[r"initech"], then_absent=[r"hooli"]),
    # -- dates the user gives ----------------------------------------------------------------------
    _t("since-march", "date", ["I have lived in Leuven since March 2024."],
       [r"leuven"], [], "Since when do I live in Leuven?", [r"march 2024|2024-03|since 2024|march"],
       asof_date="2024-06-01", then=[r"leuven"], since=(r"leuven", "2024-03")),
    _t("since-year", "date", ["I have been a vegetarian since 2019."],
       [r"vegetarian"], [], "Since when have I been vegetarian?", [r"2019"],
       asof_date="2020-01-01", then=[r"vegetarian"], since=(r"vegetarian", "2019")),
    _t("started-on", "date", ["I started working at Acme in September 2021."],
       [r"acme"], [], "When did I start working at Acme?", [r"september 2021|2021"],
       asof_date="2021-12-31", then=[r"acme"], since=(r"acme", "2021-09")),
    # -- forgetting and re-adding -------------------------------------------------------------------
    _t("forget-readd", "forget", ["I have a dog named Bo.", "Forget that.", "Actually, I do have a dog named Bo."],
       [r"\bbo\b"], [], "What is my dog's name?", [r"\bbo\b"],
       asof_turn=2, then=[], then_absent=[r"\bbo\b"]),
    _t("forget-job", "forget", ["I work at Acme Corp.", "Please forget where I work."],
       [], [r"acme"], "Where do I work?", [r".*"], answer_not=[r"acme"],
       asof_turn=1, then=[r"acme"]),
    # -- "what did I say before" --------------------------------------------------------------------
    _t("coffee-tea", "before", ["I drink coffee every morning.", "I switched from coffee to green tea."],
       [r"tea"], [r"drinks? coffee every"], "What did I use to drink in the morning?", [r"coffee"],
       asof_turn=1, then=[r"coffee"], then_absent=[r"tea"]),
    _t("fiat-volvo", "before", ["I drive a red Fiat.", "I sold the Fiat and bought a Volvo."],
       [r"volvo"], [r"drives? a red fiat"], "What car did I drive before the Volvo?", [r"fiat"],
       asof_turn=1, then=[r"fiat"], then_absent=[r"volvo"]),
    _t("dublin-cork", "before", ["I live in Dublin.", "I moved to Cork."],
       [r"cork"], [r"lives? in dublin"], "Where do I live now?", [r"cork"], answer_not=[r"dublin"],
       asof_turn=1, then=[r"dublin"], then_absent=[r"cork"]),
)


def _any(patterns: tuple[str, ...], texts: list[str]) -> list[str]:
    return [p for p in patterns if any(re.search(p, t, re.I) for t in texts)]


def run_scenario(engine: MemoryEngine, sc: TimeScenario) -> dict[str, Any]:
    started = time.perf_counter()
    conv = f"time-{sc.name}"
    moments: list[datetime] = []
    for message in sc.turns:
        engine.chat(conv, message)
        engine.wait_idle(900)
        moments.append(datetime.now(UTC))
        time.sleep(1.1)  # validity is kept to the second: the next turn's changes come later
    facts = engine.list_memories(role="memory")
    live = [m.text for m in facts]
    missing = [p for p in sc.live if p not in _any(sc.live, live)]
    forbidden = _any(sc.absent, live)
    live_ok = not missing and not forbidden

    asof_ok, then_texts = True, []
    if sc.asof_turn is not None or sc.asof_date is not None:
        moment = parse_as_of(sc.asof_date) if sc.asof_date else moments[(sc.asof_turn or 1) - 1]
        then_texts = [m.text for m in engine.list_as_of(moment, role="memory")]
        asof_ok = (len(_any(sc.then, then_texts)) == len(sc.then)) and not _any(sc.then_absent, then_texts)

    since_ok, since_seen = True, None
    if sc.since is not None:
        pattern, expected = sc.since
        found = [m for m in facts if re.search(pattern, m.text, re.I)]
        since_seen = [m.valid_from for m in found]
        since_ok = any(m.valid_from == expected for m in found)

    reply = engine.chat(conv, sc.question, history=[])
    engine.wait_idle(900)
    answered = bool(_any(sc.answer, [reply.text])) and not _any(sc.answer_not, [reply.text])
    injected = [r.memory.text for r in reply.used.memories]
    checks = {"live": live_ok, "as_of": asof_ok, "validity": since_ok, "answer": answered}
    return {
        "name": sc.name, "category": sc.category, "passed": all(checks.values()), "checks": checks,
        "live": live, "missing": missing, "forbidden": forbidden, "as_of": then_texts,
        "valid_from": since_seen, "reply": reply.text[:300], "injected": injected, "error": reply.error,
        "seconds": round(time.perf_counter() - started, 1),
    }


def run(url: str, model: str, scenarios: list[TimeScenario], log: Any) -> dict[str, Any]:
    results = []
    for sc in scenarios:
        with tempfile.TemporaryDirectory(prefix="time-bench-") as tmp:
            config = load_config(flags={
                "store.path": str(Path(tmp) / "store"), "watcher.enabled": False, "llm.base_url": url,
                "llm.model": model, "llm.api_key": "local", "llm.timeout": 600,
                "llm.system_prompt": SHORT_ANSWERS, "memory.enable_summarization": False,
            })
            engine = MemoryEngine.open(config)
            try:
                engine.open_index()
                outcome = run_scenario(engine, sc)
            finally:
                engine.close()
        results.append(outcome)
        failed = [k for k, ok in outcome["checks"].items() if not ok]
        log(f"  {'PASS' if outcome['passed'] else 'FAIL ' + ','.join(failed)} {sc.category}/{sc.name} "
            f"({outcome['seconds']} s) live={outcome['live']} as_of={outcome['as_of']} "
            f"valid_from={outcome['valid_from']} reply={outcome['reply']!r} injected={outcome['injected']}")
    by_category: dict[str, list[bool]] = defaultdict(list)
    by_check: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        by_category[r["category"]].append(r["passed"])
        for k, ok in r["checks"].items():
            by_check[k].append(ok)
    passed = sum(r["passed"] for r in results)
    return {
        "scenarios": len(results), "passed": passed,
        "per_category": {c: f"{sum(v)}/{len(v)}" for c, v in by_category.items()},
        "per_check": {c: f"{sum(v)}/{len(v)}" for c, v in by_check.items()},
        "median_seconds": sorted(r["seconds"] for r in results)[len(results) // 2] if results else None,
        "results": results,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llm-url", required=True)
    parser.add_argument("--model", default="local")
    parser.add_argument("--only", default="", help="comma-separated categories or scenario names")
    parser.add_argument("--json", action="store_true", help="print one JSON document (progress on stderr)")
    args = parser.parse_args()

    def log(line: str) -> None:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    wanted = [w for w in args.only.split(",") if w]
    chosen = [s for s in SCENARIOS if not wanted or s.category in wanted or s.name in wanted]
    if wanted:  # in the order asked for (a slow model: the most telling ones first)
        chosen.sort(key=lambda s: wanted.index(s.name) if s.name in wanted else wanted.index(s.category))
    log(f"{len(chosen)} time scenarios against {args.llm_url} ({args.model})")
    report = {"llm_url": args.llm_url, "model": args.model, **run(args.llm_url, args.model, chosen, log)}
    log(f"passed {report['passed']}/{report['scenarios']} per category {report['per_category']} "
        f"per check {report['per_check']}")
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
