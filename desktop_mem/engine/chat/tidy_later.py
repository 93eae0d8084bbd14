"""Stale facts the user's own later words made untrue, for tidy-up to update (or retire).

The write path reads each message once, with a few recent turns, and it can miss a change: in the
long-use replay (docs/benchmarks.md) "Noor turned 6 last week!" was written as an ADD beside "Noor
is 5", "I switched from tea to coffee" stored nothing (told-as-true odds 0.097), and "We moved, we
live in Leuven now." left "The user lives in Ghent with partner Tomas" live. No newer *fact*
contradicts those, so tidy-up's pairs never see them; the user's later *turn* does.

So each live fact is read against the two user turns said after it that are closest to it by
meaning (the stored vectors): the model says whether the message makes the fact untrue, and what
holds now. What the model may do is bounded by language-free checks:

- the turn is the user's, said after the fact, where the fact can be read (its conversation, or
  any for the user's own scope), and not the turn the fact was taken from;
- the turn is at least LATER_SIMILARITY alike (closest pairs first, MAX_LATER model calls a run);
- the message names the person the fact is about when that is someone else, and shares a word
  with the fact (or with what holds now) that few of the user's messages hold;
- what holds now is about the same person, names no name or number that neither the fact nor
  the message says, holds at most MAX_UNSAID other words neither of them holds, and is neither
  the fact again nor the fact with words added (negated: "The user is no longer learning
  Spanish.", or dressed up: "The user has a cat named Pixel and the mouse is gone."); without
  such a text nothing is proposed (a message that only ends a fact is a forget, and the write
  path's);
- asked as two facts (tidy-up's pair question), the old fact and what holds now contradict each
  other: the model's "changed" alone is not trusted;
- when a live fact already says what holds now, the stale one is retired in its favour
  (``replaced_by``), not rewritten into a second copy.

Each finding is a review proposal like any other: an UPDATE (what holds now; the old fact
tombstoned with ``replaced_by``) or a DELETE in favour of the live fact, restorable on the Timeline.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from desktop_mem.engine.chat import fact_guards
from desktop_mem.engine.chat.fact_types import ChatModel
from desktop_mem.engine.chat.fact_words import WORD, fold_word, names_and_numbers, words_of
from desktop_mem.engine.chat.tidy_findings import (
    MERGE_SIMILARITY,
    Finding,
    Stepper,
    TidySource,
    ask,
    compare,
    sources,
    unit_rows,
)
from desktop_mem.engine.chat.understanding import CLAUSE_BREAK
from desktop_mem.engine.models import GLOBAL_CONVERSATION, Memory, Role
from desktop_mem.engine.store.transaction import clip

log = logging.getLogger(__name__)

# e5-small-v2 cosines between a fact and the later message that changed it, on the long-use
# story (benchmarks/tidy_later.py, docs/benchmarks.md)
LATER_SIMILARITY = 0.77
PER_FACT = 2  # the later turns read per fact, closest first
MAX_LATER = 80
MAX_UNSAID = 2  # words of "what holds now" that neither the fact nor the message holds
REASON = "the user said otherwise later"
_BLOCK = 256

LATER_SCHEMA: Mapping[str, Any] = {"name": "later", "schema": {
    "type": "object",
    "properties": {"changed": {"type": "boolean"}, "now": {"type": "string"}},
    "required": ["changed", "now"],
}}

_LATER_PROMPT = (
    "You keep a memory of facts about a user. FACT was stored earlier; MESSAGE is what the user "
    "wrote later. Does MESSAGE say that FACT is no longer true (for example the user moved, "
    "changed jobs, switched to something else, stopped or sold something, or someone is older "
    "now)? Answer \"changed\": true only then; a message that adds something new or talks about "
    "something else leaves FACT true.\n"
    "If true, write in \"now\" one short fact that holds after MESSAGE, in FACT's language and "
    "style, using only names and numbers from FACT and MESSAGE (empty if nothing replaces FACT).\n"
    "Answer with JSON only: {\"changed\": true or false, \"now\": \"...\"}"
)


def said_later(source: TidySource, model: ChatModel, facts: Sequence[Memory], step: Stepper
               ) -> list[Finding]:
    """Facts a later user turn made untrue: updated to what holds now, or retired in favour of a
    live fact that already says it."""
    turns = user_turns(source)
    candidates = later_pairs(source, facts, turns)[:MAX_LATER]
    rare = _rare_words(turns)
    found: list[Finding] = []
    for n, (_sim, fact, turn) in enumerate(candidates):
        step("reading later messages", n, len(candidates))
        user = f"FACT (stored {fact.created_at.date().isoformat()}): {fact.text}\n" \
               f"MESSAGE (written {turn.created_at.date().isoformat()}): {turn.text}"
        answer = ask(model, _LATER_PROMPT, user, LATER_SCHEMA, 100)
        if answer.get("changed") is not True:
            continue
        now = _whom_kept(fact.text, fact_guards.as_user_subject(str(answer.get("now") or "").strip()))
        if not now or not _holds_now(fact, turn, now):
            # nothing the checks can hold the model to: the fact stays ("The user has a cat named
            # Pixel and the mouse is gone." from "Pixel caught a mouse, gross." would have retired
            # the cat); a forget is the write path's, when it is said
            log.info("tidy-up: %r kept: the model's %r is not what holds now", fact.text, now)
            continue
        if not _speaks_of(fact, turn, now, rare):
            log.info("tidy-up: %r not retired: %r does not speak of it", fact.text, turn.text)
            continue
        # the model's "changed" alone is not enough (a 1.5B model reads "We adopted a dog named
        # Bram!" as changing "The user has a cat named Pixel"): asked as two facts, the old one and
        # what holds now must contradict each other
        if compare(model, fact.text, now)[0] != "contradicts":
            log.info("tidy-up: %r not retired: %r does not contradict it", fact.text, now)
            continue
        why = f"{REASON}: \u201c{clip(turn.text, 70)}\u201d ({turn.created_at.date().isoformat()})"
        held = _already_held(source, now, facts, fact)
        found.append(Finding("stale", why, fact.conversation_id, (fact,),
                             text=None if held else now, replaced_by=held,
                             sources=(*sources(fact), turn.id)))
    return found


def user_turns(source: TidySource) -> list[Memory]:
    return [t for t in source.list_memories(role=Role.USER) if not t.deleted and t.text.strip()]


def later_pairs(source: TidySource, facts: Sequence[Memory], turns: Sequence[Memory]
                ) -> list[tuple[float, Memory, Memory]]:
    """(cosine, fact, later user turn): each fact's PER_FACT closest later turns at least
    LATER_SIMILARITY alike, closest first."""
    if not facts or not turns:
        return []
    vectors = source.vectors([*facts, *turns])
    have_f = [m for m in facts if m.id in vectors]
    have_t = [t for t in turns if t.id in vectors]
    if not have_f or not have_t:
        return []
    f_mat = unit_rows(np.stack([vectors[m.id] for m in have_f]))
    t_mat = unit_rows(np.stack([vectors[t.id] for t in have_t]))
    t_conv = np.array([t.conversation_id for t in have_t])
    t_when = np.array([t.created_at.timestamp() for t in have_t])
    out: list[tuple[float, Memory, Memory]] = []
    for start in range(0, len(have_f), _BLOCK):  # blocks: 10k facts x 50k turns is never one matrix
        block = have_f[start:start + _BLOCK]
        sims_block = f_mat[start:start + _BLOCK] @ t_mat.T
        for i, fact in enumerate(block):
            sims = sims_block[i]
            allowed = (t_when > fact.created_at.timestamp()) & (sims >= LATER_SIMILARITY)
            if fact.conversation_id != GLOBAL_CONVERSATION:
                allowed &= t_conv == fact.conversation_id
            near = np.nonzero(allowed)[0]
            own = set(sources(fact))
            if len(near) > PER_FACT + len(own):  # the few closest, without sorting thousands
                near = near[np.argpartition(-sims[near], PER_FACT + len(own))[:PER_FACT + len(own) + 1]]
            picked = [j for j in near[np.argsort(-sims[near])] if have_t[j].id not in own][:PER_FACT]
            out += [(float(sims[j]), fact, have_t[j]) for j in picked]
    out.sort(key=lambda p: -p[0])
    return out


def _rare_words(turns: Sequence[Memory]) -> Callable[[str], bool]:
    """Whether a word is rare among the user's turns (in at most a tenth of them, and in no more
    than three when there are few): what a message shares with a fact must be more than the
    words every message holds, in whatever language they are."""
    counts = Counter(w for t in turns for w in words_of(t.text))
    most = max(3, len(turns) // 10)
    return lambda word: counts[word] <= most


def _speaks_of(fact: Memory, turn: Memory, now: str, rare: Callable[[str], bool]) -> bool:
    """The message names the person the fact is about, when it is someone else ("We moved, we live
    in Leuven now." says nothing of "The user's brother Jonas lives in Antwerp."), and shares a
    rare word with the fact or with what the model says holds now beyond the fact ("Yeah." was
    read as "The user has stopped cycling.")."""
    said = words_of(turn.text)
    person = fact_guards.named_person(fact.text)
    if person and not any(fold_word(w) in said for w in WORD.findall(person)):
        return False
    new = words_of(now) - words_of(fact.text)
    return any(rare(w) for w in said & (words_of(fact.text) | new))


def _whom_kept(fact: str, now: str) -> str:
    """What holds now, saying whom it is about as the fact did: "Noor is now 6." for "The user's
    daughter Noor is 5." becomes "The user's daughter Noor is now 6." (the update would otherwise
    lose that Noor is the user's daughter)."""
    phrase, name = fact_guards.subject_phrase(fact)
    first = now.split(maxsplit=1)
    if name and first and first[0].casefold() == name and not now.casefold().startswith(phrase.casefold()):
        return f"{phrase} {first[1]}" if len(first) > 1 else now
    return now


def _holds_now(fact: Memory, turn: Memory, now: str) -> bool:
    """The model's "now" is a fact about the same person, grounded in the fact and the message,
    and neither the old fact again nor the old fact with words added."""
    said = words_of(fact.text) | words_of(turn.text)
    # more than a word or two that neither the fact nor the message holds is the model's own:
    # "The user now drives a new electric bike." from "I sold the Volvo, we cycle everywhere now."
    # every word of the fact kept, words added: the fact negated ("The user is no longer learning
    # Spanish.") or dressed up ("... and the mouse is gone."), not what holds now
    return (not words_of(fact.text) <= words_of(now)
            and not _claim_kept(fact.text, now)
            and names_and_numbers(now) <= names_and_numbers(fact.text) | said
            and len(words_of(now) - said) <= MAX_UNSAID
            and fact_guards.same_person(fact.text, now)
            and not fact_guards.written_as_no_fact(now))


def _claim_kept(fact: str, now: str) -> bool:
    """Whether ``now`` keeps the fact's first clause whole (a clause ends at a comma or semicolon
    in any script): the fact with its tail swapped for the message's words, not what holds now.
    The 150-turn replay proposed "The user is allergic to peanuts, so keep that in mind for
    recipes." -> "The user is allergic to peanuts and need caffeine now." from "I switched from tea
    to coffee, I need the caffeine now."."""
    head = CLAUSE_BREAK.split(fact, maxsplit=1)[0]
    return head != fact and len(words_of(head)) >= 3 and words_of(head) <= words_of(now)


def _already_held(source: TidySource, text: str, facts: Sequence[Memory], stale: Memory) -> Memory | None:
    """A live fact (other than the stale one) that already says `text`, by meaning."""
    others = [m for m in facts if m.id != stale.id and (
        m.conversation_id == stale.conversation_id or GLOBAL_CONVERSATION in (m.conversation_id,
                                                                              stale.conversation_id))]
    vectors = source.vectors(others)
    have = [m for m in others if m.id in vectors]
    if not have:
        return None
    new = unit_rows(source.embed([text]))[0]
    sims = unit_rows(np.stack([vectors[m.id] for m in have])) @ new
    best = int(np.argmax(sims))
    return have[best] if float(sims[best]) >= MERGE_SIMILARITY else None
