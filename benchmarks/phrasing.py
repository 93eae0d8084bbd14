"""Phrasing benchmark (issue #33): does memory do the right thing with what people say, in their
own words and in five languages? Never run in CI (it needs a real model); `--smoke` runs two
scenarios against any OpenAI-compatible server (the suite's scripted one) to keep it working.

    python benchmarks/phrasing.py --llm-url http://127.0.0.1:8765/v1 [--limit N] [--lang nl,de]
        [--category forget,correct] [--only NAME,...] [--cache FILE] [--out FILE] [--json]
    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 python benchmarks/phrasing.py --smoke

Each scenario (benchmarks/phrasing_scenarios.py) is one user's story in a store of its own:
its earlier facts are stored as the write path stores extracted facts, its ``before`` messages
and then its message go through the real chat turn as `desktop-mem chat` sends them (read path,
streamed reply, background write path; benchmarks/write_path.py's `story_engine`), and the live
facts afterwards are checked against the answer key by names and numbers, never by wording.
A failure is put in one class: ``kept`` (a fact to forget or replace is still live), ``lost``
(a fact that had to stay, or be stored, is not live), ``stored`` (something that should not be
stored was), ``owner`` (another person's fact without that person), ``error`` (the turn failed).
The last stdout line is one JSON object: accuracy overall, per category, per language, failures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from llm_cache import cached_endpoint  # noqa: E402
from phrasing_scenarios import CATEGORIES, SAID, SCENARIOS, Scenario  # noqa: E402
from write_path import show_write_path_notes, story_engine  # noqa: E402

from desktop_mem.engine.chat import prompts  # noqa: E402
from desktop_mem.engine.chat.currency import FROM_TURNS  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from desktop_mem.engine.models import GLOBAL_CONVERSATION  # noqa: E402

# The rolling summary is a call per turn that no answer key reads (facts are judged): off, it
# saves about a quarter of each turn on a small local model. Everything else is the product's.
NO_SUMMARY: dict[str, object] = {"memory.enable_summarization": False}
SMOKE = ("en-forget-stop", "nl-update-car")  # one with a message before, one without


def fold(text: str) -> str:
    """Case- and accent-folded text, so "Málaga" and "malaga", "Gérard" and "gerard" match."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _term(term: str) -> re.Pattern[str]:
    prefix = term.endswith("*")
    body = fold(term.rstrip("*"))
    return re.compile(rf"(?<!\w)(?:{body})" + ("" if prefix else r"(?!\w)"))


def matches(key: str, fact: str) -> bool:
    """One fact matches a key when every term is in it (a ``!`` term: is not)."""
    text = fold(fact)
    for term in key.split("+"):
        found = bool(_term(term.lstrip("!")).search(text))
        if found == term.startswith("!"):
            return False
    return True


def judge(sc: Scenario, live: list[str], added: int) -> list[tuple[str, str]]:
    """The answer key against the live facts: (class, what) for each miss."""
    misses: list[tuple[str, str]] = []
    # a setup fact that a gone key names is the one to forget or replace; every other one stays
    keep = [key for text, key in sc.facts if not any(matches(g, text) for g in sc.gone)]
    misses += [("kept", key) for key in sc.gone if any(matches(key, f) for f in live)]
    misses += [("lost", key) for key in (*keep, *sc.live) if not any(matches(key, f) for f in live)]
    misses += [("stored", key) for key in sc.absent if any(matches(key, f) for f in live)]
    for term, owner in sc.owned:
        misses += [("owner", f) for f in live if matches(term, f) and not matches(owner, f)]
    if sc.store_nothing and added:
        misses.append(("stored", f"{added} new fact(s)"))
    return misses


def run_scenario(engine: MemoryEngine, sc: Scenario, *, bare: bool = False) -> dict[str, Any]:
    started = time.perf_counter()
    said = () if bare else SAID.get(sc.name, ())
    setup = set()
    for i, (text, _key) in enumerate(sc.facts):
        meta = None
        if i < len(said):  # the fact with the turn it was taken from, as the write path stores it
            turn = engine.add(said[i], conversation_id=f"phrasing-{sc.name}-earlier", role="user")
            meta = {FROM_TURNS: [turn.id]}
        setup.add(engine.add(text, conversation_id=GLOBAL_CONVERSATION, source="llm", meta=meta).id)
    conversation = f"phrasing-{sc.name}"
    errors = []
    replies = []
    for message in (*sc.before, sc.say):
        reply = engine.chat(conversation, message)
        engine.wait_idle(900)
        replies.append(reply.text)
        if reply.error:
            errors.append(reply.error)
    memories = engine.list_memories(role="memory")
    live = [m.text for m in memories]
    added = sum(m.id not in setup for m in memories)
    misses = [("error", e) for e in errors] + judge(sc, live, added)
    return {
        "name": sc.name,
        "lang": sc.lang,
        "category": sc.category,
        "passed": not misses,
        "misses": [f"{kind}: {what}" for kind, what in misses],
        "classes": sorted({k for k, _ in misses}),
        "said": sc.say,
        "live": live,
        "added": added,
        "reply": replies[-1][:200],
        "seconds": round(time.perf_counter() - started, 1),
    }


def _rate(results: list[dict[str, Any]], field: str) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        groups[r[field]].append(r["passed"])
    return {
        k: {"passed": sum(v), "of": len(v), "accuracy": round(sum(v) / len(v), 3)} for k, v in groups.items()
    }


def summarise(results: list[dict[str, Any]], url: str, model: str) -> dict[str, Any]:
    passed = sum(r["passed"] for r in results)
    by_class: dict[str, list[str]] = defaultdict(list)
    for r in results:
        for kind in r["classes"]:
            by_class[f"{r['category']}/{kind}"].append(r["name"])
    return {
        "llm_url": url,
        "model": model,
        "scenarios": len(results),
        "passed": passed,
        "accuracy": round(passed / len(results), 3) if results else None,
        "per_category": _rate(results, "category"),
        "per_language": _rate(results, "lang"),
        "failures_by_class": dict(sorted(by_class.items())),
        "failures": [
            {k: r[k] for k in ("name", "said", "misses", "live", "reply")} for r in results if not r["passed"]
        ],
        "median_seconds": sorted(r["seconds"] for r in results)[len(results) // 2] if results else None,
        "results": results,
    }


def rejudge(path: Path) -> list[dict[str, Any]]:
    """A recorded run's results judged again by today's answer key (no model needed): the
    report's last line, or an ``--out`` file of one result a line (an interrupted run)."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    recorded = lines[-1]["results"] if "results" in lines[-1] else [r for r in lines if "name" in r]
    known = {s.name: s for s in SCENARIOS}
    results = []
    for r in recorded:
        sc = known[r["name"]]
        r = {"said": sc.say, "reply": "", **r, "lang": sc.lang, "category": sc.category}
        setup = {text for text, _key in sc.facts}
        added = r.get("added", sum(text not in setup for text in r["live"]))  # older records
        errors = [m for m in r["misses"] if m.startswith("error: ")]
        misses = [m.split(": ", 1) for m in errors] + [list(m) for m in judge(sc, r["live"], added)]
        results.append(
            {
                **r,
                "passed": not misses,
                "misses": [f"{k}: {w}" for k, w in misses],
                "classes": sorted({k for k, _ in misses}),
            }
        )
    return results


def first_model(url: str) -> str:
    """The first model an OpenAI-compatible endpoint lists (llama.cpp's server lists one)."""
    import openai

    listed = openai.OpenAI(base_url=url, api_key=os.environ.get("OPENAI_API_KEY") or "local").models.list()
    return next(iter(listed)).id


def chosen(args: argparse.Namespace) -> list[Scenario]:
    if args.smoke:
        return [s for s in SCENARIOS if s.name in SMOKE]
    langs = {w for w in args.lang.split(",") if w}
    only = {w for w in args.only.split(",") if w}
    missing = only - {s.name for s in SCENARIOS}
    if missing:
        raise SystemExit(f"no scenario named {sorted(missing)}")
    categories = {w for w in args.category.split(",") if w}
    unknown = categories - set(CATEGORIES)
    if unknown:
        raise SystemExit(f"unknown category {sorted(unknown)}; choose from {', '.join(CATEGORIES)}")
    picked = [
        s
        for s in running_order()
        if (not langs or s.lang in langs) and (not categories or s.category in categories)
        and (not only or s.name in only)
    ]
    return picked[: args.limit] if args.limit else picked


def running_order() -> list[Scenario]:
    """Languages in turn and the categories mixed (a fixed shuffle), so that `--limit N`, or a
    run stopped early, still covers every language and most categories evenly."""
    by_lang: dict[str, list[Scenario]] = defaultdict(list)
    for sc in SCENARIOS:
        by_lang[sc.lang].append(sc)
    positions = list(range(max(len(group) for group in by_lang.values())))
    random.Random(33).shuffle(positions)
    return [group[i] for i in positions for group in by_lang.values() if i < len(group)]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--llm-url",
        default=os.environ.get("OPENAI_BASE_URL", ""),
        help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)",
    )
    parser.add_argument(
        "--model",
        default=os.environ.get("OPENAI_MODEL", ""),
        help="default: $OPENAI_MODEL, else the endpoint's first model",
    )
    parser.add_argument("--limit", type=int, default=0, help="run only the first N chosen scenarios")
    parser.add_argument("--lang", default="", help="comma-separated: en,nl,de,fr,es")
    parser.add_argument("--category", default="", help=f"comma-separated: {','.join(CATEGORIES)}")
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--smoke", action="store_true", help=f"two scenarios only ({', '.join(SMOKE)})")
    parser.add_argument("--cache", type=Path, help="JSONL of the model's answers by exact request: a rerun "
                        "asks only what changed (temperature 0)")
    parser.add_argument("--out", type=Path, help="append each scenario's result here as it ends (JSONL)")
    parser.add_argument("--json", action="store_true", help="progress on stderr; the result as the last line")
    parser.add_argument("--preamble", choices=sorted(prompts.DATA_PREAMBLES),
                        help="the chat turn's answer instruction (default: the product's)")
    parser.add_argument("--bare-setup", action="store_true",
                        help="store the setup facts without the turns they were taken from "
                        "(phrasing_scenarios.SAID)")
    parser.add_argument("--rejudge", type=Path, help="judge a recorded run's output again (no model)")
    args = parser.parse_args()
    if args.rejudge:
        recorded = json.loads(args.rejudge.read_text(encoding="utf-8").strip().splitlines()[-1])
        report = summarise(rejudge(args.rejudge), recorded.get("llm_url", args.llm_url),
                           recorded.get("model", args.model))
        print(json.dumps(report, ensure_ascii=False))
        return 0
    if not args.llm_url:
        parser.error("give --llm-url or set OPENAI_BASE_URL")
    out = sys.stderr if args.json else sys.stdout
    if not args.model:
        args.model = first_model(args.llm_url)

    def log(line: str) -> None:
        print(line, file=out, flush=True)

    if not args.smoke:
        show_write_path_notes(out)
    results = []
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(cached_endpoint(args.llm_url, args.cache)) if args.cache else args.llm_url
        for sc in chosen(args):
            with story_engine(url, args.model, prefix="phrasing-bench-", settings=NO_SUMMARY) as engine:
                if args.preamble:
                    engine._parts.chat.data_preamble = prompts.DATA_PREAMBLES[args.preamble]
                r = run_scenario(engine, sc, bare=args.bare_setup)
            results.append(r)
            mark = "PASS" if r["passed"] else "FAIL"
            log(f"  {mark} {sc.name} ({r['seconds']} s) {r['misses']} live={r['live']}")
            if args.out:
                with args.out.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(r, ensure_ascii=False) + "\n")
    report = summarise(results, args.llm_url, args.model)
    log(
        f"passed {report['passed']}/{report['scenarios']}; per category "
        + ", ".join(f"{k} {v['passed']}/{v['of']}" for k, v in report["per_category"].items())
        + "; per language "
        + ", ".join(f"{k} {v['passed']}/{v['of']}" for k, v in report["per_language"].items())
    )
    print(json.dumps(report, ensure_ascii=False))
    # the smoke run checks the machinery: a turn that failed is a broken benchmark, not a score
    return 1 if args.smoke and any("error" in r["classes"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
