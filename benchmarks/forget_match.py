"""Measures the thresholds by which a "forget ..." or a correction names a stored fact
(chat/named_facts.py): the read path's cross-encoder relevance (and dense cosine) of each phrase
for the fact it means and for the best other fact, over phrases in English, Dutch, German, French
and Spanish. No LLM; the real index, embedder and cross-encoder. Never run in CI.

    PYTHONPATH=. .venv/bin/python benchmarks/forget_match.py [--json] [--smoke]

Prints, per phrase, the target's and the best other fact's scores, then how many phrases each
(CLEAR, MAYBE) pair gets right (target >= CLEAR, no other >= CLEAR), ambiguous (asked) or wrong.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from desktop_mem.engine.chat.named_facts import find_named, relevance
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.retrieval import SearchFilters

FACTS = {
    "home": "The user lives in Utrecht",
    "job": "The user works as a nurse at the Antonius hospital",
    "cat": "The user has a cat named Miso",
    "tea": "The user likes green tea",
    "jazz": "The user likes jazz",
    "son": "The user's son Pieter is 6 years old",
    "daughter": "The user's daughter Ines is 7 years old",
    "allergy": "The user is allergic to peanuts",
    "car": "The user drives a red Volvo",
    "sister": "The user's sister Anna lives in Lyon",
    "run": "The user runs every morning",
    "phone": "The user's phone number is 0612345678",
}
PHRASES = [  # (phrase in the user's words, the fact it names or None)
    ("where I live", "home"), ("my job", "job"), ("that I'm a nurse", "job"), ("my cat", "cat"),
    ("the tea thing", "tea"), ("my music taste", "jazz"), ("Pieter's age", "son"), ("my son", "son"),
    ("Ines", "daughter"), ("my peanut allergy", "allergy"), ("my car", "car"), ("my sister", "sister"),
    ("that I go running", "run"), ("my phone number", "phone"), ("my bank account", None),
    ("my dog", None), ("where I work", "job"),
    ("waar ik woon", "home"), ("mijn werk", "job"), ("mijn kat", "cat"), ("mijn auto", "car"),
    ("mijn allergie", "allergy"), ("mijn telefoonnummer", "phone"), ("mijn hond", None),
    ("wo ich wohne", "home"), ("meine Arbeit", "job"), ("meine Katze", "cat"), ("mein Auto", "car"),
    ("où j'habite", "home"), ("mon travail", "job"), ("mon chat", "cat"), ("ma voiture", "car"),
    ("dónde vivo", "home"), ("mi trabajo", "job"), ("mi gato", "cat"), ("mi coche", "car"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="three phrases only (the suite's smoke run)")
    args = parser.parse_args()
    phrases = PHRASES[:3] if args.smoke else PHRASES
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(flags={"store.path": str(Path(tmp) / "store"), "watcher.enabled": False})
        engine = MemoryEngine.open(config)
        engine.open_index()
        ids = {key: engine.add(text, conversation_id="global", role="memory").id
               for key, text in FACTS.items()}
        names = {v: k for k, v in ids.items()}
        rows = []
        for phrase, want in phrases:
            results = engine.search(phrase, conversation_id="c", top_k=8, use_mmr=False, rerank=True,
                                    filters=SearchFilters(conversation_id="c", roles=("memory",)))
            scores = {names[r.memory.id]: round(relevance(r)[0], 4) for r in results if r.memory.id in names}
            target = scores.get(want, 0.0) if want else None
            other = max((s for k, s in scores.items() if k != want), default=0.0)
            live = engine.list_memories(conversation_id="global", role="memory")
            named = find_named(engine.search, "c", live, [phrase])
            rows.append({"phrase": phrase, "want": want, "target": target, "best_other": other,
                         "clear": [names[m.id] for m in named.clear],
                         "maybe": [names[m.id] for m in named.maybe]})
        engine.close()
    right = sum(1 for r in rows
                if (r["want"] and r["clear"] == [r["want"]]) or (not r["want"] and not r["clear"]))
    asked = sum(1 for r in rows if not r["clear"] and r["want"] in r["maybe"])
    wrong = sum(1 for r in rows if r["clear"] and r["want"] not in r["clear"])
    summary = {"phrases": len(rows), "right": right, "asked": asked, "wrong": wrong}
    if args.json:
        print(json.dumps({"rows": rows, **summary}))
    else:
        for r in rows:
            print(f"{r['phrase']:<24} want={r['want']!s:<9} target={r['target']!s:<6} "
                  f"other={r['best_other']:<6} "
                  f"clear={r['clear']} maybe={r['maybe']}")
        print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
