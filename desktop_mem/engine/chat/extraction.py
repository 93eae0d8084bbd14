"""The LLM steps of the write path: fact extraction, reconciliation and the rolling summary.

Pure functions over a chat model; nothing here touches the store. Every step degrades instead of
failing: extraction falls back to pattern rules, reconciliation to adding the new facts, and the
summary to "keep the old one", each with an ``error`` text the caller can show.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, cast

from desktop_mem.engine.chat import prompts
from desktop_mem.engine.chat.llm_client import LLMError
from desktop_mem.engine.chat.llm_json import (
    LLMJSONError,
    RawDecision,
    parse_decisions,
    parse_string_list,
    strip_reasoning,
)

FactKind = Literal["fact", "preference", "context"]
FactSource = Literal["llm", "pattern"]
Event = Literal["ADD", "UPDATE", "DELETE", "NONE"]

MAX_FACTS = 3
MAX_FACT_CHARS = 500
MAX_SUMMARY_CHARS = 8000
# Small local models have small context windows; longer inputs are cut, not sent whole.
MAX_MESSAGE_CHARS = 4000
MAX_MATERIAL_ITEM_CHARS = 2000


class ChatModel(Protocol):
    """What these functions need from an LLM client (``LLMClient`` fits)."""

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> str: ...


@dataclass(frozen=True)
class ExtractedFact:
    """One fact about the user, in the third person, with how it was found."""

    text: str
    kind: FactKind
    source: FactSource


@dataclass(frozen=True)
class ExtractionResult:
    """Facts found in a user message; ``error`` is set when the LLM step failed."""

    facts: tuple[ExtractedFact, ...]
    error: str | None = None


@dataclass(frozen=True)
class Decision:
    """What to do with memory: ADD ``text``; UPDATE/DELETE/NONE the memory ``target_id``."""

    event: Event
    text: str
    target_id: str | None


@dataclass(frozen=True)
class ReconcileResult:
    """Decisions to apply; ``error`` is set when the LLM step failed (then all facts are ADDed)."""

    decisions: tuple[Decision, ...]
    error: str | None = None


@dataclass(frozen=True)
class SummaryResult:
    """The new summary, or None to keep the old one (with ``error`` saying why, if it failed)."""

    text: str | None
    error: str | None = None


# -- fact extraction -------------------------------------------------------------------------


def extract_facts(llm: ChatModel, user_message: str) -> ExtractionResult:
    """0-3 facts from the latest user message; pattern rules if the LLM step fails."""
    message = user_message.strip()
    if not message or _only_questions(message):
        # Small models answer a pure question ("Where do I live?") with an invented fact
        # ("The user lives in a city"); a question states nothing about the user.
        return ExtractionResult(())
    messages = [
        {"role": "system", "content": prompts.FACT_SYSTEM_PROMPT},
        {"role": "user", "content": prompts.FACT_USER_TEMPLATE.format(message=message[:MAX_MESSAGE_CHARS])},
    ]
    try:
        answer = llm.complete(messages, temperature=0.0, max_tokens=300)
        texts = parse_string_list(answer, max_items=10)
    except (LLMError, LLMJSONError) as err:
        problem = (
            f"Fact extraction by the LLM failed: {err.message}"
            if isinstance(err, LLMError)
            else f"The LLM's fact list could not be read ({err})."
        )
        return ExtractionResult(pattern_facts(message), f"{problem} Simple pattern rules were used instead.")
    facts: list[ExtractedFact] = []
    seen: set[str] = set()
    lowered = message.casefold()
    for text in texts:
        clean = text.strip().strip("\"'")
        if not clean or len(clean) > MAX_FACT_CHARS or _fold(clean) in seen:
            continue
        keyword = prompts.EXAMPLE_FACTS.get(clean)
        if keyword is not None and keyword not in lowered:
            continue  # a copied prompt example, not something the user said
        seen.add(_fold(clean))
        facts.append(ExtractedFact(clean, kind_of(clean), "llm"))
    return ExtractionResult(tuple(facts[:MAX_FACTS]))


def _only_questions(message: str) -> bool:
    """True when every sentence of the message is a question."""
    sentences = [x for x in _SENTENCES.split(message.strip()) if x.strip()]
    return bool(sentences) and all(x.rstrip().endswith("?") for x in sentences)


_PREFERENCE = re.compile(
    r"\b(likes?|loves?|enjoys?|prefers?|hates?|dislikes?|favou?rite|fan of|can't stand)\b", re.I
)
_CONTEXT = re.compile(
    r"\b(currently|right now|at the moment|today|tonight|tomorrow|this (week|weekend|month))\b", re.I
)


def kind_of(text: str) -> FactKind:
    """Classify a third-person fact as preference, short-lived context or plain fact."""
    if _PREFERENCE.search(text):
        return "preference"
    if _CONTEXT.search(text):
        return "context"
    return "fact"


# -- pattern rules (002): used when no LLM answers ---------------------------------------------

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
            if fact is not None and _fold(fact.text) not in seen:
                seen.add(_fold(fact.text))
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
        return ExtractedFact(template.format(**parts), kind, "pattern")
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


# -- reconciliation ----------------------------------------------------------------------------


def reconcile(
    llm: ChatModel, new_facts: Sequence[str], existing: Sequence[tuple[str, str]]
) -> ReconcileResult:
    """Decide ADD/UPDATE/DELETE/NONE for ``new_facts`` against ``existing`` (id, text) memories."""
    facts = _unique_clean(new_facts)
    if not facts:
        return ReconcileResult(())
    if not existing:
        return ReconcileResult(tuple(Decision("ADD", f, None) for f in facts))
    texts = {real_id: text for real_id, text in existing}
    short_ids = {str(i): real_id for i, (real_id, _text) in enumerate(existing)}
    shown = [{"id": str(i), "text": text} for i, (_id, text) in enumerate(existing)]
    user = prompts.UPDATE_MEMORY_USER_TEMPLATE.format(
        existing=json.dumps(shown, ensure_ascii=False), new_facts=json.dumps(facts, ensure_ascii=False)
    )
    messages = [
        {"role": "system", "content": prompts.UPDATE_MEMORY_PROMPT},
        {"role": "user", "content": user},
    ]
    try:
        raw = parse_decisions(llm.complete(messages, temperature=0.0, max_tokens=600))
    except (LLMError, LLMJSONError) as err:
        detail = err.message if isinstance(err, LLMError) else str(err)
        return ReconcileResult(
            tuple(Decision("ADD", f, None) for f in facts),
            f"Memory reconciliation failed ({detail}); the new facts were added as they are.",
        )
    return ReconcileResult(_resolve(raw, facts, short_ids, texts))


def _resolve(
    raw: list[RawDecision], facts: list[str], short_ids: dict[str, str], texts: dict[str, str]
) -> tuple[Decision, ...]:
    """Map short ids back, drop invalid decisions, and keep new facts from being lost."""
    out: list[Decision] = []
    targeted: set[str] = set()
    written: set[str] = set()  # folded texts of ADDs and UPDATEs, to drop repeats
    for item in raw:
        event, text = item["event"], _clean(item["text"])
        target = _target(item["id"], short_ids, texts)
        if event == "ADD" or (event == "UPDATE" and target is None):
            # An UPDATE of an unknown id still carries a fact worth keeping.
            if text and len(text) <= MAX_FACT_CHARS and _fold(text) not in written:
                written.add(_fold(text))
                out.append(Decision("ADD", text, None))
            continue
        if target is None or target in targeted:
            continue  # unknown id, or a second decision about the same memory (first wins)
        if event == "UPDATE":
            if not text or len(text) > MAX_FACT_CHARS or _fold(text) in written:
                continue
            if _fold(text) == _fold(texts[target]):
                event, text = "NONE", texts[target]
            else:
                written.add(_fold(text))
        else:
            text = texts[target]
        targeted.add(target)
        out.append(Decision(cast(Event, event), text, target))
    if not any(d.event in ("ADD", "UPDATE") for d in out) and (
        not out or any(d.event == "DELETE" for d in out)
    ):
        # Deletes alone (or no usable decision) must not lose what the user just said.
        out.extend(Decision("ADD", f, None) for f in facts if _fold(f) not in written)
    # An ADD that repeats a memory which stays untouched would only duplicate it.
    changed = {d.target_id for d in out if d.event in ("UPDATE", "DELETE")}
    kept = {_fold(t) for memory_id, t in texts.items() if memory_id not in changed}
    return tuple(d for d in out if d.event != "ADD" or _fold(d.text) not in kept)


def _target(raw_id: str | None, short_ids: dict[str, str], texts: dict[str, str]) -> str | None:
    if raw_id is None:
        return None
    key = raw_id.strip().strip("[]#\"'")
    if key in short_ids:
        return short_ids[key]
    return key if key in texts else None  # a model may echo a real id


# -- rolling summary ---------------------------------------------------------------------------


_FENCED = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_HEADING = re.compile(r"^[#*\s]*(?:(?:updated|new|current)\s+)?summary[* \t]*(?::[* \t]*\n?|\n)", re.I)


def update_summary(llm: ChatModel, previous: str | None, new_material: Sequence[str]) -> SummaryResult:
    """The running summary updated with ``new_material``; text None means keep the old one."""
    material = [_clean(m)[:MAX_MATERIAL_ITEM_CHARS] for m in new_material if m and m.strip()]
    if not material:
        return SummaryResult(None)
    user = prompts.SUMMARY_USER_TEMPLATE.format(
        previous=(previous or "").strip()[:MAX_SUMMARY_CHARS] or "(empty)",
        material="\n".join(f"- {m}" for m in material),
    )
    messages = [
        {"role": "system", "content": prompts.SUMMARY_PROMPT},
        {"role": "user", "content": user},
    ]
    try:
        answer = llm.complete(messages, temperature=0.2, max_tokens=700)
    except LLMError as err:
        return SummaryResult(None, f"The summary was not updated: {err.message}")
    text = strip_reasoning(answer)
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1).strip()
    text = _HEADING.sub("", text, count=1).strip()
    if not text:
        return SummaryResult(None, "The summary was not updated: the model gave an empty answer.")
    if len(text) > MAX_SUMMARY_CHARS:
        return SummaryResult(
            None,
            f"The summary was not updated: the model's answer is {len(text)} characters, over the "
            f"{MAX_SUMMARY_CHARS} limit. The previous summary was kept.",
        )
    return SummaryResult(text)


# -- small helpers -----------------------------------------------------------------------------


def _clean(text: str) -> str:
    return " ".join(text.split())


def _fold(text: str) -> str:
    return _clean(text).rstrip(".").casefold()


def _unique_clean(items: Sequence[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        clean = _clean(item)
        if clean and len(clean) <= MAX_FACT_CHARS and _fold(clean) not in seen:
            seen.add(_fold(clean))
            out.append(clean)
    return out
