"""Measures the thresholds by which a "forget ..." or a correction names a stored fact
(chat/named_facts.py): the read path's cross-encoder relevance (and dense cosine) of each phrase
for the fact it means and for the best other fact, over phrases in English, Dutch, German, French
and Spanish. No LLM; the real index, embedder and cross-encoder. Never run in CI.

    PYTHONPATH=. .venv/bin/python benchmarks/forget_match.py [--json] [--smoke] [--own-words]

Prints, per phrase, the target's and the best other fact's scores, then how many phrases each
(CLEAR, MAYBE) pair gets right (target >= CLEAR, no other >= CLEAR), ambiguous (asked) or wrong.

``--own-words``: each fact is also stored with the user turn it was taken from, said in the
phrase's language (``SAID``), as the write path stores a fact with its turn; a phrase names the
facts the search of the facts names, else those its search of the turns names
(``named_in_own_words``). ``own_words`` in each row is what the turns alone name.
"""

# ruff: noqa: E501 - one language of SAID a few lines reads better than wrapped data
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from desktop_mem.engine.chat.currency import FROM_TURNS
from desktop_mem.engine.chat.named_facts import find_named, named_in_own_words, relevance
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
# What the user said that each fact was taken from, in each language of the phrases (written for
# this benchmark; the phrases below were written first and are not changed to fit).
SAID = {
    "en": {"home": "I live in Utrecht.", "job": "I'm a nurse at the Antonius hospital.",
           "cat": "I have a cat, her name is Miso.", "tea": "I love green tea.", "jazz": "I listen to a lot of jazz.",
           "son": "My son Pieter is 6.", "daughter": "My daughter Ines is 7.", "allergy": "I'm allergic to peanuts.",
           "car": "I drive a red Volvo.", "sister": "My sister Anna lives in Lyon.", "run": "I go for a run every morning.",
           "phone": "My number is 0612345678."},
    "nl": {"home": "Ik woon in Utrecht.", "job": "Ik ben verpleegkundige in het Antonius ziekenhuis.",
           "cat": "Ik heb een kat, ze heet Miso.", "tea": "Ik drink graag groene thee.", "jazz": "Ik luister veel naar jazz.",
           "son": "Mijn zoon Pieter is 6.", "daughter": "Mijn dochter Ines is 7.", "allergy": "Ik ben allergisch voor pinda's.",
           "car": "Ik rij in een rode Volvo.", "sister": "Mijn zus Anna woont in Lyon.", "run": "Ik ga elke ochtend hardlopen.",
           "phone": "Mijn nummer is 0612345678."},
    "de": {"home": "Ich wohne in Utrecht.", "job": "Ich bin Krankenpfleger im Antonius-Krankenhaus.",
           "cat": "Ich habe eine Katze, sie heißt Miso.", "tea": "Ich trinke gern grünen Tee.", "jazz": "Ich höre viel Jazz.",
           "son": "Mein Sohn Pieter ist 6.", "daughter": "Meine Tochter Ines ist 7.", "allergy": "Ich bin allergisch gegen Erdnüsse.",
           "car": "Ich fahre einen roten Volvo.", "sister": "Meine Schwester Anna wohnt in Lyon.", "run": "Ich gehe jeden Morgen joggen.",
           "phone": "Meine Nummer ist 0612345678."},
    "fr": {"home": "J'habite à Utrecht.", "job": "Je suis infirmière à l'hôpital Antonius.",
           "cat": "J'ai une chatte, elle s'appelle Miso.", "tea": "J'adore le thé vert.", "jazz": "J'écoute beaucoup de jazz.",
           "son": "Mon fils Pieter a 6 ans.", "daughter": "Ma fille Ines a 7 ans.", "allergy": "Je suis allergique aux cacahuètes.",
           "car": "Je conduis une Volvo rouge.", "sister": "Ma sœur Anna habite à Lyon.", "run": "Je cours tous les matins.",
           "phone": "Mon numéro est le 0612345678."},
    "es": {"home": "Vivo en Utrecht.", "job": "Soy enfermera en el hospital Antonius.",
           "cat": "Tengo una gata que se llama Miso.", "tea": "Me encanta el té verde.", "jazz": "Escucho mucho jazz.",
           "son": "Mi hijo Pieter tiene 6 años.", "daughter": "Mi hija Ines tiene 7 años.", "allergy": "Soy alérgica al cacahuete.",
           "car": "Conduzco un Volvo rojo.", "sister": "Mi hermana Anna vive en Lyon.", "run": "Salgo a correr cada mañana.",
           "phone": "Mi número es el 0612345678."},
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


LANGS = ["en"] * 17 + ["nl"] * 7 + ["de"] * 4 + ["fr"] * 4 + ["es"] * 4  # each phrase's language


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="three phrases only (the suite's smoke run)")
    parser.add_argument("--own-words", action="store_true",
                        help="store each fact with the turn it was taken from, in the phrase's language")
    args = parser.parse_args()
    phrases = list(zip(PHRASES, LANGS, strict=True))
    phrases = phrases[:3] if args.smoke else phrases
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(flags={"store.path": str(Path(tmp) / "store"), "watcher.enabled": False})
        engine = MemoryEngine.open(config)
        engine.open_index()
        names: dict[str, str] = {}
        for lang in dict.fromkeys(LANGS) if args.own_words else ["global"]:
            for key, text in FACTS.items():
                meta = None
                if args.own_words:
                    turn = engine.add(SAID[lang][key], conversation_id=f"said-{lang}", role="user")
                    meta = {FROM_TURNS: [turn.id]}
                names[engine.add(text, conversation_id=_facts(lang, args.own_words), role="memory",
                                 meta=meta).id] = key
        rows = []
        for (phrase, want), lang in phrases:
            conv = _facts(lang, args.own_words)
            results = engine.search(phrase, conversation_id=conv, top_k=8, use_mmr=False, rerank=True,
                                    filters=SearchFilters(conversation_id=conv, roles=("memory",)))
            scores = {names[r.memory.id]: round(relevance(r)[0], 4) for r in results if r.memory.id in names}
            target = scores.get(want, 0.0) if want else None
            other = max((s for k, s in scores.items() if k != want), default=0.0)
            live = engine.list_memories(conversation_id=conv, role="memory")
            named = find_named(engine.search, conv, live, [phrase])
            row = {"phrase": phrase, "lang": lang, "want": want, "target": target, "best_other": other}
            if args.own_words:
                started = time.perf_counter()
                own = named_in_own_words(engine.search, live, [phrase])
                row["own_words_ms"] = round((time.perf_counter() - started) * 1000, 1)
                row["own_words"] = {"clear": [names[m.id] for m in own.clear],
                                    "maybe": [names[m.id] for m in own.maybe]}
                if not named.clear:  # what forget_targets does: the facts first, then the turns
                    named = own if own.clear else type(named)((), (*named.maybe, *own.maybe))
            rows.append({**row, "clear": [names[m.id] for m in named.clear],
                         "maybe": list(dict.fromkeys(names[m.id] for m in named.maybe))})
        engine.close()
    summary = _tally(rows)
    if args.own_words:
        summary["own_words_alone"] = _tally([{**r, **r["own_words"]} for r in rows])
        summary["own_words_ms_p50"] = statistics.median(r["own_words_ms"] for r in rows)
        summary["by_language"] = {lang: _tally([r for r in rows if r["lang"] == lang]) for lang in dict.fromkeys(LANGS)}
    if args.json:
        print(json.dumps({"rows": rows, **summary}))
    else:
        for r in rows:
            print(f"{r['phrase']:<24} want={r['want']!s:<9} target={r['target']!s:<6} "
                  f"other={r['best_other']:<6} "
                  f"clear={r['clear']} maybe={r['maybe']}" + (f" own={r['own_words']}" if args.own_words else ""))
        print(json.dumps(summary))
    return 0


def _facts(lang: str, own_words: bool) -> str:
    return f"facts-{lang}" if own_words else "global"


def _tally(rows: list[dict]) -> dict[str, int]:
    right = sum(1 for r in rows
                if (r["want"] and r["clear"] == [r["want"]]) or (not r["want"] and not r["clear"]))
    asked = sum(1 for r in rows if not r["clear"] and r["want"] in r["maybe"])
    wrong = sum(1 for r in rows if r["clear"] and r["want"] not in r["clear"])
    return {"phrases": len(rows), "right": right, "asked": asked, "wrong": wrong}


if __name__ == "__main__":
    raise SystemExit(main())
