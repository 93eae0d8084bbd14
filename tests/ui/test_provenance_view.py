"""“Why do I know this?” in the editor opens the chat turn a fact came from; the editor says
which models the fact was sent to."""

from __future__ import annotations

from typing import Any

from desktop_mem.ui.memories.memory_editor import MemoryEditor
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat


def test_why_do_i_know_this_opens_the_source_turn(qtbot: Any, indexed_engine: Any, runner: Any,
                                                  settle: Any, scripted_llm: Any) -> None:
    scripted_llm.script(FACTS, '["The user lives in Ghent"]', times=1)
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(RECONCILE, "[]")
    scripted_llm.script(SUMMARY, "The user lives in Ghent.")
    scripted_llm.script(is_chat, "Nice!")
    indexed_engine.chat("intro", "Hi, I live in Ghent")
    assert indexed_engine.wait_idle(30)
    indexed_engine.chat("later", "Where do I live?")
    assert indexed_engine.wait_idle(30)
    [fact] = [m for m in indexed_engine.list_memories(role="memory") if "Ghent" in m.text]

    editor = MemoryEditor(indexed_engine, runner, lambda *_: False)
    qtbot.addWidget(editor)
    editor.open_memory(fact)
    settle(runner)
    assert editor.sent_label.text().startswith("said in chat “intro” · sent to: test-model @ 127.0.0.1:")
    assert editor.sent_label.text().endswith(" 1×")

    editor.why_button.click()
    dialog = editor.last_provenance_dialog
    assert dialog is not None
    settle(runner)
    assert "Written in commit" in dialog.summary_label.text()  # type: ignore[attr-defined]
    assert dialog.turns_list.count() == 1  # type: ignore[attr-defined]
    with qtbot.waitSignal(dialog.turn_opened):  # type: ignore[attr-defined]
        dialog.open_button.click()  # type: ignore[attr-defined]
    assert editor.memory is not None and editor.memory.role == "user"
    assert editor.body_edit.toPlainText() == "Hi, I live in Ghent"
    assert not editor.why_button.isEnabled()  # a turn is its own source
    dialog.close()
