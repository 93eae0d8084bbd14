"""Write-path guards: what a stored fact must be grounded in, and which updates are allowed.

Small local models turn requests ("List ten facts about Belgium") into facts, attribute other
people's facts to the user, drop negations and let a reconciliation rewrite a specific fact into
a vaguer one ("lives in Ghent" -> "lives in Belgium"). These rules are deterministic, so the same
message always gives the same verdict, and deliberately conservative: a fact that fails them is
dropped (the turn itself stays stored and searchable), a refused UPDATE keeps the old fact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
_LEAD = re.compile(
    r"^(?:(?:well|oh|so|also|and|but|btw|by the way|actually|hi|hello|hey|ok|okay|yes|yeah|no|anyway|now|"
    r"then|great|thanks|thank you|cool|sure)[,!.]?\s+)+",
    re.I,
)
_QUESTION = re.compile(
    r"^(?:do|does|did|what|why|how|who|whom|whose|where|when|which|can|could|would|should|is|are|am|"
    r"was|were|will|shall|may|might|have|has|had)\b",
    re.I,
)
_REQUEST = re.compile(
    r"^(?:please\b|kindly\b|let'?s\b|let me\b|i (?:want|need|would like|'d like) you\b|i'd like you\b|"
    r"(?:list|tell|write|give|explain|describe|show|make|create|translate|summari[sz]e|generate|help|"
    r"find|suggest|recommend|compare|name|calculate|compute|draft|compose|imagine|pretend|suppose|assume|"
    r"check|correct|fix|rewrite|rephrase|convert|answer|define|count|play|sing|recite|draw|design|"
    r"plan|book|search|look up|send|read|summarise|continue|repeat|say|cite|quote|guess)\b)",
    re.I,
)
# "Remember that I ..." wraps a statement in a request: keep the statement.
_WRAPPER = re.compile(
    r"^(?:please\s+)?(?:remember|note|keep in mind|don'?t forget|for the record|fyi|just so you know)"
    r"(?:\s*(?:that|:|,))?\s+",
    re.I,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|pretend|hypothetically|let'?s say|what if|assume|"
    r"assuming|i wish|in a story|role-?play)\b",
    re.I,
)
_QUOTE_MARK = "\u27e6quote\u27e7"
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|«[^»]*»")
_FORGET = re.compile(
    r"^(?:please\s+)?(?:forget|delete|remove|erase|drop|scratch)\b(?:\s+(?P<rest>.*))?$", re.I
)
_BARE_FORGET = frozenset({"", "that", "it", "this", "what i said", "what i just said", "everything i said"})
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|im|i've|i'd|i'll|me|myself|we|we're|our|us)\b", re.I)
_POSSESSIVE = re.compile(r"\b(?:my|mine|our)\b", re.I)
_OWNED = re.compile(
    r"\b(?:my|our)\s+(?:(?:new|old|little|big|younger|older|elder|best|current|first|second|only|"
    r"favou?rite|dear)\s+)?(\w+)",
    re.I,
)
_THIRD = re.compile(r"\b(?:he|she|they|his|her|their|him|them|he's|she's|they're)\b", re.I)
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|nobody|neither|nor|no longer|anymore|without)\b|n't\b", re.I
)
_CLAUSE = re.compile(r"[,;:]\s*|\s+(?:and|but|so|because|while|although|though)\s+", re.I)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?")
_STOP_WORDS = """a an the and or but so to of in on at for from with by as is are was were be been being
am do does did has have had having it its this that these those there here their they them he she his
her him user users user's i me my mine we our us you your very really just also still now then than too
into about over some any all each every more most much many can could would should will shall may might
must who whom which what when where why how s t d ll ve re m named called currently"""
_STOP = frozenset(_STOP_WORDS.split())
STOP = _STOP  # function words of English, for tokenising only (never to decide a meaning)
# Words that mark the same topic in different words ("moved to" vs "lives in").
_TOPICS: tuple[frozenset[str], ...] = (
    frozenset({"live", "lives", "living", "lived", "move", "moved", "moving", "relocat", "reside", "home",
               "based", "settl", "city", "town", "country", "address"}),
    frozenset({"work", "works", "worked", "working", "job", "employ", "employed", "career", "profession",
               "occupation", "colleague"}),
    frozenset({"name", "call", "called"}),
    frozenset({"like", "love", "enjoy", "prefer", "hate", "dislike", "favorite", "favourite", "fan"}),
    frozenset({"wife", "husband", "partner", "married", "marry", "girlfriend", "boyfriend", "spouse",
               "divorc", "engag"}),
    frozenset({"age", "old", "born", "birthday", "turned"}),
)


def stems(text: str) -> set[str]:
    """Content words of ``text``, lower-cased and crudely stemmed (a set, for overlaps)."""
    out: set[str] = set()
    for word in _WORD.findall(text.replace("’", "'")):
        low = word.casefold()
        if low.endswith("n't"):
            out.add("not")
            continue
        low = low.split("'")[0]
        if low in _STOP or len(low) < 2:
            continue
        out.add(_stem(low))
    return out


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


_NAME_TOPIC = 2  # index of the name group in _TOPICS
_TASTE_TOPIC = 3  # index of the likes / dislikes group
_TOPIC_STEMS = tuple(frozenset(_stem(w) for w in group) for group in _TOPICS)


def _topics(words: Iterable[str]) -> set[int]:
    return {i for i, group in enumerate(_TOPIC_STEMS) for w in words
            if len(w) >= 3 and any(w.startswith(g) or g.startswith(w) for g in group)}


def words(text: str) -> list[str]:
    """The words of ``text`` (any script; an apostrophe's suffix kept with its word)."""
    return _WORD.findall(text.replace("’", "'"))


def specifics(text: str) -> set[str]:
    """Names and numbers in ``text`` (capitalised words after the first, digits), lower-cased."""
    words = _WORD.findall(text.replace("’", "'"))
    out = {w.casefold() for w in words if any(c.isdigit() for c in w)}
    for i, word in enumerate(words):
        if i > 0 and word[:1].isupper() and word.casefold() not in ("i", "i'm", "user", "user's", "the"):
            out.add(word.casefold().split("'")[0])
    return out


# -- which part of a message states something about the user -----------------------------------


def statements(message: str) -> list[str]:
    """The sentences of ``message`` that may state facts about the user.

    Questions, requests and tasks, hypotheticals and quoted text are dropped; "remember that ..."
    keeps its statement. An empty list means there is nothing to extract.
    """
    kept: list[str] = []
    text = _QUOTED.sub(_QUOTE_MARK, message.replace("’", "'"))
    for raw in _SENTENCES.split(text):
        sentence = raw.strip()
        if not sentence or sentence.startswith(">") or _QUOTE_MARK in sentence:
            continue  # quoted or reported words are someone else's
        body = _LEAD.sub("", sentence).strip()
        body = _WRAPPER.sub("", body).strip()
        if not body or sentence.rstrip().endswith("?") or _QUESTION.match(body):
            continue
        if _REQUEST.match(body) or _HYPOTHETICAL.search(body) or _FORGET.match(body):
            continue
        kept.append(body)
    return kept


def forget_request(message: str) -> str | None:
    """What the user asks to forget ("Forget that I live in Ghent" -> "I live in Ghent").

    Returns "" for a bare "forget that" / "forget it" (the previous message's facts), None when
    the message is not a request to forget.
    """
    for raw in _SENTENCES.split(message.replace("’", "'")):
        body = _LEAD.sub("", raw.strip()).strip().rstrip(".!")
        match = _FORGET.match(body)
        if match is None:
            continue
        rest = (match.group("rest") or "").strip()
        rest = re.sub(r"^(?:about\s+|that\s+|the fact that\s+|what i said about\s+|what i told you about\s+)",
                      "", rest, flags=re.I).strip()
        if rest.casefold() in _BARE_FORGET:
            return ""
        return rest
    return None


# -- is an extracted fact grounded in the user's own words --------------------------------------


_SUBJECTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.I), subject) for pattern, subject in (
        (r"^(?:i am|i'm|they are|they're)\b", "The user is"),
        (r"^(?:i was|they were)\b", "The user was"),
        (r"^(?:i have|i've|they have|they've)\b", "The user has"),
        (r"^(?:i don't|i do not|they don't|they do not)\b", "The user does not"),
        (r"^(?:my|their)\b", "The user's"),
    )
)


def as_user_subject(fact: str) -> str:
    """A fact a small model wrote in the user's own voice or as "they" ("They are allergic to
    almonds", "My sister lives in Paris"), in the third person the store uses. Whether it is
    really about the user is still for grounding_problem to decide."""
    clean = fact.strip().replace("’", "'")
    for pattern, subject in _SUBJECTS:
        match = pattern.match(clean)
        if match is not None:
            return subject + clean[match.end():]
    return fact


# Question marks of the world's scripts (punctuation, not words: the rule is the same in any
# language): Latin/Cyrillic/Greek-in-practice, fullwidth, Arabic, Armenian, Ethiopic, inverted.
QUESTION_MARKS = frozenset("?？؟՞፧⸮‽⁇⁈⁉¿")
_SENTENCE_ENDS = re.compile(r"[^.!?。！？؟\n]+[.!?。！？؟]*")


def sentences(message: str) -> list[str]:
    """The sentences of ``message`` as written, split at the sentence marks of any script."""
    return [m.group().strip() for m in _SENTENCE_ENDS.finditer(message) if m.group().strip(" .!?¿¡")]


def told_sentences(message: str) -> str:
    """``message`` without the sentences it asks (ending in a question mark of any script), or
    the whole message when every sentence asks."""
    told = [s for s in sentences(message) if s[-1:] not in QUESTION_MARKS]
    return " ".join(told) if told else message.strip()


# The form of a fact the model writes (always English, "The user ..."): one that reports what the
# user asked, would do, or said to the assistant in passing ("The user thanked the assistant for
# their help.", from "Nice, thank you.") is no fact, in whatever language the user wrote. This
# reads the model's English output, never the user's words.
_NOT_A_FACT = re.compile(
    r"^the user (?:(?:has |had )?(?:asked|asks|requested|requests|wonders|wondered|would|might|thanked|"
    r"thanks|greeted|greets)\b|wants to know\b|is asking\b|is wondering\b"
    r"|(?:said|says)\s*[:,]?\s*[\"'“‘«])|\b(?:if|would|might)\b",  # "The user said 'Thanks, bye!"
    re.I,
)


def written_as_no_fact(fact: str) -> bool:
    """Whether the model wrote ``fact`` as a question (any script's question mark), or as
    something the user asked, wondered or would do under a condition ("The user asked if
    Valencia is warm in April", "The user would buy a house at Gardasee if they were rich"):
    its own form says it is no fact."""
    clean = fact.replace("’", "'").rstrip()
    return _NOT_A_FACT.search(clean) is not None or clean[-1:] in QUESTION_MARKS


def grounding_problem(fact: str, statement_text: str) -> str | None:
    """Why ``fact`` is not grounded in ``statement_text`` (None when it is)."""
    clean = fact.strip()
    if not re.match(r"^the user\b", clean, re.I):
        return "not about the user"
    said = statement_text.replace("’", "'")
    said_words = {w.casefold().split("'")[0] for w in _WORD.findall(said)}
    missing = [s for s in specifics(clean) if not any(w.startswith(s[:5]) for w in said_words)]
    if missing:
        return f"names or numbers the user did not say ({', '.join(sorted(missing))})"
    content = stems(clean)
    said_stems = stems(said)
    if content and not (content & said_stems or _topics(content) & _topics(said_stems)):
        return "no word of it was said by the user"
    clause = _best_clause(content, said)
    if clause is None:
        return None
    # A name needs no topic word ("I'm Mara"); other predicates must be the user's own.
    fact_topics, said_topics = _topics(content) - {_NAME_TOPIC}, _topics(stems(clause))
    if fact_topics and said_topics and not fact_topics & said_topics:
        return "says something else than the user (e.g. 'lives in' for 'loves')"
    owned = {_stem(m.casefold()) for m in _OWNED.findall(clause)}  # "my cat" -> the user has a cat
    possessive_fact = re.match(r"^the user'?s\b", clean, re.I) is not None or bool(
        owned & content or _topics(owned) & _topics(content)
    )
    if not possessive_fact and not _FIRST_PERSON.search(clause) and (
        _POSSESSIVE.search(clause) or _THIRD.search(clause)
    ):
        return "about someone else, not the user"
    if _NEGATION.search(clause) and not _NEGATION.search(clean):
        return "drops the user's negation"
    return None


def _best_clause(content: set[str], text: str) -> str | None:
    best, best_score = None, 0
    for clause in _CLAUSE.split(text):
        if not clause or not clause.strip():
            continue
        score = len(content & stems(clause))
        if score > best_score:
            best, best_score = clause, score
    return best


# -- may an UPDATE replace this fact --------------------------------------------------------------


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of content words, where words of one topic group count as the same word."""
    wa, wb = _with_topics(stems(a)), _with_topics(stems(b))
    return len(wa & wb) / max(len(wa | wb), 1)


def _with_topics(words: set[str]) -> set[str]:
    out = set()
    for word in words:
        groups = _topics([word])
        out |= {f"#topic{g}" for g in groups} if groups else {word}
    return out


_PEOPLE_WORDS = """sister sisters brother brothers mother mom mum father dad parent parents friend friends
wife husband partner son sons daughter daughters child children kid kids boss colleague colleagues
coworker manager neighbour neighbor cousin aunt uncle niece nephew grandmother grandfather grandma
grandpa girlfriend boyfriend fiance fiancee roommate flatmate family"""
_PEOPLE = frozenset(_PEOPLE_WORDS.split())
_USERS_OWN = re.compile(r"^the user[’']?s\s+(?:[^\W\d_]+\s+){1,2}?([^\W\d_]+)", re.I)
_RELATIVE = re.compile(
    r"^the user'?s\s+(?:(?:younger|older|elder|little|big|baby|best|new|ex-?|late)\s+)?(\w+)", re.I
)


def subject(fact: str) -> str:
    """Whom a stored fact is about: "user", the person it names ("The user's sister ..."), or
    the name it starts with ("Helga is 70 years old": the write path leaves out a relation it
    cannot check, and the fact is still Helga's, not the user's)."""
    text = fact.strip()
    match = _RELATIVE.match(text)
    person = match.group(1).casefold() if match else ""
    if person in _PEOPLE:
        return person
    owned = _USERS_OWN.match(text)
    if owned and owned.group(1)[:1].isupper():
        return owned.group(1).casefold()  # "The user's voisin Gérard ...": Gérard's, in any language
    first = text.split(maxsplit=1)[0] if text else ""
    if first[:1].isupper() and not re.match(r"the\b", text, re.I) and first.casefold() not in STOP:
        return first.strip(",.:;!?'’").casefold()
    return "user"


def same_person(a: str, b: str) -> bool:
    """Whether two stored facts are about the same person: by name when both name one ("The
    user's daughter Noor is 5" and "Noor is now 6 years old"), else by whom they are about
    ("The user's sister ..." twice; the user's own)."""
    name_a, name_b = named_person(a), named_person(b)
    if name_a and name_b:
        return name_a == name_b
    return subject(a) == subject(b)


def named_person(fact: str) -> str:
    """The name of the person ``fact`` is about ("noor" of "The user's daughter Noor ..." and of
    "Noor is 6"), or "" when it names none (the user's own facts, "The user's sister ...")."""
    who = subject(fact)
    if who in _PEOPLE:
        return subject_phrase(fact)[1]
    return "" if who == "user" else who  # a name: "Noor is 6", "The user's voisin Gérard ..."


def _subject_stems(fact: str) -> set[str]:
    """The content words that only say whom ``fact`` is about: "mother" and "greta" of "The
    user's mother Greta ...", "helga" of "Helga is 70 years old"; none for the user's own."""
    return stems(subject_phrase(fact)[0])


def subject_phrase(fact: str) -> tuple[str, str]:
    """(the words of ``fact`` that say whom it is about, the name after its relation word):
    ("The user's mother Greta", "greta"), ("Helga", ""); ("", "") for the user's own."""
    text = fact.strip()
    if subject(text) == "user":
        return "", ""
    match = _RELATIVE.match(text) or _USERS_OWN.match(text)
    if match is None:
        first = text.split(maxsplit=1)[0] if text else ""
        return (first, "") if subject(text) == first.strip(",.:;!?'’").casefold() else ("", "")
    head, rest = text[:match.end()], text[match.end():].split(maxsplit=1)
    if not rest or not rest[0][:1].isupper():
        return head, ""
    return f"{head} {rest[0]}", rest[0].strip(",.:;!?'’").casefold().split("'")[0]


def same_topic(old: str, new: str, said: str = "") -> bool:
    """Whether an UPDATE of ``old`` by ``new`` may stand: the same person ("The user's sister
    lives in Paris" never replaces "The user lives in Berlin"), and a shared content word or
    topic group. These English word groups are a hint, not the gate: when they know nothing of
    the new fact's topic, the model's UPDATE stands if the user's message (``said``) names the
    old fact ("started at the Royal Mint on Monday" after "works as a bookkeeper at Hartley &
    Sons", from "I handed in my notice at Hartley's ..."), and never otherwise: "has an
    appointment with the psychologist on Tuesdays" replaced "lives in Lille"."""
    if not same_person(old, new):
        return False
    # whom both are about is not a shared topic: "The user's mother Greta is visiting for two
    # weeks" replaced "The user's mother Greta was diagnosed with diabetes" in the long-use replay
    a, b = stems(old) - _subject_stems(old), stems(new) - _subject_stems(new)
    if a & b or _topics(a) & _topics(b):
        return True
    said_words = {w.casefold() for w in _WORD.findall(said.replace("’", "'"))}
    # the message naming whom the old fact is about does not name the fact: "Greta is doing
    # better with her diet." replaced "The user's mother Greta was diagnosed with diabetes."
    whom = _subject_stems(old)
    named = [n for n in specifics(old) if len(n) >= 3 and not n.isdigit() and _stem(n) not in whom]
    return not _topics(b) and any(any(w.startswith(n[:5]) for w in said_words) for n in named)


_TOPIC_WORDS = frozenset(w for group in _TOPIC_STEMS for w in group)


def same_subject(old: str, new: str) -> bool:
    """Whether ``new`` speaks about what ``old`` states (for a DELETE): the same person, and a
    name, number or content word in common that is not just the kind of statement ("likes",
    "lives"). "The user likes green tea" never deletes "The user likes jazz"."""
    if not same_person(old, new):
        return False
    if specifics(old) & specifics(new):
        return True
    a, b = stems(old), stems(new)
    shared = a & b
    if any(not any(w.startswith(t) or t.startswith(w) for t in _TOPIC_WORDS) for w in shared):
        return True
    # one home, one job, one name, one partner, one age: a new one ends the old one; tastes add up
    return bool((_topics(a) & _topics(b)) - {_TASTE_TOPIC})


def vaguer(old: str, new: str, user_message: str) -> bool:
    """True when ``new`` says less than ``old`` and the user did not ask for it.

    Vaguer: its content words are a strict subset of the old ones, or it drops the old fact's
    names/numbers without naming any of its own. Allowed when the user's message itself names
    what is dropped (the user corrected it).
    """
    a, b = stems(old), stems(new)
    dropped = specifics(old) - specifics(new)
    less = (b < a) or (bool(dropped) and not specifics(new))
    if not less:
        return False
    said = {w.casefold().split("'")[0] for w in _WORD.findall(user_message.replace("’", "'"))}
    return not any(any(w.startswith(d[:5]) for w in said) for d in dropped | (a - b))
