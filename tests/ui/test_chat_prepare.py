"""While the user writes a message, the turn's search models load (issue #25).

The query embedder and the cross-encoder load on first use (~0.2 s each) and the cross-encoder is
let go after minutes idle, so the first turn after a start or a pause waited for both. Typing
loads them; it never opens an index that is not open, and a burst of typing loads them once.
"""

from __future__ import annotations

from typing import Any

import pytest

from desktop_mem.engine.index import retrieval
from desktop_mem.engine.index.index_factory import make_reranker
from desktop_mem.ui.chat.chat_pane import ChatPane
from desktop_mem.ui.task_runner import TaskRunner


def _pane(qtbot: Any, engine: Any, runner: Any) -> ChatPane:
    pane = ChatPane(engine, runner)
    qtbot.addWidget(pane)
    pane.resize(600, 500)
    pane.show()
    pane.set_conversation("trip")
    return pane


def test_writing_a_message_loads_the_cross_encoder_before_it_is_sent(
        qtbot: Any, indexed_engine: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    reranker = make_reranker(indexed_engine.config)  # the engine's own: one per process and folder
    assert reranker is not None
    reranker.release()
    assert not reranker.loaded
    prepared: list[int] = []
    prepare = retrieval.Retriever.prepare

    def counting(self: retrieval.Retriever) -> None:
        prepared.append(1)
        prepare(self)

    monkeypatch.setattr(retrieval.Retriever, "prepare", counting)
    runner = TaskRunner()
    pane = _pane(qtbot, indexed_engine, runner)
    qtbot.waitUntil(lambda: not runner.busy, timeout=10000)
    assert not reranker.loaded  # showing the pane loads nothing

    qtbot.keyClicks(pane.input, "Where does my sister live")
    qtbot.waitUntil(lambda: reranker.loaded, timeout=30000)
    qtbot.waitUntil(lambda: not runner.busy, timeout=10000)
    assert prepared == [1]  # once for the whole message, not per keystroke
    assert pane.messages() == []  # nothing was sent


def test_writing_into_a_store_whose_index_is_closed_opens_nothing(qtbot: Any, engine: Any) -> None:
    runner = TaskRunner()
    pane = _pane(qtbot, engine, runner)
    qtbot.waitUntil(lambda: not runner.busy, timeout=10000)
    qtbot.keyClicks(pane.input, "Hello")
    qtbot.waitUntil(lambda: not runner.busy, timeout=10000)
    assert not engine._parts.search_index.is_open  # the window opens it, on its own schedule
