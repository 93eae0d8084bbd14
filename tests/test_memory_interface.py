"""The 004 read / store / appended interface: the simple memory and the engine's strategies
(sliding window, summarizing) behind it."""

from __future__ import annotations

from typing import Any

import pytest

from desktop_mem.engine.chat.context import (
    SUMMARY_PREFIX,
    SessionState,
    StrategySettings,
    Summarizer,
    context_from,
    open_memory,
)
from desktop_mem.engine.chat.memory_interface import MessageMemory, SimpleMemory
from desktop_mem.engine.chat.token_count import make_counter
from desktop_mem.engine.models import StrategyName

Message = dict[str, Any]


def msgs(*texts: str) -> list[Message]:
    """Alternating user / assistant messages with the given texts."""
    return [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)]


def run_step(memory: MessageMemory) -> None:
    """What the 004 agent loop stores in one step with a tool call."""
    memory.store({"role": "user", "content": "What's the weather?"})
    memory.store(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}
            ],
        }
    )
    memory.store({"role": "tool", "tool_call_id": "c1", "content": "72F in Tokyo"})
    memory.store({"role": "assistant", "content": "It's 72F in Tokyo."})


def test_simple_memory_reads_everything_and_appended_is_only_this_run() -> None:
    initial = [{"role": "system", "content": "old prompt"}, *msgs("Hello", "Hi there!")]
    memory = SimpleMemory(initial)
    assert memory.appended() == []
    run_step(memory)
    assert len(memory.read()) == 7
    assert memory.read()[:3] == initial  # system messages are kept; the agent filters them (004)
    appended = memory.appended()
    assert [m["role"] for m in appended] == ["user", "assistant", "tool", "assistant"]
    # 004: the final response is the last assistant message among the appended ones.
    assert next(m for m in reversed(appended) if m["role"] == "assistant")["content"] == "It's 72F in Tokyo."


def test_simple_memory_is_not_changed_through_the_callers_lists() -> None:
    initial = msgs("Hello", "Hi")
    memory = SimpleMemory(initial)
    initial.append({"role": "user", "content": "sneaked in"})
    initial[0]["content"] = "rewritten"
    assert memory.read() == msgs("Hello", "Hi")
    memory.read().clear()
    assert len(memory.read()) == 2
    assert SimpleMemory().read() == [] and SimpleMemory().appended() == []


def test_sliding_window_reads_last_n_but_appended_sees_all_new() -> None:
    """004's sliding-window memory is the `sliding_window` strategy: turn-aware, so the window
    starts at a user message (004's exact slice could start at a tool result)."""
    memory = _strategy_memory("sliding_window", msgs("a", "b", "c"), window_messages=3)
    run_step(memory)
    assert [m["content"] for m in memory.read()] == [
        "What's the weather?", None, "72F in Tokyo", "It's 72F in Tokyo."]
    assert len(memory.appended()) == 4  # the window only limits what is read
    assert _strategy_memory("sliding_window", msgs("a", "b")).read() == msgs("a", "b")  # default window 30
    with pytest.raises(ValueError, match="window_messages must be at least 1"):
        StrategySettings(window_messages=0)


def test_summarizing_memory_puts_the_summary_before_recent_ones() -> None:
    """004's summarizing memory is the `summarizing` strategy: beyond its threshold the older
    messages are read as one summary message, the recent ones verbatim."""
    seen: list[list[str]] = []

    def summarizer(previous: str | None, old: list[Message]) -> str:
        seen.append([m["content"] for m in old])
        return f"{len(old)} earlier messages"

    memory = _strategy_memory("summarizing", msgs("m0", "m1", "m2"), summarizer=summarizer,
                              summary_threshold=4, summary_keep_last=2)
    assert memory.read() == msgs("m0", "m1", "m2") and seen == []  # within the limit: verbatim
    memory.store({"role": "assistant", "content": "m3"})
    memory.store({"role": "user", "content": "m4"})
    memory.store({"role": "assistant", "content": "m5"})
    read = memory.read()
    assert read[0] == {"role": "system", "content": f"{SUMMARY_PREFIX}4 earlier messages"}
    assert [m["content"] for m in read[1:]] == ["m4", "m5"]
    assert seen == [["m0", "m1", "m2", "m3"]]
    assert [m["content"] for m in memory.appended()] == ["m3", "m4", "m5"]


def test_summarizing_memory_rejects_a_zero_limit() -> None:
    with pytest.raises(ValueError, match="summary_threshold must be at least 1"):
        StrategySettings(summary_threshold=0)


def _strategy_memory(name: StrategyName, initial: list[Message], *, summarizer: Summarizer | None = None,
                     **settings: int) -> MessageMemory:
    """One of the engine's strategies behind the 004 interface, as a chat turn opens it."""
    return open_memory(initial, strategy=name, settings=StrategySettings(**settings), state=SessionState(),
                       counter=make_counter(None), summarizer=summarizer)


def test_the_engines_strategies_are_004_memories_and_the_chat_context_is_their_read() -> None:
    """A chat turn's strategy is used through read / store / appended: the prior conversation is
    the initial state, the new message is stored, what is sent is `read()`, and `appended()` is
    this turn's messages only."""
    counter = make_counter(None)
    memory = open_memory(msgs(*(f"m{i}" for i in range(8))), strategy="sliding_window",
                         settings=StrategySettings(window_messages=4), state=SessionState(), counter=counter)
    run_step(memory)  # typed as the 004 MessageMemory
    assert [m["role"] for m in memory.appended()] == ["user", "assistant", "tool", "assistant"]
    read = memory.read()
    assert read[0] == {"role": "user", "content": "What's the weather?"}, "the window starts at a user turn"
    context = context_from(memory, counter=counter, base_prompt="Be brief.")
    assert context.messages[0]["role"] == "system" and context.messages[1:] == read
    assert context.strategy == "sliding_window" and context.tokens_before > context.tokens_after
