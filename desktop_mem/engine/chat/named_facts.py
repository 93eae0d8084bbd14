"""Which live facts a "forget ..." or a correction names: found by the read path, never by word
overlap.

The user's words ("what I told you about my job", "waar ik woon") are searched among the facts
that are true now with the read path (keywords, vectors, the cross-encoder). A fact whose
relevance reaches CLEAR is named; below that, facts from MAYBE up are what the user might mean
(the reply asks which, the write path changes nothing); below MAYBE nothing is named. The two
thresholds were measured (benchmarks/forget_match.py, docs/benchmarks.md "Finding what a forget
names"). A name or a number the phrase shares with exactly the facts that hold it (in any script)
counts as naming them: keywords know "Utrecht" in every language. The facts are written in the
model's language; the turns they were taken from are in the user's, and are searched too.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from desktop_mem.engine.chat.currency import from_turns
from desktop_mem.engine.chat.fact_guards import STOP
from desktop_mem.engine.chat.fact_types import ChatModel
from desktop_mem.engine.chat.fact_words import names_and_numbers, words_of
from desktop_mem.engine.chat.ports import Search
from desktop_mem.engine.chat.understanding import Understood, in_english, in_english_words
from desktop_mem.engine.index.retrieval import SearchFilters, SearchResult
from desktop_mem.engine.models import Memory

log = logging.getLogger(__name__)
CLEAR = 0.5  # cross-encoder relevance from which a fact is what the phrase names
MAYBE = 0.01  # from here up to CLEAR: what the phrase might name (asked about, never acted on)
GAP = 1.5  # log-odds below the best fact within which another fact is named too
CLEAR_DENSE = 0.86  # without a cross-encoder: the dense cosine that counts as named
MAYBE_DENSE = 0.80
GAP_DENSE = 0.0  # cosines are not log-odds: only the best (ties) is named by meaning alone
POOL = 8
TURN_POOL = 20  # the user's turns outnumber the facts: a wider pool for the cross-encoder
MAX_NAMED = 5


@dataclass(frozen=True)
class Named:
    """The facts a phrase names (``clear``) and, when none is clear, those it might (``maybe``)."""

    clear: tuple[Memory, ...] = ()
    maybe: tuple[Memory, ...] = ()


def find_named(search: Search, conversation_id: str, live: Sequence[Memory], phrases: Sequence[str]) -> Named:
    """The live facts ``phrases`` name (each phrase searched on its own, the clear ones of all
    phrases together); a broken index names nothing rather than guessing."""
    by_id = {m.id: m for m in live}
    clear: dict[str, Memory] = {}
    maybe: dict[str, Memory] = {}
    for phrase in phrases:
        if not phrase.strip() or not by_id:
            continue
        named = _named_by_names(phrase, live)
        hits, near = _picked(_search(search, conversation_id, phrase), by_id)
        for i in (named or hits):
            clear.setdefault(i, by_id[i])
        if not named and not hits:
            for i in near:
                maybe.setdefault(i, by_id[i])
    if clear:
        return Named(tuple(list(clear.values())[:MAX_NAMED]))
    return Named((), tuple(list(maybe.values())[:MAX_NAMED]))


def named_in_own_words(search: Search, live: Sequence[Memory], phrases: Sequence[str]) -> Named:
    """The live facts ``phrases`` name through the user's own words: the user turns the facts were
    taken from, searched with the same read path and thresholds. The facts are written in the
    model's language (English), the turns in the user's: "mijn konijn" finds "Ik heb een konijn
    dat Snuf heet." (cross-encoder 0.96) where neither keywords nor our vectors find "The user has
    a rabbit named Snuf", and the 1.5B model cannot translate it. A clear turn names its fact; a
    turn that gave several facts names none of them for sure (they are asked about)."""
    taken: dict[str, list[Memory]] = {}
    for m in live:
        for turn_id in from_turns(m):
            taken.setdefault(turn_id, []).append(m)
    clear: dict[str, Memory] = {}
    maybe: dict[str, Memory] = {}
    for phrase in phrases:
        if not phrase.strip() or not taken:
            continue
        results = _search(search, None, phrase, roles=("user",), pool=TURN_POOL)
        hits, near = _picked(results, taken)
        own = _own_words(phrase, [r for r in results if r.memory.id in taken])
        near += [i for i in hits if i not in own]
        for turn_id in (i for i in hits if i in own):
            facts = taken[turn_id]
            target = clear if len(facts) == 1 else maybe
            for m in facts:
                target.setdefault(m.id, m)
        if not any(i in own for i in hits):
            for turn_id in near:
                for m in taken[turn_id]:
                    maybe.setdefault(m.id, m)
    if clear:
        return Named(tuple(list(clear.values())[:MAX_NAMED]))
    return Named((), tuple(list(maybe.values())[:MAX_NAMED]))


def _own_words(phrase: str, turns: Sequence[SearchResult]) -> set[str]:
    """The ids of ``turns`` that hold a word of ``phrase`` no other of them holds. On text it was
    not trained for, the cross-encoder scores a shared function word: "mijn werk" reached 0.5 for
    "Mijn zoon Pieter is 6." (benchmarks/forget_match.py --own-words); a word only one turn of
    the pool has is what names it, in any language, with no word list. ``turns`` are those facts
    were taken from: the request itself, a turn too, says the word again and gave no fact."""
    wanted = words_of(phrase)
    held = [(r.memory.id, words_of(r.memory.text) & wanted) for r in turns]
    count = Counter(w for _id, words in held for w in words)
    return {i for i, words in held if any(count[w] == 1 for w in words)}


def _picked(results: Sequence[SearchResult], among: Mapping[str, object]) -> tuple[list[str], list[str]]:
    """(named, might be named): the ids among ``among`` whose relevance reaches CLEAR and lies
    within GAP of the best, and those from MAYBE up to CLEAR."""
    scored = [(relevance(r), r.memory.id) for r in results if r.memory.id in among]
    top = max((s[0] for s, _i in scored), default=0.0)
    # A cross-encoder scores "my son" 1.0 for the son and 0.995 for the daughter: only the
    # facts within GAP (in log-odds) of the best one are named by it.
    hits = [i for s, i in scored if s[0] >= s[1] and _logit(s[0]) >= _logit(top) - s[3]]
    near = [i for s, i in scored if s[2] <= s[0] < s[1]]
    return hits, near


def forget_named(
    search: Search, conversation_id: str, live: Sequence[Memory], understood: Understood, message: str,
    previous_user: str | None, llm: ChatModel | None,
) -> Named:
    """What the request to forget in ``message`` (as ``understood``) names among ``live``: its
    words searched, and when they are not in English (the facts' language) and find nothing
    clearly, their English (the model translates them) and the model's restatement."""
    translate = None if llm is None or in_english(understood, message) else (
        lambda phrases: in_english_words(llm, phrases))
    return forget_targets(search, conversation_id, live, understood.forget or (), previous_user,
                          understood.restated, translate, message)


def forget_targets(
    search: Search, conversation_id: str, live: Sequence[Memory], phrases: Sequence[str],
    previous_user: str | None, restated: Sequence[str] = (),
    translate: Callable[[Sequence[str]], list[str]] | None = None, message: str = "",
) -> Named:
    """What a request to forget names (``phrases``: what the model read it names, in the user's
    words). "Forget that" (nothing named) means the facts the previous user message
    (``previous_user``, its turn id) stored. Words in another language than the facts' find
    nothing by keywords and little by our vectors (a Dutch "konijn" against the English "has a
    rabbit named Snuf"): then the user turns the facts were taken from are searched, in the
    user's own words (``named_in_own_words``), and ``translate`` gives their English, searched
    with ``restated`` (the model's restatement of the message in English), all under the same
    measured thresholds, so a wrong translation names nothing rather than the wrong fact. When
    nothing is named and the last message stored nothing, the ``message`` itself is searched,
    with ``restated``: the 1.5B model named nothing in "Actually, scratch what I said about
    learning Spanish, I gave that up.", said 80 turns after the fact; only a clear match is
    acted on."""
    named = find_named(search, conversation_id, live, [p for p in phrases if p.strip()])
    if named.clear:
        return named
    # nothing named ("" as the prompt asks, or only words like "that"): the last message's facts.
    # A word that names nothing stored ("dog") is not taken for "that": the cross-encoder scores
    # one-word queries near 0 whatever they mean ("that" 0.031, "dog" 0.00002), so scores cannot
    # tell them apart, and a guess would delete what the last message said. In another language
    # "ça" / "dat" / "lo" is known for "that" by its English.
    bare = all(not words_of(p) - STOP for p in phrases)
    english = [] if bare or translate is None else translate(phrases)
    if bare or (english and all(not words_of(t) - STOP for t in english)):
        stored = [m for m in live if previous_user and previous_user in from_turns(m)]
        if stored:
            return Named(tuple(stored))
        said = find_named(search, conversation_id, live, [*restated, message])
        return Named(said.clear) if said.clear else named
    if not live:
        return named
    own = named_in_own_words(search, live, phrases)
    if own.clear:
        return own
    again = find_named(search, conversation_id, live, [*english, *restated]) if translate else Named()
    if again.clear:
        return again
    maybe = list({m.id: m for m in [*named.maybe, *own.maybe, *again.maybe]}.values())
    return Named((), tuple(maybe[:MAX_NAMED]))


def _search(search: Search, conversation_id: str | None, phrase: str, *,
            roles: tuple[str, ...] = ("memory",), pool: int = POOL) -> list[SearchResult]:
    """The memories of ``roles`` nearest ``phrase`` by the read path (keywords, vectors, the
    cross-encoder); an index problem finds nothing rather than guessing."""
    try:
        return search(phrase, conversation_id=conversation_id, top_k=pool, use_mmr=False, rerank=True,
                      filters=SearchFilters(conversation_id=conversation_id, roles=roles))
    except Exception:  # an index problem must never delete the wrong fact
        log.exception("searching what a forget names failed")
        return []


def relevance(result: SearchResult) -> tuple[float, float, float, float]:
    """(score, its CLEAR, its MAYBE, its GAP): the cross-encoder's when it ran, else the dense
    cosine (where the gap is the cosines' own)."""
    s = result.scores
    if s.rerank is not None:
        return s.rerank, CLEAR, MAYBE, GAP
    return (s.dense if s.dense is not None else 0.0), CLEAR_DENSE, MAYBE_DENSE, GAP_DENSE


def _logit(p: float) -> float:
    q = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(q / (1 - q))


def _named_by_names(phrase: str, live: Sequence[Memory]) -> list[str]:
    """The facts holding every name and number of ``phrase`` (its first word too: a phrase is not
    a sentence), when some do and not too many: "Pieter", "Utrecht", "42"."""
    wanted = {w for w in names_and_numbers(f"x {phrase}") if len(w) >= 2}
    if not wanted:
        return []
    holding = [m.id for m in live if wanted <= words_of(m.text)]
    return holding if 0 < len(holding) <= MAX_NAMED else []
