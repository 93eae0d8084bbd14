"""Tidy-up: memory looked at as a whole, cleaned as a change the user reviews like a pull request.

It proposes and never applies by itself; each proposal names its reason; accepting is one commit
that the Timeline can undo; a rejected proposal is not made again; the merged text holds no name
the originals lack. Real store, git, chromadb and ONNX embedder; the model is the scripted server.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from desktop_mem.engine.chat import tidy
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import ValidationError, utc_now
from tests.llm_roles import PASSING, TOLD_AS_TRUE
from tests.scripted_llm import Odds

PAIR = "Compare fact A and fact B"
JUNK = "List ONLY the entries that are clearly not such a fact"
GAP = "A sentence from the summary of a chat is below"


def _said(engine: MemoryEngine, message: str, fact: str, **options: Any) -> tuple[Any, Any]:
    """A user's message and the fact the write path drew from it (with its turn, as it writes it)."""
    turn = engine.add(message, conversation_id="home", role="user", created_at=options.get("created_at"))
    return turn, engine.add(fact, source="llm", meta={"from_turns": [turn.id]}, **options)


@pytest.fixture
def tidy_engine(make_config: Callable[..., Any], scripted_llm: Any) -> Iterator[MemoryEngine]:
    engine = MemoryEngine(make_config(**{
        "llm.base_url": scripted_llm.base_url, "llm.model": "test-model", "llm.api_key": "test",
        "llm.timeout": 5}))
    engine.open_index()
    try:
        yield engine
    finally:
        engine.close()


def _commits(engine: MemoryEngine) -> int:
    return _commits_at(engine.root)


def _live(engine: MemoryEngine) -> list[str]:
    return sorted(m.text for m in engine.list_memories(role="memory"))


def _two_utrechts(engine: MemoryEngine, llm: Any) -> None:
    """Two wordings of one fact, and the model saying they are the same."""
    engine.add("The user lives in Utrecht", source="llm")
    engine.add("The user lives in the city of Utrecht", source="llm")
    llm.script(PAIR, '{"relation": "same", "merged": "The user lives in Utrecht"}')


def _tidy(engine: MemoryEngine) -> list[Any]:
    return [p for p in engine.proposals()[0] if tidy.TIDY_KEY in p.extra]


def test_duplicates_are_proposed_as_one_merge_and_nothing_changes_until_accepted(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    old = tidy_engine.add("The user lives in Utrecht", source="llm")
    new = tidy_engine.add("The user lives in the city of Utrecht", source="llm")
    scripted_llm.script(PAIR, '{"relation": "same", "merged": "The user lives in Utrecht"}')
    before = _commits(tidy_engine)

    report = tidy_engine.tidy_up()

    assert report.model_error is None and report.counts()["duplicate"] == 1, report
    assert _live(tidy_engine) == ["The user lives in Utrecht", "The user lives in the city of Utrecht"]
    assert _commits(tidy_engine) == before + 1  # the proposals, and nothing else
    [proposal] = _tidy(tidy_engine)
    assert "duplicates" in proposal.describe() and "same fact in other words" in proposal.describe()

    tidy_engine.accept_proposal(proposal.id)

    assert _live(tidy_engine) == ["The user lives in Utrecht"]
    assert _commits(tidy_engine) == before + 2  # one commit for the accepted group
    gone = [m for m in tidy_engine.list_memories(role="memory", only_deleted=True)]
    survivor = tidy_engine.list_memories(role="memory")[0]
    assert {m.id for m in gone} == {old.id, new.id} - {survivor.id} or survivor.id not in {old.id, new.id}
    assert all(m.replaced_by == survivor.id for m in gone)
    # undone like any change: the tombstone comes back
    tidy_engine.restore(gone[0].id)
    assert len(_live(tidy_engine)) == 2


def test_a_merged_text_with_a_name_the_originals_lack_is_not_used(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    tidy_engine.add("The user lives in Utrecht", source="llm")
    tidy_engine.add("The user lives in the city of Utrecht", source="llm")
    scripted_llm.script(PAIR, '{"relation": "same", "merged": "The user lives in Utrecht, Netherlands"}')

    tidy_engine.tidy_up()

    [proposal] = _tidy(tidy_engine)
    assert "Netherlands" not in proposal.text
    assert "Netherlands" not in proposal.describe()


def test_a_rejected_proposal_is_not_made_again(tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    _two_utrechts(tidy_engine, scripted_llm)
    tidy_engine.tidy_up()
    [proposal] = _tidy(tidy_engine)

    tidy_engine.reject_proposal(proposal.id)
    again = tidy_engine.tidy_up()

    assert _tidy(tidy_engine) == []
    assert again.skipped_rejected == 1
    assert len(_live(tidy_engine)) == 2


def test_a_contradicted_older_fact_is_retired_in_favour_of_the_newer(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    now = utc_now()
    older = tidy_engine.add("The user works as a nurse", source="llm",
                            created_at=now - timedelta(days=200))
    newer = tidy_engine.add("The user works as a teacher", source="llm",
                            created_at=now - timedelta(days=2))
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')

    report = tidy_engine.tidy_up()

    assert report.counts()["stale"] == 1
    [proposal] = _tidy(tidy_engine)
    assert proposal.target_id == older.id and "newer fact" in proposal.describe()
    tidy_engine.accept_proposal(proposal.id)
    [tomb] = tidy_engine.list_memories(role="memory", only_deleted=True)
    assert tomb.id == older.id and tomb.replaced_by == newer.id
    assert _live(tidy_engine) == [newer.text]


def test_a_newer_fact_about_something_else_never_retires_an_older_one(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Seen in the 100-turn long-use tidy-up: the 1.5B model said "The user is vegetarian"
    contradicts "The user is Ilse" (cosine 0.86), and the user's name was proposed as stale."""
    name = tidy_engine.add("The user is Ilse", source="llm", created_at=utc_now() - timedelta(days=3))
    tidy_engine.add("The user is vegetarian", source="llm")
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')
    scripted_llm.script(JUNK, '{"junk": []}')
    report = tidy_engine.tidy_up()
    assert name.id not in {m.id for f in report.findings for m in f.targets}


def test_an_expired_fact_is_proposed_as_stale_without_the_model(
        make_config: Callable[..., Any]) -> None:
    engine = MemoryEngine(make_config(**{"llm.base_url": "http://127.0.0.1:9/v1", "llm.timeout": 1}))
    try:
        engine.add("The user is at a conference this week", source="llm",
                   expires_at=utc_now() - timedelta(days=1))
        report = engine.tidy_up()
        assert report.counts()["stale"] == 1
        [proposal] = _tidy(engine)
        assert "expired" in proposal.describe()
    finally:
        engine.close()


def test_a_fact_told_of_a_day_or_week_that_has_passed_is_proposed_as_stale_without_the_model(
    tidy_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """"The user is tired today." a month later tells nothing about now; the time words are read
    in any language dateparser reads. A plan ("next month") may have come true, the past ("last
    week") is history, a day not over yet still holds, and a fact written by hand is the user's."""
    month_ago = utc_now() - timedelta(days=40)
    tired = tidy_engine.add("The user is tired today.", source="llm", created_at=month_ago)
    holiday = tidy_engine.add("De gebruiker is deze week op vakantie in de Ardennen.", source="llm",
                              created_at=month_ago)
    for text in ("The user is moving to Leuven next month!", "Noor turned 6 last week."):
        tidy_engine.add(text, source="llm", created_at=month_ago)
    tidy_engine.add("The user is busy today.", source="llm")
    tidy_engine.add("The user is on call today.", created_at=month_ago)  # by hand

    report = tidy_engine.tidy_up()

    stale = {f.targets[0].id: f.reason for f in report.findings if f.kind == "stale"}
    assert set(stale) == {tired.id, holiday.id}
    assert "which has passed" in stale[tired.id]
    [proposal] = [p for p in _tidy(tidy_engine) if p.target_id == tired.id]
    assert proposal.event == "DELETE"


def test_junk_the_model_names_is_proposed_but_hand_written_facts_are_never_offered(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    tidy_engine.add("Can you write me a poem about autumn?", source="llm")
    tidy_engine.add("Note to self: call the plumber", source="manual")
    seen: list[str] = []

    def junk(body: dict[str, Any]) -> bool:
        text = " ".join(str(m.get("content", "")) for m in body["messages"])
        if JUNK in text:
            seen.append(text)
            return True
        return False

    scripted_llm.script(junk, '{"junk": [{"n": 1, "why": "request"}]}')
    tidy_engine.tidy_up()

    [proposal] = _tidy(tidy_engine)
    assert proposal.target_text == "Can you write me a poem about autumn?"
    assert all("plumber" not in s for s in seen)


def test_a_fact_naming_what_its_turn_never_said_is_junk(tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    turn = tidy_engine.add("My son Pieter is 6", conversation_id="home", role="user")
    fact = tidy_engine.add("The user's son Pieter is 7 and lives in Delft", source="llm")
    # written as the write path writes it: with the turn it came from
    path = tidy_engine.root / fact.path
    raw = path.read_text("utf-8").replace("source: llm", f"source: llm\nfrom_turns:\n- {turn.id}")
    path.write_text(raw, "utf-8")
    tidy_engine.apply_external_changes([fact.path])

    report = tidy_engine.tidy_up()

    junk = [f.reason for f in report.findings if f.kind == "junk"]
    assert junk == ["not said in its source turn (7, delft)"]


def test_a_persons_news_written_as_the_users_is_proposed_as_theirs(
    tidy_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """The long-use replay stored "The user got a new job at a bakery." from "Tomas got a new job
    at a bakery." (the partner Tomas in memory): tidy-up proposes it as Tomas's, without the model,
    and accepting it changes that fact alone."""
    tidy_engine.add("The user lives in Ghent with their partner Tomas.", source="llm")
    _turn, wrong = _said(tidy_engine, "Tomas got a new job at a bakery.",
                         "The user got a new job at a bakery.")
    _said(tidy_engine, "Finally got a new job!", "The user got a new job.")  # no person: the user's
    assert tidy_engine.memory_health().likely_junk == 1

    tidy_engine.tidy_up()

    [proposal] = [p for p in _tidy(tidy_engine) if p.target_id == wrong.id]
    assert (proposal.event, proposal.text) == ("UPDATE", "Tomas got a new job at a bakery.")
    assert proposal.extra[tidy.TIDY_KEY]["reason"] == "another person's news, written as the user's"
    assert not [p for p in _tidy(tidy_engine) if p.target_text == "The user got a new job."]
    tidy_engine.accept_proposal(proposal.id)
    assert _live(tidy_engine) == ["The user got a new job.",
                                  "The user lives in Ghent with their partner Tomas.",
                                  "Tomas got a new job at a bakery."]


def test_a_fact_the_user_said_is_not_dropped_on_the_models_reading_of_the_fact_alone(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    _cat_turn, cat = _said(tidy_engine, "We have a cat called Pixel.", "The user has a cat named Pixel.")
    ask_turn, asked = _said(tidy_engine, "Can you summarise Hamlet in two sentences?",
                            "The user is summarising Hamlet in two sentences.")
    # the model calls both facts junk; only the second one's message does nothing but ask
    scripted_llm.script(JUNK, '{"junk": [{"n": 1, "why": "not a fact"}, {"n": 2, "why": "request"}]}')

    report = tidy_engine.tidy_up()

    [proposal] = _tidy(tidy_engine)
    assert proposal.target_id == asked.id, [p.describe() for p in _tidy(tidy_engine)]
    assert proposal.extra[tidy.TIDY_KEY]["sources"] == [ask_turn.id]
    assert "its message only asks" in proposal.describe()
    assert cat.id not in {m.id for f in report.findings for m in f.targets}


def _dropped(engine: MemoryEngine, llm: Any, message: str, fact: str, why: str) -> str:
    """The one proposal when the model reads `fact` (drawn from `message`) as junk (`why`)."""
    _said(engine, message, fact)
    llm.script(JUNK, json.dumps({"junk": [{"n": 1, "why": why}]}))
    engine.tidy_up()
    [proposal] = _tidy(engine)
    return proposal.describe()


def test_the_message_copied_word_for_word_is_junk_when_the_model_says_so(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    lottery = "If I ever won the lottery I'd buy a boat, haha."
    scripted_llm.script(TOLD_AS_TRUE, Odds({"A": 0.03, "B": 0.95, "C": 0.02}))
    said = _dropped(tidy_engine, scripted_llm, lottery, lottery, "not a fact")
    assert "tells a plan, a wish, an 'if'" in said


def _proposed(engine: MemoryEngine, llm: Any, message: str, fact: str, why: str,
              odds: Odds | None = None) -> bool:
    """Whether tidy-up proposes dropping `fact` (drawn from `message`) when the model reads it
    as junk (`why`) and, if given, the odds of its message telling a fact true now are `odds`."""
    if odds is not None:
        llm.script(TOLD_AS_TRUE, odds)
    _turn, stored = _said(engine, message, fact)
    llm.script(JUNK, json.dumps({"junk": [{"n": 1, "why": why}]}))
    report = engine.tidy_up()
    return stored.id in {m.id for f in report.findings for m in f.targets}


def test_a_message_copied_that_names_someone_is_their_fact_not_junk(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Seen in the 50-turn long-use run: "Anke's wedding is in September." (the message word for
    word, as the write path stores another person's news) was dropped on the 1.5B model's "not a
    fact", the copy agreeing."""
    said = "Anke's wedding is in September."
    assert not _proposed(tidy_engine, scripted_llm, said, said, "not a fact")


def test_news_copied_that_the_model_calls_a_request_is_not_junk(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Seen in the 50-turn long-use tidy-up: "Anke just got engaged!" (a name the first word, so
    no name to the copy rule) was called a request by the 1.5B model; its odds say it is told."""
    said = "Anke just got engaged!"
    told = Odds({"A": 0.8, "B": 0.1, "C": 0.1})
    assert not _proposed(tidy_engine, scripted_llm, said, said, "request", told)


def test_news_copied_that_the_model_calls_no_fact_is_not_junk(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Seen in the 100-turn long-use tidy-up: "I took up the piano instead." was called "not a
    fact"; the copy agreed, and the user's new hobby was proposed for dropping."""
    told = Odds({"A": 0.7, "B": 0.2, "C": 0.1})
    assert not _proposed(tidy_engine, scripted_llm, "I took up the piano instead.",
                         "The user took up the piano instead.", "not a fact", told)


def test_a_question_stored_as_a_fact_is_junk_in_any_script(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    # a statement, then a question: the message does not only ask, and the fact is not most of it
    message = "أعيش في غنت مع شريكي توماس وابنتنا الصغيرة. ما هي عاصمة أستراليا؟"
    said = _dropped(tidy_engine, scripted_llm, message, "ما هي عاصمة أستراليا؟", "question")
    assert "a question, stored as a fact" in said


def test_the_users_words_quoted_as_a_fact_are_junk_when_the_model_says_so(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """The long-use replay stored "The user said 'Thanks, bye!" (turn 90): its own words say it
    is no fact, as the write path now reads them."""
    said = _dropped(tidy_engine, scripted_llm, "Thanks, bye!", "The user said 'Thanks, bye!", "not a fact")
    assert "written as what the user asked, said or would do" in said


def test_a_request_stored_as_a_fact_is_junk_when_the_model_is_sure_its_message_asks(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Most junk of the long-use story: requests restated as facts ("wants a list of ..."). The
    model's "request" stands when its odds say the message tells nothing true now."""
    scripted_llm.script(TOLD_AS_TRUE, Odds({"A": 0.03, "B": 0.07, "C": 0.9}))
    said = _dropped(tidy_engine, scripted_llm, "Hazme una lista de cinco libros de García Márquez.",
                    "The user wants a list of five books by García Márquez", "request")
    assert "tells a plan, a wish, an 'if' or a request" in said


def test_a_fact_the_model_calls_a_request_stays_when_its_message_tells_it(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    told = Odds({"A": 0.6, "B": 0.3, "C": 0.1})
    assert not _proposed(tidy_engine, scripted_llm, "Ich spiele seit Jahren Cello im Orchester.",
                         "The user plays the cello in an orchestra", "request", told)


def _passing_proposed(engine: MemoryEngine, llm: Any, message: str, fact: str, odds: Odds | str) -> bool:
    """Whether tidy-up proposes dropping `fact` (drawn from `message`, which no junk reading names)
    when the model's answer to "is this message a passing remark?" is `odds`."""
    llm.script(PASSING, odds)
    _turn, stored = _said(engine, message, fact)
    report = engine.tidy_up()
    return stored.id in {m.id for f in report.findings for m in f.targets}


def test_small_talk_told_as_true_is_proposed_as_a_passing_remark(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Seen in the 101-turn long-use store: "The user had a bad day." from "Meh, what a day.",
    kept by every other check (the message tells it as true)."""
    sure = Odds({"A": 0.04, "B": 0.93, "C": 0.03})
    assert _passing_proposed(tidy_engine, scripted_llm, "Meh, what a day.", "The user had a bad day.", sure)
    [proposal] = _tidy(tidy_engine)
    assert proposal.event == "DELETE" and proposal.target_text == "The user had a bad day."
    assert proposal.extra[tidy.TIDY_KEY]["reason"].startswith("a passing remark")


def test_a_passing_remark_that_names_someone_or_a_number_is_kept(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """The 1.5B model read "Hi! I'm Ilse, nice to meet you." as a passing remark (0.70)."""
    sure = Odds({"A": 0.02, "B": 0.96, "C": 0.02})
    assert not _passing_proposed(tidy_engine, scripted_llm, "Hallo! Ik ben Ilse.", "The user is Ilse",
                                 sure)
    assert not _passing_proposed(tidy_engine, scripted_llm, "Ugh, 38 degrees.", "It is 38 degrees", sure)
    assert not _passing_proposed(tidy_engine, scripted_llm, "Pixel caught a mouse, gross.",
                                 "Pixel caught a mouse", sure)


def test_small_talk_is_proposed_from_the_measured_odds_up(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """0.8 sits 0.08 above the highest lasting fact of the dev and held-out sets (0.72)."""
    just = Odds({"A": 0.17, "B": 0.82, "C": 0.01})
    assert _passing_proposed(tidy_engine, scripted_llm, "The weather here has been grey all week.",
                             "The weather here has been grey all week.", just)


def test_a_weekday_or_a_month_names_no_one(tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Left as junk after tidy-up in every long-use replay: the capitalised "Mondays" was taken
    for a name. Weekday and month names come from dateparser's data, in each language it reads."""
    sure = Odds({"A": 0.04, "B": 0.93, "C": 0.03})
    assert _passing_proposed(tidy_engine, scripted_llm, "Ugh, Mondays.",
                             "The user feels unenthusiastic about Mondays", sure)
    assert _passing_proposed(tidy_engine, scripted_llm, "Pff, weer maandag.", "The user dreads Maandag", sure)


def test_a_lasting_fact_without_a_name_is_kept_below_the_measured_odds(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """"I drink my coffee black." scored 0.71 as a passing remark on the dev set."""
    below = Odds({"A": 0.27, "B": 0.71, "C": 0.02})
    assert not _passing_proposed(tidy_engine, scripted_llm, "I drink my coffee black.",
                                 "The user drinks their coffee black", below)


def test_without_odds_at_the_endpoint_no_passing_remark_is_proposed(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    assert not _passing_proposed(tidy_engine, scripted_llm, "Meh, what a day.", "The user had a bad day.",
                                 "B")


def _no_merge_of(engine: MemoryEngine, llm: Any, a: str, b: str, merged: str) -> None:
    """The model calls `a` and `b` the same and merges them into `merged`: nothing is proposed."""
    engine.add(a, source="llm")
    engine.add(b, source="llm")
    llm.script(PAIR, json.dumps({"relation": "same", "merged": merged}))
    llm.script(JUNK, '{"junk": []}')

    report = engine.tidy_up()

    assert [r for r in llm.requests if PAIR in json.dumps(r.body)], "the pair was never asked"
    assert report.counts()["duplicate"] == 0 and _tidy(engine) == []


def test_a_merge_that_would_lose_a_name_is_not_proposed(tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    # merged into a text that names neither Jonas nor Lies; and neither original holds both
    _no_merge_of(tidy_engine, scripted_llm, "The user's brother Jonas lives in Antwerp",
                 "The user's brother lives in Antwerp with his daughter Lies",
                 "The user's brother lives in Antwerp")


def test_two_different_facts_the_model_calls_the_same_are_not_merged(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    # close enough to be asked about (a 1.5B model said "same" to this pair in the long-use run)
    _no_merge_of(tidy_engine, scripted_llm, "The user is Ilse", "The user is vegetarian", "The user is Ilse")


def test_a_merge_keeps_every_name_of_the_facts_it_joins(tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    tidy_engine.add("The user lives in Ghent with her partner Tomas", source="llm")
    tidy_engine.add("The user lives in Ghent", source="llm")
    scripted_llm.script(PAIR, '{"relation": "same", "merged": "The user lives in Ghent"}')
    scripted_llm.script(JUNK, '{"junk": []}')

    tidy_engine.tidy_up()

    [proposal] = _tidy(tidy_engine)
    tidy_engine.accept_proposal(proposal.id)
    assert _live(tidy_engine) == ["The user lives in Ghent with her partner Tomas"]


def test_a_fact_a_newer_one_contradicts_is_proposed_as_stale_with_both_source_turns(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    now = utc_now()
    old_turn, older = _said(tidy_engine, "I live in Ghent.", "The user lives in Ghent",
                            created_at=now - timedelta(days=120))
    new_turn, newer = _said(tidy_engine, "We moved, we live in Leuven now.", "The user lives in Leuven",
                            created_at=now - timedelta(days=3))
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')
    scripted_llm.script(JUNK, '{"junk": []}')

    report = tidy_engine.tidy_up()

    assert report.counts()["stale"] == 1, report.findings
    [proposal] = _tidy(tidy_engine)
    meta = proposal.extra[tidy.TIDY_KEY]
    assert proposal.target_id == older.id and meta["replaced_by"] == newer.id
    assert meta["sources"] == [old_turn.id, new_turn.id]
    tidy_engine.accept_proposal(proposal.id)
    assert _live(tidy_engine) == ["The user lives in Leuven"]


def test_accepting_a_merge_whose_facts_changed_meanwhile_is_refused(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    _two_utrechts(tidy_engine, scripted_llm)
    tidy_engine.tidy_up()
    [proposal] = _tidy(tidy_engine)
    for m in tidy_engine.list_memories(role="memory"):
        tidy_engine.delete(m.id)

    with pytest.raises(ValidationError):
        tidy_engine.accept_proposal(proposal.id)


def test_health_counts_without_the_model_and_says_when_tidy_up_ran(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    tidy_engine.add("The user lives in Utrecht", source="llm")
    tidy_engine.add("The user lives in Utrecht.", source="llm")
    tidy_engine.add("The user has a cat", source="llm", expires_at=utc_now() - timedelta(hours=1))
    calls = len(scripted_llm.requests)

    health = tidy_engine.memory_health()

    assert len(scripted_llm.requests) == calls
    assert (health.facts, health.likely_duplicates, health.stale, health.last_run) == (3, 1, 1, None)
    scripted_llm.script(PAIR, '{"relation": "same", "merged": "The user lives in Utrecht"}')
    tidy_engine.tidy_up()
    after = tidy_engine.memory_health()
    assert after.last_run is not None and after.waiting == 2
    assert "tidy-up: last run" in after.lines()[1]


def test_a_hostile_rejected_list_is_ignored(tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    (tidy_engine.root / "review" / "tidy").mkdir(parents=True, exist_ok=True)
    hostile = json.dumps({"rejected": [1, {"x": 2}]})
    (tidy_engine.root / "review" / "tidy" / "rejected.json").write_text(hostile)
    _two_utrechts(tidy_engine, scripted_llm)

    report = tidy_engine.tidy_up()

    assert report.counts()["duplicate"] == 1 and engine_unreadable(tidy_engine) == []


def engine_unreadable(engine: MemoryEngine) -> list[str]:
    return engine.proposals()[1]


def test_facts_beyond_the_limit_are_proposed_never_evicted(make_config: Callable[..., Any]) -> None:
    engine = MemoryEngine(make_config(**{"llm.base_url": "http://127.0.0.1:9/v1", "llm.timeout": 1,
                                         "memory.max_entries": 2}))
    try:
        now = utc_now()
        for i, text in enumerate(["The user was born in Porto", "The user has two sisters",
                                  "The user plays the cello"]):
            engine.add(text, created_at=now - timedelta(days=10 - i))
        report = engine.tidy_up()
        assert [f.targets[0].text for f in report.findings] == ["The user was born in Porto"]
        assert "max_entries" in report.findings[0].reason
        assert len(_live(engine)) == 3
    finally:
        engine.close()


def test_an_ai_tool_can_ask_for_a_tidy_up_over_mcp_and_it_only_proposes(
        make_config: Callable[..., Any]) -> None:
    import anyio

    from tests.mcp_clients import call, stdio_session

    with MemoryEngine(make_config()) as engine:
        engine.add("The user is at a conference this week", source="llm",
                   expires_at=utc_now() - timedelta(days=1))
        root = engine.root

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with stdio_session(root) as s:
            tidied = await call(s, "tidy_memory")
            listed = await call(s, "review_memory_changes")
        return tidied, listed

    tidied, listed = anyio.run(scenario)
    assert tidied["counts"]["stale"] == 1 and tidied["commit"]
    assert [p["summary"] for p in listed["proposals"]] == [tidied["proposed"][0]["summary"]]
    with MemoryEngine(make_config()) as reopened:
        assert _live(reopened) == ["The user is at a conference this week"]


def test_the_cli_proposes_and_accepts_every_proposal_one_commit_each(make_config: Callable[..., Any]) -> None:
    import sys

    with MemoryEngine(make_config()) as engine:
        for text in ("The user is at a conference this week", "The user is in Rome until Friday"):
            engine.add(text, source="llm", expires_at=utc_now() - timedelta(days=1))
        root = engine.root

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(root),
                               "--set", "llm.base_url=http://127.0.0.1:9/v1", "--set", "llm.timeout=1",
                               *args], capture_output=True, text=True, timeout=180)

    tidied = cli("tidy", "--json")
    assert tidied.returncode == 0, tidied.stderr
    assert json.loads(tidied.stdout)["counts"]["stale"] == 2
    before = _commits_at(root)
    accepted = cli("review", "accept", "--all", "--json")
    assert accepted.returncode == 0, accepted.stderr
    assert len(json.loads(accepted.stdout)["accepted"]) == 2 and _commits_at(root) == before + 2
    with MemoryEngine(make_config()) as reopened:
        assert _live(reopened) == [] and reopened.proposals() == ([], [])


def _commits_at(root: Any) -> int:
    return int(subprocess.run(["git", "-C", str(root), "rev-list", "--count", "HEAD"],
                              capture_output=True, text=True, check=True).stdout)


def test_a_summary_gap_written_as_a_what_if_or_a_question_is_not_proposed(
        tidy_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Seen in the long-use run with the 1.5B model: the summary sentence about a lottery joke came
    back as the fact "If you win the lottery, you might buy a boat." and was proposed to be added,
    and one about a request as "Draft a polite email asking landlord to fix heating.". A gap
    follows the same form rules as a fact the write path stores."""
    tidy_engine.add("The user lives in Ghent", source="llm")
    tidy_engine._parts.store.write_summary(
        "home", "The user joked about winning the lottery and buying a boat. The user keeps bees in "
        "the garden. The user asked for a polite email to the landlord about the heating.", 2)

    def fact_of(body: dict[str, Any]) -> str:
        sentence = body["messages"][-1]["content"]
        fact = ("If you win the lottery, you might buy a boat." if "lottery" in sentence
                else "Draft a polite email asking landlord to fix heating." if "landlord" in sentence
                else "The user keeps bees in the garden")
        return json.dumps({"fact": fact})

    scripted_llm.script(GAP, fact_of)
    scripted_llm.script(JUNK, "[]")
    tidy_engine._parts.refresh()  # the catalog reads the summary file written beside it
    tidy_engine.tidy_up()
    assert [p.text for p in _tidy(tidy_engine) if p.event == "ADD"] == ["The user keeps bees in the garden"]


def test_a_chats_task_written_as_a_heading_is_junk_and_one_said_as_a_statement_is_not(
    tidy_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """Stores written before the write path refused them hold tasks such as "birth of Noor": a
    heading, not a fact about the user. Tidy-up proposes dropping them without asking the model;
    a task said as a statement, a fact about someone else and a fact the user wrote stay."""
    from desktop_mem.engine.chat.understanding import HEADING

    heading = tidy_engine.add("packing checklist", conversation_id="japan", source="llm")
    tidy_engine.add("The user is planning a trip to Japan", conversation_id="japan", source="llm")
    tidy_engine.add("Noor is a baby girl born today", source="llm")
    tidy_engine.add("shopping list", conversation_id="japan", source="manual")
    scripted_llm.script(JUNK, '{"junk": []}')
    scripted_llm.script(PAIR, '{"relation": "different", "merged": ""}')
    assert tidy_engine.memory_health().likely_junk == 1

    report = tidy_engine.tidy_up()

    junk = [(f.reason, [m.id for m in f.targets]) for f in report.findings if f.kind == "junk"]
    assert junk == [(HEADING, [heading.id])]
