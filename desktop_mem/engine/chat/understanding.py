"""What one user message asks of memory, read by the model in any language: one call per turn.

The memory model reads the message with the recent turns (and what memory holds about the
people it names) and answers, by JSON schema, with the facts the user states (whom each is
about, and what it corrects), the things the user asks to forget (in their words), or nothing.
This is the only LLM call that reads a message for memory: it replaces fact extraction, and it
runs before the reply so the reply can be told what will happen.

The model decides what the message means; deterministic checks decide what it may write:
names, relations and numbers must come from the user's words or from memory (grounding, any
script), facts of one message that say the same thing twice are merged, and another person's
fact stays theirs. The English pattern rules serve only when no model answers, and as a cheap
hint for an English "forget ..." that the model's answer overrules.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from desktop_mem.engine.chat import fact_guards, prompts, scopes, told_as_true
from desktop_mem.engine.chat.fact_types import (
    MAX_FACT_CHARS,
    MAX_FACTS,
    MAX_MESSAGE_CHARS,
    ChatModel,
    ExtractedFact,
    fold,
    kind_of,
)
from desktop_mem.engine.chat.fact_words import (
    GROUPED,
    WORD,
    fold_word,
    found,
    name_changed,
    names_and_numbers,
    near,
    number_changed,
    words_of,
)
from desktop_mem.engine.chat.llm_errors import LLMError
from desktop_mem.engine.chat.llm_json import LLMJSONError, parse_string_list, strip_reasoning
from desktop_mem.engine.chat.pattern_rules import pattern_facts
from desktop_mem.engine.models import Memory, Message

MAX_RECENT_TURNS = 4
MAX_TURN_CHARS = 400
MAX_KNOWN = 6
MAX_FORGET = 5
_USER_FACT = re.compile(r"^the user\b(?![’']s\b)", re.I)
ABOUT_USER = re.compile(r"^the user\b", re.I)
_USER_WORDS = frozenset({"user", "the user", "me", "i", "myself", "self", ""})
_ANSWER_LINE = prompts.FACT_USER_TEMPLATE.splitlines()[-1]
UNSAID = "names or numbers the user did not say"
COPIED = "the message copied, not a fact"
EARLIER = "an earlier message copied (that turn was read for memory when it was said)"
OWN_WORDS = "says what the user did not (the model's own words or knowledge)"
HEADING = "a task written as a heading, not as a statement about the user"
REPEATED = "a stored fact said again by the model, with names the message does not hold"
ASKED = "asked, not told: a question that names nothing for the fact to hold"
CLAUSE_BREAK = re.compile(r"[,;:，；、،؛]")  # a clause may tell before a question asks (any script)
# A fact with more content words than this that none of the user's words (the message, the recent
# turns, what memory holds) hold is the model's own: "Summarise the causes of the French
# Revolution" became two facts of 17 and 7 such words, "lol ok" a stretching tip of 8; the most a
# fact the user told had was 2 ("Our daughter Noor is 5" -> "Noor is 5 years old": years, old).
MAX_UNSAID_WORDS = 4


@dataclass(frozen=True)
class Understood:
    """What a message asks of memory.

    ``facts``: what the user states (each with whom it is about and what it replaces);
    ``forget``: what the user asks to forget, in their words ("" for "forget that": what the
    previous message stored), None when the message asks no forget; ``error``: why the model's
    answer was not used (the pattern rules were); ``rejected``: (fact, why) the guards dropped.
    """

    facts: tuple[ExtractedFact, ...] = ()
    forget: tuple[str, ...] | None = None
    language: str = ""
    error: str | None = None
    rejected: tuple[tuple[str, str], ...] = ()
    by_model: bool = False
    # with a forget: what the model restated of the message in the stored facts' language (its
    # "facts", never stored): searched when the user's own words find nothing across languages
    restated: tuple[str, ...] = ()
    # a first reading (before the reply, which waits for it): what ``read_again`` needs to take
    # a second look and to ground the model's English in the message's translation
    follow_up: FollowUp | None = field(default=None, compare=False, repr=False)

    @property
    def asks_forget(self) -> bool:
        return self.forget is not None


@dataclass(frozen=True)
class FollowUp:
    """A first reading's question and what grounds its answer, for the follow-up calls."""

    messages: tuple[Message, ...]
    text: str
    context: str
    english: bool
    raw: tuple[_RawFact, ...]
    earlier: str = ""  # the user's messages before it, which were read for memory when said
    stored: tuple[str, ...] = ()  # the live facts the model was shown (memory about its names)


@dataclass(frozen=True)
class _RawFact:
    text: str
    about: str = "user"
    relation: str = ""
    replaces: str = ""
    scope: scopes.Scope | None = None


@dataclass(frozen=True)
class _Answer:
    facts: list[_RawFact] = field(default_factory=list)
    forget: list[str] | None = None
    language: str = ""


def understand(
    llm: ChatModel | None, message: str, recent: Sequence[tuple[str, str]] = (), known: Sequence[str] = (),
    project: str | None = None, *, first_reading: bool = False,
) -> Understood:
    """What ``message`` asks of memory. ``project``: the name of the project the chat is in (the
    model is told, so the work it hears of goes in "task", which is filed in the project).
    ``recent``: the turns before it, (role, text), oldest
    first; ``known``: live facts about the people and things it names. Without a model (or when
    its answer cannot be read) the pattern rules decide, and ``error`` says so.

    ``first_reading``: one model call only (the reply waits for it); the follow-up calls a
    message may need (its translation, a second look at what was passed over) are left to
    ``read_again``, which the write path runs in the background."""
    text = message.strip()[:MAX_MESSAGE_CHARS]
    if not text:
        return Understood()
    hint = fact_guards.forget_request(text)
    if llm is None:
        return _by_patterns(text, hint)
    messages: list[Message] = [
        {"role": "system", "content": prompts.FACT_SYSTEM_PROMPT},
        {"role": "user", "content": _user_prompt(text, recent, known, project)},
    ]
    try:
        parsed = _ask(llm, messages)
    except (LLMError, LLMJSONError) as err:
        problem = (f"Reading the message for memory failed: {err.message}" if isinstance(err, LLMError)
                   else f"The memory model's answer could not be read ({err}).")
        fallback = _by_patterns(text, hint)
        return replace(fallback, error=f"{problem} Simple pattern rules were used instead.")
    earlier = " ".join(t for role, t in recent if role == "user")
    context = " ".join([text, earlier, *known])
    english = _english(parsed.language, text)
    facts, rejected = ground(parsed.facts, text, context, english=english, earlier=earlier, stored=known)
    forget = parsed.forget
    follow = FollowUp(tuple(messages), text, context, english, tuple(parsed.facts), earlier, tuple(known))
    if not forget and hint is None and not first_reading:
        facts, rejected = _follow_up(llm, follow, facts, rejected)
    if forget is None and hint is not None:
        forget = [hint]  # a model (or an older prompt's answer) that said nothing about forgetting
    if forget is not None and not forget and not facts and hint is not None:
        forget = [hint]  # "Forget ..." in so many words, and the model found nothing at all
    if forget is not None and not forget:
        forget = None
    if forget and hint is None:
        facts, forget = _read_as_forget(facts, forget, text, known)
    if forget and hint is None and told_as_true.asks_to_forget(llm, text) is False:
        # a forget the model reads where none was asked deletes what it names, or (naming
        # nothing) what the previous message stored: the 1.5B model read "Ugh, Mondays." so, and
        # the birthday told just before was gone; "Tomas burned the pancakes again." deleted the
        # three facts naming Tomas. Asked only whether the message asks to forget, it says no to
        # such messages. (News read as a forget is known by its new names first, above: "ich
        # habe beim Hotel Adler gekündigt und arbeite jetzt bei der Lufthansa" is an update.)
        forget = None
        if not first_reading:
            facts, rejected = _follow_up(llm, follow, facts, rejected)
    restated: tuple[str, ...] = ()
    if forget is not None:
        # a request to forget states nothing new (what it names is not a fact to keep)
        restated = tuple(dict.fromkeys(f.text for f in parsed.facts))[:MAX_FORGET]
        facts = []
    return Understood(tuple(facts[:MAX_FACTS]), tuple(forget[:MAX_FORGET]) if forget is not None else None,
                      parsed.language, None, tuple(rejected), by_model=True, restated=restated,
                      follow_up=follow if first_reading and forget is None and hint is None else None)


def read_again(llm: ChatModel, understood: Understood) -> Understood:
    """A first reading finished with its follow-up calls (``understand``'s ``first_reading``);
    any other reading as it is."""
    follow = understood.follow_up
    if follow is None:
        return understood
    facts, rejected = _follow_up(llm, follow, list(understood.facts), list(understood.rejected))
    return replace(understood, facts=tuple(facts[:MAX_FACTS]), rejected=tuple(rejected), follow_up=None)


def _follow_up(
    llm: ChatModel, follow: FollowUp, facts: list[ExtractedFact], rejected: list[tuple[str, str]],
) -> tuple[list[ExtractedFact], list[tuple[str, str]]]:
    """The facts of a message that asks no forget, after the follow-up calls it needs."""
    context = follow.context
    if not follow.english and follow.raw:
        english = _english_of(llm, follow.text)
        if _same_words(english, follow.text):
            # the model tagged an English message with another language ("Noor turned 6 last
            # week!" as "nl", even "ar"): a copy of it is an English fact, and the English-only
            # checks apply
            follow = replace(follow, english=True)
            facts, rejected = ground(follow.raw, follow.text, context, english=True, earlier=follow.earlier,
                                     stored=follow.stored)
        elif _translation(english, follow.text) and any(why.startswith(UNSAID) for _fact, why in rejected):
            # the model wrote in English what the user said in their language ("Japanisch" is
            # "Japanese", "mercredi" is "Wednesday"): the message's own translation may ground it
            context = f"{context} {english}"
            facts, rejected = ground(follow.raw, follow.text, context, english=False, earlier=follow.earlier,
                                     stored=follow.stored)
    if not facts and not any(why == REPEATED for _fact, why in rejected):
        return facts, rejected  # (memory said again is an answer about the message: look again)
    if told_as_true.not_told_as_true(llm, follow.text):
        return [], [*rejected, *((f.text, told_as_true.WHY) for f in facts)]
    return _second_look(llm, replace(follow, context=context), facts, rejected)


def _read_as_forget(
    facts: list[ExtractedFact], forget: list[str], text: str, known: Sequence[str],
) -> tuple[list[ExtractedFact], list[str] | None]:
    """(facts, forget) of a message the model read as a forget that is news or a correction
    (the forget then None): the 1.5B model read "j'ai quitté le Café Olympe, je travaille chez
    Airbus", "Pieter is 5, niet 6" and "ma femme s'appelle Claude, pas Claire" as forgets, and the
    new job, age and name were lost.

    - Facts holding a name or number of this very message that the forget does not name are
      news; what the forget named is what they correct. Only a bare "forget that", or facts
      about what the forget names: a plan read as a forget of something else stays a forget,
      which names nothing and deletes nothing. A fact that only says again what memory holds
      is not news: it is what the model took the forget to be about.
    - A fact memory holds with other names the message also names, or a forget naming a fact
      memory holds with another number, corrects that fact."""
    said, named = words_of(text), words_of(" ".join(forget))
    held = {k.casefold() for k in known}
    news = [f for f in facts if (names_and_numbers(f"x {f.text}") & said) - named
            and (not named or names_and_numbers(f"x {f.text}") & named) and f.text.casefold() not in held]
    if news:
        old = next((p for p in forget if p), "")
        return [f if f.replaces or not old else replace(f, replaces=old[:MAX_FACT_CHARS]) for f in news], None
    stored = [_RawFact(k) for k in known]
    # (the forget names the old name itself: a short fact is enough to go by)
    renamed = [(f, was) for f in facts if (was := name_changed(f.text, stored, text, [], min_words=1))
               and names_and_numbers(f"x {was.text}") & named]
    if len(renamed) == 1:
        fact, old_fact = renamed[0]
        return [replace(fact, replaces=old_fact.text)], None
    fixes = [c for p in forget if p and all(found(w, said) for w in names_and_numbers(f"x {p}"))
             and (c := number_changed(p, stored, names_decide=True))]
    if len(fixes) == 1:
        old_fact, corrected = fixes[0]
        return [ExtractedFact(corrected, kind_of(corrected), "llm", replaces=old_fact.text)], None
    return facts, forget


def _ask(llm: ChatModel, messages: list[Message]) -> _Answer:
    return parse_answer(llm.complete(messages, temperature=0.0, max_tokens=500,
                                     json_schema=prompts.UNDERSTAND_SCHEMA))


def _second_look(
    llm: ChatModel, follow: FollowUp, facts: list[ExtractedFact], rejected: list[tuple[str, str]],
) -> tuple[list[ExtractedFact], list[tuple[str, str]]]:
    """The facts with those the first answer left out of a message that says several things:
    when names or numbers of the message appear in no fact taken from it (nor in one the guards
    dropped), the model is asked once more, told what it took and which words it passed over
    ("I'm 38, I teach chemistry in Derby and I have twin boys, Finn and Oscar" gave the age and
    the job but not the boys). Its new facts go through the same grounding; what merely says
    again what was taken is left out."""
    messages, text = list(follow.messages), follow.text
    taken = words_of(" ".join([*(f.text for f in facts), *(f for f, _why in rejected)]))
    missed = [w for w in _names_in_order(text) if not found(fold_word(w), taken)]
    if not missed:
        return facts, rejected
    last = str(messages[-1]["content"]).rsplit(_ANSWER_LINE, 1)[0].rstrip()
    # (memory said again counts as taken: the model is shown what it answered)
    shown = [*(f.text for f in facts), *(t for t, why in rejected if why == REPEATED)]
    ask = (f"{last}\n\nAlready taken from it:\n" + "\n".join(f"- {t}" for t in shown)
           + f"\nThe message also says something about: {', '.join(missed[:6])}. "
           f"Give only the facts the list above does not hold yet.\n{_ANSWER_LINE}")
    try:
        more = _ask(llm, [*messages[:-1], {"role": "user", "content": ask}])
    except (LLMError, LLMJSONError):
        return facts, rejected  # what the first answer gave stands
    if more.forget:
        return facts, rejected
    extra, dropped = ground(more.facts, text, follow.context, english=follow.english, earlier=follow.earlier,
                             stored=follow.stored)
    new = [f for f in extra
           if not any(_contains(g.text, f.text) for g in facts) and not _covered(f.text, facts)]
    return merge_contained([*facts, *new]), [*rejected, *dropped]


def _names_in_order(text: str) -> list[str]:
    """The names and numbers of ``text``, in the order written (a sentence's first word is no
    name: "Actually", "Bei mir ...")."""
    named = {w for s in fact_guards.sentences(text) for w in names_and_numbers(s)}
    return list(dict.fromkeys(w for w in WORD.findall(GROUPED.sub("", text)) if fold_word(w) in named))


def translated(llm: ChatModel, text: str) -> str:
    """``text`` translated by the model into English ("" when it cannot be, or is English)."""
    return _translation(_english_of(llm, text), text)


def _english_of(llm: ChatModel, text: str) -> str:
    """The model's English of ``text`` as it answered ("" when the call failed)."""
    words = " ".join(text.split())[:MAX_MESSAGE_CHARS]
    messages: list[Message] = [{"role": "system", "content": prompts.TRANSLATE_PROMPT},
                               {"role": "user", "content": words}]
    try:
        answer = strip_reasoning(llm.complete(messages, temperature=0.0, max_tokens=24 + len(words) // 2))
    except LLMError:
        return ""
    return " ".join(answer.split()).strip(" .!?\"'")


def _translation(english: str, text: str) -> str:
    """``english`` when it is a translation of ``text``: not ``text`` again, not far longer."""
    words = " ".join(text.split())[:MAX_MESSAGE_CHARS]
    return english if english.casefold() != words.casefold() and len(english) <= 3 * len(words) + 40 else ""


def _same_words(english: str, text: str) -> bool:
    """Whether the model's English of ``text`` is ``text`` again, word for word."""
    said = [w.casefold() for w in WORD.findall(text)]
    return bool(said) and [w.casefold() for w in WORD.findall(english)] == said


def in_english_words(llm: ChatModel, phrases: Sequence[str]) -> list[str]:
    """``phrases`` (what a request to forget names, in the user's words) translated by the model
    into English, the language facts are stored in; a phrase it cannot translate is left out."""
    out: list[str] = []
    for phrase in [p for p in phrases if p.strip()][:2]:
        english = translated(llm, phrase[:MAX_TURN_CHARS])
        if english and len(english) <= MAX_TURN_CHARS:
            out.append(english)
    return out


def understand_turn(
    llm: ChatModel | None, message: str, recent: Sequence[tuple[str, str]], live: Iterable[Memory],
    project: str | None = None, *, first_reading: bool = False,
) -> Understood:
    """``understand`` with the context a turn has: the last turns before it (role, text), the
    live facts that mention a name or number of the message (what memory holds about them), and
    the project the chat is in (its name), if any."""
    names = names_and_numbers(f"x {message}")
    known = [m.text for m in live if names & words_of(m.text)] if names else []
    return understand(llm, message, recent[-MAX_RECENT_TURNS:], known, project, first_reading=first_reading)


def _by_patterns(text: str, hint: str | None) -> Understood:
    if hint is not None:
        return Understood((), (hint,))
    return Understood(pattern_facts(" ".join(fact_guards.statements(text))))


def in_english(understood: Understood, text: str) -> bool:
    """Whether ``text`` (what ``understood`` was read from) is in English, the language facts are
    stored in: the model's word, else Latin letters."""
    return _english(understood.language, text)


def _english(language: str, text: str) -> bool:
    """Whether the English-only checks may read ``text``: the model says it is English (or said
    nothing, and the text is in Latin letters, as every older answer shape was read)."""
    lang = language.strip().casefold()
    if lang:
        return lang in ("en", "eng", "english") or lang.startswith("en-")
    return all(ord(c) < 0x250 for c in text)


def _user_prompt(
    message: str, recent: Sequence[tuple[str, str]], known: Sequence[str], project: str | None = None,
) -> str:
    parts: list[str] = []
    if project:
        parts.append(prompts.PROJECT_LINE.format(project=" ".join(project.split())[:80]))
    turns = [(r, " ".join(t.split())[:MAX_TURN_CHARS]) for r, t in recent[-MAX_RECENT_TURNS:] if t.strip()]
    if turns:
        parts.append("Earlier turns (context only, do not take facts from them):\n"
                     + "\n".join(f"{r}: {t}" for r, t in turns))
    if known:
        parts.append("Memory already holds:\n" + "\n".join(f"- {k}" for k in known[:MAX_KNOWN]))
    parts.append(prompts.FACT_USER_TEMPLATE.format(message=message))
    return "\n\n".join(parts)


# -- reading the answer ------------------------------------------------------------------------


_SCOPE_KEYS: dict[str, scopes.Scope] = {"user": "user", "facts": "user", "task": "conversation",
                                        "chat": "conversation", "conversation": "conversation"}


def parse_answer(answer: str) -> _Answer:
    """The model's answer: ``{"facts": [{text, about, relation, replaces}], "task": [...],
    "forget": [...], "language": ...}``; the older ``{"user": [...], "task": [...]}`` and a plain
    list of strings are read too (then ``forget`` is None: the answer did not say)."""
    body = strip_reasoning(answer)
    start = body.find("{")
    if start >= 0 and (body.find("[") < 0 or start < body.find("[")):
        try:
            value, _end = json.JSONDecoder().raw_decode(body[start:])
        except ValueError:
            value = None
        if isinstance(value, dict) and (any(k in value for k in _SCOPE_KEYS) or "forget" in value
                                        or "asks_to_forget" in value):
            return _Answer(_facts_of(value), _forget_of(value), _str(value.get("language"))[:20])
    return _Answer([_RawFact(t) for t in parse_string_list(answer, max_items=10)])


def _facts_of(value: dict[str, Any]) -> list[_RawFact]:
    out: list[_RawFact] = []
    for key, scope in _SCOPE_KEYS.items():
        items = value.get(key)
        for item in items if isinstance(items, list) else []:
            if len(out) >= 10:
                break
            if isinstance(item, str) and item.strip():
                out.append(_RawFact(" ".join(item.split()), scope=scope))
            elif isinstance(item, dict) and _str(item.get("text")).strip():
                out.append(_RawFact(" ".join(_str(item["text"]).split()),
                                    _str(item.get("about")).strip() or "user",
                                    _str(item.get("relation")).strip(), _str(item.get("replaces")).strip(),
                                    scope))
    return out


def _forget_of(value: dict[str, Any]) -> list[str] | None:
    if value.get("asks_to_forget") is False:
        return []  # the model read no request to forget (whatever else it wrote there)
    if "forget" not in value:
        return [""] if value.get("asks_to_forget") is True else None
    raw = value["forget"]
    if isinstance(raw, str):
        raw = [raw]
    if raw is True:
        return [""]
    if not isinstance(raw, list):
        return []
    items = [" ".join(_str(i).split()).strip(" .!?\"'") for i in raw if isinstance(i, str)]
    if value.get("asks_to_forget") is True and not items:
        items = [""]
    return list(dict.fromkeys(items))[:MAX_FORGET] if items else []


def _str(value: object) -> str:
    return value[:MAX_FACT_CHARS * 2] if isinstance(value, str) else ""


# -- grounding: what the model may write -------------------------------------------------------


def ground(
    raw: Iterable[_RawFact], message: str, context: str, *, english: bool = True, earlier: str = "",
    stored: Sequence[str] = (),
) -> tuple[list[ExtractedFact], list[tuple[str, str]]]:
    """The facts the model gave that the user's words (or memory) support, merged where one
    says part of another; (fact, why) for each dropped one.

    Language-free checks: every name and number must be in ``message`` (a relation or a name
    about another person may also come from ``context``: the recent turns and what memory holds).
    With ``english``, the English word checks of fact_guards (negation kept, about whom) apply too.
    A fact the model wrote as a question, request or what-if ("The user asked if ...") is none,
    whatever the message's language (that reads the model's English, not the user's words).
    A fact that copies one of the user's ``earlier`` messages word for word is that message's,
    read when it was said ("ok cool" gave "Give me a fun fact about owls."). In English, a fact
    saying more than ``MAX_UNSAID_WORDS`` content words the user never used is the model's own.
    A fact that is one of the ``stored`` live facts word for word, with a name or number the
    message does not hold, is memory said again, not the user's words: "De Polo is de deur uit,
    we rijden nu een Kia Niro" gave "The user drives a Volkswagen Polo" beside the Kia, and the
    reconciliation that replaced the Polo added it back.
    """
    held = {fold(s) for s in stored}
    facts: list[ExtractedFact] = []
    rejected: list[tuple[str, str]] = []
    said = words_of(message)
    known = words_of(context)
    lowered = message.casefold()
    # The English rules find no statement (all questions and requests): a fact must then be in
    # the user's own words, so "Where do I live?" never becomes "The user lives in a city".
    strict = english and not fact_guards.statements(message)
    # every sentence ends in a question mark (any script's): asking is no work in progress, so the
    # "task" a small model reads from it ("The user wants to know about their gym") is not kept
    only_questions = asks_only(message)
    one_question = only_questions and not CLAUSE_BREAK.search(message)
    names = names_within(context)
    for item in raw:
        text = item.text.strip().strip("\"'")
        person = news_of(text, message, names, item.about)
        if person:
            # "Tomas got a new job at a bakery." was stored as "The user got a new job at a bakery."
            text, item = as_persons(text, person), replace(item, about=person)
        # a fact that says "The user ..." is the user's, whatever "about" says ("other person")
        about_user = item.about.casefold() in _USER_WORDS or _USER_FACT.match(text) is not None
        if about_user:
            text = fact_guards.as_user_subject(text)
        if not text or len(text) > MAX_FACT_CHARS:
            continue
        if len(WORD.findall(text)) < 2 and text.isascii():
            rejected.append((text, "not a statement (one word)"))
            continue
        if not english and copied(text, message):
            # the message itself, not a fact drawn from it (the turn is kept and recalled anyway)
            rejected.append((text, COPIED))
            continue
        if earlier and copied(text, earlier, whole=False) and not copied(text, message, whole=False):
            rejected.append((text, EARLIER))
            continue
        if fold(text) in held and names_and_numbers(f"x {text}") - said:
            rejected.append((text, REPEATED))
            continue
        if english and len(fact_guards.stems(text) - fact_guards.stems(context)) > MAX_UNSAID_WORDS:
            rejected.append((text, OWN_WORDS))
            continue
        if fact_guards.written_as_no_fact(text):
            rejected.append((text, "written as a question, request or what-if, not a fact"))
            continue
        keyword = prompts.EXAMPLE_FACTS.get(text)
        if keyword is not None and keyword not in lowered:
            continue  # a copied prompt example, not something the user said
        text = _without_unsaid_relation(text, said, known, english)
        why = _ungrounded(text, item, said, known, about_user, english)
        if why is None and english and re.match(r"^the user\b", text, re.I):
            why = fact_guards.grounding_problem(text, message)
            if why is not None and not about_user and why == "about someone else, not the user":
                why = None  # it is about someone else, and says so
        if why is None and strict and not fact_guards.stems(text) <= fact_guards.stems(message):
            why = "not stated in the message (a question or a request)"
        if why is None and one_question and not names_and_numbers(f"x {text}") & said:
            # a single question tells a fact only with what it names ("Did you know I moved to
            # Berlin?"): "Does my mother have any health condition?" was stored as "The user's
            # mother has a health condition." (the 1.5B model's odds: told as true, 0.67). A
            # question with a clause before it may tell one: "I'm a nurse, can you help me?"
            why = ASKED
        if why is not None:
            rejected.append((text, why))
            continue
        if item.scope == scopes.CONVERSATION and not ABOUT_USER.match(text) \
                and _words(text) == _words(message) and names_and_numbers(f"x {text}") & said:
            # the 1.5B model put "Noor turned 6 last week!", the whole message, in "task" (with
            # the age 5 in memory, in three replays): the whole message naming someone is news,
            # not a heading; a request copied there ("Write a thank-you note for Noor's teacher.")
            # is not told as true, which the follow-up reading checks as for every fact
            item = replace(item, scope=scopes.USER)
        scope = scopes.classify(text, item.scope)
        if item.scope == scopes.CONVERSATION and not ABOUT_USER.match(text):
            # the prompt asks for "The user ..." sentences; the 1.5B model filled "task" with
            # headings of the message ("birth of Noor", "moving to Swansea", "packing checklist")
            # beside the facts it took from the same words, in every language we ran
            rejected.append((text, HEADING))
            continue
        if item.scope == scopes.CONVERSATION and only_questions:
            rejected.append((text, "a task read from a question"))
            continue
        if item.scope == scopes.CONVERSATION and not english and not names_and_numbers(f"x {text}") & said:
            # in a language our checks cannot read, a task must name something the user said:
            # the 1.5B model filled "task" with "The user is working on their schedule for the
            # week" from a doctor's appointment and "... planning their vacation" from a maybe
            rejected.append((text, "a task that names nothing the user said"))
            continue
        facts.append(ExtractedFact(text, kind_of(text), "llm", scope,
                                   replaces=item.replaces[:MAX_FACT_CHARS]))
    facts = merge_contained(facts)
    # A small model sometimes answers [] to a plain "I live in Berlin.": the precise English
    # first-person rules fill in what no fact of the model's already says.
    if english:
        facts += [f for f in pattern_facts(" ".join(fact_guards.statements(message)))
                  if not any(_contains(g.text, f.text) or _contains(f.text, g.text) for g in facts)
                  and not _covered(f.text, facts)]
    return facts, rejected


def _ungrounded(
    text: str, item: _RawFact, said: set[str], known: set[str], about_user: bool, english: bool = True,
) -> str | None:
    """Why the fact's names, numbers, person or relation are not the user's (None: they are).

    The ``relation`` the model gives beside a fact about another person is checked against the
    user's words when they are in English (the language the model writes it in); in another
    language it cannot be ("vriendin" is "friend"), and it is not stored either: only a relation
    the fact's text writes is (``_without_unsaid_relation`` has dealt with that)."""
    missing = [n for n in names_and_numbers(text) if not found(n, said) and not found(n, known)]
    if missing:
        return f"{UNSAID} ({', '.join(sorted(missing))})"
    if not about_user:
        # the person's name: the capitalised words of "about" (the 1.5B model also writes "other
        # person" there), and the fact's own first word when it is capitalised ("Manolo is ...")
        first = WORD.findall(text)[:1]
        person = [w.casefold() for w in [*WORD.findall(item.about), *first]
                  if w[:1].isupper() and w.casefold() not in fact_guards.STOP]
        if person and not all(found(w, said) or found(w, known) for w in person):
            return f"a person the user did not name ({item.about})"
    relation = [w.casefold() for w in WORD.findall(item.relation)] if english and not about_user else []
    if relation and not all(near(w, said) or near(w, known) for w in relation):
        return f"a relation the user did not say ({item.relation})"
    # the relation the fact itself writes ("The user's sister ..."), when it is about a person
    person_fact = not about_user or fact_guards.subject(text) != "user"
    written = [w for w in _relation_words(text) if person_fact and not near(w, said) and not near(w, known)]
    if written:
        return f"a relation the user did not say ({' '.join(written)})"
    return None


def copied(fact: str, message: str, *, whole: bool = True) -> bool:
    """Whether ``fact`` is the message (or most of it, or a clause of five words or more) word
    for word, perhaps behind "The user": "Das mit meinen Schulden ist mir peinlich" from "Das
    mit meinen Schulden ist mir peinlich, also merk dir das bitte nicht" is no English fact.
    Without ``whole``, any run of three words or more of it counts (``message`` joins several)."""
    words = [w.casefold() for w in WORD.findall(fact)]
    if words[:2] == ["the", "user"]:
        words = words[2:]
    said = [w.casefold() for w in WORD.findall(message)]
    if len(words) < 3:
        return False
    joined, all_said = " ".join(words), " ".join(said)
    most = len(words) >= 0.6 * len(said) or len(words) >= 5
    return f" {joined} " in f" {all_said} " and (most or not whole)


def _words(text: str) -> list[str]:
    return [w.casefold() for w in WORD.findall(text)]


def asks_only(message: str) -> bool:
    """Whether each sentence of ``message`` ends in a question mark (?, ？, ؟)."""
    said = fact_guards.sentences(message)
    return bool(said) and all(s.rstrip()[-1:] in "?？؟" for s in said)


def news_of(text: str, message: str, names: Collection[str], about: str = "") -> str:
    """The person whose news a fact written "The user <does> ..." is, when the message says
    "<Person> <does> ..." (the fact's first word right after the name), and the fact names nobody
    else; "" when it is the user's ("I met Anna and went to the zoo" stays the user's). The 1.5B
    model wrote "Tomas got a new job at a bakery." as "The user got a new job at a bakery." with the
    partner Tomas in memory.

    A person is one of ``names`` (``names_within`` the message, the recent turns and what memory
    holds), or the one the model named in "about": a sentence's first word alone may be any word
    ("Finally got a new job!"). Words, not a language: in a message in another language than the
    fact, no word of the fact follows the name."""
    match = _USER_FACT.match(text.strip())
    if match is None:
        return ""
    rest = WORD.findall(text.strip()[match.end():])
    if not rest or names_and_numbers(f"x {' '.join(rest)}"):
        return ""
    verb = rest[0].casefold()
    named = about.casefold() if about.casefold() not in _USER_WORDS else ""
    for sentence in fact_guards.sentences(message):
        words: list[str] = WORD.findall(sentence)
        for i, word in enumerate(words[:-1]):
            if (words[i + 1].casefold() == verb and word[:1].isupper()
                    and word.casefold() not in fact_guards.STOP
                    and (word.casefold() in names or word.casefold() == named)):
                return word
    return ""


def as_persons(text: str, person: str) -> str:
    """``text`` ("The user <does> ...") as ``person``'s news (``news_of``'s answer)."""
    return person + text.strip()[len("the user"):]


def names_within(text: str) -> set[str]:
    """The capitalised words ``text`` writes inside a sentence (not as its first word), folded:
    the names it holds, in any cased script."""
    return {w.casefold() for sentence in fact_guards.sentences(text)
            for w in WORD.findall(sentence)[1:] if w[:1].isupper()}


def _without_unsaid_relation(text: str, said: set[str], known: set[str], english: bool) -> str:
    """``text`` without a relation it writes before a name that the user's words do not hold,
    when they are not in English: "The user's friend Sanne started at KLM" from "Mijn vriendin
    Sanne ..." becomes "Sanne started at KLM" (the relation cannot be checked across languages,
    and a small model pastes relations onto names it cannot place). In English, or when no name
    follows the relation, the text stays as it is (and ``_ungrounded`` judges it)."""
    match = re.match(r"^the user[’']?s\s+(.*)$", text.strip(), re.I)
    if english or match is None:
        return text
    words = match.group(1).split()
    k = next((i for i, w in enumerate(words[:3]) if w[:1].isupper()), 0)
    relation = [w.casefold() for w in words[:k]]
    if not relation or not all(w.isalpha() for w in relation) or any(w in fact_guards.STOP for w in relation):
        return text
    if all(near(w, said) or near(w, known) for w in relation):
        return text
    return " ".join(words[k:])


def _relation_words(text: str) -> list[str]:
    """The words that say who someone is to the user in a fact written "The user's <relation>
    <Name> ..." (the prompt's own form): the words up to the name, else the first one."""
    match = re.match(r"^the user[’']?s\s+(.*)$", text.strip(), re.I)
    if match is None:
        return []
    words = WORD.findall(match.group(1))
    names = [i for i, w in enumerate(words) if w[:1].isupper()]
    head = words[:names[0]] if names else words[:1]
    return [w.casefold() for w in head
            if w.casefold() not in fact_guards.STOP and not any(c.isdigit() for c in w)]


def merge_contained(facts: Sequence[ExtractedFact]) -> list[ExtractedFact]:
    """The facts without those another one of the same message already says in full ("lives in
    Utrecht" and "is near the old canal" beside "lives in Utrecht, near the old canal")."""
    kept: list[ExtractedFact] = []
    for i, fact in enumerate(facts):
        if any(j != i and _contains(other.text, fact.text) and (len(other.text) > len(fact.text) or j < i)
               for j, other in enumerate(facts)):
            continue
        kept.append(fact)
    return kept


def _contains(big: str, small: str) -> bool:
    """Every word of ``small`` but its subject is in ``big`` (any language: words, not a list)."""
    a, b = _content(big), _content(small)
    return bool(b) and b <= a


def _content(text: str) -> set[str]:
    return {w for w in words_of(text) if w not in fact_guards.STOP}


def _covered(fact: str, facts: Sequence[ExtractedFact]) -> bool:
    names = fact_guards.specifics(fact)
    return any(names <= fact_guards.specifics(f.text) and fact_guards.similarity(fact, f.text) >= 0.5
               for f in facts)
