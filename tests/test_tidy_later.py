"""Tidy-up reads what the user said later: a fact their own later words made untrue is proposed as
stale, updated to what holds now (or retired), never on the model's word alone. Real store, git,
chromadb and ONNX embedder; the model is the scripted server."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from desktop_mem.engine.chat import tidy
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import GLOBAL_CONVERSATION, utc_now

LATER = "FACT was stored earlier"
PAIR = "Compare fact A and fact B"


@pytest.fixture
def engine(chat_engine: MemoryEngine) -> MemoryEngine:
    return chat_engine  # with its index open, talking to the scripted server


def _told(engine: MemoryEngine, message: str, fact: str | None, days_ago: int,
          conversation: str = "daily", scope: str = GLOBAL_CONVERSATION) -> tuple[Any, Any]:
    """A user turn and, when given, the fact the write path drew from it (the user's scope)."""
    at = utc_now() - timedelta(days=days_ago)
    turn = engine.add(message, conversation_id=conversation, role="user", created_at=at)
    stored = engine.add(fact, conversation_id=scope, source="llm", created_at=at + timedelta(seconds=5),
                        meta={"from_turns": [turn.id]}) if fact else None
    return turn, stored


def _later(changed: bool, now: str) -> Callable[[dict[str, Any]], str]:
    return lambda _body: json.dumps({"changed": changed, "now": now})


def _proposals(engine: MemoryEngine) -> list[Any]:
    return [p for p in engine.proposals()[0] if tidy.TIDY_KEY in p.extra]


def _live(engine: MemoryEngine) -> list[str]:
    return sorted(m.text for m in engine.list_memories(role="memory"))


def test_a_fact_the_users_later_words_changed_is_updated_to_what_holds_now(
        engine: MemoryEngine, scripted_llm: Any) -> None:
    _, noor = _told(engine, "Our daughter Noor is 5.", "The user's daughter Noor is 5.", 200)
    turn, _ = _told(engine, "Noor turned 6 last week!", None, 20)
    scripted_llm.script(LATER, _later(True, "Noor is now 6."))  # what the 1.5B model wrote
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')

    report = engine.tidy_up()

    assert report.model_error is None and report.counts()["stale"] == 1, report.findings
    [proposal] = _proposals(engine)
    meta = proposal.extra[tidy.TIDY_KEY]
    # whom it is about is kept as the fact said it: Noor is still the user's daughter
    assert proposal.target_id == noor.id and proposal.text == "The user's daughter Noor is now 6."
    assert turn.id in meta["sources"] and "Noor turned 6" in proposal.describe()
    assert _live(engine) == ["The user's daughter Noor is 5."]  # nothing until accepted

    engine.accept_proposal(proposal.id)

    assert _live(engine) == ["The user's daughter Noor is now 6."]
    [tomb] = engine.list_memories(role="memory", only_deleted=True)
    assert tomb.id == noor.id and tomb.replaced_by
    engine.restore(tomb.id)  # undone like any change
    assert "The user's daughter Noor is 5." in _live(engine)


def test_the_models_changed_alone_retires_nothing(engine: MemoryEngine, scripted_llm: Any) -> None:
    """A small model reads "We adopted a dog named Bram!" as changing the cat: the pair question
    says the two facts are different, and nothing is proposed."""
    _told(engine, "We have a cat called Pixel.", "The user has a cat named Pixel.", 200)
    _told(engine, "We adopted a dog named Bram!", None, 20)
    scripted_llm.script(LATER, _later(True, "The user has a dog named Bram."))
    scripted_llm.script(PAIR, '{"relation": "different", "merged": ""}')

    report = engine.tidy_up()

    assert report.counts()["stale"] == 0 and _proposals(engine) == []


@pytest.mark.parametrize(("told", "fact", "later", "now"), [
    # names nobody said
    ("I drive an old Volvo.", "The user drives an old Volvo.", "I sold the Volvo, we cycle everywhere now.",
     "The user drives a Tesla in Brussels."),
    # words neither the fact nor the message holds (what the 1.5B model wrote)
    ("I drive an old Volvo.", "The user drives an old Volvo.", "I sold the Volvo, we cycle everywhere now.",
     "The user now drives a new electric bike."),
    # the fact negated: not what holds now (a message that only ends a fact is a forget)
    ("I'm learning Spanish on the side.", "The user is learning Spanish.",
     "I gave up Spanish, no time for learning it.", "The user is no longer learning Spanish."),
    # the fact dressed up (what a 1.5B model said of "Pixel caught a mouse, gross.")
    ("We have a cat called Pixel.", "The user has a cat named Pixel.", "Pixel caught a mouse, gross.",
     "The user has a cat named Pixel and the mouse is gone."),
    # nothing said of what holds now
    ("We have a cat called Pixel.", "The user has a cat named Pixel.", "Pixel caught a mouse, gross.", ""),
    # the fact's first clause kept whole, its tail swapped for the message's (the 150-turn replay)
    ("I'm allergic to peanuts, so keep that in mind for recipes.",
     "The user is allergic to peanuts, so keep that in mind for recipes.",
     "I switched from tea to coffee, I need the caffeine now.",
     "The user is allergic to peanuts and need caffeine now."),
])
def test_nothing_is_proposed_when_what_holds_now_is_not_grounded_or_is_the_fact_again(
        engine: MemoryEngine, scripted_llm: Any, told: str, fact: str, later: str, now: str) -> None:
    _told(engine, told, fact, 200)
    _told(engine, later, None, 20)
    scripted_llm.script(LATER, _later(True, now))
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')

    report = engine.tidy_up()

    assert report.counts()["stale"] == 0, report.findings
    assert _live(engine) == [fact]


def test_what_holds_now_in_the_users_voice_is_stored_in_the_third_person(
        engine: MemoryEngine, scripted_llm: Any) -> None:
    _told(engine, "I drink green tea every morning.", "The user drinks green tea every morning.", 200)
    _told(engine, "I switched from tea to coffee, I need the caffeine now.", None, 20)
    scripted_llm.script(LATER, _later(True, "I'm drinking coffee every morning now."))
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')

    engine.tidy_up()

    [proposal] = _proposals(engine)
    assert proposal.event == "UPDATE" and proposal.text.startswith("The user ") and "coffee" in proposal.text


def test_what_holds_now_already_held_retires_the_old_fact_in_its_favour(
        engine: MemoryEngine, scripted_llm: Any) -> None:
    _, ghent = _told(engine, "I live in Ghent.", "The user lives in Ghent.", 200)
    _, leuven = _told(engine, "We moved, we live in Leuven now.", "The user lives in Leuven.", 20)
    # the pair question would retire Ghent for Leuven by itself; here it says "different" so that
    # the later turn is what finds it, and "contradicts" for the later reading
    scripted_llm.script(lambda body: "A: The user lives in Ghent.\nB: The user lives in Leuven." in
                        json.dumps(body, ensure_ascii=False).replace("\\n", "\n") and
                        "FACT" not in json.dumps(body), '{"relation": "different", "merged": ""}', times=1)
    scripted_llm.script(LATER, _later(True, "The user lives in Leuven."))
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')

    engine.tidy_up()

    [proposal] = _proposals(engine)
    assert proposal.target_id == ghent.id and proposal.event == "DELETE"
    assert proposal.extra[tidy.TIDY_KEY]["replaced_by"] == leuven.id
    engine.accept_proposal(proposal.id)
    assert _live(engine) == ["The user lives in Leuven."]  # no second copy


def test_only_a_later_turn_where_the_fact_is_read_is_asked_about(
        engine: MemoryEngine, scripted_llm: Any) -> None:
    """A turn said before the fact, the fact's own turn, and another conversation's turn for a fact
    of one conversation never reach the model."""
    _told(engine, "Noor turned 6 last week!", None, 300)  # before the fact
    _told(engine, "For the trip, Noor is 5 so she travels free.",
                    "Noor is 5 and travels free on the trip.", 200, conversation="trip", scope="trip")
    _told(engine, "Noor turned 6 yesterday!", None, 10, conversation="school")  # another chat
    scripted_llm.script(LATER, _later(True, "Noor is 6."))
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')

    report = engine.tidy_up()

    assert not any(LATER in r.system_text for r in scripted_llm.chat_requests)
    assert report.counts()["stale"] == 0, report.findings


def test_another_persons_fact_changes_only_by_a_message_that_names_them(
        engine: MemoryEngine, scripted_llm: Any) -> None:
    _told(engine, "My brother Jonas lives in Antwerp.", "The user's brother Jonas lives in Antwerp.", 200)
    _told(engine, "We moved, we live in Leuven now.", None, 20)
    scripted_llm.script(LATER, _later(True, "Jonas lives in Leuven now."))  # what a 1.5B model said
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')

    report = engine.tidy_up()

    assert report.counts()["stale"] == 0, report.findings


def test_a_message_that_shares_no_word_with_the_fact_changes_nothing(
        engine: MemoryEngine, scripted_llm: Any) -> None:
    _told(engine, "I sold the Volvo, we cycle everywhere now.", "The user cycles everywhere.", 200)
    _told(engine, "Yeah.", None, 20)
    scripted_llm.script(LATER, _later(True, "The user has stopped cycling."))  # read into "Yeah."
    scripted_llm.script(PAIR, '{"relation": "contradicts", "merged": ""}')

    report = engine.tidy_up()

    assert report.counts()["stale"] == 0, report.findings

