"""Measures the threshold by which a message is read as telling no fact true now (a plan, a wish,
an "if", a request): the model's odds for "A" in chat/told_as_true.py, over messages written for
this check in English, Dutch, German, French and Spanish (none is a phrasing-benchmark scenario,
none is one of the prompt's examples). Needs a model server with logprobs (the local 1.5B
model: ../shared/tools/local-llm.sh). Never run in CI.

    PYTHONPATH=. .venv/bin/python benchmarks/told_as_true.py --llm-url http://127.0.0.1:8765/v1 \
        --model local [--json]
    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 .venv/bin/python benchmarks/told_as_true.py --smoke

Prints each message's odds, then per threshold how many facts it would drop (the cost: a fact
lost) and how many plans, wishes and requests it would catch. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence

from desktop_mem.engine.chat.llm_client import LLMClient
from desktop_mem.engine.chat.llm_endpoint import LLMEndpoint
from desktop_mem.engine.chat.told_as_true import NOT_TOLD_AS_TRUE, odds_told_as_true

FACT, NOT_NOW = "fact", "not now"
MESSAGES: list[tuple[str, str]] = [  # (message, what it tells)
    ("I've been a vegetarian for ten years now.", FACT),
    ("My sister Lotte just got a job in Ghent.", FACT),
    ("We adopted a dog last week, his name is Bruno.", FACT),
    ("Actually my daughter is 9, not 8.", FACT),
    ("I sold my bike and bought an e-scooter.", FACT),
    ("I'm allergic to peanuts.", FACT),
    ("Ik werk sinds maart bij de gemeente Delft.", FACT),
    ("Mijn zoon Daan zit nu in groep 5.", FACT),
    ("We wonen sinds kort in Haarlem.", FACT),
    ("Ich spiele seit Jahren Cello im Orchester.", FACT),
    ("Meine Frau heißt eigentlich Birgit, nicht Brigitte.", FACT),
    ("Wir haben jetzt zwei Katzen, Mia und Felix.", FACT),
    ("Je travaille comme infirmière à Nantes.", FACT),
    ("Mon frère Luc vient d'avoir 40 ans.", FACT),
    ("J'ai arrêté de fumer le mois dernier.", FACT),
    ("Trabajo de profesor en un instituto de Zaragoza.", FACT),
    ("Mi hija Elena empezó la universidad este año.", FACT),
    ("Ya no como carne desde enero.", FACT),
    ("I drink my coffee black.", FACT),
    ("My husband and I run a small bakery.", FACT),
    ("Long day at work, ugh. Oh, we moved to Leeds last month by the way.", FACT),
    ("Thanks, that helped! My son is called Tim, he's four.", FACT),
    ("Haha, zo grappig. Ik ben trouwens gestopt met koffie.", FACT),
    ("Guten Morgen! Ich habe gestern meinen Führerschein bestanden.", FACT),
    ("Merci beaucoup ! Au fait, ma fille s'appelle Inès.", FACT),
    ("¡Qué día! Por cierto, mi perro se llama Toby.", FACT),
    ("I no longer work at the bank, I'm a teacher now.", FACT),
    ("Mein Bruder Jan wohnt jetzt in Wien.", FACT),
    ("Maybe we'll get a puppy next spring.", NOT_NOW),
    ("I'm thinking of learning Japanese someday.", NOT_NOW),
    ("If I won the lottery I'd buy a boat.", NOT_NOW),
    ("Can you suggest a good recipe for lasagna?", NOT_NOW),
    ("Write me an email to my landlord about the heating.", NOT_NOW),
    ("I wish I lived by the sea.", NOT_NOW),
    ("Misschien gaan we volgend jaar naar Japan.", NOT_NOW),
    ("Als ik tijd had, zou ik piano leren.", NOT_NOW),
    ("Kun je een gedicht schrijven over de herfst?", NOT_NOW),
    ("Vielleicht kaufe ich mir nächstes Jahr ein E-Auto.", NOT_NOW),
    ("Wenn ich reich wäre, würde ich nach Kanada ziehen.", NOT_NOW),
    ("Schreib mir bitte eine Einkaufsliste für eine Party.", NOT_NOW),
    ("Peut-être qu'on partira au Portugal cet été.", NOT_NOW),
    ("Si j'avais un jardin, je planterais des tomates.", NOT_NOW),
    ("Traduis cette phrase en anglais, s'il te plaît.", NOT_NOW),
    ("Quizás aprenda a tocar la guitarra algún día.", NOT_NOW),
    ("Si tuviera más tiempo, viajaría por Asia.", NOT_NOW),
    ("Dame tres ideas para una cena rápida.", NOT_NOW),
    ("We're hoping to visit my parents in Crete this summer.", NOT_NOW),
    ("One day I'd love to open a café.", NOT_NOW),
    ("Ik zou graag ooit een marathon lopen.", NOT_NOW),
    ("Nous allons peut-être acheter une voiture électrique.", NOT_NOW),
    ("Me gustaría vivir en el campo algún día.", NOT_NOW),
    ("Fass mir diesen Artikel in drei Sätzen zusammen.", NOT_NOW),
    ("Maak een lijstje met vijf films voor het weekend.", NOT_NOW),
    ("Hazme un resumen de la Revolución francesa.", NOT_NOW),
]
THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3)


def odds_model(description: str) -> tuple[argparse.Namespace, LLMClient]:
    """The arguments of a one-letter odds benchmark (this one, passing_remark.py) and its model."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--llm-url", default=os.environ.get("OPENAI_BASE_URL"))
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "local"))
    parser.add_argument("--json", action="store_true", help="only the JSON line on stdout")
    parser.add_argument("--smoke", action="store_true", help="two messages against any server")
    args = parser.parse_args()
    if not args.llm_url:
        parser.error("--llm-url (or OPENAI_BASE_URL) is needed")
    return args, LLMClient(LLMEndpoint(args.llm_url, os.environ.get("OPENAI_API_KEY", "local"), args.model,
                                       timeout=600))


def ask_all(odds_of: Callable[[str], float | None], messages: Sequence[tuple[str, str]], seconds: list[float],
            label: str | None) -> list[tuple[str, str, float]] | None:
    """(message, kind, odds) of each message, timed into ``seconds`` and printed after ``label``
    (None: quiet); None, once the JSON error line is printed, when the endpoint sends no odds."""
    rows: list[tuple[str, str, float]] = []
    for message, kind in messages:
        t0 = time.perf_counter()
        odds = odds_of(message)
        seconds.append(time.perf_counter() - t0)
        if odds is None:
            print(json.dumps({"error": f"no odds for {message!r}: the endpoint sends no logprobs",
                              "messages_asked": len(seconds)}))
            return None
        rows.append((message, kind, odds))
        if label is not None:
            print(f"{label}{odds:.3f}  {kind:8}  {message}", flush=True)
    return rows


def main() -> int:
    args, llm = odds_model(__doc__.splitlines()[0])
    seconds: list[float] = []
    messages = (MESSAGES[:1] + MESSAGES[-1:]) if args.smoke else MESSAGES
    rows = ask_all(lambda m: odds_told_as_true(llm, m), messages, seconds, "" if not args.json else None)
    if rows is None:
        return 0 if args.smoke else 1
    facts = sorted(o for _m, k, o in rows if k == FACT)
    not_now = sorted(o for _m, k, o in rows if k == NOT_NOW)
    table = {f"{t:.2f}": {"facts_dropped": sum(o < t for o in facts),
                          "not_now_caught": sum(o < t for o in not_now)} for t in THRESHOLDS}
    if not args.json:
        print(f"\nfacts {len(facts)}: lowest odds {facts[0]:.3f}; plans, wishes, ifs and requests "
              f"{len(not_now)}: median {statistics.median(not_now):.3f}")
        for t, row in table.items():
            mark = "  <- NOT_TOLD_AS_TRUE" if float(t) == NOT_TOLD_AS_TRUE else ""
            print(f"below {t}: facts dropped {row['facts_dropped']}/{len(facts)}, not-now caught "
                  f"{row['not_now_caught']}/{len(not_now)}{mark}")
    print(json.dumps({"model": args.model, "messages": len(rows), "threshold": NOT_TOLD_AS_TRUE,
                      "facts_lowest": round(facts[0], 3),
                      "not_now_median": round(statistics.median(not_now), 3),
                      "by_threshold": table, "seconds_p50": round(statistics.median(seconds), 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
