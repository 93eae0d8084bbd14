"""Where tidy-up draws its lines (chat/tidy.py): how alike the local embedder finds two facts that
say the same thing, two that contradict each other, and two that are merely about one person.

    python benchmarks/tidy_pairs.py [--json] [--smoke]

Labelled pairs in four languages, embedded by the store's own embedder (a fresh store's index);
prints each label's cosine range and median, and how many pairs each threshold lets through:
PAIR_SIMILARITY decides which pairs the model is asked about (it should let every "same" and
"contradicts" pair through and few "different" ones), LIKELY_DUPLICATE what the health line counts
without the model (it should let "same" pairs through and nothing else). No model is needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

from desktop_mem.engine.chat import tidy_findings as tidy
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine

PAIRS: tuple[tuple[str, str, str], ...] = (
    ("same", "The user lives in Utrecht", "The user lives in the city of Utrecht"),
    ("same", "The user has a cat named Pixel", "The user's cat is called Pixel"),
    ("same", "The user is vegetarian", "The user does not eat meat; vegetarian"),
    ("same", "The user works as a nurse", "The user is a nurse by profession"),
    ("same", "The user's daughter Noor is 6", "Noor, the user's daughter, is six years old (6)"),
    ("same", "De gebruiker woont in Gent", "De gebruiker woont in de stad Gent"),
    ("same", "Der Nutzer spielt Cello", "Der Nutzer spielt das Cello"),
    ("same", "L'utilisateur boit du thé vert", "L'utilisateur boit du thé vert chaque matin"),
    ("contradicts", "The user lives in Ghent", "The user lives in Leuven"),
    ("contradicts", "The user works as a nurse", "The user works as a teacher"),
    ("contradicts", "The user drinks tea every morning", "The user drinks coffee every morning"),
    ("contradicts", "The user's daughter Noor is 5", "The user's daughter Noor is 6"),
    ("contradicts", "The user drives a Volvo", "The user drives a Toyota"),
    ("contradicts", "De gebruiker woont in Gent", "De gebruiker woont in Leuven"),
    ("different", "The user lives in Utrecht", "The user has a cat named Pixel"),
    ("different", "The user likes green tea", "The user prefers coffee"),
    ("different", "The user is vegetarian", "The user is allergic to peanuts"),
    ("different", "The user works as a nurse", "The user's partner is Tomas"),
    ("different", "The user plays the cello", "The user loves hiking in the Alps"),
    ("different", "The user's brother Jonas lives in Antwerp", "The user's mother Greta has diabetes"),
    ("different", "The user runs on Sunday mornings", "The user grows tomatoes on the balcony"),
    ("different", "De gebruiker woont in Gent", "De gebruiker heeft een hond, Bram"),
)


def cosines(pairs: tuple[tuple[str, str, str], ...]) -> list[tuple[str, float]]:
    with tempfile.TemporaryDirectory(prefix="tidy-pairs-") as tmp:
        config = load_config(flags={"store.path": str(Path(tmp) / "store"), "watcher.enabled": False})
        with MemoryEngine.open(config) as engine:
            engine.open_index()
            view = engine._parts.tidy_view()  # noqa: SLF001 - the embedder tidy-up itself uses
            a = view.embed([p[1] for p in pairs])
            b = view.embed([p[2] for p in pairs])
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return [(label, float(x @ y)) for (label, _, _), x, y in zip(pairs, a, b, strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="three pairs (the suite runs it)")
    args = parser.parse_args()
    pairs = PAIRS[::8] if args.smoke else PAIRS
    scored = cosines(pairs)
    thresholds = {"pair_similarity": tidy.PAIR_SIMILARITY, "likely_duplicate": tidy.LIKELY_DUPLICATE}
    result: dict[str, object] = {"pairs": len(scored), "thresholds": thresholds, "labels": {}}
    for label in ("same", "contradicts", "different"):
        values = [c for lab, c in scored if lab == label]
        if not values:
            continue
        result["labels"][label] = {  # type: ignore[index]
            "n": len(values), "min": round(min(values), 3), "median": round(statistics.median(values), 3),
            "max": round(max(values), 3),
            "asked_about": sum(v >= tidy.PAIR_SIMILARITY for v in values),
            "counted_as_duplicate": sum(v >= tidy.LIKELY_DUPLICATE for v in values)}
        if not args.json:
            r = result["labels"][label]  # type: ignore[index]
            print(f"{label:12s} n={r['n']:2d} cosine {r['min']:.3f}..{r['max']:.3f} "
                  f"(median {r['median']:.3f}); asked about {r['asked_about']}/{r['n']}, "
                  f"counted as duplicates {r['counted_as_duplicate']}/{r['n']}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
