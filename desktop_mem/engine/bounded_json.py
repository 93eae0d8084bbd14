"""JSON from outside (a local server, an import file, a model's answer, a request body) is measured
before any object is built from it: its size, its nesting depth and how many values it holds.

`json.loads` on a deeply nested document raised RecursionError (a traceback, not an error the
caller handles); a 100 MB document of tiny items (`[{}, {}, ...]`) became tens of millions of
objects, over 1 GB, before any count was checked. The scan here runs over the text at C speed
(strings are blanked by one regex, the rest counted with str methods) and refuses before parsing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class JSONLimitError(ValueError):
    """The document is over one of its limits; the message says which, and by how much."""


@dataclass(frozen=True)
class JSONLimits:
    max_chars: int
    max_depth: int
    max_values: int


def check(text: str, limits: JSONLimits, what: str) -> None:
    """JSONLimitError naming `what` when `text` is over a limit. The value count (an upper bound:
    containers plus separators plus one) is taken first, at C speed, so a flood of tiny items is
    refused before its brackets are walked for the depth."""
    if len(text) > limits.max_chars:
        raise JSONLimitError(f"{what} is {len(text):,} characters, over the limit of {limits.max_chars:,}")
    blanked = _STRING.sub('""', text)
    values = blanked.count("[") + blanked.count("{") + blanked.count(",") + 1
    if values > limits.max_values:
        raise JSONLimitError(f"{what} holds about {values:,} values, over the limit of {limits.max_values:,}")
    brackets = _NOT_BRACKET.sub("", blanked)
    depth = max(accumulate(1 if ch in "[{" else -1 for ch in brackets), default=0)
    if depth > limits.max_depth:
        raise JSONLimitError(f"{what} is nested {depth:,} levels deep, over the limit of {limits.max_depth}")


def loads(text: str | bytes, limits: JSONLimits, what: str = "the JSON") -> Any:
    """`json.loads` after `check`: JSONLimitError when over a limit, JSONDecodeError when not JSON."""
    if isinstance(text, bytes | bytearray):
        if len(text) > limits.max_chars * 4:
            raise JSONLimitError(f"{what} is {len(text):,} bytes, over the limit")
        text = bytes(text).decode("utf-8-sig")
    check(text, limits, what)
    try:
        return json.loads(text)
    except RecursionError:  # a depth the scan let through cannot be parsed on this stack
        raise JSONLimitError(f"{what} is nested too deeply to read") from None
