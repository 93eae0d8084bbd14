"""What memory over time costs the chat read path at LoCoMo size (no LLM is called).

Every LoCoMo dev turn becomes a fact of its conversation (MemoryEngine.add; 987 turns), and one in
ten is then replaced (a tombstone with `replaced_by`, so chains exist). Each category 1-4 question
is prepared as a chat turn (ChatService.prepare: the read path, currency, the temporal step, the
context) in its conversation, alternately WITH the temporal step (chat/temporal.py) and WITHOUT it
(the step replaced by the identity), so both halves see the same data under the same load. Then
each question is rephrased about the past ("Before that, <question>") and prepared with the step:
that is the cost a question about the past pays (one more search, the chains). LoCoMo questions are
often about the past themselves ("When did ..."): they are timed as their own group. p50 / p95
per mode and the load average. Usage:

    python benchmarks/temporal_read_cost.py --data ../shared/bench/locomo_dev.json [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_retrieval import load_turns, pct  # noqa: E402

from desktop_mem.engine.chat import temporal  # noqa: E402
from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    samples = json.loads(args.data.read_text("utf-8"))
    real_step = temporal.with_validity

    def identity(view: Any, *_args: Any, **_kw: Any) -> Any:
        return view

    with tempfile.TemporaryDirectory(prefix="temporal-cost-") as tmp:
        config = load_config(flags={"store.path": str(Path(tmp) / "store"), "watcher.enabled": False,
                                    "store.git_versioning": False, "retrieval.rerank": False,
                                    "llm.base_url": "http://127.0.0.1:9/v1", "llm.model": "none",
                                    "context.cross_session": False})
        with MemoryEngine(config) as engine:
            questions: list[tuple[str, str]] = []
            added = 0
            for i, sample in enumerate(samples):
                conv = f"locomo-{i}"
                facts = [engine.add(text, conversation_id=conv, created_at=when)
                         for _dia, text, when in load_turns(sample)]
                for n, fact in enumerate(facts):
                    if n % 10 == 0:
                        engine.replace(fact.id, fact.text + " (corrected)")
                added += len(facts)
                questions += [(conv, q["question"]) for q in sample["qa"]
                              if q.get("category") in (1, 2, 3, 4)]
            engine.open_index()
            prepare = engine._parts.chat.prepare
            timings: dict[str, list[float]] = {}
            past_share = 0
            for n, (conv, question) in enumerate(questions):
                # LoCoMo's own questions are often about the past ("When did ...", "What did ...
                # paint?"): they are timed as their own group, as the step classifies them.
                past = temporal.about_the_past(question)
                group = "asked about the past" if past else "asked about the present"
                past_share += group == "asked about the past"
                order = (True, False) if n % 2 == 0 else (False, True)
                for with_step in order:
                    temporal.with_validity = real_step if with_step else identity  # type: ignore[assignment]
                    start = time.perf_counter()
                    prepare(conv, question)
                    key = f"{group}, {'with the step' if with_step else 'without it'}"
                    timings.setdefault(key, []).append((time.perf_counter() - start) * 1000)
                temporal.with_validity = real_step  # type: ignore[assignment]
                start = time.perf_counter()
                prepare(conv, f"Before that, {question[0].lower()}{question[1:]}")
                timings.setdefault("rephrased 'Before that, ...', with the step", []).append(
                    (time.perf_counter() - start) * 1000)
    report = {
        "facts": added, "questions": len(questions), "classified_as_past": past_share,
        "load_average_after": os.getloadavg(),
        **{k: {"n": len(v), "p50_ms": round(statistics.median(v), 2), "p95_ms": round(pct(v, 0.95), 2)}
           for k, v in timings.items()},
    }
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
