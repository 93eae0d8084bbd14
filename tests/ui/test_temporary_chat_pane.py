"""The chat pane's Temporary toggle: a visible marker, replies that read memory, nothing stored."""

from __future__ import annotations

from typing import Any

from desktop_mem.ui.chat.chat_pane import ChatPane
from desktop_mem.ui.chat.temporary_chat import MESSAGE_MARK
from desktop_mem.ui.task_runner import TaskRunner
from tests.llm_roles import FACTS, is_chat


def test_a_temporary_chat_is_marked_answers_from_memory_and_stores_nothing(
        qtbot: Any, indexed_engine: Any, bridge: Any, scripted_llm: Any) -> None:
    indexed_engine.add("The user lives in Berlin", conversation_id="trip")
    commits = [c.sha for c in indexed_engine.history(limit=20)]
    scripted_llm.script(is_chat, "You live in Berlin.")
    runner = TaskRunner()
    pane = ChatPane(indexed_engine, runner)
    qtbot.addWidget(pane)
    bridge.outcome_ready.connect(pane.on_outcome)
    pane.show()
    pane.set_conversation("trip")
    qtbot.waitUntil(lambda: not runner.busy)
    assert not pane.temporary_marker.isVisible()
    pane.temporary_toggle.click()
    assert pane.temporary_toggle.isChecked() and pane.temporary_marker.isVisible()
    assert "nothing you send here is stored" in pane.temporary_marker.text()

    pane.input.setPlainText("Where do I live? I have a cat named Tom.")
    with qtbot.waitSignal(pane.reply_finished, timeout=30000) as finished:
        pane.send_button.click()
    reply = finished.args[0]
    assert reply.ok and reply.temporary and reply.text == "You live in Berlin."
    user, assistant = pane.messages()
    assert MESSAGE_MARK in user.who.text() and MESSAGE_MARK in assistant.who.text()
    assert assistant.used_panel is not None  # what memory the reply read is shown as for any reply
    assert indexed_engine.wait_idle(30)
    runner.wait_for_done()
    assert not assistant.updating and not assistant.outcome_label.isVisible()
    live = indexed_engine.list_memories(include_deleted=True)
    assert [m.text for m in live] == ["The user lives in Berlin"]
    assert [c.sha for c in indexed_engine.history(limit=20)] == commits
    assert not any(FACTS in r.system_text for r in scripted_llm.requests)

    pane.temporary_toggle.click()  # off again: the next message is a normal, stored turn
    assert not pane.temporary_marker.isVisible()
