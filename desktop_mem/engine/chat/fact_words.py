"""The words of a fact in any script: its names and numbers (by value: "٣" is 3, "5,000" is 5000,
"4th" is 4), inflected forms found by their stems, and the same fact said again with another
number or other names. Words and letters only, never a language's word list: the model writes
facts in English from messages in any language, and these checks compare the two.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from desktop_mem.engine.chat.fact_guards import STOP

WORD = re.compile(r"[^\W_]+", re.UNICODE)
# a digit group separator inside a number ("5,000", "5.000", "12 000", "1'500"): gone before
# numbers are compared, so the model's "5,000" is the user's "5000" (any script's digits)
GROUPED = re.compile(r"(?<=\d)[,.'\u00a0\u202f\u2009 ](?=\d{3}(?!\d))")
NUMBER_ENDING = re.compile(r"^(\d+)[^\W\d_]{1,3}$")


class _Fact(Protocol):
    @property
    def text(self) -> str: ...


F = TypeVar("F", bound=_Fact)


def near(word: str, words: set[str]) -> bool:
    """``word`` is among ``words`` up to its ending (sister/sisters, favorite/favourite)."""
    return found(word, words) or (len(word) >= 5 and any(len(w) >= 5 and w[:4] == word[:4] for w in words))


def names_and_numbers(text: str) -> set[str]:
    """Names (capitalised words after the first, any cased script) and numbers (any digits, as
    values: "٣" and "3" are the same) in ``text``, folded."""
    out: set[str] = set()
    words = WORD.findall(GROUPED.sub("", text))
    for i, word in enumerate(words):
        if any(c.isdigit() for c in word):
            out.add(number_value(word))
        elif (i > 0 and word[:1].isupper() and word.casefold() not in STOP
              and not any(c.isdigit() for c in words[i - 1])):
            # a capitalised word right after a number is its unit in languages that capitalise
            # nouns ("11 Jahre", "5000 Euro"), not a name
            out.add(word.casefold())
    return out


def words_of(text: str) -> set[str]:
    """The words of ``text`` folded, numbers as their values (any script, "5,000" is 5000)."""
    return {fold_word(w) for w in WORD.findall(GROUPED.sub("", text))}


def fold_word(word: str) -> str:
    """A word as facts are compared: folded, a number as its value."""
    return number_value(word) if any(c.isdigit() for c in word) else word.casefold()


def number_value(word: str) -> str:
    """A word with digits as its value: the digits in any script, and a number's ordinal or unit
    ending left off ("4th" and "4." are 4, "20mg" is 20), so the model's English ending grounds
    in the user's language."""
    match = NUMBER_ENDING.match(word)
    if match is not None:
        word = match.group(1)
    return "".join(str(int(c)) if c.isdigit() else c.casefold() for c in word)


def found(word: str, words: set[str]) -> bool:
    """``word`` is among ``words``, or one of them shares its stem (inflection: Pieters, Ghent's)."""
    if word in words:
        return True
    if any(c.isdigit() for c in word) or len(word) < 3:
        return False
    # an ending added or dropped (son/sons, сын/сыну, zus/zusje)
    if any(len(w) >= 3 and (w.startswith(word) or word.startswith(w)) and abs(len(w) - len(word)) <= 2
           for w in words):
        return True
    if len(word) < 4:
        return False
    stem = word[:max(4, len(word) - 2)]
    return any(w.startswith(stem) or word.startswith(w[:max(4, len(w) - 2)]) and len(w) >= 4 for w in words)


def number_changed(text: str, live: Sequence[F], *, names_decide: bool = False) -> tuple[F, str] | None:
    """The one live fact that ``text`` says again with another number, and that fact's text with
    the new number: "Ines is 8 years old" after "The user's daughter Ines is 7 years old" gives
    "The user's daughter Ines is 8 years old". Same names, the same words but the number (one
    may hold more: "daughter"), one number each; without a name the words must be the same
    ("has 7 chickens" / "has 6 chickens"), so another person's age is never taken for the
    user's. With ``names_decide`` the names alone decide (``text`` is the user's own words,
    "Lucía tiene 5 años", beside an English fact). Words and numbers only: it works whatever
    language the facts are written in."""
    new_numbers, new_names, new_words = _parts(text)
    if len(new_numbers) != 1:
        return None
    hits: list[F] = []
    for memory in live:
        numbers, names, words = _parts(memory.text)
        if len(numbers) != 1 or numbers == new_numbers or names != new_names or not words:
            continue
        if words == new_words or (names and (names_decide or new_words <= words or words <= new_words)):
            hits.append(memory)
    if len(hits) != 1:
        return None
    old = hits[0]
    (old_number,), (new_number,) = _written_numbers(old.text), _written_numbers(text)
    merged = old.text.replace(old_number, new_number, 1) if old.text.count(old_number) == 1 else text
    return old, merged


def name_changed(
    text: str, live: Sequence[F], said: str, said_facts: Sequence[str], *, min_words: int = 2,
) -> F | None:
    """The one live fact that ``text`` says again with other names, when the user's message
    (``said``) names the old one too and none of its facts (``said_facts``) keeps it: "works as a
    cook at Lufthansa" updates "works as a cook at Hotel Adler" after "ich habe beim Hotel Adler
    gekündigt und arbeite jetzt bei der Lufthansa". The same words but the names, numbers equal.
    A second dog (the first one's name unsaid) or a second city the user visited (a fact of the
    message keeps it) leaves the old fact alone; so does a fact of fewer than ``min_words``
    words beside its names ("wife ... Claude"), unless the caller knows more. Words and names
    only: any language."""
    new_numbers, new_names, new_words = _parts(text)
    if not new_names or len(new_words) < min_words:
        return None
    words_said = words_of(said)
    kept = words_of(" ".join(said_facts))
    hits: list[F] = []
    for memory in live:
        numbers, names, words = _parts(memory.text)
        gone = names - new_names
        if words != new_words or numbers != new_numbers or not gone:
            continue
        if gone & words_said and not gone & kept:
            hits.append(memory)
    return hits[0] if len(hits) == 1 else None


def _parts(text: str) -> tuple[set[str], set[str], set[str]]:
    """(numbers, names, other words) of a fact, folded; a fact's first word counts as a name."""
    found = names_and_numbers(f"x {text}")
    numbers = {w for w in found if any(c.isdigit() for c in w)}
    names = found - numbers
    words = {w for w in words_of(text) if w not in STOP and w not in found}
    return numbers, names, words


def _written_numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:[.,]\d+)?", text)
