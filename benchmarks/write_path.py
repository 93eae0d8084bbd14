"""Write-path benchmark with a real model: what the engine stores, and whether it answers from it.

(a) Fact extraction against LoCoMo ``observation`` labels (dev file): every dialog turn of the
    first sessions is a "user message" from its speaker; the engine's ``extract_facts`` runs on
    it, "The user" becomes the speaker's name, and each fact is matched against the observations
    that name the same turn (``dia_id``). Matching rule: content words (lower case, stop words
    and the speaker's name out, crude suffix stemming) of fact F and observation O
    match when they share at least 2 words and at least 40 % of the smaller set
    (|F ∩ O| >= 2 and |F ∩ O| / min(|F|, |O|) >= 0.4). Precision = matched facts / facts;
    recall = observations matched by some fact / observations. LoCoMo's observations are not
    exhaustive, so precision is a lower bound.
(b) Multi-turn scenarios (write_path_scenarios.py): each runs through the real MemoryEngine chat
    (read path, streamed reply, background write path) in its own conversation of a temporary
    store; it passes when every expected fact is live, no forbidden one is, and the reply to its
    question matches the expected answer. Pass rate per category.

The chat system prompt asks for short answers (replies are the slow part on a 1.5B CPU model);
everything else is the default configuration. Usage:

    python benchmarks/write_path.py --llm-url http://127.0.0.1:8765/v1 [--model local] [--json]
        [--subset] [--only update,forget] [--locomo-turns 60] [--no-locomo] [--no-scenarios]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from write_path_scenarios import SCENARIOS, Scenario  # noqa: E402

from desktop_mem.engine.chat.extraction import extract_facts  # noqa: E402
from desktop_mem.engine.chat.llm_client import LLMClient, LLMEndpoint  # noqa: E402
from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"
SHORT_ANSWERS = (
    "You are a helpful assistant with a long-term memory of the user. Keep answers short: one or "
    "two sentences."
)
_WORD = re.compile(r"[^\W_]+")
_STOP_WORDS = """a an the and or but so to of in on at for from with by as is are was were be been am do
does did has have had it its this that their they them he she his her him user i me my we our you your
very really just also still now then than too into about some any all can could would should will who
which what when where why how s t"""
_STOP = frozenset(_STOP_WORDS.split())


def _stems(text: str, drop: set[str]) -> set[str]:
    out = set()
    for word in _WORD.findall(text.casefold()):
        if word in _STOP or word in drop or len(word) < 2:
            continue
        for suffix in ("ing", "ed", "es", "s", "ly"):
            if len(word) > len(suffix) + 2 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        out.add(word[:-1] if len(word) > 3 and word.endswith("e") else word)
    return out


def matches(fact: str, observation: str, speaker: str) -> bool:
    """The documented matching rule of part (a)."""
    drop = {speaker.casefold()}
    f, o = _stems(fact, drop), _stems(observation, drop)
    shared = len(f & o)
    return shared >= 2 and shared / max(min(len(f), len(o)), 1) >= 0.4


# -- (a) LoCoMo observations ------------------------------------------------------------------


def locomo_turns(data: Path, limit: int) -> list[tuple[str, str, str, list[str]]]:
    """(dia_id, speaker, text, observations) for the first ``limit`` turns of conv-26."""
    sample = json.loads(data.read_text(encoding="utf-8"))[0]
    observed: dict[str, list[str]] = defaultdict(list)
    for session in sample["observation"].values():
        for items in session.values():
            for text, ids in items:
                for dia in [ids] if isinstance(ids, str) else ids:
                    observed[str(dia).strip()].append(text)
    conv = sample["conversation"]
    out: list[tuple[str, str, str, list[str]]] = []
    n = 1
    while f"session_{n}" in conv and len(out) < limit:
        for turn in conv[f"session_{n}"]:
            out.append((turn["dia_id"], turn["speaker"], turn["text"], observed.get(turn["dia_id"], [])))
            if len(out) >= limit:
                break
        n += 1
    return out


def run_locomo(llm: LLMClient, data: Path, limit: int, log: Any) -> dict[str, Any]:
    facts_total = facts_matched = obs_total = obs_matched = 0
    started = time.perf_counter()
    examples: list[dict[str, Any]] = []
    for dia, speaker, text, observations in locomo_turns(data, limit):
        result = extract_facts(llm, text)
        facts = [f.text.replace("The user", speaker).replace("the user", speaker) for f in result.facts]
        good = [f for f in facts if any(matches(f, o, speaker) for o in observations)]
        found = [o for o in observations if any(matches(f, o, speaker) for f in facts)]
        facts_total += len(facts)
        facts_matched += len(good)
        obs_total += len(observations)
        obs_matched += len(found)
        examples.append({"dia_id": dia, "facts": facts, "observations": observations, "matched": good})
        log(f"  {dia}: {len(facts)} facts, {len(good)} matched; "
            f"{len(found)}/{len(observations)} observations")
    return {
        "turns": limit,
        "facts": facts_total,
        "observations": obs_total,
        "precision": round(facts_matched / facts_total, 3) if facts_total else None,
        "recall": round(obs_matched / obs_total, 3) if obs_total else None,
        "seconds": round(time.perf_counter() - started, 1),
        "examples": examples,
    }


# -- (b) scenarios ----------------------------------------------------------------------------


def _any(patterns: tuple[str, ...], texts: list[str]) -> list[str]:
    return [p for p in patterns if any(re.search(p, t, re.I) for t in texts)]


def run_scenario(engine: MemoryEngine, sc: Scenario) -> dict[str, Any]:
    started = time.perf_counter()
    conv = f"bench-{sc.name}"
    for message in sc.turns:
        engine.chat(conv, message)
        engine.wait_idle(900)
    # the facts this story left: its conversation's and the user's own (a store per scenario)
    live = [m.text for m in engine.list_memories(role="memory")]
    reply = engine.chat(f"{conv}-elsewhere" if sc.elsewhere else conv, sc.question)
    engine.wait_idle(900)
    missing = [p for p in sc.live if p not in _any(sc.live, live)]
    forbidden = _any(sc.absent, live)
    answered = bool(_any(sc.answer, [reply.text])) and not _any(sc.not_said, [reply.text])
    return {
        "name": sc.name, "category": sc.category, "passed": not missing and not forbidden and answered,
        "live": live, "missing": missing, "forbidden": forbidden, "answered": answered,
        "reply": reply.text[:300], "error": reply.error, "seconds": round(time.perf_counter() - started, 1),
    }


@contextlib.contextmanager
def story_engine(
    url: str, model: str, prefix: str = "write-path-bench-", settings: dict[str, object] | None = None,
) -> Iterator[MemoryEngine]:
    """One user's story: an engine over a fresh temporary store, chatting with ``url`` as
    `desktop-mem chat` does (index open, chat scope held), closed and deleted afterwards.
    Default settings except the short-answer system prompt and a long timeout (shared model)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp, \
            store_engine(Path(tmp) / "store", url, model, settings) as engine:
        yield engine


@contextlib.contextmanager
def store_engine(
    store: Path, url: str, model: str, settings: dict[str, object] | None = None,
) -> Iterator[MemoryEngine]:
    """``story_engine`` over the store at ``store`` (created if absent), kept afterwards: a run
    can stop and go on later (benchmarks/long_use.py)."""
    config = load_config(flags={
        "store.path": str(store), "watcher.enabled": False, "llm.base_url": url,
        "llm.model": model, "llm.api_key": "local", "llm.timeout": 600,
        "llm.system_prompt": SHORT_ANSWERS, **(settings or {}),
    })
    engine = MemoryEngine.open(config)
    try:
        engine.open_index()
        engine.hold_chat_scope()
        yield engine
    finally:
        engine.close()


def run_scenarios(url: str, model: str, scenarios: list[Scenario], log: Any) -> dict[str, Any]:
    """Each scenario is one user's story: it runs in a store of its own (scenarios share names,
    jobs and cities, which in one store would contradict each other)."""
    results = []
    for sc in scenarios:
        with story_engine(url, model) as engine:
            outcome = run_scenario(engine, sc)
        results.append(outcome)
        mark = "PASS" if outcome["passed"] else "FAIL"
        log(f"  {mark} {sc.category}/{sc.name} ({outcome['seconds']} s) live={outcome['live']} "
            f"missing={outcome['missing']} forbidden={outcome['forbidden']} "
            f"reply={outcome['reply']!r}")
    by_category: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        by_category[r["category"]].append(r["passed"])
    passed = sum(r["passed"] for r in results)
    return {
        "scenarios": len(results),
        "passed": passed,
        "pass_rate": round(passed / len(results), 3) if results else None,
        "per_category": {c: f"{sum(v)}/{len(v)}" for c, v in by_category.items()},
        "median_seconds": sorted(r["seconds"] for r in results)[len(results) // 2] if results else None,
        "results": results,
    }


def show_write_path_notes(stream: Any) -> None:
    """What the guards refused, and each write-path note, go to the progress output."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("    [%(name)s] %(message)s"))
    for name in ("desktop_mem.engine.chat.ingest", "desktop_mem.engine.chat.llm_client"):
        logging.getLogger(name).addHandler(handler)
        logging.getLogger(name).setLevel(logging.INFO)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llm-url", required=True)
    parser.add_argument("--model", default="local")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", action="store_true", help="print one JSON document (progress on stderr)")
    parser.add_argument("--subset", action="store_true", help="two scenarios per category")
    parser.add_argument("--only", default="", help="comma-separated categories or scenario names")
    parser.add_argument("--locomo-turns", type=int, default=60)
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--no-scenarios", action="store_true")
    args = parser.parse_args()

    def log(line: str) -> None:
        print(line, file=sys.stderr if args.json else sys.stdout, flush=True)

    show_write_path_notes(sys.stderr if args.json else sys.stdout)

    report: dict[str, Any] = {"llm_url": args.llm_url, "model": args.model}
    if not args.no_locomo:
        log(f"(a) LoCoMo observations, first {args.locomo_turns} turns of conv-26")
        llm = LLMClient(LLMEndpoint(args.llm_url, "local", args.model, 600.0))
        report["locomo"] = run_locomo(llm, args.data, args.locomo_turns, log)
        log(f"    precision {report['locomo']['precision']}, recall {report['locomo']['recall']}")
    if not args.no_scenarios:
        wanted = {w for w in args.only.split(",") if w}
        chosen = [s for s in SCENARIOS if (not args.subset or s.subset)
                  and (not wanted or s.category in wanted or s.name in wanted)]
        log(f"(b) {len(chosen)} scenarios")
        report["scenarios"] = run_scenarios(args.llm_url, args.model, chosen, log)
        log(f"    passed {report['scenarios']['passed']}/{report['scenarios']['scenarios']} "
            f"{report['scenarios']['per_category']}")
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
