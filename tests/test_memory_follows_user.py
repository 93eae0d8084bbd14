"""Memory that follows the user (issue 21), over the real engine and the scripted LLM server:
facts reach every conversation, "forget" forgets at once, the summary follows every change,
one message is one turn, and memory work is visible and kept with each reply."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

from desktop_mem.engine.chat.context import FORGET_NOTE, NOTHING_TO_FORGET_NOTE
from desktop_mem.engine.chat.forgetting import FORGOTTEN, RESTORED_REPLY
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import GLOBAL_CONVERSATION
from desktop_mem.engine.store.markdown_store import DELETED_BY_TURN, forget_undone
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat
from tests.scripted_llm import Fault


def _sent(scripted_llm: Any) -> str:
    """Everything the last chat request put in front of the model."""
    body = [r.body for r in scripted_llm.chat_requests if is_chat(r.body)][-1]
    return "\n".join(str(m.get("content", "")) for m in body["messages"])


def _messages(scripted_llm: Any) -> list[dict[str, Any]]:
    """The messages of the last chat request."""
    return list([r.body for r in scripted_llm.chat_requests if is_chat(r.body)][-1]["messages"])


def _system(scripted_llm: Any) -> str:
    """The system prompt (summary, memories) of the last chat request."""
    body = [r.body for r in scripted_llm.chat_requests if is_chat(r.body)][-1]
    return str(body["messages"][0]["content"])


def _tell(eng: MemoryEngine, conv: str, text: str) -> Any:
    reply = eng.chat(conv, text)
    assert eng.wait_idle(30)
    return reply


# -- 1. facts about the user are the user's ---------------------------------------------------


def test_a_fact_told_in_one_chat_is_known_in_the_next(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    scripted_llm.script(FACTS, json.dumps({
        "user": ["The user works as a nurse", "The user's daughter is 7 years old"],
        "task": ["The user is planning a trip to Rome"]}), times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(SUMMARY, "The user is a nurse.")
    scripted_llm.default_reply = "Noted."
    _tell(chat_engine, "intro", "I work as a nurse, my daughter is 7, and I'm planning a trip to Rome.")
    job = next(m for m in chat_engine.list_memories(role="memory") if "nurse" in m.text)
    assert job.conversation_id == GLOBAL_CONVERSATION and job.path.startswith("entries/global/facts/")
    assert job.extra["from_conversation"] == "intro"
    trip = next(m for m in chat_engine.list_memories(role="memory") if "Rome" in m.text)
    assert trip.conversation_id == "intro"  # the chat's task stays in the chat

    reply = chat_engine.chat("weekend-plans", "What is my job, and how old is my daughter?")
    sent = _sent(scripted_llm)
    assert "The user works as a nurse" in sent and "The user's daughter is 7 years old" in sent
    assert "Rome" not in sent
    origins = {r.memory.text: reply.used.origin(r) for r in reply.used.memories}
    assert origins.get("The user works as a nurse") == "user"


# -- 2. forgetting is immediate ---------------------------------------------------------------


def test_forget_masks_the_transcript_at_once_and_keeps_the_stored_turns(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": ["The user has a cat named Miso"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(SUMMARY, "The user has a cat named Miso.", times=1)
    scripted_llm.script(SUMMARY, "The user has a cat named Miso. The user asked to forget.")
    scripted_llm.script(is_chat, "Miso is a lovely name for a cat!", times=1)
    scripted_llm.default_reply = "Okay."
    first = _tell(chat_engine, "pets", "I have a cat named Miso. I live in Ghent.")
    _tell(chat_engine, "pets", "Please forget about my cat.")
    assert not [m for m in chat_engine.list_memories(role="memory") if "Miso" in m.text]

    chat_engine.chat("pets", "What is my cat's name?")
    sent = _sent(scripted_llm)
    assert "Miso" not in sent, "a forgotten fact reaches the model through the transcript or summary"
    assert FORGOTTEN in sent
    assert "I live in Ghent" in sent  # the rest of the message is still read
    stored = chat_engine.get(first.turn_id)
    assert stored.text == "I have a cat named Miso. I live in Ghent."  # the transcript is the user's


def test_the_reply_to_forget_is_told_that_the_app_forgets(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """A small model answered "I cannot forget your location" while the app deleted it: the
    turn that asks to forget tells the model the app does it; other turns do not say so."""
    scripted_llm.script(FACTS, '{"user": ["The user lives in Lisbon"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.default_reply = "Okay."
    _tell(chat_engine, "home", "I live in Lisbon.")
    assert FORGET_NOTE not in _system(scripted_llm)
    ask = _tell(chat_engine, "home", "Please forget where I live.")
    assert FORGET_NOTE in _system(scripted_llm)
    # ...and after the message itself, in the copy sent: the 1.5B model refused less and repeated
    # the fact less with the note next to the request
    note = f"Please forget where I live.\n\n({FORGET_NOTE})"
    assert _messages(scripted_llm)[-1] == {"role": "user", "content": note}
    assert chat_engine.get(ask.turn_id).text == "Please forget where I live."
    _tell(chat_engine, "home", "What's the weather like in spring?")
    assert FORGET_NOTE not in _sent(scripted_llm)
    assert not [m for m in chat_engine.list_memories(role="memory") if "Lisbon" in m.text]


def test_the_reply_to_forget_is_told_when_nothing_matches(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """Seen through `serve` with the 1.5B model: "Please forget where I live" when no stored fact
    said where ("The user grows tomatoes on their balcony") got "I forgot where you live" while
    the app deleted nothing. The reply is now told nothing matches; the fact stays."""
    def teaching(words: str) -> Callable[[dict[str, Any]], bool]:
        return lambda body: FACTS in json.dumps(body) and words in json.dumps(body["messages"][-1])

    tomatoes, rex = "The user grows tomatoes on their balcony", "The user has a dog named Rex"
    scripted_llm.script(teaching("tomatoes"), json.dumps({"user": [tomatoes], "task": []}))
    scripted_llm.script(teaching("named Rex"), json.dumps({"user": [rex], "task": []}))
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.default_reply = "Okay."
    _tell(chat_engine, "garden", "I grow tomatoes on my balcony.")
    _tell(chat_engine, "garden", "Please forget where I live.")
    assert NOTHING_TO_FORGET_NOTE in _system(scripted_llm) and FORGET_NOTE not in _sent(scripted_llm)
    assert _messages(scripted_llm)[-1]["content"].endswith(f"({NOTHING_TO_FORGET_NOTE})")
    assert [m.text for m in chat_engine.list_memories(role="memory")] == [tomatoes]
    # a bare "forget that" after a message that taught nothing: nothing to forget either
    _tell(chat_engine, "garden", "What's the weather like?")
    _tell(chat_engine, "garden", "Forget that.")
    assert NOTHING_TO_FORGET_NOTE in _system(scripted_llm)
    # ...and after one that did, the app deletes it and says so
    _tell(chat_engine, "garden", "I have a dog named Rex.")
    _tell(chat_engine, "garden", "Forget that.")
    assert FORGET_NOTE in _system(scripted_llm)
    assert not [m for m in chat_engine.list_memories(role="memory") if "Rex" in m.text]


def test_a_restore_after_forget_tells_the_model_the_fact_is_remembered_again(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """The 1.5B model answered "I've forgotten that" after the user restored the fact from the
    Timeline: the "forget ..." message and its reply stayed in the transcript it read."""
    scripted_llm.script(FACTS, '{"user": ["The user has a cat named Miso"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(SUMMARY, "The user has a cat named Miso.")
    scripted_llm.script(is_chat, "Miso is a lovely name!", times=1)
    scripted_llm.script(is_chat, "Done, I have forgotten your cat.", times=1)
    scripted_llm.default_reply = "Okay."
    _tell(chat_engine, "pets", "I have a cat named Miso.")
    ask = _tell(chat_engine, "pets", "Please forget about my cat.")
    [tomb] = [m for m in chat_engine.list_memories(role="memory", only_deleted=True) if "Miso" in m.text]
    assert tomb.extra[DELETED_BY_TURN] == ask.turn_id
    restored = chat_engine.restore(tomb.id)  # what the Timeline's Restore calls
    assert forget_undone(restored) == ask.turn_id

    _tell(chat_engine, "pets", "What is my cat's name?")
    sent = _sent(scripted_llm)
    assert "The user has a cat named Miso" in sent and "remembered again" in sent
    assert "I have forgotten your cat" not in sent and "Please forget about my cat" not in sent
    assert RESTORED_REPLY in sent
    stored = [m.text for m in chat_engine.list_memories(conversation_id="pets") if m.role != "memory"]
    assert "Done, I have forgotten your cat." in stored  # the transcript is the user's record

    # Deleted again by hand, it is forgotten again, and the restore's note goes with it.
    tomb = chat_engine.delete(restored.id)
    assert DELETED_BY_TURN not in tomb.extra
    chat_engine.chat("pets", "What is my cat's name?")
    sent = _sent(scripted_llm)
    assert "Miso" not in sent and "remembered again" not in sent
    # ...and restored again, no chat message asked for that delete: nothing to say.
    assert forget_undone(chat_engine.restore(tomb.id)) is None


def test_a_fact_deleted_by_hand_and_restored_leaves_a_forget_message_as_it_was(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.default_reply = "Okay, done."
    _tell(chat_engine, "pets", "Please forget my old phone number.")
    fact = chat_engine.add("The user has a cat named Miso", conversation_id=GLOBAL_CONVERSATION)
    chat_engine.restore(chat_engine.delete(fact.id).id)  # seconds after that message, by hand
    chat_engine.chat("pets", "What is my cat's name?")
    sent = _sent(scripted_llm)
    assert "The user has a cat named Miso" in sent and "Please forget my old phone number" in sent
    assert "remembered again" not in sent


def test_a_fact_deleted_by_hand_is_masked_in_the_next_reply(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": ["The user has a cat named Miso"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(SUMMARY, "The user has a cat named Miso.")
    scripted_llm.default_reply = "Nice."
    _tell(chat_engine, "pets", "I have a cat named Miso.")
    [fact] = [m for m in chat_engine.list_memories(role="memory") if "Miso" in m.text]
    chat_engine.delete(fact.id)

    reply = chat_engine.chat("pets", "What is my cat's name?")
    assert "Miso" not in _sent(scripted_llm)
    assert reply.used.summary_stale, "the summary spoke for a fact deleted since: not injected as it is"


# -- 3. the summary follows every change -------------------------------------------------------


def test_a_stale_summary_is_not_injected_and_is_rewritten_by_the_next_turn(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": ["The user lives in Antwerp"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(SUMMARY, "The user lives in Antwerp.", times=1)
    scripted_llm.default_reply = "Fine."
    _tell(chat_engine, "home", "I live in Antwerp.")
    [old] = [m for m in chat_engine.list_memories(role="memory") if "Antwerp" in m.text]
    chat_engine.edit(old.id, text="The user lives in Ghent")  # a hand edit in the Memories pane

    reply = chat_engine.chat("home", "Where do I live?")
    system = _system(scripted_llm)
    assert reply.used.summary_stale and "Antwerp" not in system and "The user lives in Ghent" in system
    assert chat_engine.wait_idle(30)
    scripted_llm.script(SUMMARY, "The user lives in Ghent.")
    summary = chat_engine.summary("home")
    assert summary is not None and "Antwerp" not in summary.text

    again = chat_engine.chat("home", "And where is that?")
    assert not again.used.summary_stale  # rewritten against the facts: fresh again


def test_a_summary_left_empty_by_forget_is_made_of_the_facts_still_true(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """Seen with the 1.5B model: after "Please forget where I live" it rewrote the summary as
    nothing, and the summary said "Nothing about the user is remembered" while the job and the
    cat learned in that conversation were still true (they are the user's: filed under global)."""
    scripted_llm.script(FACTS, json.dumps({"user": ["The user is a pharmacist", "The user lives in Lisbon",
                                                    "The user has a cat named Pixel"], "task": []}), times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(SUMMARY, "A pharmacist in Lisbon with a cat named Pixel.", times=1)
    scripted_llm.script(SUMMARY, "")  # the model has nothing left to say
    scripted_llm.default_reply = "Okay."
    _tell(chat_engine, "intro", "I'm a pharmacist, I live in Lisbon and I have a cat named Pixel.")
    _tell(chat_engine, "intro", "Please forget where I live.")
    summary = chat_engine.summary("intro")
    assert summary is not None
    lines = summary.text.splitlines()
    assert "- The user is a pharmacist" in lines and "- The user has a cat named Pixel" in lines
    assert "Lisbon" not in summary.text


def test_the_summary_keeps_the_users_core_facts(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    scripted_llm.script(FACTS, '{"user": ["The user\'s name is Mara", "The user works as a nurse"], '
                               '"task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": ["The user likes green tea"], "task": []}')
    scripted_llm.script(SUMMARY, "The user likes green tea.")  # a small model drops who the user is
    scripted_llm.default_reply = "Hi Mara."
    _tell(chat_engine, "c1", "My name is Mara and I work as a nurse.")
    _tell(chat_engine, "c1", "I like green tea.")
    summary = chat_engine.summary("c1")
    assert summary is not None
    assert "Mara" in summary.text and "nurse" in summary.text and "green tea" in summary.text


# -- 4. one message, one turn ------------------------------------------------------------------


def test_a_message_sent_again_after_a_failed_reply_is_stored_once(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(is_chat, Fault.status(500, "down"), times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.default_reply = "Here you go."
    failed = chat_engine.chat("c1", "Tell me a joke.")
    assert not failed.ok and chat_engine.wait_idle(30)
    kept = chat_engine.turn_memory(failed.turn_id)  # no reply stored: the user turn keeps the record
    assert kept is not None and kept.holder_id == failed.turn_id and kept.updated
    # Send after Settings, or after a restart: the same words, no retry flag.
    again = chat_engine.chat("c1", "Tell me a joke.")
    assert again.ok and again.turn_id == failed.turn_id
    users = [m for m in chat_engine.list_memories(conversation_id="c1") if m.role == "user"]
    assert [m.text for m in users] == ["Tell me a joke."]
    assert chat_engine.wait_idle(30)
    third = chat_engine.chat("c1", "Tell me a joke.")  # answered: the same words are a new question
    assert third.turn_id != failed.turn_id


def test_a_client_turn_id_makes_a_resend_idempotent(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.default_reply = "Paris."
    first = chat_engine.chat("c1", "Capital of France?", client_turn_id="ui-42")
    assert chat_engine.wait_idle(30)
    calls = len([r for r in scripted_llm.chat_requests if is_chat(r.body)])
    second = chat_engine.chat("c1", "Capital of France?", client_turn_id="ui-42")
    assert second.text == "Paris." and second.turn_id == first.turn_id
    assert len([r for r in scripted_llm.chat_requests if is_chat(r.body)]) == calls  # not asked again
    turns = [m for m in chat_engine.list_memories(conversation_id="c1") if m.role in ("user", "assistant")]
    assert len(turns) == 2


# -- 6. memory work is visible, and kept with the reply -----------------------------------------


def test_each_reply_keeps_what_memory_it_used_and_changed_across_a_restart(
    make_config: Callable[..., Any], scripted_llm: Any
) -> None:
    config = make_config(**{"llm.base_url": scripted_llm.base_url, "llm.model": "test-model",
                            "llm.api_key": "test", "llm.timeout": 5})
    scripted_llm.script(FACTS, '{"user": ["The user works as a nurse"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(SUMMARY, "The user is a nurse.")
    scripted_llm.default_reply = "Okay."
    with MemoryEngine(config) as eng:
        eng.open_index()
        told = _tell(eng, "intro", "I work as a nurse.")
        asked = _tell(eng, "other", "What is my job?")
    with MemoryEngine(config) as eng:  # a restart
        record = eng.turn_memory(told.turn_id)
        assert record is not None and record.updated
        assert [(c.text, c.scope) for c in record.added] == [("The user works as a nurse", "user")]
        used = eng.turn_memory(asked.turn_id)
        assert used is not None and used.model == "test-model"
        assert ("The user works as a nurse", "user") in [(u.text, u.scope) for u in used.used]
        assert set(eng.turn_memories("other")) == {asked.turn_id}


def test_the_write_path_reports_its_steps_with_elapsed_time(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": ["The user likes tea"], "task": []}')
    scripted_llm.script(SUMMARY, "The user likes tea.")
    events: list[Any] = []
    chat_engine.subscribe_write_progress(events.append)
    reply = _tell(chat_engine, "c1", "I like tea.")
    assert [e.state for e in events][0] == "started" and events[-1].state == "finished"
    assert {e.turn_id for e in events} == {reply.turn_id}
    stages = [e.stage for e in events if e.state == "stage"]
    assert stages[0] == "extracting facts" and "updating the summary" in stages and stages[-1] == "saving"
    assert [e.elapsed for e in events] == sorted(e.elapsed for e in events)


def test_cancel_stops_the_memory_update_with_nothing_half_applied(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    started = threading.Event()
    scripted_llm.script(FACTS, Fault.delay(1.5, '{"user": ["The user likes tea"], "task": []}'))
    scripted_llm.script(SUMMARY, "The user likes tea.")
    scripted_llm.script(RECONCILE, "[]")
    outcomes: list[Any] = []
    events: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    chat_engine.subscribe_write_progress(events.append)
    chat_engine.subscribe_write_progress(lambda e: started.set() if e.stage == "extracting facts" else None)
    reply = chat_engine.chat("c1", "I like tea.")
    assert started.wait(10)
    assert chat_engine.cancel_write_path(reply.turn_id)
    assert chat_engine.wait_idle(30)
    [outcome] = outcomes
    assert not outcome.added and not outcome.summary_changed
    assert any("cancelled" in n for n in outcome.notes)
    assert not chat_engine.list_memories(role="memory")
    assert chat_engine._parts.git.dirty_paths() == []  # the turn's messages are committed all the same
    assert chat_engine.get(reply.turn_id).text == "I like tea."
    assert events[-1].state == "cancelled"


def test_cancel_after_the_update_finished_changes_nothing(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": ["The user likes tea"], "task": []}')
    scripted_llm.script(SUMMARY, "The user likes tea.")
    events: list[Any] = []
    chat_engine.subscribe_write_progress(events.append)
    reply = _tell(chat_engine, "c1", "I like tea.")
    assert not chat_engine.cancel_write_path(reply.turn_id)  # nothing left to cancel
    assert events[-1].state == "finished" and chat_engine.list_memories(role="memory")


def test_a_restore_or_a_revert_makes_the_summary_stale_until_it_is_rewritten(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": ["The user lives in Antwerp"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": ["The user lives in Ghent"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(RECONCILE, '[{"event": "UPDATE", "id": "0", "text": "The user lives in Ghent"}]')
    scripted_llm.script(SUMMARY, "The user lives in Antwerp.", times=1)
    scripted_llm.script(SUMMARY, "The user lives in Ghent.")
    scripted_llm.default_reply = "Okay."
    _tell(chat_engine, "home", "I live in Antwerp.")
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    _tell(chat_engine, "home", "I moved to Ghent.")
    [(tomb, new)] = outcomes[-1].updated
    fresh = chat_engine.chat("home", "Hello again.")
    assert chat_engine.wait_idle(30) and not fresh.used.summary_stale

    chat_engine.undo_update([tomb.id, new.id], outcomes[-1].commit)  # the timeline's Revert
    reply = chat_engine.chat("home", "Where do I live?")
    system = _system(scripted_llm)
    assert reply.used.summary_stale and "Ghent" not in system and "The user lives in Antwerp" in system


def test_a_revert_of_an_update_made_in_another_chat_makes_that_chats_summary_stale(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """Seen in the window with the 1.5B model: a job learned in "intro", changed in "weekend",
    the change reverted on the Timeline; "weekend"'s summary ("The user is a nurse") was still
    sent as it was: the new version carried no `from_conversation`, so that summary did not
    count it among its facts."""
    scripted_llm.script(FACTS, '{"user": ["The user works as a pharmacist"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": ["The user works as a nurse"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(RECONCILE, '[{"event": "UPDATE", "id": "0", "text": "The user works as a nurse"}]')
    scripted_llm.script(SUMMARY, "The user is a pharmacist.", times=1)
    scripted_llm.script(SUMMARY, "The user is a nurse.")
    scripted_llm.default_reply = "Okay."
    _tell(chat_engine, "intro", "I work as a pharmacist.")
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    _tell(chat_engine, "weekend", "I changed jobs: I now work as a nurse.")
    [(tomb, new)] = outcomes[-1].updated
    assert new.conversation_id == GLOBAL_CONVERSATION and new.extra["from_conversation"] == "weekend"
    assert chat_engine.summary("weekend") is not None

    chat_engine.undo_update([tomb.id, new.id], outcomes[-1].commit)  # the Timeline's Revert
    reply = chat_engine.chat("weekend", "What is my job?")
    system = _system(scripted_llm)
    assert reply.used.summary_stale and "nurse" not in system and "The user works as a pharmacist" in system


def test_a_forgotten_fact_is_not_sent_even_for_a_question_about_the_past(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.default_reply = "I don't know."
    fact = chat_engine.add("The user has a cat named Miso", conversation_id=GLOBAL_CONVERSATION)
    chat_engine.delete(fact.id)
    chat_engine.chat("pets", "What was the name of the cat I had before?")
    assert "Miso" not in _sent(scripted_llm)
