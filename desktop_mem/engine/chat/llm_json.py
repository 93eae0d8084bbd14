"""Tolerant parsing of JSON answers from small local models.

Small models wrap JSON in code fences or prose, wrap lists in an object, leave trailing commas,
use single quotes or stop mid-answer. We take what is recoverable (with ``json-repair`` for
broken syntax) and raise ``LLMJSONError`` for the rest, never returning garbage silently.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

import json_repair

from desktop_mem.engine import bounded_json
from desktop_mem.engine.models import Decision

MAX_INPUT_CHARS = 200_000
# An answer is a short list of facts or decisions: nested deeper, or holding more values, it is
# refused before parsing (a deep one raised RecursionError, past every `except ValueError`).
ANSWER_LIMITS = bounded_json.JSONLimits(max_chars=MAX_INPUT_CHARS, max_depth=16, max_values=20_000)
_EXCERPT_CHARS = 200
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_LIST_KEYS = ("facts", "memory", "memories", "decisions", "items", "result", "results", "data")
_EVENT_KEYS = ("event", "action", "operation", "op", "type")
_ID_KEYS = ("id", "memory_id", "target_id", "target")
_TEXT_KEYS = ("text", "memory", "fact", "content", "new_text")
EVENTS = tuple(d.value for d in Decision)  # "ADD", "UPDATE", "DELETE", "NONE"
# json-repair log lines that mean it made strings out of unquoted prose.
_INVENTED = ("left delimiter in array context", "Parsed object is empty", "returning the element without")


class LLMJSONError(ValueError):
    """The model's answer holds no usable JSON; ``problem`` says why, ``excerpt`` shows it."""

    def __init__(self, problem: str, text: str) -> None:
        self.problem = problem
        flat = " ".join(text.split())
        self.excerpt = flat[:_EXCERPT_CHARS] + ("..." if len(flat) > _EXCERPT_CHARS else "")
        super().__init__(f"{problem}; the model answered: {self.excerpt!r}")


class RawDecision(TypedDict):
    """One reconciliation decision as the model wrote it (ids still the prompt's short ids)."""

    event: str
    id: str | None
    text: str


def parse_string_list(text: str, max_items: int) -> list[str]:
    """A list of distinct non-empty strings (at most ``max_items``) from a model answer."""
    value, cut_inside_string = _load(text)
    items = _unwrap_list(value, text)
    if cut_inside_string and items:
        items = items[:-1]  # the last string was cut off mid-way
        if not items:  # an answer cut before its first item is a failure, not "no facts"
            raise LLMJSONError("the answer was cut off before its first complete item", text)
    out: list[str] = []
    seen: set[str] = set()
    rejected = 0
    for item in items:
        if isinstance(item, dict):
            item = next((item[k] for k in _TEXT_KEYS if isinstance(item.get(k), str)), None)
        if not isinstance(item, str):
            rejected += 1
            continue
        clean = " ".join(item.split())
        if clean and clean.casefold() not in seen:
            seen.add(clean.casefold())
            out.append(clean)
    if rejected and not out:
        raise LLMJSONError("expected a JSON list of strings but the items are not text", text)
    return out[:max_items]


def parse_decisions(text: str) -> list[RawDecision]:
    """Reconciliation decisions ``{event, id, text}`` from a model answer; bad items are skipped."""
    value, cut_inside_string = _load(text)
    if isinstance(value, dict) and any(k in value for k in _EVENT_KEYS):
        value = [value]  # a single decision without the surrounding list
    items = _unwrap_list(value, text)
    if cut_inside_string and items:
        items = items[:-1]
        if not items:  # cut before the first decision: a failure, so the caller's fallback runs
            raise LLMJSONError("the answer was cut off before its first complete decision", text)
    decisions = [d for d in (_decision(item) for item in items) if d is not None]
    if items and not decisions:
        raise LLMJSONError("none of the JSON items is a decision with an ADD/UPDATE/DELETE/NONE event", text)
    return decisions


def _decision(item: object) -> RawDecision | None:
    if not isinstance(item, dict):
        return None
    event = next((item[k] for k in _EVENT_KEYS if isinstance(item.get(k), str)), "")
    event = event.strip().upper()
    if event not in EVENTS:
        return None
    raw_id = next((item[k] for k in _ID_KEYS if item.get(k) is not None), None)
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raw_id = None
    text = next((item[k] for k in _TEXT_KEYS if isinstance(item.get(k), str)), "")
    return RawDecision(
        event=event,
        id=str(raw_id).strip() if raw_id is not None else None,
        text=" ".join(text.split()),
    )


def _unwrap_list(value: object, text: str) -> list[Any]:
    """The list itself, or the list an object wraps (``{"facts": [...]}`` and the like)."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for key in _LIST_KEYS:
            if isinstance(value.get(key), list):
                return list(value[key])
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            return list(lists[0])
        if not value:
            return []
        raise LLMJSONError("expected a JSON list but got an object without one", text)
    raise LLMJSONError(f"expected a JSON list but got {type(value).__name__}", text)


def _load(text: str) -> tuple[Any, bool]:
    """First JSON array/object in ``text``; also whether it was cut off inside a string."""
    if not isinstance(text, str):
        raise LLMJSONError(f"the model's answer is {type(text).__name__}, not text", "")
    capped = strip_reasoning(text[:MAX_INPUT_CHARS])
    if not capped:
        raise LLMJSONError("the model gave an empty answer", text)
    fenced = _FENCE.search(capped)
    body = fenced.group(1).strip() if fenced else capped.strip()
    try:
        bounded_json.check(body, ANSWER_LIMITS, "the answer")
    except bounded_json.JSONLimitError as exc:
        raise LLMJSONError(str(exc), text) from None
    try:
        return json.loads(body), False
    except ValueError:
        pass
    starts = [m.start() for m in re.finditer(r"[\[{]", body)]
    if not starts:
        raise LLMJSONError("no JSON list or object found in the answer", text)
    decoder = json.JSONDecoder()
    for start in starts[:20]:
        try:
            value, _end = decoder.raw_decode(body, start)
        except ValueError:
            continue
        if isinstance(value, list | dict):
            return value, False
    candidate = body[starts[0] :]
    try:
        result: Any = json_repair.loads(candidate, skip_json_loads=True, logging=True)
        repaired, repairs = result
    except Exception as err:  # noqa: BLE001 - json-repair may fail in any way on garbage
        raise LLMJSONError(f"unrepairable JSON ({type(err).__name__})", text) from err
    # Bare words turned into list items mean prose, not JSON: refuse rather than invent strings.
    log_text = " ".join(str(r.get("text", "")) for r in repairs if isinstance(r, dict))
    invented = any(sign in log_text for sign in _INVENTED)
    if isinstance(repaired, list | dict) and not invented and (repaired or _looks_empty(candidate)):
        return repaired, _cut_inside_string(candidate)
    raise LLMJSONError("no valid JSON list or object found in the answer", text)


def strip_reasoning(text: str) -> str:
    """Drop ``<think>...</think>`` blocks that reasoning models put before their answer."""
    return _THINK.sub("", text).strip()


def _looks_empty(candidate: str) -> bool:
    return re.fullmatch(r"\s*(\[\s*\]?|\{\s*\}?)\s*", candidate) is not None


def _cut_inside_string(candidate: str) -> bool:
    """True if the text stops inside a double-quoted string (an odd count of bare quotes)."""
    quotes = len(re.findall(r'(?<!\\)"', candidate))
    return quotes % 2 == 1


def parse_object(text: str) -> dict[str, Any]:
    """One JSON object from a model answer (a list holding one object is unwrapped)."""
    value, _cut = _load(text)
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if not isinstance(value, dict):
        raise LLMJSONError("the answer is not a JSON object", text)
    return value
