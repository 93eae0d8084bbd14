"""Pattern rules (002): the facts of fixed English first-person phrases, when no model answers.

"My name is Alice", "I work at Acme", "I prefer tea" become "The user's name is Alice", "The user
works at Acme", "The user prefers tea". English word lists, so they serve only when no model
answers, and to fill in a plain English statement a small model left out (chat/understanding.py).
"""

from __future__ import annotations

import re

from desktop_mem.engine.chat import scopes
from desktop_mem.engine.chat.fact_types import ExtractedFact, FactKind, fold

_LEAD = (
    r"^(?:(?:well|oh|so|also|and|but|btw|by the way|actually|hi|hello|hey|ok|okay|yes|yeah|anyway)"
    r"[,!]?\s+)*"
)
_ADV = r"(?:(?:really|also|actually|just|truly|absolutely|totally|usually|generally|definitely|do|still)\s+)?"
_IM = r"(?:i'?m|i am)"
_NOT_ROLE = r"(?!(?:bit|little|lot|tad|kind of|sort of|few|couple)\b)"

# (pattern over one clause, third-person template, kind); {x} is the captured object.
_RULE_TABLE: tuple[tuple[str, str, FactKind], ...] = (
    (r"my name is (?P<name>.+)", "The user's name is {name}", "fact"),
    (_IM + r" called (?P<name>.+)", "The user's name is {name}", "fact"),
    (r"(?:you can |please )?call me (?P<name>.+)", "The user's name is {name}", "fact"),
    (r"i " + _ADV + r"work (?P<prep>at|for|in|as) (?P<x>.+)", "The user works {prep} {x}", "fact"),
    (_IM + r" (?P<art>an?) " + _NOT_ROLE + r"(?P<x>.+)", "The user is {art} {x}", "fact"),
    (r"i " + _ADV + r"live in (?P<x>.+)", "The user lives in {x}", "fact"),
    (_IM + r" from (?P<x>.+)", "The user is from {x}", "fact"),
    (
        r"i " + _ADV + r"(?P<verb>like|love|enjoy|prefer|hate|dislike) (?P<x>.+)",
        "The user {verb}s {x}",
        "preference",
    ),
    (r"i can'?t stand (?P<x>.+)", "The user dislikes {x}", "preference"),
    (
        r"my favou?rite (?P<what>[\w -]{1,40}?) (?P<be>is|are) (?P<x>.+)",
        "The user's favorite {what} {be} {x}",
        "preference",
    ),
)
_RULES = tuple(
    (re.compile(_LEAD + body + r"$", re.IGNORECASE), template, kind) for body, template, kind in _RULE_TABLE
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
# Split "My name is Alice and I prefer tea" but not "I like cats and dogs".
_CLAUSES = re.compile(
    r"\s*(?:[,;]\s*(?:and\s+|but\s+|so\s+)?|\s(?:and|but|so|because)\s+)(?=(?:i|i'm|my)\b)", re.I
)
_QUESTION = re.compile(
    r"^\W*(?:do|does|did|what|why|how|who|where|when|which|can|could|would|should|is|are|am|will|shall|may)\b",
    re.I,
)
_HYPOTHETICAL = re.compile(r"\b(?:if|unless|suppose|imagine|pretend)\b", re.I)
_PRONOUN_ONLY = {"it", "that", "this", "them", "you", "him", "her", "one", "those", "these", "so", "too"}
_FIRST_PERSON = (
    (r"\bmyself\b", "themselves"),
    (r"\bmy\b", "their"),
    (r"\bmine\b", "theirs"),
    (r"\bme\b", "them"),
)
_NAME = re.compile(r"[^\W\d_][\w'-]*")


def pattern_facts(user_message: str) -> tuple[ExtractedFact, ...]:
    """Facts from fixed first-person phrases ("my name is", "I work at", "I prefer" ...)."""
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    text = user_message.replace("\u2019", "'").strip()  # typographic apostrophes: I’m, can’t
    for sentence in _SENTENCES.split(text):
        sentence = sentence.strip()
        if not sentence or sentence.endswith("?") or _QUESTION.match(sentence):
            continue
        for clause in _CLAUSES.split(sentence):
            fact = _match_clause(clause.strip().rstrip(".!;:,").strip())
            if fact is not None and fold(fact.text) not in seen:
                seen.add(fold(fact.text))
                facts.append(fact)
    return tuple(facts)


def _match_clause(clause: str) -> ExtractedFact | None:
    if not clause or _HYPOTHETICAL.search(clause):
        return None
    for pattern, template, kind in _RULES:
        match = pattern.match(clause)
        if match is None:
            continue
        parts = {k: v.strip() for k, v in match.groupdict().items() if v is not None}
        if "name" in parts:
            name = _name_of(parts["name"])
            if name is None:
                return None
            parts["name"] = name
        if "x" in parts:
            obj = _third_person(parts["x"].strip(" \"'.!,;:"))
            if not re.search(r"\w", obj) or obj.casefold() in _PRONOUN_ONLY or len(obj) > 200:
                return None
            parts["x"] = obj
        for key in ("verb", "prep", "art", "what", "be"):
            if key in parts:
                parts[key] = parts[key].lower()
        fact = template.format(**parts)
        return ExtractedFact(fact, kind, "pattern", scopes.classify(fact))
    return None


def _name_of(raw: str) -> str | None:
    """The name at the start of ``raw``: capitalised words as written, else the first word."""
    words: list[str] = _NAME.findall(raw.split(",")[0])
    if not words:
        return None
    if words[0][0].isupper():
        taken = [words[0]]
        for word in words[1:3]:
            if not word[0].isupper():
                break
            taken.append(word)
        return " ".join(taken)
    return words[0].capitalize()


def _third_person(text: str) -> str:
    for pattern, replacement in _FIRST_PERSON:
        text = re.sub(pattern, replacement, text, flags=re.IGNORECASE)
    return text
