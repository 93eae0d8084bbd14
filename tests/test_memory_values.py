"""One vocabulary on Memory: the role is a Role (files keep the plain word), and yes/no flags a
person typed into front matter as text mean what they say."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_mem.engine.models import Memory, Role, utc_now


def test_a_memory_role_is_a_role_and_its_file_keeps_the_plain_word(engine: Any) -> None:
    turn = engine.add("Book the hotel in Porto", conversation_id="trip", role="user")
    assert turn.role is Role.USER
    assert engine.get(turn.id).role is Role.USER
    text = (engine.root / turn.path).read_text("utf-8")
    assert "\nrole: user\n" in text  # not a Python enum repr: the store stays readable and portable
    # the manifest's warm start gives a Role too
    engine.close()
    again = type(engine).open(engine.config)
    try:
        assert again.get(turn.id).role is Role.USER
        assert [m["role"] for m in again.messages("trip")] == ["user"]
    finally:
        again.close()


def test_a_flag_written_as_text_reads_as_written(engine: Any) -> None:
    reply = engine.add("The hotel is booked.", conversation_id="trip", role="assistant")
    said_no = engine.edit(reply.id, meta={"interrupted": "false"})  # quoted by hand: a string
    assert not said_no.interrupted and said_no.complete  # it was a complete reply (it read as cut)
    said_yes = engine.edit(reply.id, meta={"interrupted": "yes", "truncated": "no"})
    assert said_yes.interrupted and not said_yes.truncated and not said_yes.complete


def test_a_role_given_as_a_string_is_accepted_and_a_wrong_one_refused() -> None:
    made = Memory(id="m1", role="memory", conversation_id="global", text="x", created_at=utc_now(),  # type: ignore[arg-type]
                  path="entries/global/facts/m1.md")
    assert made.role is Role.MEMORY and made.is_fact
    with pytest.raises(ValueError):
        Memory(id="m2", role="banana", conversation_id="global", text="x", created_at=utc_now(),  # type: ignore[arg-type]
               path="entries/global/facts/m2.md")
