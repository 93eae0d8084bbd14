"""Relative dates in a recalled turn, written out against the day it was said (issue #35).

"I went to the support group yesterday", said on 8 May 2023 and recalled in November 2026, is
sent as "... yesterday (7 May 2023) ...": a small model otherwise answers a question about *when*
with "yesterday", or with today's date. The expressions are found and read by `dateparser`, whose
language data knows "gisteren", "letztes Jahr" and "vorige week" as well as "last week"; no word
of any language is written here.

Only an expression that counts from the day it was said is written out: one that dateparser's
own translation reads as "N days/weeks/months/years ago", "in N ...", or "last/next/this
<weekday>" (its English canonical form, whatever the text's language). Bare weekday and month
names and their abbreviations ("we" is Wednesday, "so" Sonntag, "do" donderdag in its data),
durations ("for 4 years") and dates already written ("in July", "8 May 2023") are left alone:
searched without that check, 536 of LoCoMo's 987 dev turns got a date, nearly all wrong
("so (7 May 2023) awesome"); with it, 70, all of them right (docs/benchmarks.md, "Relative dates").
"""

from __future__ import annotations

import logging
import re
import unicodedata
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)
# The languages whose date words are looked for, each searched on its own (a search over several
# at once reads the text in the first one that finds anything: "we" made English text out of
# Dutch). Each costs ~2-3 ms a turn; letting dateparser guess among all ~200 took ~2 s a turn.
LANGUAGES = ("en", "nl", "de", "fr", "es", "it", "pt")
MAX_CHARS = 2000  # longer turns are written out as they are (a search over a whole document)
# dateparser's canonical (English) reading of a relative expression, whatever the text's language:
# its translation vocabulary, not words of the user's.
_RELATIVE = re.compile(
    r"(?:in \d+ (?:day|week|month|year)|\d+ (?:day|week|month|year) ago|"
    r"(?:last|next|this) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))")


def with_dates(text: str, said: datetime) -> str:
    """``text`` with each relative date expression followed by the day it means, counted from
    ``said`` (local time); ``text`` itself when it has none, or when no date library is there."""
    if not text.strip() or len(text) > MAX_CHARS:
        return text
    return _with_dates(text, said.astimezone().replace(tzinfo=None))


@lru_cache(maxsize=2048)  # a turn recalled again costs nothing
def _with_dates(text: str, base: datetime) -> str:
    try:
        found = _search(text, base)
    except Exception:  # a library fault must never cost the turn its recall
        log.exception("reading the dates of a recalled turn failed")
        return text
    out, at = [], 0
    for start, end, meant in sorted(found):
        if start < at:
            continue  # overlaps one already written out
        out.append(text[at:end] + f" ({meant})")
        at = end
    return "".join(out) + text[at:] if out else text


def _search(text: str, base: datetime) -> list[tuple[int, int, str]]:
    """(start, end, the day or period it means) of each relative expression in ``text``."""
    return [(start, end, _as_written(when, period)) for start, end, when, period in _found(text, base)]


def periods(text: str, said: datetime) -> list[tuple[datetime, datetime, str]]:
    """The time each relative expression of ``text`` means, counted from ``said`` (local time), as
    [first moment, end) and as written out: "today" the day it was said, "this week" that week,
    "next month" the month after. Empty when there is none (or no date library)."""
    if not text.strip() or len(text) > MAX_CHARS:
        return []
    base = said.astimezone().replace(tzinfo=None)
    try:
        found = _found(text, base)
    except Exception:  # a library fault finds nothing
        log.exception("reading the dates of %r failed", text[:80])
        return []
    return [(*_span(when, period), _as_written(when, period)) for _start, _end, when, period in found]


def _span(when: datetime, period: str | None) -> tuple[datetime, datetime]:
    day = when.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "year":
        return day.replace(month=1, day=1), day.replace(year=day.year + 1, month=1, day=1)
    if period == "month":
        first = day.replace(day=1)
        return first, (first.replace(year=first.year + 1, month=1) if first.month == 12
                       else first.replace(month=first.month + 1))
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    return day, day + timedelta(days=1)


def _found(text: str, base: datetime) -> list[tuple[int, int, datetime, str | None]]:
    """(start, end, date, dateparser's period) of each relative expression in ``text``."""
    search = _searcher()
    if search is None:
        return []
    settings = {"RELATIVE_BASE": base, "RETURN_AS_TIMEZONE_AWARE": False}
    spans: dict[tuple[int, int], tuple[datetime, str | None]] = {}
    for language in LANGUAGES:
        for phrase, _when in search(text, languages=[language], settings=settings) or []:
            phrase = _trimmed(_unpunctuated(phrase), language)
            if not phrase or (meant := _meaning(phrase, language, base)) is None:
                continue
            for start in _word_starts(text, phrase):
                spans.setdefault((start, start + len(phrase)), meant)
    return [(start, end, when, period) for (start, end), (when, period) in spans.items()]


def _relative(phrase: str, language: str) -> str | None:
    """dateparser's canonical reading of ``phrase`` when it counts from the day it was said."""
    from dateparser.conf import settings

    reading = " ".join(_locale(language).translate(phrase, settings=settings).split())
    return reading if _RELATIVE.fullmatch(reading) else None


def _trimmed(phrase: str, language: str) -> str | None:
    """``phrase`` without the words at its ends that do not change what it means ("yesterday
    and" is "yesterday"), or None when it is not relative."""
    reading = _relative(phrase, language)
    if reading is None:
        return None
    words = phrase.split()
    while len(words) > 1 and _relative(_unpunctuated(" ".join(words[:-1])), language) == reading:
        words = words[:-1]
    while len(words) > 1 and _relative(_unpunctuated(" ".join(words[1:])), language) == reading:
        words = words[1:]
    return _unpunctuated(" ".join(words))


def _meaning(phrase: str, language: str, base: datetime) -> tuple[datetime, str | None] | None:
    data = _parser(language, base).get_date_data(phrase)
    return None if data.date_obj is None else (data.date_obj, data.period)


def _unpunctuated(phrase: str) -> str:
    edge = 0
    while edge < len(phrase) and _is_punctuation(phrase[edge]):
        edge += 1
    end = len(phrase)
    while end > edge and _is_punctuation(phrase[end - 1]):
        end -= 1
    return phrase[edge:end].strip()


def _is_punctuation(char: str) -> bool:
    return char.isspace() or unicodedata.category(char).startswith("P")


def _word_starts(text: str, phrase: str) -> list[int]:
    """Where ``phrase`` stands in ``text`` as whole words: never inside one ("so" in "awesome").
    Scripts without case (Chinese, Japanese, Thai) write no spaces, so only cased letters and
    digits must not touch it."""
    starts, at = [], text.find(phrase)
    while at >= 0:
        end = at + len(phrase)
        if not (_glued(text[at - 1] if at else "", phrase[0])
                or _glued(text[end] if end < len(text) else "", phrase[-1])):
            starts.append(at)
        at = text.find(phrase, at + 1)
    return starts


def _glued(neighbour: str, edge: str) -> bool:
    cased = edge.lower() != edge.upper() or edge.isdigit()
    return cased and bool(neighbour) and (neighbour.isalnum() or neighbour == "_")


def _as_written(when: datetime, period: str | None) -> str:
    if period == "year":
        return f"{when.year}"
    if period == "month":
        return f"{when:%B %Y}"
    if period == "week":
        return f"the week of {when.day} {when:%B %Y}"
    return f"{when.day} {when:%B %Y}"


@lru_cache(maxsize=1)
def _searcher() -> Any:
    try:
        from dateparser.search import search_dates
    except ImportError:  # pragma: no cover - a dependency; an install without it keeps the text
        return None
    return search_dates


_CALENDAR_KEYS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                  "october", "november", "december", "monday", "tuesday", "wednesday", "thursday",
                  "friday", "saturday", "sunday")  # dateparser's own keys, not words of the user's


@lru_cache(maxsize=1)
def calendar_names() -> frozenset[str]:
    """The names of the weekdays and months in LANGUAGES (dateparser's locale data), folded:
    capitalised like a person's name in some languages, and no one's."""
    names: set[str] = set()
    for language in LANGUAGES:
        info = _locale(language).info
        for key in _CALENDAR_KEYS:
            names |= {str(n).casefold() for n in info.get(key, ()) if len(str(n)) >= 3}
    return frozenset(names)


def is_calendar_name(word: str) -> bool:
    """Whether ``word`` is a weekday or month name, or one with a short ending ("Mondays")."""
    folded = word.casefold()
    return folded in calendar_names() or any(
        folded.startswith(n) and len(n) >= 5 and len(folded) - len(n) <= 2 for n in calendar_names())


@lru_cache(maxsize=len(LANGUAGES))
def _locale(language: str) -> Any:
    from dateparser.languages.loader import LocaleDataLoader

    return LocaleDataLoader().get_locale(language)


@lru_cache(maxsize=256)
def _parser(language: str, base: datetime) -> Any:
    from dateparser.date import DateDataParser

    return DateDataParser(languages=[language],
                          settings={"RELATIVE_BASE": base, "RETURN_TIME_AS_PERIOD": True,
                                    "PREFER_DATES_FROM": "past"})
