"""Forgetting is immediate: what a deleted or replaced fact said is masked in what the model reads.

The stored turns stay as they are (the transcript is the user's record); only the copy sent to
the model changes. A fact that was deleted ("forget my cat") is masked in every message of the
conversation that still states it, and the user message it was learned from is masked whole when
no sentence of it can be matched; a replaced fact ("I moved to Ghent") is masked in the message
it came from and the reply to that message, with what is true now. Sentences that state nothing
gone stay, so the rest of a message is still read.

Undoing a forget is immediate too: when the user restores a fact a "forget ..." message deleted,
that message and the reply to it ("Done, I've forgotten where you live") are sent as a note that
the fact is remembered again. Left as they were, a small model repeated its "forgotten" reply
with the restored fact in front of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from desktop_mem.engine.chat import fact_guards
from desktop_mem.engine.chat.currency import Superseded
from desktop_mem.engine.chat.summary_cleanup import stale_matcher
from desktop_mem.engine.models import TURN_ROLES, Memory, Role
from desktop_mem.engine.store.markdown_store import forget_undone

FORGOTTEN = "[forgotten at the user's request]"
RESTORED_REPLY = "[a reply that said this was forgotten; the user has restored it since]"
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")
_CLAUSE = re.compile(r"([,;:]\s*|\s+(?:and|but|so|because|while|although|though)\s+)", re.IGNORECASE)


def replaced_label(current: str) -> str:
    """What stands in for a sentence that a replacement made untrue."""
    return f"[no longer true; now: {' '.join(current.split())}]"


@dataclass(frozen=True)
class _Gone:
    label: str
    matches: Callable[[str], bool]
    turns: frozenset[str]  # the user turns it was learned from (and the replies to them)
    forgotten: bool


def mask_transcript(
    turns: Sequence[Memory],
    stale: Mapping[str, Sequence[Superseded]],
    replies_to: Mapping[str, str],
    live_facts: Iterable[Memory] = (),
) -> dict[str, str]:
    """Text to send instead of each turn that still states something gone (by turn id).

    ``stale``: per user turn id, the facts learned from it that are replaced or deleted
    (currency.superseded_by_turn); ``replies_to``: assistant turn id -> the user turn it answers;
    ``live_facts``: facts true now (their names are never masked: the user may have said it again).
    """
    live = list(live_facts)
    keep = frozenset(n for m in live for n in fact_guards.specifics(m.text))
    live_texts = {_fold(m.text) for m in live}
    gone = _gone(stale, keep, live_texts)
    if not gone:
        return {}
    masked: dict[str, str] = {}
    for turn in turns:
        if turn.role not in TURN_ROLES:
            continue
        anchor = turn.id if turn.role == Role.USER else replies_to.get(turn.id, "")
        relevant = [g for g in gone if g.forgotten or anchor in g.turns]
        if not relevant:
            continue
        text, hit = _mask_sentences(turn.text, relevant)
        carried = [g for g in relevant if anchor in g.turns]
        if turn.role == Role.USER and turn.id in {t for g in carried for t in g.turns} and not hit:
            # The fact came from this message, in words no sentence test recognises: mask it whole.
            text, hit = " ".join(dict.fromkeys(g.label for g in carried)), True
        if hit:
            masked[turn.id] = text
    return masked


def restored_asks(
    turns: Sequence[Memory], live_facts: Iterable[Memory], replies_to: Mapping[str, str]
) -> dict[str, str]:
    """Text to send instead of each "forget ..." message whose delete the user undid (a restore
    of the fact, e.g. from the Timeline), and instead of the replies to it (by turn id). A fact
    a chat message asked to forget records that turn (store.markdown_store.forget_undone; only a
    forget request does, in whatever language: chat/decisions.py `Planned.forgets`)."""
    asked: dict[str, list[str]] = {}
    for fact in live_facts:
        by_turn = forget_undone(fact)
        if by_turn is not None:
            asked.setdefault(by_turn, []).append(" ".join(fact.text.split()))
    if not asked:
        return {}
    asks = {t.id for t in turns if t.id in asked and t.role == Role.USER}
    masked = {ask: f"[here the user asked to forget: {'; '.join(dict.fromkeys(asked[ask]))}. The user "
                   "has restored it since: it is remembered again]" for ask in asks}
    masked.update({reply: RESTORED_REPLY for reply, ask in replies_to.items() if ask in asks})
    return masked


def mask_text(text: str, stale: Mapping[str, Sequence[Superseded]], live_facts: Iterable[Memory] = ()) -> str:
    """``text`` (e.g. a recalled turn of another conversation) with what was forgotten masked."""
    live = list(live_facts)
    keep = frozenset(n for m in live for n in fact_guards.specifics(m.text))
    gone = [g for g in _gone(stale, keep, {_fold(m.text) for m in live}) if g.forgotten]
    return _mask_sentences(text, gone)[0] if gone else text


def _gone(
    stale: Mapping[str, Sequence[Superseded]], keep: frozenset[str], live_texts: set[str]
) -> list[_Gone]:
    by_fact: dict[tuple[str, str | None], set[str]] = {}
    for turn_id, entries in stale.items():
        for e in entries:
            key = (e.old, e.current.text if e.current is not None else None)
            by_fact.setdefault(key, set()).add(turn_id)
    gone: list[_Gone] = []
    for (old, new), turn_ids in by_fact.items():
        if _fold(old) in live_texts:
            continue  # said again since: true now
        label = FORGOTTEN if new is None else replaced_label(new)
        gone.append(_Gone(label, stale_matcher(old, new, keep), frozenset(turn_ids), new is None))
    return gone


def _mask_sentences(text: str, gone: Sequence[_Gone]) -> tuple[str, bool]:
    """``text`` with each sentence that states something in ``gone`` replaced by its label."""
    hit = False
    lines: list[str] = []
    for line in text.split("\n"):
        parts: list[str] = []
        for sentence in _SENTENCE.split(line):
            found = _stating(sentence, gone)
            if found is None:
                parts.append(sentence)
                continue
            hit = True
            parts.append(_mask_clauses(sentence, gone) or found.label)
        lines.append(" ".join(p for p in parts if p))
    return "\n".join(lines), hit


def _stating(text: str, gone: Sequence[_Gone]) -> _Gone | None:
    return next((g for g in gone if text.strip() and g.matches(text)), None)


def _mask_clauses(sentence: str, gone: Sequence[_Gone]) -> str | None:
    """The sentence with only its clauses that state something gone masked ("I'm Mara, I live in
    Ghent" keeps "I'm Mara"); None when no single clause does (the fact spans them)."""
    pieces = _CLAUSE.split(sentence)  # clause, separator, clause, ...
    out: list[str] = []
    hit = False
    for i, piece in enumerate(pieces):
        found = _stating(piece, gone) if i % 2 == 0 else None
        if found is not None:
            hit = True
            piece = found.label + (piece[len(piece.rstrip(".!?")):] if piece.rstrip(".!?") != piece else "")
        out.append(piece)
    return "".join(out) if hit else None


def _fold(text: str) -> str:
    return " ".join(text.split()).rstrip(".").casefold()
