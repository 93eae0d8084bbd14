"""Set one member of a JSON document by editing its text, not by serialising the document again.

A user's config file keeps its layout, key order, number spelling and every other member byte for
byte: only the member's value (or, when it is new, the member) is written, indented as the lines
around it. The caller checks the result parses to what it meant (`set_member` does for the path).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"\s*")


@dataclass(frozen=True)
class Member:
    key: str
    start: int  # where the key's opening quote is
    value_start: int
    value_end: int


class JSONTextError(ValueError):
    """The text is not an object where one was expected."""


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def members(text: str, at: int) -> tuple[list[Member], int]:
    """The members of the object whose `{` is at `at` (after white space), and where its `}` is."""
    at = _skip(text, at)
    if not text.startswith("{", at):
        raise JSONTextError("not an object")
    found: list[Member] = []
    at = _skip(text, at + 1)
    if text.startswith("}", at):
        return found, at
    while True:
        key_start = at
        key, at = _DECODER.raw_decode(text, at)
        if not isinstance(key, str):
            raise JSONTextError("a key is not a string")
        at = _skip(text, at)
        if not text.startswith(":", at):
            raise JSONTextError("no ':' after a key")
        value_start = _skip(text, at + 1)
        _value, value_end = _DECODER.raw_decode(text, value_start)
        found.append(Member(key, key_start, value_start, value_end))
        at = _skip(text, value_end)
        if text.startswith("}", at):
            return found, at
        if not text.startswith(",", at):
            raise JSONTextError("no ',' between members")
        at = _skip(text, at + 1)


def _line_indent(text: str, at: int) -> str:
    line_start = text.rfind("\n", 0, at) + 1
    return re.match(r"[ \t]*", text[line_start:]).group(0)  # type: ignore[union-attr]


def _render(value: Any, indent: str, step: int) -> str:
    """`value` as JSON whose continuation lines start at `indent` (the member's own line)."""
    rendered = json.dumps(value, indent=step, ensure_ascii=False)
    return rendered.replace("\n", "\n" + indent)


def _step(text: str) -> int:
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else 2


def find_member(text: str, path: tuple[str, ...]) -> tuple[int, int] | None:
    """Where the member at `path` is in `text` (its key to the end of its value), if it is."""
    at, span = 0, None
    for key in path:
        try:
            found, _close = members(text, at)
        except (JSONTextError, ValueError):
            return None
        member = next((m for m in reversed(found) if m.key == key), None)
        if member is None:
            return None
        at, span = member.value_start, (member.start, member.value_end)
    return span


def set_member(text: str, path: tuple[str, ...], value: Any) -> tuple[str, tuple[int, int]]:
    """`text` with the member at `path` (object keys from the top) set to `value`, objects on the
    way made when missing; and the span of what was written (offsets into the new text). Raises
    JSONTextError when something on the way is not an object."""
    step = _step(text)
    at = 0
    for depth, key in enumerate(path):
        found, close = members(text, at)
        last = depth == len(path) - 1
        member = next((m for m in reversed(found) if m.key == key), None)
        if member is not None and not last:
            at = member.value_start
            continue
        if member is not None:  # replace the value where it stands
            indent = _line_indent(text, member.start)
            new = _render(value, indent, step)
            return text[:member.value_start] + new + text[member.value_end:], (
                member.start, member.value_start + len(new))
        # a new member, placed first in its object so no other member's line changes
        nested: Any = value
        for outer in reversed(path[depth + 1:]):
            nested = {outer: nested}
        open_at = _skip(text, at)
        inside = _line_indent(text, open_at) + " " * step
        body = f"{json.dumps(key, ensure_ascii=False)}: {_render(nested, inside, step)}"
        if found:
            insert = f"\n{inside}{body},"
            first_line_start = text.rfind("\n", 0, found[0].start) + 1
            if first_line_start <= open_at:  # the first member shares the `{` line: give it its own
                insert += f"\n{inside}"
                after = _skip(text, open_at + 1)
                new_text = text[:open_at + 1] + insert + text[after:]
            else:
                new_text = text[:open_at + 1] + insert + text[open_at + 1:]
        else:
            closing = _line_indent(text, open_at)
            insert = f"\n{inside}{body}\n{closing}"
            new_text = text[:open_at + 1] + insert + text[close:]
        start = open_at + 1 + len(f"\n{inside}")
        return new_text, (start, start + len(body))
    raise JSONTextError("an empty path")
