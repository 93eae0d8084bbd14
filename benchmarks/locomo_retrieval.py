"""LoCoMo retrieval benchmark: recall@5, recall@10, NDCG@10 and latency of the read path.

Every dialog turn becomes a memory stored through the engine's real API (MemoryEngine.add) in a
temporary store; every category 1-4 question is a query scoped to its conversation; its evidence
turns are the relevant set. BM25-only and dense-only baselines run in the same process over the
same indexes. The headline is the read path as a chat turn runs it: `rerank=True` under the
configured `retrieval.rerank_budget_ms`, so on a busy machine it is whatever the budget lets the
cross-encoder do (nothing, when `retrieval.rerank` is off). "forced" is the cross-encoder with no
budget, "no cross-encoder" the fused path alone. The load average is printed with the figures.
Usage:

    python benchmarks/locomo_retrieval.py --data ../shared/bench/locomo_dev.json [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.retrieval import SearchFilters

_EVIDENCE = re.compile(r"D(\d+):(\d+)")


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' -> an aware datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def evidence_ids(raw: list[str]) -> list[str]:
    """Repair LoCoMo's evidence ids ("D8:6; D9:17", "D30:05") into canonical ids."""
    ids: list[str] = []
    for item in raw:
        for session, turn in _EVIDENCE.findall(item):
            ids.append(f"D{int(session)}:{int(turn)}")
    return list(dict.fromkeys(ids))


def load_turns(sample: dict[str, Any]) -> list[tuple[str, str, datetime]]:
    conv = sample["conversation"]
    turns = []
    n = 1
    while f"session_{n}" in conv:
        when = session_time(conv[f"session_{n}_date_time"])
        for turn in conv[f"session_{n}"]:
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            turns.append((turn["dia_id"], text, when))
        n += 1
    return turns


def ndcg(ranked: list[str], relevant: set[str], k: int) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, mid in enumerate(ranked[:k]) if mid in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return dcg / ideal if ideal else 0.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


Searcher = Callable[[str, str], list[str]]


def evaluate(name: str, search: Searcher, questions: list[tuple[str, str, set[str], int]]) -> dict[str, Any]:
    per_cat: dict[int, list[tuple[float, float, float]]] = defaultdict(list)
    per_conv: dict[str, list[float]] = defaultdict(list)
    latencies: list[float] = []
    for conv, question, relevant, category in questions:
        start = time.perf_counter()
        ranked = search(conv, question)
        latencies.append((time.perf_counter() - start) * 1000)
        r5 = len(relevant & set(ranked[:5])) / len(relevant)
        r10 = len(relevant & set(ranked[:10])) / len(relevant)
        per_cat[category].append((r5, r10, ndcg(ranked, relevant, 10)))
        per_conv[conv].append(r5)
    everything = [v for vals in per_cat.values() for v in vals]
    result = {
        "name": name,
        "recall@5": statistics.fmean(v[0] for v in everything),
        "recall@10": statistics.fmean(v[1] for v in everything),
        "ndcg@10": statistics.fmean(v[2] for v in everything),
        "p50_ms": statistics.median(latencies),
        "p95_ms": pct(latencies, 0.95),
        "per_category": {
            str(c): {"n": len(v), "recall@5": statistics.fmean(x[0] for x in v),
                     "recall@10": statistics.fmean(x[1] for x in v),
                     "ndcg@10": statistics.fmean(x[2] for x in v)}
            for c, v in sorted(per_cat.items())
        },
        # Each conversation on its own: a change that helps only one of them is fitted, not found.
        "per_conversation": {c: {"n": len(v), "recall@5": statistics.fmean(v)}
                             for c, v in sorted(per_conv.items())},
    }
    return result


def pool_ceiling(engine: MemoryEngine, questions: list[tuple[str, str, set[str], int]]) -> dict[str, float]:
    """recall@5 if the cross-encoder put its pool (the best `rerank_pool` fused candidates) in the
    perfect order: what the candidates allow, so a gap to it is the reranker's, the rest fusion's."""
    pool = int(engine.config["retrieval.rerank_pool"])
    per_conv: dict[str, list[float]] = defaultdict(list)
    for conv, question, relevant, _ in questions:
        ids = {r.memory.id for r in engine.search(question, conversation_id=conv, top_k=pool, use_mmr=False)}
        per_conv[conv].append(min(len(relevant & ids), 5) / len(relevant))
    every = [v for vs in per_conv.values() for v in vs]
    return {"all": statistics.fmean(every), **{c: statistics.fmean(v) for c, v in sorted(per_conv.items())}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo-format JSON file")
    parser.add_argument("--json", action="store_true", help="last line: one JSON object of the results")
    parser.add_argument("--git", action="store_true", help="commit every memory (slower ingest)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a setting, e.g. --set retrieval.mmr_lambda=1.0")
    args = parser.parse_args()
    samples = json.loads(args.data.read_text(encoding="utf-8"))
    tmp = Path(tempfile.mkdtemp(prefix="locomo-"))
    # The configured rerank budget stays: the headline is what a chat turn gets on this machine now.
    flags: dict[str, Any] = {"store.path": str(tmp / "store"), "store.git_versioning": args.git,
                             "watcher.enabled": False}
    for item in args.set:
        key, _, value = item.partition("=")
        flags[key] = value
    engine = MemoryEngine.open(load_config(flags=flags))
    questions: list[tuple[str, str, set[str], int]] = []
    adversarial: list[tuple[str, str, set[str], int]] = []
    start = time.perf_counter()
    n_turns = 0
    for sample in samples:
        conv = re.sub(r"[^A-Za-z0-9._-]", "-", sample["sample_id"])
        known: set[str] = set()
        for index, (dia_id, text, when) in enumerate(load_turns(sample)):
            # A session has one time stamp; + index seconds keeps the turns in order, as a live
            # chat's own turn times would (the read path indexes a turn with the one before it).
            engine.add(text, conversation_id=conv, role="user", memory_id=f"{conv}:{dia_id}",
                       created_at=when + timedelta(seconds=index), source="import")
            known.add(dia_id)
            n_turns += 1
        for qa in sample["qa"]:
            relevant = {f"{conv}:{e}" for e in evidence_ids(qa.get("evidence", [])) if e in known}
            if not relevant:
                continue
            target = adversarial if qa["category"] == 5 else questions
            target.append((conv, qa["question"], relevant, int(qa["category"])))
    add_s = time.perf_counter() - start
    start = time.perf_counter()
    engine.open_index()
    index_s = time.perf_counter() - start
    print(f"ingest: {n_turns} turns stored in {add_s:.1f} s, indexed in {index_s:.1f} s "
          f"({n_turns / index_s:.0f} memories/s)")

    reranked_turns = [0, 0]  # chat-turn searches whose results the cross-encoder scored, of all

    def chat_turn(conv: str, q: str) -> list[str]:
        # As a chat turn's read path asks (chat/recall.py): rerank=True, the configured budget decides.
        results = engine.search(q, conversation_id=conv, top_k=10, rerank=True)
        reranked_turns[0] += any(r.scores.rerank is not None for r in results)
        reranked_turns[1] += 1
        return [r.memory.id for r in results]

    def fused(conv: str, q: str) -> list[str]:
        return [r.memory.id for r in engine.search(q, conversation_id=conv, top_k=10)]

    def forced(conv: str, q: str) -> list[str]:
        retriever = engine._parts.search_index.retriever
        unbudgeted = replace(retriever.settings, rerank_budget_ms=0)
        return [r.memory.id for r in retriever.search(q, SearchFilters(conversation_id=conv), top_k=10,
                                                      rerank=True, settings=unbudgeted)]

    def bm25(conv: str, q: str) -> list[str]:
        keywords = engine._parts.search_index.retriever.keywords
        return [h.id for h in keywords.query(q, 10, conversation_ids=[conv, "global"])]

    def dense(conv: str, q: str) -> list[str]:
        vec = engine._parts.search_index.retriever.embedder.embed_query(q)
        where = {"$and": [{"conversation_id": {"$in": [conv, "global"]}}, {"deleted": False}]}
        return [h.id for h in engine._parts.search_index.retriever.vectors.query(vec, 10, where)]

    # Warm-up, not timed: the first searches pay one-off costs (the query embedding session loads
    # in the background on the first one, sqlite pages come into memory), not per-turn ones.
    for conv, question, _, _ in questions[:10]:
        chat_turn(conv, question)
    wait = getattr(engine._parts.search_index.retriever.embedder, "wait_for_query_session", None)
    if wait is not None:
        wait(60)
    reranked_turns[:] = [0, 0]
    load_before = os.getloadavg()[0]
    results = [evaluate("chat turn read path (default)", chat_turn, questions)]
    load_after = os.getloadavg()[0]
    ran, searched = reranked_turns
    if engine._parts.search_index.retriever.reranker is not None:
        results.append(evaluate("forced cross-encoder, no budget", forced, questions))
    results += [evaluate("no cross-encoder (fused)", fused, questions),
                evaluate("BM25 only", bm25, questions),
                evaluate(f"dense only ({engine._parts.search_index.retriever.embedder.name})", dense,
                          questions)]
    adv_name = "chat turn read path, category 5 (adversarial)"
    adv = evaluate(adv_name, chat_turn, adversarial) if adversarial else None
    print(f"\n{len(questions)} questions (categories 1-4) over {len(samples)} conversations\n")
    print(f"{'':<34}{'recall@5':>9}{'recall@10':>10}{'ndcg@10':>9}{'p50 ms':>8}{'p95 ms':>8}")
    for r in results + ([adv] if adv else []):
        print(f"{r['name'][:33]:<34}{r['recall@5']:>9.3f}{r['recall@10']:>10.3f}{r['ndcg@10']:>9.3f}"
              f"{r['p50_ms']:>8.1f}{r['p95_ms']:>8.1f}")
    print(f"\nchat turn: cross-encoder ran in {ran} of {searched} searches "
          f"(budget {engine.config['retrieval.rerank_budget_ms']} ms); load average "
          f"{load_before:.1f} -> {load_after:.1f}")
    print("\nper category (read path): " + "  ".join(
        f"cat {c}: r@5 {v['recall@5']:.3f} (n={v['n']})" for c, v in results[0]["per_category"].items()))
    for r in results[:3]:
        print(f"per conversation, {r['name']}: " + "  ".join(
            f"{c}: r@5 {v['recall@5']:.3f} (n={v['n']})" for c, v in r["per_conversation"].items()))
    ceiling = pool_ceiling(engine, questions)
    print(f"ceiling (the cross-encoder's pool of {engine.config['retrieval.rerank_pool']} in the perfect "
          "order): " + "  ".join(f"{c}: r@5 {v:.3f}" for c, v in ceiling.items()))
    engine.close()
    if args.json:
        main_result = results[0]
        print(json.dumps({
            "recall@5": round(main_result["recall@5"], 4), "recall@10": round(main_result["recall@10"], 4),
            "ndcg@10": round(main_result["ndcg@10"], 4), "p50_ms": round(main_result["p50_ms"], 2),
            "p95_ms": round(main_result["p95_ms"], 2),
            "reranked_share": round(ran / max(searched, 1), 3),
            "load_average": [round(load_before, 2), round(load_after, 2)],
            "baselines": {r["name"]: {**{k: round(r[k], 4) for k in ("recall@5", "recall@10", "ndcg@10",
                                                                      "p50_ms", "p95_ms")},
                                      "per_conversation": {c: round(v["recall@5"], 4)
                                                           for c, v in r["per_conversation"].items()}}
                          for r in results[1:]},
            "per_category": main_result["per_category"],
            "per_conversation": {c: round(v["recall@5"], 4)
                                 for c, v in main_result["per_conversation"].items()},
            "pool_ceiling_recall@5": {c: round(v, 4) for c, v in ceiling.items()},
        }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
