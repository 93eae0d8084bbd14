"""Junk for tidy-up to propose dropping: facts no stored turn says, or that are no fact at all.

A small model's reading of a fact is not evidence enough: on the long-use story
(docs/benchmarks.md) a 1.5B model called "The user has a cat named Pixel." and "The user is
allergic to peanuts." "not a fact", and, asked about the user's messages themselves, said "We have
a cat called Pixel." tells nothing lasting. So a fact drawn from the user's own message (every
name and number of it is in the stored turn, any script) is proposed as junk only when the
model's reading AND a language-free check agree:

- the message only asks (each of its sentences ends in a question mark: ?, ？, ؟ ...), or
- the fact is itself written as a question, or
- the model is sure its message tells no fact true now (a plan, a wish, an "if", a request:
  chat/told_as_true.py, the odds the write path reads).

A fact whose turn is not stored (an import, an MCP add, a turn deleted since) has nothing to
speak for it, and the model's reading decides. Facts the user wrote by hand are never offered.

Small talk told as true ("Ugh, what a day." stored as "The user had a bad day.") passes every
check above: the message tells something true, only nothing lasting. Such a fact is proposed when
it holds no name or number and the model, asked only that about each message it came from, reads
the message as a passing remark (chat/told_as_true.py, ``passing_remark``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from desktop_mem.engine.chat.fact_guards import QUESTION_MARKS, written_as_no_fact
from desktop_mem.engine.chat.fact_types import ChatModel
from desktop_mem.engine.chat.fact_words import names_and_numbers, words_of
from desktop_mem.engine.chat.tidy_findings import Finding, Stepper, TidySource, ask, sources
from desktop_mem.engine.chat.told_as_true import PASSING_WHY, not_told_as_true, passing_remark
from desktop_mem.engine.chat.understanding import (
    ABOUT_USER,
    HEADING,
    as_persons,
    asks_only,
    names_within,
    news_of,
)
from desktop_mem.engine.index.relative_dates import is_calendar_name
from desktop_mem.engine.models import GLOBAL_CONVERSATION, Memory, Role

log = logging.getLogger(__name__)

BATCH = 10
MODEL_MADE = ("llm", "pattern", "mcp", "import")
NOT_TOLD_READINGS = ("request", "question", "not a fact")  # model readings the odds may confirm


def ungrounded(source: TidySource, facts: Sequence[Memory]) -> list[Finding]:
    """A model-made fact naming a name or number that none of its source turns holds."""
    found: list[Finding] = []
    for m in facts:
        if m.source not in ("llm", "pattern"):
            continue
        texts = [t.text for t in _turns(source, m)]
        if not texts:
            continue  # no turn recorded, or its turns are not readable: no evidence either way
        said = set().union(*(words_of(t) for t in texts))
        missing = names_and_numbers(m.text) - said
        if missing:
            found.append(Finding("junk", f"not said in its source turn ({', '.join(sorted(missing))})",
                                 m.conversation_id, (m,), sources=sources(m)))
    return found


OTHERS_NEWS = "another person's news, written as the user's"


def others_news(source: TidySource, facts: Sequence[Memory]) -> list[Finding]:
    """A model-made fact "The user <does> ..." whose source turn says "<Person> <does> ...",
    proposed as that person's fact (the check the write path makes since, ``news_of``): the
    long-use replay stored "The user got a new job at a bakery." from "Tomas got a new job at a
    bakery.". The names memory holds tell a person from a sentence's first word."""
    held = set().union(*(names_within(m.text) for m in facts))
    found: list[Finding] = []
    for m in facts:
        if m.source not in ("llm", "pattern") or not ABOUT_USER.match(m.text):
            continue
        for turn in _turns(source, m):
            person = news_of(m.text, turn.text, names_within(turn.text) | held)
            if person:
                found.append(Finding("junk", OTHERS_NEWS, m.conversation_id, (m,),
                                     text=as_persons(m.text, person),
                                     sources=sources(m)))
                break
    return found


def headings(facts: Sequence[Memory]) -> list[Finding]:
    """A model-made task of a conversation written as a heading ("birth of Noor", "packing
    checklist"), not as the statement about the user the prompt asks for: what the write path no
    longer stores (understanding.HEADING), left from before."""
    return [Finding("junk", HEADING, m.conversation_id, (m,), sources=sources(m)) for m in facts
            if m.source in ("llm", "pattern") and m.conversation_id != GLOBAL_CONVERSATION
            and not ABOUT_USER.match(m.text)]


JUNK_SCHEMA: Mapping[str, Any] = {"name": "junk", "schema": {
    "type": "object",
    "properties": {"junk": {"type": "array", "items": {
        "type": "object",
        "properties": {"n": {"type": "integer"},
                       "why": {"type": "string", "enum": ["question", "request", "assistant", "not a fact"]}},
        "required": ["n", "why"]}}},
    "required": ["junk"],
}}

JUNK_PROMPT = (
    "Below are numbered entries of a memory about a user. A good entry states a lasting fact about "
    "the user or about someone in their life. List ONLY the entries that are clearly not such a "
    "fact: a question, a request or task, something the assistant said about itself, or words "
    "that state nothing. When unsure, leave an entry out. Answer with JSON only: "
    "{\"junk\": [{\"n\": <number>, \"why\": \"question\" | \"request\" | \"assistant\" | \"not a fact\"}]}"
)

def junk_by_model(source: TidySource, model: ChatModel, facts: Sequence[Memory],
                  step: Stepper) -> list[Finding]:
    """Entries the model reads as no lasting fact, when nothing the user said speaks for them
    (module docstring)."""
    found: list[Finding] = []
    told: dict[str, bool] = {}  # message -> not told as true: one model call per message, not per fact

    def not_told(said: Sequence[str]) -> bool:
        for text in said:
            if text not in told:
                told[text] = not_told_as_true(model, text)
        return all(told[t] for t in said)

    for m, why in _read_facts(model, [m for m in facts if m.source in MODEL_MADE], step):
        reason = _confirmed(not_told, m, why, [t.text for t in _turns(source, m)])
        if reason is None:
            log.info("tidy-up: kept %r: the model read it as %s, but the user said it", m.text, why)
            continue
        found.append(Finding("junk", reason, m.conversation_id, (m,), sources=sources(m)))
    return found


def passing(source: TidySource, model: ChatModel, facts: Sequence[Memory], step: Stepper) -> list[Finding]:
    """Model-made facts with no name or number, drawn only from messages the model reads as a
    passing remark (module docstring). One model call per message; none without odds to read."""
    read: dict[str, bool | None] = {}
    # ("x " counts a first word too: "Pixel caught a mouse." names Pixel; a weekday or a month is
    # no one: "The user feels unenthusiastic about Mondays" names nobody)
    candidates = [(m, turns) for m in facts if m.source in MODEL_MADE and not _names_someone(m.text)
                  for turns in [[t.text for t in _turns(source, m)]] if turns]
    found: list[Finding] = []
    for n, (m, said) in enumerate(candidates):
        step("looking for small talk", n, len(candidates))
        for text in said:
            if text not in read:
                read[text] = passing_remark(model, text)
        if all(read[t] for t in said):
            found.append(Finding("junk", PASSING_WHY, m.conversation_id, (m,), sources=sources(m)))
    return found


def _names_someone(fact: str) -> bool:
    return any(not is_calendar_name(w) for w in names_and_numbers(f"x {fact}"))


def _confirmed(not_told: Callable[[Sequence[str]], bool], fact: Memory, why: str,
               said: Sequence[str]) -> str | None:
    """The reason to propose dropping `fact`, which the model read as `why`, given the user's
    messages it came from; None when nothing but the model's reading says it is junk."""
    if not said:
        return why
    if all(asks_only(t) for t in said):
        return f"{why}; its message only asks"
    if fact.text.rstrip()[-1:] in QUESTION_MARKS:
        return "a question, stored as a fact"
    # the model's odds that its message tells something true now (chat/told_as_true.py): "Hazme
    # una lista de cinco libros" stored as "The user wants a list of five books", "If I ever won
    # the lottery ..." copied. A copy alone is no evidence: "Anke just got engaged!" and "I took
    # up the piano instead." were called a request and "not a fact".
    if why in NOT_TOLD_READINGS and not_told(said):
        return f"{why}; its message tells a plan, a wish, an 'if' or a request"
    if written_as_no_fact(fact.text):
        # its own words say so, as the write path now reads them ("The user said 'Thanks, bye!")
        return f"{why}; written as what the user asked, said or would do"
    return None


def _read_facts(model: ChatModel, made: Sequence[Memory], step: Stepper) -> list[tuple[Memory, str]]:
    """(fact, why) for each entry the model reads as no lasting fact."""
    found: dict[str, tuple[Memory, str]] = {}
    batches = [made[i:i + BATCH] for i in range(0, len(made), BATCH)]
    for n, batch in enumerate(batches):
        step("looking for junk", n, len(batches))
        listing = "\n".join(f"{i + 1}. {m.text}" for i, m in enumerate(batch))
        items = ask(model, JUNK_PROMPT, listing, JUNK_SCHEMA, 160).get("junk")
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("n"), int):
                continue
            i = item["n"] - 1
            why = str(item.get("why") or "not a fact")
            if 0 <= i < len(batch) and batch[i].id not in found:
                found[batch[i].id] = (batch[i], why if why != "assistant" else "the assistant's words")
    return list(found.values())


def _turns(source: TidySource, m: Memory) -> list[Memory]:
    """The stored user messages `m` was drawn from."""
    found = [source.lookup(t) for t in sources(m)]
    return [t for t in found if t is not None and t.role == Role.USER]
