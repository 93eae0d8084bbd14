"""The write-path guards on their own: which words state facts, grounding, vaguer updates."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_mem.engine.chat import fact_guards
from desktop_mem.engine.chat.summary_cleanup import drop_superseded


@pytest.mark.parametrize(
    ("message", "kept"),
    [
        ("Hi! I'm Mara, I live in Ghent", ["Hi!", "I'm Mara, I live in Ghent"]),
        ("List ten facts about Belgium", []),
        ("Where do I live?", []),
        ("Can you tell me about Rome? I like pasta.", ["I like pasta."]),
        ("Please write a poem about my cat.", []),
        ("If I lived in Paris I would walk to work.", []),
        ("Imagine I am a pilot.", []),
        ('My friend wrote "I hate Mondays". I love Fridays.', ["I love Fridays."]),
        ("Please remember that I am allergic to nuts.", ["I am allergic to nuts."]),
        ("Forget that I live in Ghent.", []),
        ("Actually I moved to Leuven", ["I moved to Leuven"]),
    ],
)
def test_statements_keep_only_what_the_user_states(message: str, kept: list[str]) -> None:
    assert fact_guards.statements(message) == kept


@pytest.mark.parametrize(
    ("message", "target"),
    [("Forget that.", ""), ("Please forget it", ""), ("Forget that I live in Ghent.", "I live in Ghent"),
     ("OK, forget where I work", "where I work"), ("I forget names easily.", None), ("Hello", None)],
)
def test_forget_requests(message: str, target: str | None) -> None:
    assert fact_guards.forget_request(message) == target


@pytest.mark.parametrize(
    ("fact", "said", "problem"),
    [
        ("The user lives in Ghent", "I'm Mara, I live in Ghent", None),
        ("The user's name is Mara", "I'm Mara, I live in Ghent", None),
        ("The user dislikes mornings", "I hate mornings", None),
        ("The user lives in Leuven", "I moved to Leuven", None),
        ("The user has a cat named Tom", "My cat is Tom.", None),
        ("The user's sister lives in Paris", "My sister lives in Paris", None),
        ("The user does not eat meat", "I don't eat meat", None),
        ("Belgium has a capital named Brussels", "I live in Ghent", "not about the user"),
        ("The user lives in Belgium", "I live in Ghent", "names or numbers"),
        ("The user lives in Belgium", "I love Belgium.", "says something else"),
        ("The user lives in Paris", "My sister lives in Paris", "someone else"),
        ("The user eats meat", "I don't eat meat", "negation"),
        ("The user enjoys skiing", "I have two cats", "no word"),
    ],
)
def test_grounding(fact: str, said: str, problem: str | None) -> None:
    found = fact_guards.grounding_problem(fact, said)
    assert (found is None) if problem is None else (found is not None and problem in found)


@pytest.mark.parametrize(
    ("old", "new", "message", "vaguer"),
    [
        ("The user has a dog named Rex", "The user has a dog", "I have a dog", True),
        ("The user lives in Ghent", "The user lives in a city", "I live in a city", True),
        ("The user lives in Ghent", "The user lives in Leuven", "I moved to Leuven", False),
        ("The user has a dog named Rex", "The user has a dog", "Rex died, I have another dog", False),
        ("The user has two cats", "The user has no cats", "I don't have cats anymore", False),
    ],
)
def test_vaguer(old: str, new: str, message: str, vaguer: bool) -> None:
    assert fact_guards.vaguer(old, new, message) is vaguer


def test_drop_superseded_removes_only_sentences_still_stating_the_old_fact() -> None:
    summary = (
        "- Mara lives in Ghent.\n- Her name is Mara. She lives in Ghent, Belgium.\n- She moved to Leuven."
    )
    out = drop_superseded(summary, [("The user lives in Ghent", "The user lives in Leuven")])
    assert out == "- Her name is Mara.\n- She moved to Leuven."
    assert drop_superseded(summary, []) == summary


def test_drop_superseded_removes_a_sentence_that_only_restates_a_fact_without_names() -> None:
    summary = "The user likes jazz. The user plays chess.\n- The user has two cats.\n- The user has cats."
    assert drop_superseded(summary, [("The user likes jazz", None)]) == (
        "The user plays chess.\n- The user has two cats.\n- The user has cats.")
    # A replacement: the old count goes; what is still true of the new fact stays.
    out = drop_superseded(summary, [("The user has two cats", "The user has three cats")])
    assert out == "The user likes jazz. The user plays chess.\n- The user has cats."


def test_facts_about_different_people_are_never_the_same_topic() -> None:
    assert fact_guards.subject("The user's older sister lives in Paris") == "sister"
    assert fact_guards.subject("The user's name is Jon") == "user"
    assert fact_guards.same_topic("The user lives in Berlin", "The user moved to Leuven")
    assert not fact_guards.same_topic("The user lives in Berlin", "The user's sister lives in Paris")
    assert fact_guards.same_topic("The user's sister lives in Rome", "The user's sister lives in Paris")


def test_a_person_named_with_and_without_their_relation_is_one_person() -> None:
    """"Noor turned 6 last week!" is written "Noor is now 6 years old.": the same daughter as in
    "The user's daughter Noor is 5.", so an update (or tidy-up's contradiction) may join them."""
    assert fact_guards.same_person("The user's daughter Noor is 5.", "Noor is now 6 years old.")
    assert fact_guards.same_topic("The user's daughter Noor is 5 years old.", "Noor is now 6 years old.")
    assert not fact_guards.same_person("The user's daughter Noor is 5.", "The user's daughter Ines is 8.")
    assert not fact_guards.same_person("The user's daughter Noor is 5.", "The user is 41 years old.")
    assert fact_guards.same_person("The user's sister lives in Rome", "The user's sister lives in Paris")
    assert fact_guards.same_subject("The user's brother Jonas lives in Antwerp.", "Jonas lives in Ghent.")


def test_news_about_a_person_is_not_the_same_topic_as_another_fact_about_them() -> None:
    """Seen in the 150-turn long-use replay: "Greta is visiting us for two weeks." replaced "The
    user's mother Greta was diagnosed with diabetes." (both name Greta, nothing else)."""
    diabetes = "The user's mother Greta was diagnosed with diabetes."
    assert not fact_guards.same_topic(diabetes, "The user's mother Greta is visiting us for two weeks.")
    assert not fact_guards.same_topic("Jonas lives in Antwerp.", "Jonas and his wife are expecting a baby.")
    # the message names Greta, whom the old fact is about: that names the person, not the fact
    # (the ninth session's replay: "Greta is doing better with her diet." replaced the diabetes)
    said = "Greta is doing better with her diet."
    assert not fact_guards.same_topic(diabetes, said, said)
    assert fact_guards.same_topic(diabetes, "The user's mother Greta has her diabetes under control.")
    assert fact_guards.same_topic("Noor is 5 years old.", "Noor turned 6 last week.")
    assert fact_guards.same_topic("Jonas lives in Antwerp.", "Jonas moved to Ghent.")
    assert fact_guards.same_topic("The user's sister Ana works at a bank.",
                                  "The user's sister Ana works at a school.")


def test_drop_invented_numbers_keeps_numbers_from_the_sources_only() -> None:
    from desktop_mem.engine.chat.summary_cleanup import drop_invented_numbers

    summary = "Mara is a 29-year-old woman who lives in Leuven. She has 02 cats.\n- Since 2019 a nurse."
    sources = ["user: I have 2 cats and moved to Leuven in 2019."]
    assert drop_invented_numbers(summary, sources) == "She has 02 cats.\n- Since 2019 a nurse."
    assert drop_invented_numbers("Mara lives in Leuven.", []) == "Mara lives in Leuven."
    assert drop_invented_numbers("Mara is 29.", ["Mara is 29"]) == "Mara is 29."


def test_a_summary_sentence_naming_what_the_user_never_said_is_dropped() -> None:
    from desktop_mem.engine.chat.summary_cleanup import drop_invented_names

    summary = "The user lives in Utrecht, Netherlands. The user works at Acme.\n- Mara's cat is Pip."
    sources = ["user: I live in Utrecht and work at acme", "fact: The user's name is Mara",
               "The user has a cat called Pip"]
    assert drop_invented_names(summary, sources) == "The user works at Acme.\n- Mara's cat is Pip."
    # any script with case; a name's inflection counts as said
    assert drop_invented_names("Пользователь живёт в Москве.", ["я живу в Москва"]) == (
        "Пользователь живёт в Москве.")
    assert drop_invented_names("Пользователь живёт в Казани.", ["я живу в Москве"]) == ""


def test_a_summary_keeps_no_place_only_the_models_reply_named(scripted_llm: Any) -> None:
    from desktop_mem.engine.chat.llm_client import LLMClient, LLMEndpoint
    from desktop_mem.engine.chat.summary_update import update_summary
    from tests.llm_roles import SUMMARY

    scripted_llm.script(SUMMARY, "The user is moving house. The user is moving to Utrecht.")
    llm = LLMClient(LLMEndpoint(scripted_llm.base_url, "", "test-model", timeout=10))
    result = update_summary(llm, None, ["user: I am moving house next month",
                                        "assistant: Moving to Utrecht is a great choice!"])
    assert result.text == "The user is moving house."
