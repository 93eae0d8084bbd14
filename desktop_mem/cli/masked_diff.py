"""A unified diff of a user's config file that shows only our own entry's values.

Every other line shown (context, or a line the edit touched) has its values masked, so another
server's token never reaches a terminal or a log; keys and layout stay readable.
"""

from __future__ import annotations

import difflib
import re


def masked_diff(before: str | None, after: str, label: str, own_before: tuple[int, int],
                own_after: tuple[int, int]) -> str:
    """`before` -> `after` (None: no file yet); `own_*` are where our entry is in each (offsets)."""
    old = (before or "").splitlines(keepends=True)
    new = after.splitlines(keepends=True)
    ours_old = _line_range(before or "", own_before)
    ours_new = _line_range(after, own_after)
    shown: list[str] = []
    old_no = new_no = 0
    for line in difflib.unified_diff(old, new, f"{label} (before)" if before is not None
                                     else "/dev/null", f"{label} (after)"):
        if line.startswith(("---", "+++")):
            shown.append(line)
        elif line.startswith("@@"):
            numbers = re.match(r"@@ -(\d+)(?:,\d+)? \+(\d+)", line)
            if numbers:
                old_no, new_no = int(numbers.group(1)) - 1, int(numbers.group(2)) - 1
                old_no, new_no = max(old_no, 0), max(new_no, 0)
            shown.append(line)
        elif line.startswith("-"):
            shown.append(line if old_no in ours_old else _masked(line))
            old_no += 1
        elif line.startswith("+"):
            shown.append(line if new_no in ours_new else _masked(line))
            new_no += 1
        else:
            shown.append(line if new_no in ours_new else _masked(line))
            old_no += 1
            new_no += 1
    return "".join(shown)


def _line_range(text: str, span: tuple[int, int]) -> range:
    """The 0-based numbers of the lines that hold text[span] whole (no line another entry shares)."""
    start, end = span
    if end <= start:
        return range(0)
    first = text.count("\n", 0, start)
    last = text.count("\n", 0, end)
    line_start = text.rfind("\n", 0, start) + 1
    shares_first = text[line_start:start].strip() not in ("", "{", ",")
    line_end = text.find("\n", end)
    shares_last = text[end:len(text) if line_end < 0 else line_end].strip() not in ("", ",", "}", "},")
    return range(first + shares_first, last + 1 - shares_last)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"(\s*:)?')  # every string, so keys stay in step
_TOML_VALUE = re.compile(r"^(\s*[^=#\[\s][^=]*=\s*).+$", re.S)


def _masked(line: str) -> str:
    """A diff line of somebody else's settings with its values hidden (keys and layout kept)."""
    mark, body = line[:1], line[1:]
    end = "\n" if body.endswith("\n") else ""
    body = body.rstrip("\n")
    if _TOML_VALUE.match(body) and not body.lstrip().startswith(("{", '"')):
        return mark + _TOML_VALUE.sub(r"\1…", body) + end
    if body.lstrip().startswith("#"):
        return mark + "# …" + end
    return mark + _JSON_STRING.sub(lambda m: m.group(0) if m.group(1) else '"…"', body) + end
