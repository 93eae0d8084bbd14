"""The multi-turn scenarios of benchmarks/write_path.py: what a user says, what memory must hold
afterwards, and one question the reply must answer from memory.

Each scenario: ``turns`` (the user's messages, in order), ``live`` (regexes that must each match
a live fact at the end), ``absent`` (regexes no live fact may match), ``question`` and ``answer``
(regexes, one of which the reply must match). Matching is case-insensitive. The ``subset`` flag
marks two scenarios per category for quick runs. ``elsewhere``: the question is asked in a new
conversation (facts about the user must reach it); ``not_said``: regexes the reply must not match
(a forgotten fact).
"""
# ruff: noqa: E501 - one scenario per line pair reads better than wrapped data

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scenario:
    name: str
    category: str
    turns: tuple[str, ...]
    live: tuple[str, ...]
    absent: tuple[str, ...]
    question: str
    answer: tuple[str, ...]
    subset: bool = False
    elsewhere: bool = False
    not_said: tuple[str, ...] = ()


def _s(name: str, category: str, turns: list[str], live: list[str], absent: list[str], question: str,
       answer: list[str], subset: bool = False, elsewhere: bool = False, not_said: tuple[str, ...] = ()) -> Scenario:
    return Scenario(name, category, tuple(turns), tuple(live), tuple(absent), question, tuple(answer), subset,
                    elsewhere, not_said)


SCENARIOS: tuple[Scenario, ...] = (
    # -- updates: a newer statement replaces an older one -----------------------------------
    _s("ghent-leuven", "update", ["Hi! I'm Mara, I live in Ghent", "List ten facts about Belgium",
                                  "Actually I moved to Leuven"],
       [r"leuven", r"mara"], [r"ghent", r"belgium"], "Where do I live?", [r"leuven"], subset=True),
    _s("job-change", "update", ["I work as a teacher at a primary school.", "I just started a new job as a nurse."],
       [r"nurse"], [r"teacher"], "What is my job?", [r"nurse"], subset=True),
    _s("car", "update", ["I drive a red Fiat.", "I sold the Fiat and bought a Volvo."],
       [r"volvo"], [r"drives? a red fiat"], "What car do I drive?", [r"volvo"]),
    _s("pet-count", "update", ["I have two cats.", "We adopted another cat, so now I have three cats."],
       [r"three cats|3 cats"], [r"two cats"], "How many cats do I have?", [r"three|3"]),
    _s("diet", "update", ["I'm vegetarian.", "I became vegan last month."],
       [r"vegan"], [], "What is my diet?", [r"vegan"]),
    # -- corrections: the user says a stored fact was wrong ---------------------------------
    _s("name-typo", "correction", ["My name is Jon.", "Sorry, I misspelled it: my name is John."],
       [r"\bjohn\b"], [r"\bjon\b"], "What is my name?", [r"\bjohn\b"], subset=True),
    _s("age", "correction", ["I am 34 years old.", "Correction: I'm 43, not 34."],
       [r"\b43\b"], [r"\b34\b(?!.*43)"], "How old am I?", [r"\b43\b"], subset=True),
    _s("birthday", "correction", ["My birthday is on May 3.", "Oops, my birthday is actually on May 13."],
       [r"may 13"], [r"may 3\b"], "When is my birthday?", [r"13"]),
    _s("city-correction", "correction", ["I live in Porto.", "No wait, I live in Lisbon, not Porto."],
       [r"lisbon"], [r"lives? in porto"], "Which city do I live in?", [r"lisbon"]),
    _s("allergy", "correction", ["I'm allergic to peanuts.", "I was wrong, I'm allergic to almonds, not peanuts."],
       [r"almond"], [r"allergic to peanuts"], "What am I allergic to?", [r"almond"]),
    # -- forget: the user asks to remove something ------------------------------------------
    _s("forget-that", "forget", ["My favorite color is green.", "I have a brother named Tim.", "Forget that."],
       [r"green"], [r"tim"], "What is my favorite color?", [r"green"], subset=True),
    _s("forget-job", "forget", ["I work at Acme Corp.", "I like jazz.", "Please forget where I work."],
       [r"jazz"], [r"acme"], "What music do I like?", [r"jazz"], subset=True),
    _s("forget-address", "forget", ["I live at 12 Baker Street.", "I play tennis on Sundays.",
                                     "Forget my address."],
       [r"tennis"], [r"baker"], "What sport do I play?", [r"tennis"]),
    _s("forget-phone", "forget", ["My phone is a Pixel 7.", "My sister is called Ana.", "Forget about my phone."],
       [r"ana"], [r"pixel"], "What is my sister's name?", [r"ana"]),
    _s("forget-then-tell", "forget", ["I have a dog named Bo.", "Forget that.", "I have a parrot named Kiwi."],
       [r"kiwi"], [r"\bbo\b"], "What pet do I have?", [r"parrot|kiwi"]),
    # -- requests: tasks for the assistant are not facts about the user ----------------------
    _s("belgium-facts", "request", ["I live in Ghent.", "List ten facts about Belgium."],
       [r"ghent"], [r"belgium", r"brussels"], "Where do I live?", [r"ghent"], subset=True),
    _s("poem", "request", ["I'm a baker.", "Write a short poem about the sea."],
       [r"baker"], [r"sea|poem"], "What do I do for work?", [r"bak"], subset=True),
    _s("translate", "request", ["My name is Lena.", "Translate 'good morning' into Spanish."],
       [r"lena"], [r"spanish|morning"], "What is my name?", [r"lena"]),
    _s("recipe", "request", ["I am allergic to eggs.", "Give me a recipe for pancakes."],
       [r"eggs?"], [r"pancake"], "What am I allergic to?", [r"egg"]),
    _s("explain", "request", ["I study physics at university.", "Explain how a rainbow forms."],
       [r"physics"], [r"rainbow"], "What do I study?", [r"physics"]),
    # -- questions: asking is not stating ----------------------------------------------------
    _s("q-paris", "question", ["I live in Madrid.", "Is Paris bigger than London?"],
       [r"madrid"], [r"paris|london"], "Where do I live?", [r"madrid"], subset=True),
    _s("q-where", "question", ["I'm from Chile.", "Where do I live?"],
       [r"chile"], [r"lives? in a"], "Where am I from?", [r"chile"], subset=True),
    _s("q-python", "question", ["I'm a software developer.", "Do you know Python?"],
       [r"developer"], [r"python"], "What is my profession?", [r"develop|software"]),
    _s("q-weather", "question", ["I love hiking.", "What's the weather like in Oslo in winter?"],
       [r"hik"], [r"oslo"], "What do I love doing?", [r"hik"]),
    _s("q-should", "question", ["I have a cat named Miso.", "Should I buy a dog?"],
       [r"miso"], [r"dog"], "What is my cat's name?", [r"miso"]),
    # -- hypotheticals: what-ifs and wishes are not facts -----------------------------------
    _s("h-lottery", "hypothetical", ["I live in Dublin.", "If I won the lottery I would move to Hawaii."],
       [r"dublin"], [r"hawaii"], "Where do I live?", [r"dublin"], subset=True),
    _s("h-imagine", "hypothetical", ["I work as an accountant.", "Imagine I was an astronaut. What would I eat?"],
       [r"accountant"], [r"astronaut"], "What is my job?", [r"accountant"], subset=True),
    _s("h-suppose", "hypothetical", ["I have one daughter.", "Suppose I had three sons, what names would fit?"],
       [r"daughter"], [r"sons"], "How many daughters do I have?", [r"one|1|a daughter"]),
    _s("h-wish", "hypothetical", ["I drive a bicycle to work.", "I wish I had a Tesla."],
       [r"bicycle|bike"], [r"tesla"], "How do I get to work?", [r"bicycle|bike|cycl"]),
    _s("h-pretend", "hypothetical", ["My name is Omar.", "Pretend you are a pirate and greet me."],
       [r"omar"], [r"pirate"], "What is my name?", [r"omar"]),
    # -- other people: facts about others are not the user's --------------------------------
    _s("o-sister", "other_people", ["I live in Berlin.", "My sister lives in Paris."],
       [r"berlin"], [r"^the user (lives|is living) in paris"], "Which city do I live in?", [r"berlin"],
       subset=True),
    _s("o-friend-job", "other_people", ["I'm a chef.", "My friend Tom is a lawyer."],
       [r"chef"], [r"^the user is a lawyer"], "What is my job?", [r"chef"], subset=True),
    _s("o-husband", "other_people", ["I love tea.", "My husband loves coffee."],
       [r"tea"], [r"^the user loves coffee"], "What do I love to drink?", [r"tea"]),
    _s("o-boss", "other_people", ["I'm 29 years old.", "My boss is 52."],
       [r"29"], [r"^the user is 52"], "How old am I?", [r"29"]),
    _s("o-son", "other_people", ["I play the piano.", "My son plays football every Saturday."],
       [r"piano"], [r"^the user plays football"], "What instrument do I play?", [r"piano"]),
    # -- negations: "not" must survive ------------------------------------------------------
    _s("n-meat", "negation", ["I don't eat meat.", "I like pasta."],
       [r"(not|n't|never|no) .*meat|vegetarian"], [r"^the user eats meat"], "Do I eat meat?",
       [r"\bno\b|don't|do not|not eat|vegetarian"], subset=True),
    _s("n-smoke", "negation", ["I have never smoked.", "I go running every morning."],
       [r"(not|n't|never|no) .*smok"], [r"^the user smokes"], "Do I smoke?", [r"\bno\b|never|don't|not"],
       subset=True),
    _s("n-car", "negation", ["I don't have a car.", "I take the bus to work."],
       [r"bus"], [r"^the user (has|owns) a car"], "How do I get to work?", [r"bus"]),
    _s("n-coffee", "negation", ["I no longer drink coffee.", "I drink green tea now."],
       [r"tea"], [r"^the user drinks coffee"], "What do I drink now?", [r"tea"]),
    _s("n-kids", "negation", ["I don't have any children.", "I have a dog named Max."],
       [r"max"], [r"^the user has (children|kids|a child|a son|a daughter)"], "What is my dog's name?", [r"max"]),
    # -- compound: every fact of one sentence (issue 21) ------------------------------------
    _s("c-ghent-nurse", "compound", ["I live in Ghent and I work as a nurse at the university hospital."],
       [r"ghent", r"nurse"], [], "What is my job?", [r"nurse"], subset=True),
    _s("c-name-age", "compound", ["My name is Pieter and I am 41 years old."],
       [r"pieter", r"\b41\b"], [], "How old am I?", [r"\b41\b"], subset=True),
    _s("c-pets", "compound", ["I have a cat named Miso and a dog named Bo."],
       [r"miso", r"\bbo\b"], [], "What is my dog's name?", [r"\bbo\b"]),
    _s("c-kids-city", "compound", ["My daughter is 7 and my son is 10; we live in Utrecht."],
       [r"daughter", r"son", r"utrecht"], [], "How old is my son?", [r"\b10\b|ten"]),
    _s("c-teacher-jazz", "compound", ["I'm a teacher, I love jazz and I hate mornings."],
       [r"teacher", r"jazz", r"morning"], [], "What music do I love?", [r"jazz"]),
    # -- cross-chat: facts about the user reach a new conversation (issue 21) ----------------
    _s("x-job-daughter", "cross_chat", ["I work as a nurse.", "My daughter is 7 years old."],
       [r"nurse", r"daughter"], [], "What is my job, and how old is my daughter?",
       [r"nurse[\s\S]*\b7\b|\b7\b[\s\S]*nurse|nurse[\s\S]*seven|seven[\s\S]*nurse"],
       subset=True, elsewhere=True),
    _s("x-city", "cross_chat", ["I live in Antwerp."], [r"antwerp"], [], "Which city do I live in?",
       [r"antwerp"], subset=True, elsewhere=True),
    # -- forget now: the very next reply does not say it (issue 21) --------------------------
    _s("f-cat-now", "forget_now", ["I have a cat named Miso.", "Please forget about my cat."],
       [], [r"miso"], "What is my cat's name?", [r"[\s\S]"], subset=True, not_said=(r"miso",)),
)
