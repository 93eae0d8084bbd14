"""Plans, wishes, "if"s and requests are not stored as facts, in any language (issue #33).

The memory model stores "maybe we'll move to Lisbon" as "The user lives in Lisbon" whatever its
prompt says; its odds of "a fact true now" for the message (logprobs of a one-letter choice)
decide. Each test scripts those odds as the endpoint sends them, and asserts what is live.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.chat import prompts
from desktop_mem.engine.chat.llm_client import LLMClient
from desktop_mem.engine.chat.llm_endpoint import LLMEndpoint
from desktop_mem.engine.chat.told_as_true import NOT_TOLD_AS_TRUE, odds_told_as_true
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, TOLD_AS_TRUE, is_chat
from tests.scripted_llm import Fault, Odds


def _script_turn(scripted_llm: Any, fact: str, told: Any) -> None:
    answer = {"language": "es", "asks_to_forget": False, "forget": [], "task": [],
              "facts": [{"text": fact, "about": "user", "relation": "", "replaces": ""}]}
    scripted_llm.script(TOLD_AS_TRUE, told)
    scripted_llm.script(FACTS, json.dumps(answer))
    scripted_llm.script(RECONCILE, lambda body: json.dumps({"decisions": [
        {"event": "ADD", "id": "", "text": fact}]}))
    scripted_llm.script(SUMMARY, "The user talked about their plans.")
    scripted_llm.script(is_chat, "¡Qué bien!")


def _live(eng: MemoryEngine) -> list[str]:
    return sorted(m.text for m in eng.list_memories(role="memory"))


def _tell(eng: MemoryEngine, llm: Any, fact: str, odds: Any, message: str) -> list[Any]:
    """``message`` told, the model taking ``fact`` from it with these odds; the checks it was asked."""
    _script_turn(llm, fact, odds)
    eng.chat("talk", message)
    assert eng.wait_idle(30)
    return [r for r in llm.chat_requests if TOLD_AS_TRUE in r.system_text]


def test_a_plan_the_model_takes_for_a_fact_is_not_stored(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    plan = Odds({"A": 0.04, "B": 0.9, "C": 0.06})
    asked = _tell(chat_engine, scripted_llm, "The user lives in Chile", plan,
                  "Quizás el año que viene nos vamos a vivir a Chile.")
    assert _live(chat_engine) == []
    assert len(asked) == 1 and asked[0].body["logprobs"] is True
    assert asked[0].last_user_text == "Quizás el año que viene nos vamos a vivir a Chile."


def test_news_the_check_is_not_sure_of_is_stored(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    """Only a message the model is sure of loses its facts: a fact dropped in error is gone."""
    _tell(chat_engine, scripted_llm, "The user lives in Chile", Odds({"A": 0.3, "B": 0.6, "C": 0.1}),
          "¡Qué día! Por cierto, ahora vivimos en Chile.")
    assert _live(chat_engine) == ["The user lives in Chile"]


@pytest.mark.parametrize("told", ["B", Fault.status(400, "logprobs are not supported"),
                                  Fault.status(500, "boom"), Fault.malformed_json()],
                         ids=["no-logprobs", "refused", "server-error", "malformed"])
def test_without_odds_to_read_the_facts_stand(
    chat_engine: MemoryEngine, scripted_llm: Any, told: Any
) -> None:
    _tell(chat_engine, scripted_llm, "The user lives in Chile", told, "Vivimos en Chile.")
    assert _live(chat_engine) == ["The user lives in Chile"]


def test_odds_are_read_from_the_top_logprobs_whatever_the_token_spelling(scripted_llm: Any) -> None:
    llm = LLMClient(LLMEndpoint(scripted_llm.base_url, "k", "test-model"))
    scripted_llm.script(None, Odds({" a": 0.05, "A": 0.05, "b": 0.6, "C ": 0.2, "Sure": 0.1}))
    odds = llm.odds([{"role": "user", "content": "x"}], ("A", "B", "C"))
    assert odds is not None
    assert odds["A"] == pytest.approx(0.1 / 0.9) and odds["B"] == pytest.approx(0.6 / 0.9)
    assert odds_told_as_true(llm, "Maybe next year.") == pytest.approx(0.1 / 0.9)
    assert odds_told_as_true(llm, "Maybe next year.") < NOT_TOLD_AS_TRUE


def test_a_question_in_passing_before_news_is_not_what_the_check_reads(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    news = Odds({"A": 0.7, "B": 0.2, "C": 0.1})
    asked = _tell(chat_engine, scripted_llm, "The user takes a pottery class", news,
                  "¿Viste el partido? Qué final. Por cierto, ahora voy a clases de cerámica.")
    assert asked[0].last_user_text == "Qué final. Por cierto, ahora voy a clases de cerámica."


def test_the_examples_the_check_is_shown_cover_every_answer_in_several_languages() -> None:
    answers = {a for _m, a in prompts.TOLD_AS_TRUE_EXAMPLES}
    assert answers == set(prompts.TOLD_AS_TRUE_ANSWERS)
    assert len({m for m, _a in prompts.TOLD_AS_TRUE_EXAMPLES}) == len(prompts.TOLD_AS_TRUE_EXAMPLES)


def _odds_by_sentence(low: set[str]) -> Any:
    """Odds of "a fact true now" low for the messages in ``low``, high for any other."""
    def reply(body: dict[str, Any]) -> Odds:
        said = body["messages"][-1]["content"]
        return Odds({"A": 0.1, "B": 0.2, "C": 0.7} if said in low else {"A": 0.7, "B": 0.2, "C": 0.1})
    return reply


def test_news_after_thanks_stands_when_one_sentence_alone_tells_it(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    """Seen with the 1.5B model: "Merci pour la recette d'hier, c'était délicieux. Sinon, je prends
    des cours de salsa le mercredi." scored 0.12 as a whole and lost the salsa class; its second
    sentence alone scored above the threshold. A message low as a whole is read sentence by
    sentence, and stands when one sentence alone is not low."""
    thanks, news = "Merci pour la recette d'hier, c'était délicieux.", "Sinon, je prends des cours de salsa."
    asked = _tell(chat_engine, scripted_llm, "The user takes salsa classes",
                  _odds_by_sentence({f"{thanks} {news}", thanks}), f"{thanks} {news}")
    assert _live(chat_engine) == ["The user takes salsa classes"]
    assert [a.last_user_text for a in asked] == [f"{thanks} {news}", thanks, news]


def test_a_message_whose_every_sentence_is_low_stores_nothing(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    plan, wish = "Quizás nos vamos a Chile.", "Ojalá vivamos cerca del mar."
    asked = _tell(chat_engine, scripted_llm, "The user lives in Chile",
                  _odds_by_sentence({f"{plan} {wish}", plan, wish}), f"{plan} {wish}")
    assert _live(chat_engine) == []
    assert len(asked) == 3
