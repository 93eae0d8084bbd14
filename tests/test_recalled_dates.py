"""What a turn tells the model about time (issue #35): recalled turns say who said them and on
which day, and the system prompt says what day it is today. Real store and index, scripted LLM."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from desktop_mem.engine.chat import prompts
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.retrieval import said_on
from desktop_mem.engine.models import utc_now
from tests.llm_roles import is_chat


def test_a_recalled_turn_says_when_it_was_said_and_the_prompt_says_today(
        chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    chat_engine.add("I went to the LGBTQ support group yesterday.", conversation_id="old", role="user",
                    created_at=said, source="import")
    chat_engine.add("The user likes tea", conversation_id="old")
    scripted_llm.script(is_chat, "On 7 May 2023.")
    reply = chat_engine.chat("old", "When did I go to the support group?", history=[], temporary=True)
    system = [r.body for r in scripted_llm.chat_requests if is_chat(r.body)][-1]["messages"][0]["content"]
    assert said_on(said) == datetime(2023, 5, 8, 13, 56, tzinfo=UTC).astimezone().strftime("%-d %B %Y")
    day_before = said_on(datetime(2023, 5, 7, 13, 56, tzinfo=UTC))
    assert (f"[user; said {said_on(said)}] I went to the LGBTQ support group yesterday ({day_before})."
            in system), "a relative date is written out against the day it was said"
    assert "[memory] The user likes tea" in system, "a fact's labels say when it was true, not a said-date"
    now = utc_now().astimezone()
    assert f"Today is {now:%A} {said_on(now)}." in system
    assert system.index("Today is") < system.index(prompts.MEMORY_DATA_PREAMBLE.splitlines()[0])
    assert reply.used.system_prompt == system


def test_a_recalled_turn_in_another_language_gets_its_date_and_a_written_date_is_left_alone(
        chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    said = datetime(2023, 7, 12, 12, 0, tzinfo=UTC)
    chat_engine.add("Gisteren ben ik naar de conferentie in Utrecht gegaan.", conversation_id="nl",
                    role="user", created_at=said, source="import")
    chat_engine.add("On 8 May 2023 I moved to Utrecht for the conference.", conversation_id="nl",
                    role="user", created_at=said, source="import")
    scripted_llm.script(is_chat, "Op 11 juli 2023.")
    chat_engine.chat("nl", "Wanneer ging ik naar de conferentie in Utrecht?", history=[], temporary=True)
    system = [r.body for r in scripted_llm.chat_requests if is_chat(r.body)][-1]["messages"][0]["content"]
    day_before = said_on(datetime(2023, 7, 11, 12, 0, tzinfo=UTC))
    assert f"Gisteren ({day_before}) ben ik naar de conferentie in Utrecht gegaan." in system
    assert "] On 8 May 2023 I moved to Utrecht for the conference." in system, "a written date stays as it is"


def test_relative_dates_are_written_out_in_any_language_and_nothing_is_invented() -> None:
    """The expressions and their precision come from dateparser's language data: "gisteren",
    "letztes Jahr", "next month"; a date already written, or a turn with none, stays as it is."""
    from desktop_mem.engine.index.relative_dates import with_dates

    said = datetime(2023, 5, 8, 12, 0, tzinfo=UTC)
    assert with_dates("Gisteren ben ik naar Utrecht verhuisd.", said).startswith("Gisteren (7 May 2023) ben")
    assert with_dates("Letztes Jahr war ich in Berlin.", said) == "Letztes Jahr (2022) war ich in Berlin."
    assert with_dates("Next month I go camping.", said) == "Next month (June 2023) I go camping."
    assert (with_dates("Vorige week zijn we verhuisd.", said)
            == "Vorige week (the week of 1 May 2023) zijn we verhuisd.")
    assert (with_dates("I went to a conference two days ago and it was great.", said)
            == "I went to a conference two days ago (6 May 2023) and it was great.")
    # Weekday and month abbreviations of dateparser's data ("we" is Wednesday, "so" Sonntag, "do"
    # donderdag), durations, and dates already written are no relative dates.
    for unchanged in ("On 8 May 2023 I moved to Ghent.", "Hey Mel! Good to see you! How have you been?",
                      "I will go to the conference in July.", "", "What happened that was so awesome?",
                      "We met and we talked; I'll do my best.", "I've known these friends for 4 years.",
                      "Now the hard work starts."):
        assert with_dates(unchanged, said) == unchanged


def test_the_turn_says_the_day_its_driver_asks_on_with_the_answer_instruction_it_chose(
        chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    """A benchmark replaying an old conversation asks on the day after its last session, and can
    compare answer instructions: both go through the chat service, and a real turn sends them."""
    said = datetime(2023, 7, 12, 12, 0, tzinfo=UTC)
    chat_engine.add("I went to an LGBTQ conference two days ago.", conversation_id="old", role="user",
                    created_at=said, source="import")
    service = chat_engine._parts.chat
    service.today = lambda: datetime(2023, 7, 13, 12, 0, tzinfo=UTC)
    service.data_preamble = prompts.DATA_PREAMBLES["same-person"]
    scripted_llm.script(is_chat, "On 10 July 2023.")
    reply = chat_engine.chat("old", "When did I go to the LGBTQ conference?", history=[], temporary=True)
    system = reply.used.system_prompt
    asked = datetime(2023, 7, 13, 12, 0, tzinfo=UTC).astimezone()
    assert f"Today is {asked:%A} {said_on(asked)}." in system
    assert "2026" not in system, "the machine's clock is not what this turn was told"
    assert prompts.DATA_PREAMBLE_SAME_PERSON in system
    assert prompts.MEMORY_DATA_PREAMBLE not in system
    assert f"two days ago ({said_on(datetime(2023, 7, 10, 12, 0, tzinfo=UTC))})" in system
