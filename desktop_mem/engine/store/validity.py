"""When a fact was true: `valid_from` / `valid_to` in front matter, read, written and compared.

A value is as precise as what the user said: a year (`2024`), a month (`2024-03`), a day
(`2024-03-15`) or an instant (`2024-03-15T09:30:00+00:00`). A period starts at its first instant,
so "since March 2024" is valid from 2024-03-01 00:00 UTC. Without `valid_from` a fact is valid
from when it was said (`created_at`); without `valid_to` a tombstone stopped being valid when it
was replaced or forgotten (`deleted_at`), and a live fact is valid until now.

Values are kept as the canonical text above (not datetimes): the file keeps the user's precision,
and every JSON shape can carry them as they are.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from typing import Any

from desktop_mem.engine.models import Memory, ValidationError

VALID_FROM = "valid_from"
VALID_TO = "valid_to"
_PERIOD = re.compile(r"^(?P<y>\d{4})(?:-(?P<m>\d{2})(?:-(?P<d>\d{2}))?)?$")
_FORMS = "a year (2024), a month (2024-03), a day (2024-03-15) or an ISO date-time"
# Dates read from files keep a margin from the calendar's ends (year 1, year 9999): near them,
# converting to UTC or adding a day raises OverflowError, which stopped every command once one
# such file (hand-made, or from a sync remote) was in the store. Outside: a problem file.
EARLIEST = datetime(1000, 1, 1, tzinfo=UTC)
LATEST = datetime(9001, 1, 1, tzinfo=UTC)  # ~1,000 years of room for any arithmetic


def within_calendar(moment: datetime, key: str, value: Any) -> datetime:
    """`moment` (naive means UTC) in UTC, when it lies in the years 1000-9000; else ValidationError."""
    try:
        utc = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except (OverflowError, ValueError):
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST:
        shown = value.isoformat() if isinstance(value, date) else repr(value)
        raise ValidationError(f"{key} {shown} is outside the years 1000 to 9000")
    return utc


def normalize(value: Any, key: str) -> str | None:
    """The canonical text of a validity value from front matter or a user; ValidationError with
    the accepted forms for anything else. YAML reads `2024` as a number and `2024-03-15` as a date:
    both are taken."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValidationError(f"{key} {value!r} is not a date: use {_FORMS}")
    if isinstance(value, datetime):
        return within_calendar(value, key, value).isoformat()
    if isinstance(value, date):
        within_calendar(datetime(value.year, value.month, value.day), key, value)
        return value.isoformat()
    if isinstance(value, int) and 1000 <= value <= 9000:
        return str(value)
    if isinstance(value, int) and 0 <= value <= 9999:
        raise ValidationError(f"{key} {value!r} is outside the years 1000 to 9000")
    if isinstance(value, str):
        text = value.strip()
        match = _PERIOD.match(text)
        if match:
            try:
                within_calendar(_period_start(match), key, value)
            except ValueError:
                raise ValidationError(f"{key} {value!r} is not a real date: use {_FORMS}") from None
            return text
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValidationError(f"{key} {value!r} is not a date: use {_FORMS}") from None
        return within_calendar(moment, key, value).isoformat()
    raise ValidationError(f"{key} {value!r} is not a date: use {_FORMS}")


def start(value: str) -> datetime:
    """The first instant of a canonical validity value (UTC)."""
    match = _PERIOD.match(value)
    if match:
        return _period_start(match)
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _period_start(match: re.Match[str]) -> datetime:
    year, month, day = int(match["y"]), int(match["m"] or 1), int(match["d"] or 1)
    return datetime(year, month, day, tzinfo=UTC)


def valid_from(memory: Memory) -> datetime:
    """When the memory became true: its `valid_from`, else when it was said."""
    return start(memory.valid_from) if memory.valid_from else memory.created_at


def valid_to(memory: Memory) -> datetime | None:
    """When it stopped being true: its `valid_to`, else (a tombstone) when it was deleted; None
    while it is still true."""
    if memory.valid_to:
        return start(memory.valid_to)
    if memory.deleted:
        return memory.deleted_at or memory.updated_at or memory.created_at
    return None


def live_at(memory: Memory, moment: datetime) -> bool:
    """True when the memory was valid at `moment` (valid_from <= moment < valid_to)."""
    end = valid_to(memory)
    return valid_from(memory) <= moment and (end is None or moment < end)


def valid_now(memory: Memory, now: datetime) -> bool:
    """False for a live file whose `valid_to` (set by hand) has passed."""
    end = valid_to(memory)
    return end is None or now < end


def stamp(moment: datetime) -> str:
    """A validity value for an instant the app recorded (to the second, UTC)."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat()


_MONTHS = {name: i for i, names in enumerate(
    [("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"), ("may",),
     ("jun", "june"), ("jul", "july"), ("aug", "august"), ("sep", "sept", "september"),
     ("oct", "october"), ("nov", "november"), ("dec", "december")], start=1) for name in names}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DATE = (
    rf"(?:(?P<iso>\d{{4}}-\d{{2}}(?:-\d{{2}})?)"
    rf"|(?:(?P<day1>\d{{1,2}})(?:st|nd|rd|th)?\s+)?{_MONTH}(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?,?)?"
    rf"(?:\s+(?P<year>\d{{4}}))?"
    rf"|(?P<only_year>(?:19|20)\d{{2}}))"
)
# "since March 2024", "starting in 2019", "as of 2024-03-15", "moved to Leuven in March 2024"
_STATED = re.compile(
    rf"\b(?:since|starting(?:\s+(?:in|on|from))?|as\s+of|from|(?:moved|started|began|joined|"
    rf"switched|married|relocated)\b[^.;]{{0,60}}?\b(?:in|on|since))\s+(?:early\s+|late\s+|mid-?\s*)?"
    rf"{_DATE}\b(?!\s*(?:am|pm|h\b|:))",
    re.I,
)


_ENDED = re.compile(rf"\b(?:until|till|up\s+to|through)\s+(?:early\s+|late\s+|mid-?\s*)?{_DATE}\b", re.I)


def stated_end(text: str, said_at: datetime) -> str | None:
    """The date a fact says it ended ("worked at Acme until 2020" -> "2020"), or None; only a
    date up to when it was said (a future "until" is a plan, not an end)."""
    for match in _ENDED.finditer(text):
        found = _stated_value(match, said_at)
        if found is not None and start(found) <= said_at:
            return found
    return None


def stated_start(text: str, said_at: datetime) -> str | None:
    """The date a fact says it began ("since March 2024" -> "2024-03"), or None.

    A month without a year is its last occurrence up to `said_at` ("since March", said in
    November 2026 -> 2026-03). Only explicit dates are read; "for three years" is not a date.
    """
    for match in _STATED.finditer(text):
        found = _stated_value(match, said_at)
        if found is not None:
            return found
    return None


def _stated_value(match: re.Match[str], said_at: datetime) -> str | None:
    if match["iso"]:
        try:
            return normalize(match["iso"], VALID_FROM)
        except ValidationError:
            return None
    if match["only_year"]:
        return match["only_year"]
    month = _MONTHS[match["month"].lower()]
    year = int(match["year"]) if match["year"] else (
        said_at.year if month <= said_at.month else said_at.year - 1)
    day = match["day1"] or match["day2"]
    value = f"{year:04d}-{month:02d}" + (f"-{int(day):02d}" if day else "")
    try:
        return normalize(value, VALID_FROM)
    except ValidationError:
        return None


def for_file(value: str | None) -> Any:
    """A canonical value as front matter writes it: an instant or a day unquoted (YAML reads
    them back as datetime / date), a month or year as text."""
    if value is None:
        return None
    if "T" in value:
        return datetime.fromisoformat(value)
    if len(value) == 10:
        return date.fromisoformat(value)
    return value


def parse_as_of(text: str) -> datetime:
    """An as-of moment from a user: an ISO date (the end of that day, UTC: what was live by then)
    or an ISO date-time (naive means UTC). ValidationError with the forms for anything else."""
    value = (text or "").strip()
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        try:
            day = date.fromisoformat(value)
        except ValueError:
            raise ValidationError(f"as-of date {text!r} is not a real date (YYYY-MM-DD)") from None
        return datetime.combine(day, time(23, 59, 59), tzinfo=UTC)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(
            f"as-of date {text!r} is not an ISO date (2024-03-15) or date-time (2024-03-15T09:30:00Z)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def span(memory: Memory) -> str:
    """When a fact was true, as people read it: "true since 2024-03", "true 2024-03 – 2026-11-20"."""
    since = label(memory.valid_from) or label(stamp(memory.created_at))
    end = memory.valid_to or (stamp(valid_to(memory) or memory.created_at) if memory.deleted else None)
    return f"true {since} – {label(end)}" if end else f"true since {since}"


def label(value: str | None) -> str:
    """A validity value as people read it: the date part of an instant, a period as written."""
    if not value:
        return ""
    return value[:10] if "T" in value else value
