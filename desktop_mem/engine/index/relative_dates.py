"""Relative dates in a recalled turn, written out against the day it was said (issue #35).

"I went to the support group yesterday", said on 8 May 2023 and recalled in November 2026, is
sent as "... yesterday (7 May 2023) ...": a small model otherwise answers a question about *when*
with "yesterday", or with today's date. The expressions are found and read by `dateparser`, whose
language data knows "gisteren", "letztes Jahr" and "la semaine dernière" as well as "last week";
no word of any language is written here. Only what is relative is written out: an expression
whose day moves when the day it was said moves ("in July" does not move within a season and is
left as it is; "yesterday" always does), to the precision it has ("next month (June 2023)").
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)
# The languages whose date words are looked for. Naming them keeps a search at 2-8 ms a turn;
# letting dateparser guess the language took ~2 s a turn and read "to" and "so" as dates
# (measured in docs/benchmarks.md, "Relative dates").
LANGUAGES = ("en", "nl", "de", "fr", "es", "it", "pt")
_SHIFT = timedelta(days=40)  # "said 40 days later": a relative expression moves with it
MAX_CHARS = 2000  # longer turns are written out as they are (a search over a whole document)


def with_dates(text: str, said: datetime) -> str:
    """``text`` with each relative date expression followed by the day it means, counted from
    ``said`` (local time); ``text`` itself when it has none, or when no date library is there."""
    if not text.strip() or len(text) > MAX_CHARS:
        return text
    base = said.astimezone().replace(tzinfo=None)
    try:
        found = _search(text, base)
    except Exception:  # a library fault must never cost the turn its recall
        log.exception("reading the dates of a recalled turn failed")
        return text
    out, at = [], 0
    for phrase, meant in found:
        start = text.find(phrase, at)
        if start < 0:
            continue
        out.append(text[at:start + len(phrase)] + f" ({meant})")
        at = start + len(phrase)
    return "".join(out) + text[at:] if out else text


def _search(text: str, base: datetime) -> list[tuple[str, str]]:
    """(expression as written, the day or period it means) for the relative ones in ``text``."""
    search = _searcher()
    if search is None:
        return []
    settings = {"RELATIVE_BASE": base, "RETURN_AS_TIMEZONE_AWARE": False}
    found = search(text, languages=list(LANGUAGES), settings=settings) or []
    here, later = _parser(base), _parser(base + _SHIFT)
    out: list[tuple[str, str]] = []
    for phrase, _when in found:
        phrase = _trimmed(phrase, here)
        now, moved = here.get_date_data(phrase), later.get_date_data(phrase)
        if now.date_obj is None or moved.date_obj is None:
            continue
        if abs((moved.date_obj - now.date_obj) - _SHIFT) > timedelta(days=7):
            continue  # written as a date ("8 May", "in July"): not relative to the day said
        out.append((phrase, _as_written(now.date_obj, now.period)))
    return out


def _trimmed(phrase: str, parser: Any) -> str:
    """``phrase`` without words at its end or start that do not change the date it means
    ("yesterday and" is "yesterday")."""
    words = phrase.split()
    meant = parser.get_date_data(phrase).date_obj
    while len(words) > 1 and parser.get_date_data(" ".join(words[:-1])).date_obj == meant:
        words = words[:-1]
    while len(words) > 1 and parser.get_date_data(" ".join(words[1:])).date_obj == meant:
        words = words[1:]
    return " ".join(words)


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


@lru_cache(maxsize=64)
def _parser(base: datetime) -> Any:
    from dateparser.date import DateDataParser

    return DateDataParser(languages=list(LANGUAGES),
                          settings={"RELATIVE_BASE": base, "RETURN_TIME_AS_PERIOD": True,
                                    "PREFER_DATES_FROM": "past"})
