"""Summary clean-up: the sentences of a model's summary that memory must not keep.

Pure text functions, no model: a small model's summary can copy the transcript, keep stating a
fact the user replaced or forgot, or invent a number or a name. Each function drops such
sentences; chat/summary_update.py runs them on every new summary, and chat/summary_state.py and
chat/forgetting.py use the stale-fact test when facts change.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from desktop_mem.engine.chat import fact_guards

SUMMARY_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")
_MATERIAL_LABEL = re.compile(r"^(\s*(?:[-*]\s+)?)(user|assistant|fact)\s*:\s*", re.I)
_SPEAKER_LABEL = re.compile(r"^\s*(?:[-*]\s+)?(?:[^\W\d_][\w'. -]{0,30}:\s*)?")


def drop_transcript_lines(summary: str, material: Sequence[str] = ()) -> str:
    """``summary`` without the lines a small model copied from its material instead of summarising.

    Seen with a 1.5B model: the "summary" was the material itself, "- user: I work at Acme Corp."
    and "- assistant: At Acme Corp., you can find ...", or an assistant line under the user's
    name ("- Jon: Hello, John! How can I assist you today?"). The assistant's words are not facts
    about the user and a quoted message is not a summary, so such lines go; a copied
    "fact: ..." line keeps the fact without its label.
    """
    replies = [_norm(m.split(":", 1)[1]) for m in material if m.casefold().startswith("assistant:")]
    kept: list[str] = []
    for line in summary.splitlines():
        label = _MATERIAL_LABEL.match(line)
        if label is not None:
            if label.group(2).casefold() == "fact":
                kept.append(label.group(1) + line[label.end():])
            continue
        body = _norm(_SPEAKER_LABEL.sub("", line, count=1))
        if len(body) >= 12 and any(body in reply for reply in replies):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.casefold()))


def drop_superseded(summary: str, superseded: Sequence[tuple[str, str | None]]) -> str:
    """``summary`` without the sentences that still state a superseded fact.

    A sentence goes when it names something only the old fact named (Ghent, in "lives in Ghent"
    replaced by "lives in Leuven") and not the replacement's own names, or when it says nothing
    but the old fact ("The user likes jazz." for a forgotten "The user likes jazz"); sentences
    about other things stay. Other rewordings are left to the model's instructions.
    """
    stale = [_Stale(fact_guards.specifics(old) - (fact_guards.specifics(new) if new else set()),
                    fact_guards.specifics(new) if new else set(), fact_guards.stems(old))
             for old, new in superseded]
    if not stale:
        return summary
    return _drop_sentences(summary, lambda sentence: any(s.stated_by(sentence) for s in stale))


def stale_matcher(old: str, new: str | None, keep: frozenset[str] = frozenset()) -> Callable[[str], bool]:
    """A test for "this sentence still states ``old``" (replaced by ``new``, or forgotten when
    None), the one drop_superseded uses; names in ``keep`` (said by a live fact) never count."""
    new_names = fact_guards.specifics(new) if new else set()
    stale = _Stale(fact_guards.specifics(old) - new_names - keep, new_names, fact_guards.stems(old))
    return stale.stated_by


def drop_gone(
    summary: str, superseded: Sequence[tuple[str, str | None]], keep: frozenset[str] = frozenset()
) -> str:
    """``summary`` without the sentences that state a superseded fact, except by names in ``keep``
    (those a live fact states: a user who moved back to Ghent lives in Ghent again)."""
    tests = [stale_matcher(old, new, keep) for old, new in superseded]
    return _drop_sentences(summary, lambda sentence: any(t(sentence) for t in tests)) if tests else summary


def drop_invented_numbers(summary: str, sources: Sequence[str]) -> str:
    """``summary`` without the sentences that hold a number found in none of ``sources``.

    Seen with a 1.5B model, twice: "Mara is a 29-year-old woman who lives in Leuven." when nobody
    gave an age. A summary is injected into every later turn, so an invented age, date or count
    would be repeated as memory; the sentence goes (the facts still say where Mara lives).
    """
    known = {n.lstrip("0") for text in sources for n in _DIGITS.findall(text)}
    return _drop_sentences(summary, lambda sentence: any(
        n.lstrip("0") not in known for n in _DIGITS.findall(sentence)))


_DIGITS = re.compile(r"\d+")


def drop_invented_names(summary: str, sources: Sequence[str]) -> str:
    """``summary`` without the sentences that name something none of ``sources`` says.

    Seen with a 1.5B model: "The user lives in Utrecht, Netherlands." when the user said Utrecht,
    and a city nobody said taken from the model's own reply. A name is a capitalised word after
    a sentence's first (fact_guards.specifics: any script with case); it is known when a word of
    the sources starts like it (Leuven, Leuven's). The caller leaves the assistant's words out of
    ``sources``: a summary remembers what the user said, not what the model supposed.
    """
    said = {w.casefold().split("'")[0] for text in sources for w in fact_guards.words(text)}

    def invented(sentence: str) -> bool:
        names = {n for n in fact_guards.specifics(sentence) if not any(c.isdigit() for c in n)}
        return any(not any(w.startswith(n[:5]) for w in said) for n in names)

    return _drop_sentences(summary, invented)


def _drop_sentences(summary: str, bad: Callable[[str], bool]) -> str:
    """``summary`` without its ``bad`` sentences; a line left with none is dropped."""
    kept: list[str] = []
    for line in summary.splitlines():
        parts = [p for p in SUMMARY_SENTENCE.split(line) if p is not None]
        good = [p for p in parts if not bad(p)]
        if parts and not any(p.strip() for p in good):
            continue  # nothing good left on the line
        kept.append(" ".join(p for p in good if p.strip()) if len(good) != len(parts) else line)
    return "\n".join(kept).strip()


@dataclass(frozen=True)
class _Stale:
    gone: set[str]  # names and numbers only the old fact had
    new_names: set[str]  # the replacement's names and numbers
    old_words: set[str]  # the old fact's content words

    def stated_by(self, sentence: str) -> bool:
        words = {w.casefold() for w in re.findall(r"[^\W_]+", sentence)}
        if self.gone & words and not self.new_names & words:
            return True
        # Nothing but (most of) the old fact: "The user has cats." does not restate "two cats".
        content = fact_guards.stems(sentence)
        return (bool(content) and content <= self.old_words and 3 * len(content) >= 2 * len(self.old_words)
                and not self.new_names & words)
