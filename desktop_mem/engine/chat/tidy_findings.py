"""What tidy-up finds among the live facts (chat/tidy.py turns each into a review proposal).

Duplicates and contradictions: vectors find the pairs, the model says which (a merge that would
lose a name or number, or whose text is not close to each fact it replaces, is not proposed);
junk: tidy_junk.py; stale: expired, or past `memory.max_entries`; gaps: a summary sentence no
live fact holds. Language-free rules (vectors, names and numbers in any script, dates) with the
model's reading; no word lists.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from typing_extensions import Unpack

from desktop_mem.engine.chat import fact_guards
from desktop_mem.engine.chat.currency import FROM_TURNS
from desktop_mem.engine.chat.fact_types import ChatModel
from desktop_mem.engine.chat.fact_words import names_and_numbers, words_of
from desktop_mem.engine.chat.llm_json import LLMJSONError, parse_object
from desktop_mem.engine.chat.understanding import ABOUT_USER
from desktop_mem.engine.config import Config
from desktop_mem.engine.index import relative_dates
from desktop_mem.engine.models import GLOBAL_CONVERSATION, ListFilters, Memory, Message, Role, utc_now
from desktop_mem.engine.store.ports import Writer
from desktop_mem.engine.store.transaction import clip

log = logging.getLogger(__name__)

# e5-small-v2 cosines over labelled pairs in four languages (benchmarks/tidy_pairs.py,
# docs/benchmarks.md): one fact in other words 0.93-0.99, a fact and its contradiction
# 0.87-0.94, two facts of one person 0.72-0.89.
PAIR_SIMILARITY = 0.86  # a pair the model is asked about
# A merge is proposed only when what stays is at least this close to every fact merged into it:
# above every "two facts of one person" pair measured (max 0.891), below every "one fact in other
# words" pair (min 0.930). A small model calls "The user is Ilse" and "The user is vegetarian"
# (0.863) the same; names and numbers cannot tell, as "vegetarian" is neither.
MERGE_SIMILARITY = 0.90
LIKELY_DUPLICATE = 0.95  # counted as a likely duplicate by the health view (no model)
GAP_SIMILARITY = 0.84  # a summary sentence no live fact reaches this closely is a gap candidate
MAX_PAIRS = 60  # model calls per run for pairs; the closest first
MAX_GAPS = 12
MAX_FILE_BYTES = 256 * 1024
_BLOCK = 512

Progress = Callable[[str, int, int], None]  # (step, done, total)

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")

class TidySource(Protocol):
    """What tidy-up reads and writes through (compose.py builds it from the parts)."""

    @property
    def config(self) -> Config: ...
    @property
    def root(self) -> Path: ...
    @property
    def writer(self) -> Writer: ...

    def list_memories(self, **filters: Unpack[ListFilters]) -> list[Memory]: ...
    def lookup(self, memory_id: str) -> Memory | None: ...
    def vectors(self, memories: Sequence[Memory]) -> dict[str, npt.NDArray[np.float32]]: ...
    def index_open(self) -> bool: ...
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...

class Cancelled(Exception):
    """The user cancelled a tidy-up run; nothing was proposed."""

@dataclass(frozen=True)
class Finding:
    """One thing tidy-up would change, with why and where it came from."""

    kind: str  # "duplicate" | "junk" | "stale" | "gap"
    reason: str
    conversation_id: str
    targets: tuple[Memory, ...] = ()  # the facts it changes (a duplicate: the kept one first)
    text: str | None = None  # merged text (duplicate), the new fact (gap), what holds now (stale)
    replaced_by: Memory | None = None  # stale: the newer fact that holds now
    sources: tuple[str, ...] = ()  # the turns the facts came from

    @property
    def signature(self) -> str:
        """Stable across runs: a rejected finding is recognised by it and not proposed again."""
        parts = [self.kind, *sorted(m.id for m in self.targets), self.text or "",
                 self.replaced_by.id if self.replaced_by else ""]
        return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:20]

    def describe(self) -> str:
        if self.kind == "duplicate":
            return f"Merge {len(self.targets)} duplicates → {clip(self.text or '', 90)} ({self.reason})"
        if self.kind == "gap":
            return f"Add {clip(self.text or '', 100)} ({self.reason})"
        if self.kind in ("stale", "junk") and self.text:
            return f"Update {clip(self.targets[0].text, 60)} → {clip(self.text, 60)} ({self.reason})"
        if self.kind == "stale" and self.replaced_by is not None:
            return (f"Retire {clip(self.targets[0].text, 60)} (now: {clip(self.replaced_by.text, 60)}; "
                    f"{self.reason})")
        if self.kind == "stale":
            return f"Retire {clip(self.targets[0].text, 90)} ({self.reason})"
        return f"Drop {clip(self.targets[0].text, 90)} ({self.reason})"

class LLMError(Exception):
    """The model could not be asked (unreachable, or its answer held no JSON)."""


class Stepper:
    """Reports a step's progress, and stops the run once the user cancelled."""

    def __init__(self, progress: Progress | None, cancelled: Callable[[], bool]) -> None:
        self._progress, self._cancelled = progress, cancelled

    def __call__(self, what: str, done: int, total: int) -> None:
        if self._cancelled():
            raise Cancelled("tidy-up cancelled; nothing was proposed")
        if self._progress is not None:
            self._progress(what, done, total)

def live_facts(source: TidySource) -> list[Memory]:
    return [m for m in source.list_memories(role=Role.MEMORY, include_summaries=False) if not m.deleted]


def expired(facts: Sequence[Memory]) -> list[Finding]:
    now = utc_now()
    return [Finding("stale", f"expired on {m.expires_at.date().isoformat() if m.expires_at else '?'}",
                    m.conversation_id, (m,), sources=sources(m))
            for m in facts if m.expired(now)]


def passed(facts: Sequence[Memory]) -> list[Finding]:
    """A model-made fact told as holding for the day, week, month or year it was said in, once
    that time has passed: "The user is tired today.", "The user is on holiday in the Ardennes this
    week." (the time words are read by dateparser's data for each language it reads; no word list
    here). A plan ("moving to Leuven next month") is not proposed this way: it may have come true,
    which only a later message tells (tidy_later)."""
    now = datetime.now()  # local, as relative_dates counts
    found: list[Finding] = []
    for m in facts:
        if m.source not in ("llm", "pattern") or m.expired():
            continue
        said = m.created_at.astimezone().replace(tzinfo=None)
        spans = [(end, written) for start, end, written in relative_dates.periods(m.text, m.created_at)
                 if start <= said < end]
        if spans and all(end <= now for end, _written in spans):
            when = ", ".join(dict.fromkeys(written for _end, written in spans))
            found.append(Finding("stale", f"told of {when} only, which has passed", m.conversation_id, (m,),
                                 sources=sources(m)))
    return found


def over_limit(source: TidySource, facts: Sequence[Memory]) -> list[Finding]:
    """Eviction never drops facts (apply_plan._evict): a chat holding more than
    `memory.max_entries` facts gets its oldest ones proposed here instead, for the user to decide."""
    limit = int(source.config["memory.max_entries"])
    by_conv: dict[str, list[Memory]] = {}
    for m in facts:
        by_conv.setdefault(m.conversation_id, []).append(m)
    found: list[Finding] = []
    for conv, mine in by_conv.items():
        mine.sort(key=lambda m: (m.created_at, m.path))
        found += [Finding("stale", f"the oldest beyond memory.max_entries ({limit})", conv, (m,),
                          sources=sources(m)) for m in mine[:max(len(mine) - limit, 0)]]
    return [f for f in found if not f.targets[0].expired()]  # an expired one is proposed as such


def sources(*memories: Memory) -> tuple[str, ...]:
    out: list[str] = []
    for m in memories:
        turns = m.extra.get(FROM_TURNS)
        if isinstance(turns, list):
            out += [str(t) for t in turns if isinstance(t, str)]
    return tuple(dict.fromkeys(out))


def _shared_scope(a: Memory, b: Memory) -> bool:
    """Facts that can say the same thing: one conversation, or either of them the user's own."""
    return a.conversation_id == b.conversation_id or GLOBAL_CONVERSATION in (
        a.conversation_id, b.conversation_id)


def unit_rows(matrix: npt.NDArray[Any]) -> npt.NDArray[np.float32]:
    """Each row scaled to length 1 (a zero row stays zero): dot products are then cosines."""
    m = matrix.astype(np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return (m / np.where(norms == 0, 1, norms)).astype(np.float32)


def similar_pairs(source: TidySource, facts: Sequence[Memory], threshold: float
                   ) -> list[tuple[float, Memory, Memory]]:
    """Pairs of facts at least `threshold` alike by their stored vectors, closest first."""
    vectors = source.vectors(facts)
    have = [m for m in facts if m.id in vectors]
    if len(have) < 2:
        return []
    matrix = unit_rows(np.stack([vectors[m.id] for m in have]))
    pairs: list[tuple[float, Memory, Memory]] = []
    for start in range(0, len(have), _BLOCK):  # blocks: 10k facts never make a 10k x 10k matrix
        sims = matrix[start:start + _BLOCK] @ matrix.T
        rows, cols = np.nonzero(sims >= threshold)
        pairs += [(float(sims[i, j]), have[start + i], have[j]) for i, j in zip(rows, cols, strict=True)
                  if start + i < j and _shared_scope(have[start + i], have[j])]
    pairs.sort(key=lambda p: -p[0])
    return pairs


PAIR_SCHEMA: Mapping[str, Any] = {"name": "pair", "schema": {
    "type": "object",
    "properties": {
        "relation": {"type": "string", "enum": ["same", "contradicts", "different"]},
        "merged": {"type": "string"},
    },
    "required": ["relation", "merged"],
}}

_PAIR_PROMPT = (
    "You keep a memory of facts about a user. Compare fact A and fact B.\n"
    "- \"same\": they say the same thing (other words, or one adds a detail to the other).\n"
    "- \"contradicts\": they are about the same thing but cannot both be true now "
    "(a value changed).\n"
    "- \"different\": anything else.\n"
    "For \"same\", write in \"merged\" one short fact that says everything both say, in the facts' "
    "own language and words; otherwise leave \"merged\" empty.\n"
    "Answer with JSON only: {\"relation\": ..., \"merged\": ...}."
)


def ask(model: ChatModel, system: str, user: str, schema: Mapping[str, Any],
         max_tokens: int) -> dict[str, Any]:
    messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    try:
        answer = model.complete(messages, temperature=0.0, max_tokens=max_tokens, json_schema=schema)
        return parse_object(answer)
    except LLMJSONError as exc:
        log.info("tidy-up: an unusable answer: %s", exc)
        return {}
    except Exception as exc:  # the client's own errors (unreachable, HTTP): one clear line up
        raise LLMError(f"the memory model could not be asked: {exc}") from exc


def compare(model: ChatModel, a: str, b: str) -> tuple[str, str]:
    """The model's relation of two facts ("same", "contradicts", "different"; "" unusable) and,
    for "same", their merged text."""
    answer = ask(model, _PAIR_PROMPT, f"A: {a}\nB: {b}", PAIR_SCHEMA, 120)
    return str(answer.get("relation", "")).strip().lower(), str(answer.get("merged") or "").strip()


def pairs(source: TidySource, model: ChatModel, facts: Sequence[Memory], step: Stepper) -> list[Finding]:
    """Duplicates (merged) and contradictions (the older retired), confirmed by the model."""
    pairs = similar_pairs(source, facts, PAIR_SIMILARITY)[:MAX_PAIRS]
    parent: dict[str, str] = {}
    merged_text: dict[frozenset[str], str] = {}
    by_id = {m.id: m for m in facts}
    stale: list[Finding] = []
    retired: set[str] = set()

    def root(x: str) -> str:
        return _root(parent, x)

    for n, (_sim, a, b) in enumerate(pairs):
        step("comparing similar facts", n, len(pairs))
        if a.id in retired or b.id in retired:
            continue
        relation, merged = compare(model, a.text, b.text)
        if relation == "same":
            ra, rb = root(a.id), root(b.id)
            if ra != rb:
                parent[rb] = ra
            if merged:
                merged_text[frozenset((a.id, b.id))] = merged
        elif relation == "contradicts" and a.conversation_id == b.conversation_id:
            older, newer = sorted((a, b), key=_when)
            # (same instant: no way to tell which holds) and the write path's rule for an UPDATE:
            # the same person and a shared word or topic ("The user is Ilse" was retired for a
            # newer fact about something else)
            if _when(older) < _when(newer) and fact_guards.same_topic(older.text, newer.text):
                retired.add(older.id)
                stale.append(Finding("stale", "contradicted by a newer fact", older.conversation_id,
                                     (older,), replaced_by=newer, sources=sources(older, newer)))
    groups: dict[str, list[Memory]] = {}
    for fid in list(parent) + list(parent.values()):
        if fid in retired:
            continue
        groups.setdefault(root(fid), [])
        if by_id[fid] not in groups[root(fid)]:
            groups[root(fid)].append(by_id[fid])
    found: list[Finding] = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=_when, reverse=True)  # the newest is kept (and rewritten if merged)
        text = _grounded_merge(members, merged_text)
        if text is None or not _keeps_each(source, text, members):
            log.info("tidy-up: no merge of %s into %r: it would lose a name, a number or a meaning",
                     [m.text for m in members], text)
            continue
        conv = _group_scope(members)
        found.append(Finding("duplicate", "the same fact in other words", conv, tuple(members),
                             text=text, sources=sources(*members)))
    return found + stale


def _keeps_each(source: TidySource, text: str, members: Sequence[Memory]) -> bool:
    """`text` is at least MERGE_SIMILARITY close to every fact it would replace (cosine)."""
    vectors = source.vectors(members)
    if any(m.id not in vectors for m in members):
        return False  # a fact without its vector cannot be checked: not merged
    kept = source.embed([text])[0].astype(np.float32)
    kept /= float(np.linalg.norm(kept)) or 1.0
    for m in members:
        v = vectors[m.id].astype(np.float32)
        if float(kept @ v) / (float(np.linalg.norm(v)) or 1.0) < MERGE_SIMILARITY:
            return False
    return True


def _when(m: Memory) -> datetime:
    return m.created_at


def _group_scope(members: Sequence[Memory]) -> str:
    """Where the merged fact lives: the user's own scope when any member is the user's."""
    convs = {m.conversation_id for m in members}
    return GLOBAL_CONVERSATION if GLOBAL_CONVERSATION in convs else members[0].conversation_id


def _grounded_merge(members: Sequence[Memory], merged: Mapping[frozenset[str], str]) -> str | None:
    """The model's merged text when every name and number in it is in the originals and it keeps
    every name and number they hold (never a vaguer fact); else an original that holds them all;
    else None: no merge is proposed, since it would lose a name or number."""
    originals = set().union(*(names_and_numbers(m.text) for m in members))
    candidates = [t for ids, t in merged.items() if ids <= {m.id for m in members}]
    for text in sorted(candidates, key=len, reverse=True):
        names = names_and_numbers(text)
        if names <= originals and originals <= names | words_of(text):
            return text
    whole = [m for m in members if originals <= words_of(m.text)]
    return max(whole, key=lambda m: (len(names_and_numbers(m.text)), _when(m))).text if whole else None


GAP_SCHEMA: Mapping[str, Any] = {"name": "gap", "schema": {
    "type": "object",
    "properties": {"fact": {"type": "string"}},
    "required": ["fact"],
}}

_GAP_PROMPT = (
    "A sentence from the summary of a chat is below. If it states a lasting fact about the user "
    "or someone in their life, rewrite it as one short fact in the sentence's own language, using "
    "only its words and names. If it does not (it describes the chat, a question or a request), "
    "answer an empty fact. Answer with JSON only: {\"fact\": \"...\"}"
)


def gaps(source: TidySource, model: ChatModel, facts: Sequence[Memory], step: Stepper) -> list[Finding]:
    """Summary sentences no live fact holds (and no forgotten fact explains), as facts to add."""
    summaries = [m for m in source.list_memories(role=Role.SUMMARY) if not m.deleted and m.text.strip()]
    gone = [m for m in source.list_memories(role=Role.MEMORY, only_deleted=True)]
    found: list[Finding] = []
    for summary in summaries:
        conv = summary.conversation_id
        sentences = [s.strip() for s in _SENTENCE_END.split(summary.text) if len(s.strip()) > 12]
        if not sentences:
            continue
        near = [m.text for m in facts if m.conversation_id in (conv, GLOBAL_CONVERSATION)]
        near_gone = [m.text for m in gone if m.conversation_id in (conv, GLOBAL_CONVERSATION)]
        matrix = source.embed([*sentences, *near, *near_gone])
        s_vecs = matrix[:len(sentences)]
        held = matrix[len(sentences):len(sentences) + len(near)]
        forgotten = matrix[len(sentences) + len(near):]
        for i, sentence in enumerate(sentences):
            if len(found) >= MAX_GAPS:
                return found
            best = float((held @ s_vecs[i]).max()) if len(near) else 0.0
            best_gone = float((forgotten @ s_vecs[i]).max()) if len(near_gone) else 0.0
            if best >= GAP_SIMILARITY or best_gone >= GAP_SIMILARITY:
                continue  # a live fact holds it, or it speaks of something forgotten (not a gap)
            step("checking summaries", i, len(sentences))
            fact = str(ask(model, _GAP_PROMPT, sentence, GAP_SCHEMA, 80).get("fact") or "").strip()
            # the same form rules as a fact the write path stores: no question, request or what-if
            # ("If you win the lottery, you might buy a boat." was proposed from a joke)
            # and, as the write path files a fact, it is the user's ("The user ...") or names
            # what the summary names: "Draft a polite email asking landlord to fix heating." (the
            # long-use run, from a summary that told of the request) is neither
            if (fact and names_and_numbers(fact) <= names_and_numbers(sentence) | words_of(sentence)
                    and not fact_guards.written_as_no_fact(fact)
                    and (ABOUT_USER.match(fact)
                         or names_and_numbers(f"x {fact}") & names_and_numbers(sentence))):
                found.append(Finding("gap", "the summary says it; no live fact holds it", conv,
                                     (), text=fact, sources=(summary.id,)))
    return found

def _root(parent: Mapping[str, str], x: str) -> str:
    """Union-find: the group `x` belongs to."""
    while parent.get(x, x) != x:
        x = parent[x]
    return x


def clusters(pairs: Sequence[tuple[float, Memory, Memory]]) -> int:
    """How many groups the pairs join their facts into."""
    parent: dict[str, str] = {}
    for _s, a, b in pairs:
        ra, rb = _root(parent, a.id), _root(parent, b.id)
        if ra != rb:
            parent[rb] = ra
    return len({_root(parent, x) for _s, a, b in pairs for x in (a.id, b.id)})
