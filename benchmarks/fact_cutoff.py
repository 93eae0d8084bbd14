"""The Memories pane's cut-off measured on FACTS (issue #39, item 2).

The browser hides a ranked search result unless a query word occurs in it or its dense cosine
similarity reaches the embedder's `match_similarity`, measured on LoCoMo turns (e5 0.78). A fact
is a short third-person sentence ("The user lives in Utrecht, near the old canal") and a question
("Where is my home?") shares few words with it: seen in the window, the facts about where the user
lives were hidden under the cut while 23 chat turns showed. This measures the similarity of each of
the 32 English questions of multilingual_pairs.py to its own fact and to the 31 others, and, for
each cut-off, how many relevant facts it keeps and how many others it drops.

    PYTHONPATH=$PWD /work/main/.venv/bin/python benchmarks/fact_cutoff.py [--model e5-small-v2] [--smoke]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from multilingual_pairs import ROWS  # noqa: E402

from desktop_mem.engine.index.embedder import LOCAL_MODELS, OnnxEmbedder  # noqa: E402

# Asked in the window (issue #39): the question a person typed, and the facts they meant.
WINDOW = (("where do I live", "The user lives in Ghent"), ("where do I live", "The user moved to Leuven"))


def similarities(model: str, rows: int) -> list[tuple[list[float], list[float]]]:
    """Per question: (its similarity to its own facts, to every other fact)."""
    embedder = OnnxEmbedder(model=model, threads=1, query_threads=2)
    facts = [r[0] for r in ROWS[:rows]] + [fact for _q, fact in WINDOW]
    questions = [(r[1], {i}) for i, r in enumerate(ROWS[:rows])]
    questions.append((WINDOW[0][0], {rows, rows + 1}))
    matrix = embedder.embed(facts)
    out: list[tuple[list[float], list[float]]] = []
    for question, wanted in questions:
        sims = [float(s) for s in matrix @ embedder.embed_query(question)]
        out.append(([s for i, s in enumerate(sims) if i in wanted],
                    [s for i, s in enumerate(sims) if i not in wanted]))
    return out


def near_best(per_question: list[tuple[list[float], list[float]]], margin: float, floor: float
              ) -> tuple[float, float]:
    """A fact shown when it reaches `floor`, or is within `margin` of the question's best fact and
    reaches `floor` - `margin` (ui/memories/memory_browser.py's rule): (share of relevant facts kept, other
    facts shown per question)."""
    kept = total = 0
    shown: list[int] = []
    for relevant, others in per_question:
        cut = max(min(max(relevant + others) - margin, floor), floor - margin)
        kept += sum(s >= cut for s in relevant)
        total += len(relevant)
        shown.append(sum(s >= cut for s in others))
    return kept / total, statistics.fmean(shown)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="e5-small-v2", choices=sorted(LOCAL_MODELS))
    parser.add_argument("--smoke", action="store_true", help="four facts: that the script runs")
    args = parser.parse_args()
    per_question = similarities(args.model, 4 if args.smoke else len(ROWS))
    relevant = [s for r, _o in per_question for s in r]
    others = [s for _r, o in per_question for s in o]
    turns_cut = LOCAL_MODELS[args.model].match_similarity
    print(f"{args.model}: {len(relevant)} relevant pairs, {len(others)} other pairs")
    print(f"relevant: min {min(relevant):.3f}  p10 {np.percentile(relevant, 10):.3f}  "
          f"median {statistics.median(relevant):.3f}")
    print(f"others:   median {statistics.median(others):.3f}  p90 {np.percentile(others, 90):.3f}  "
          f"max {max(others):.3f}")
    print("cut-off  keeps relevant  drops others")
    low = round(min(relevant) - 0.03, 2)
    for cut in sorted({*np.round(np.arange(low, turns_cut + 0.011, 0.01), 2), turns_cut}):
        kept = sum(s >= cut for s in relevant) / len(relevant)
        dropped = sum(s < cut for s in others) / len(others)
        mark = "  <- the turns' cut-off" if abs(cut - turns_cut) < 1e-9 else ""
        print(f"  {cut:.2f}      {kept:6.1%}        {dropped:6.1%}{mark}")
    print("near the best fact: margin  floor  keeps relevant  others shown per question")
    floors = {"e5-small-v2": (0.74, 0.75, 0.76), "all-MiniLM-L6-v2": (0.20, 0.25, 0.30)}[args.model]
    for margin in (0.0, 0.02, 0.03, 0.04):
        for floor in (*floors, turns_cut):
            kept, shown = near_best(per_question, margin, floor)
            print(f"                     {margin:.2f}   {floor:.2f}     {kept:6.1%}          {shown:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
