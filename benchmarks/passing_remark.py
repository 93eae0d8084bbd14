"""Measures the threshold by which tidy-up reads a message as a passing remark (a mood, the
weather, thanks, a greeting) and proposes dropping the name-less facts drawn from it: the model's
odds for "B" in chat/told_as_true.py (``passing_remark``). Two sets: a dev set written for this
check in English, Dutch, German, French and Spanish (none is one of the prompt's examples), and,
held out, the long-use story's own messages (benchmarks/long_use_story.py): those that state a
fact of the story, and its small talk. Needs a model server with logprobs (the local 1.5B model:
../shared/tools/local-llm.sh). Never run in CI.

    PYTHONPATH=. .venv/bin/python benchmarks/passing_remark.py --llm-url http://127.0.0.1:8765/v1 \
        --model local [--json]
    OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 .venv/bin/python benchmarks/passing_remark.py --smoke

Prints each message's odds, then per threshold and set how many lasting facts it would propose to
drop (the cost) and how many passing remarks it would catch. The last line is one JSON object.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from long_use_story import STORY  # noqa: E402
from told_as_true import ask_all, odds_model  # noqa: E402

from desktop_mem.engine.chat import prompts  # noqa: E402
from desktop_mem.engine.chat.llm_client import LLMClient  # noqa: E402
from desktop_mem.engine.chat.told_as_true import PASSING, _first_letter_odds  # noqa: E402

LASTING, PASSING_REMARK = "lasting", "passing"
DEV: list[tuple[str, str]] = [
    ("I've been a vegetarian for ten years now.", LASTING),
    ("My sister Lotte just got a job in Ghent.", LASTING),
    ("We adopted a dog last week, his name is Bruno.", LASTING),
    ("I'm allergic to shellfish.", LASTING),
    ("Ik werk sinds maart bij de gemeente Delft.", LASTING),
    ("Wir haben jetzt zwei Katzen, Mia und Felix.", LASTING),
    ("J'ai arrêté de fumer le mois dernier.", LASTING),
    ("Mi hija Elena empezó la universidad este año.", LASTING),
    ("I drink my coffee black.", LASTING),
    ("We grow strawberries in the back yard.", LASTING),
    ("I play the violin in a small orchestra.", LASTING),
    ("Our flat has a big balcony.", LASTING),
    ("I take the train to work every day.", LASTING),
    ("Mi madre tiene asma.", LASTING),
    ("Ugh, Monday again.", PASSING_REMARK),
    ("It's pouring outside.", PASSING_REMARK),
    ("Thanks a lot, that was great!", PASSING_REMARK),
    ("Good morning!", PASSING_REMARK),
    ("I'm in a great mood today.", PASSING_REMARK),
    ("Ik heb vandaag echt geen zin in werken.", PASSING_REMARK),
    ("Es ist so heiß heute, ich schmelze.", PASSING_REMARK),
    ("Quelle journée fatigante.", PASSING_REMARK),
    ("Hace un frío tremendo esta mañana.", PASSING_REMARK),
    ("We're having pizza tonight.", PASSING_REMARK),
    ("Just got back from the supermarket.", PASSING_REMARK),
    ("Lol, that's funny.", PASSING_REMARK),
    ("I'm bored.", PASSING_REMARK),
    ("Danke schön, bis morgen!", PASSING_REMARK),
]
# The story's small talk (its turns that state no fact, ask nothing and tell no one else's news
# but in passing), labelled by hand; its lasting facts are the turns that add one.
STORY_TALK = (
    "Ugh, Mondays.", "It's my birthday week, we're going out for dinner.",
    "The weather here has been grey all week.", "Thanks, that's helpful!", "Nice, thank you.",
    "lol ok", "I'm so tired today.", "Thanks!", "The weather is finally warm.", "Haha, fair enough.",
    "It's too hot to think.", "Meh, what a day.", "Thanks, bye!",
    "We're on holiday in the Ardennes this week.", "My bike got a flat tyre on the trail.", "ok cool",
    "Sure.", "School starts again soon, I'm nervous.", "Hmm.", "Brr, it's cold.", "Yeah.",
    "Wrap-up of my year: busy but good.", "Happy holidays!", "Bye for now.",
    "Bram chewed my left shoe. Classic.", "Pixel caught a mouse, gross.",
    "Our tomatoes were delicious this year.", "Jonas came over to help us move. Super kind.",
)
HELD_OUT: list[tuple[str, str]] = [(t.text, LASTING) for t in STORY if t.adds] + [
    (text, PASSING_REMARK) for text in STORY_TALK]
THRESHOLDS = (0.6, 0.7, 0.8, 0.85, 0.9)


def odds_passing(llm: LLMClient, message: str) -> float | None:
    return _first_letter_odds(llm, prompts.PASSING_PROMPT, prompts.PASSING_EXAMPLES,
                              prompts.PASSING_ANSWERS, message)


def table(rows: list[tuple[str, str, float]]) -> dict[str, dict[str, int]]:
    lasting = [o for _m, k, o in rows if k == LASTING]
    passing = [o for _m, k, o in rows if k == PASSING_REMARK]
    return {f"{t:.2f}": {"lasting_proposed": sum(o >= t for o in lasting), "lasting": len(lasting),
                         "passing_caught": sum(o >= t for o in passing), "passing": len(passing)}
            for t in THRESHOLDS}


def main() -> int:
    args, llm = odds_model(__doc__.splitlines()[0])
    sets = {"dev": DEV[:1] + DEV[-1:]} if args.smoke else {"dev": DEV, "held_out": HELD_OUT}
    out: dict[str, dict[str, dict[str, int]]] = {}
    seconds: list[float] = []
    for name, messages in sets.items():
        label = None if args.json else f"{name:8}  "
        rows = ask_all(lambda m: odds_passing(llm, m), messages, seconds, label)
        if rows is None:
            return 0 if args.smoke else 1
        out[name] = table(rows)
        if not args.json:
            for t, row in out[name].items():
                mark = "  <- PASSING" if float(t) == PASSING else ""
                print(f"{name} from {t}: lasting facts proposed {row['lasting_proposed']}/{row['lasting']}, "
                      f"passing remarks caught {row['passing_caught']}/{row['passing']}{mark}")
    print(json.dumps({"model": args.model, "threshold": PASSING, "by_set": out,
                      "seconds_p50": round(statistics.median(seconds), 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
