"""The smaller things a user tried and tripped over (issue 21, items 6 and 8), one test each."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog, QLabel

from desktop_mem.engine.models import GLOBAL_CONVERSATION
from desktop_mem.ui.chat.chat_message import ChatMessage
from desktop_mem.ui.chat.chat_pane import ChatPane
from desktop_mem.ui.conversation_list import ConversationList
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.memories.memory_browser import MemoryBrowser
from desktop_mem.ui.memories.memory_editor import MemoryEditor
from desktop_mem.ui.status_bar import StatusBar
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.timeline.timeline_pane import TimelinePane
from desktop_mem.ui.workspace import CHAT_TAB
from tests.scripted_llm import Fault
from tests.ui.conftest import open_demo
from tests.ui.test_chat_pane import FACTS, _pane, is_chat


def test_streamed_line_breaks_stay_line_breaks(qtbot: Any) -> None:
    message = ChatMessage("assistant")
    qtbot.addWidget(message)
    for chunk in ("Your list:\nbread\n", "milk\n\n", "Anything else?\n```\na = 1\nb = 2\n```"):
        message.append_text(chunk)
    assert message.view.toPlainText().splitlines()[:3] == ["Your list:", "bread", "milk"]
    assert "a = 1\nb = 2" in message.view.toPlainText()  # a code block is left as it is
    assert message.text.startswith("Your list:\nbread\nmilk")  # the text itself is unchanged


def test_rename_and_delete_are_off_with_no_conversation(qtbot: Any, engine: Any, runner: Any,
                                                       settle: Any) -> None:
    conversations = ConversationList(engine, runner, lambda *_: True)
    qtbot.addWidget(conversations)
    conversations.reload()
    settle(runner)
    assert conversations.model.rowCount() == 0 and conversations.new_button.isEnabled()
    assert not conversations.rename_button.isEnabled() and not conversations.delete_button.isEnabled()
    conversations.create_conversation("Trip to Crete")
    settle(runner)
    assert conversations.rename_button.isEnabled() and conversations.delete_button.isEnabled()
    conversations.delete(conversations.current or "")
    settle(runner)
    assert conversations.current is None or conversations.current == GLOBAL_CONVERSATION
    assert not conversations.rename_button.isEnabled()


def test_a_new_conversation_is_offered_a_title_and_an_emptied_one_still_starts_it(
        qtbot: Any, engine: Any, runner: Any, settle: Any, monkeypatch: Any) -> None:
    conversations = ConversationList(engine, runner, lambda *_: True)
    qtbot.addWidget(conversations)
    offered: list[str] = []

    def answer(typed: str) -> Any:
        def get_text(_parent: Any, _title: str, _label: str, text: str = "") -> tuple[str, bool]:
            offered.append(text)
            return typed, True
        return get_text

    monkeypatch.setattr(QInputDialog, "getText", answer("  Trip to Crete "))
    conversations.new_button.click()
    settle(runner)
    monkeypatch.setattr(QInputDialog, "getText", answer(""))
    conversations.new_button.click()
    settle(runner)

    titles = sorted(engine.conversation_title(c) for c in engine.conversations() if c != GLOBAL_CONVERSATION)
    assert len(offered) == 2 and all(offered)  # a title is offered each time
    assert titles == sorted(["Trip to Crete", offered[1]])


def test_the_status_bar_counts_facts_not_turns_and_summaries(qtbot: Any, engine: Any, runner: Any,
                                                            settle: Any) -> None:
    engine.add("The user lives in Ghent")
    engine.add("The user is a nurse", conversation_id="chat")
    engine.add("Hello!", conversation_id="chat", role="user")
    engine.add("Hi, how can I help?", conversation_id="chat", role="assistant")
    engine.add("Understood.", conversation_id="chat", role="assistant")
    status = StatusBar(runner)
    qtbot.addWidget(status)
    status.set_engine(engine)
    settle(runner)
    assert status.count_label.text() == "2 facts"
    assert "3 chat messages" in status.count_label.toolTip()
    status.set_engine(None)


def test_conversations_are_shown_by_title_not_slug(qtbot: Any, engine: Any, runner: Any, settle: Any) -> None:
    conv = engine.new_conversation("Trip to Lisbon")
    engine.add("The user flies on Friday", conversation_id=conv)
    browser = MemoryBrowser(engine, runner)
    qtbot.addWidget(browser)
    browser.set_conversations([(conv, "Trip to Lisbon")])
    browser.refresh()
    settle(runner)
    assert browser.model.index(0, 1).data() == "Trip to Lisbon"
    assert browser.model.index(0, 1).data(Qt.ItemDataRole.ToolTipRole) == conv
    assert browser.conversation_combo.itemText(1) == "Trip to Lisbon"
    assert browser.conversation_combo.itemData(1) == conv
    timeline = TimelinePane(engine, runner)
    qtbot.addWidget(timeline)
    timeline.reload()
    settle(runner)
    titles = [timeline.conversation_combo.itemText(i) for i in range(timeline.conversation_combo.count())]
    assert "Trip to Lisbon" in titles and conv not in titles
    timeline.conversation_combo.setCurrentIndex(titles.index("Trip to Lisbon"))
    assert timeline.query().conversation == conv
    settle(runner)
    timeline.select_commit(0)
    settle(runner)
    assert "  ·  Trip to Lisbon  ·  " in timeline.events_model.index(0, 0).data()


def test_expires_shows_no_date_unless_checked(qtbot: Any, engine: Any, runner: Any) -> None:
    memory = engine.add("The user likes tea")
    editor = MemoryEditor(engine, runner, lambda *_: True)
    qtbot.addWidget(editor)
    editor.open_memory(memory)
    assert not editor.expires_check.isChecked() and editor.expires_edit.text() == "never"
    editor.expires_check.setChecked(True)
    assert editor.expires_edit.text()[:2] == "20"  # a date, 30 days ahead
    editor.expires_check.setChecked(False)
    assert editor.expires_edit.text() == "never" and not editor.is_dirty()


def test_a_hand_edit_makes_the_source_manual(qtbot: Any, engine: Any, runner: Any, settle: Any) -> None:
    memory = engine.add("The user lives in Antwerp", source="llm")
    editor = MemoryEditor(engine, runner, lambda *_: True)
    qtbot.addWidget(editor)
    editor.open_memory(memory)
    editor.body_edit.setPlainText("The user lives in Ghent")
    with qtbot.waitSignal(editor.saved, timeout=10000):
        editor.save()
    settle(runner)
    assert engine.get(memory.id).source == "manual"
    assert editor.source_combo.currentText() == "manual"


def test_a_short_reply_does_not_match_a_search_by_meaning(qtbot: Any, indexed_engine: Any, runner: Any,
                                                          settle: Any) -> None:
    """ "Understood." came up for "daughter": a one-word text's embedding is close to everything
    (e5: 0.79 to "my daughter", over the 0.78 cut-off). Short texts match by keyword only."""
    for text in ("Understood.", "Got it!", "Okay."):
        indexed_engine.add(text, conversation_id="chat", role="assistant")
    fact = indexed_engine.add("The user's daughter Lena is seven", conversation_id="chat")
    indexed_engine.add("Okay, daughter noted.", conversation_id="chat", role="assistant")
    browser = MemoryBrowser(indexed_engine, runner)
    qtbot.addWidget(browser)
    browser.search_edit.setText("my daughter")
    browser.refresh()
    settle(runner)
    shown = [browser.model.memory_at(r).text for r in range(browser.model.rowCount())]  # type: ignore[union-attr]
    assert fact.text in shown and "Okay, daughter noted." in shown  # a keyword hit still counts
    assert not {"Understood.", "Got it!", "Okay."} & set(shown), shown


def test_send_during_a_reply_is_queued_and_sent_when_it_ends(
        qtbot: Any, indexed_engine: Any, bridge: Any, scripted_llm: Any) -> None:
    scripted_llm.script(is_chat, Fault.delay(2, then="First answer"), times=1)
    scripted_llm.script(is_chat, "Second answer")
    runner = TaskRunner()
    pane = _pane(qtbot, indexed_engine, runner, bridge)
    qtbot.waitUntil(lambda: not runner.busy)
    pane.input.setPlainText("First question")
    pane.send_button.click()
    assert pane.busy
    pane.input.setPlainText("Second question")
    pane.send_shortcut.activated.emit()  # Ctrl+Enter while the reply streams
    assert pane.queued and pane.queued_label.isVisibleTo(pane)
    assert pane.input.toPlainText() == "Second question"  # kept until it goes
    qtbot.waitUntil(lambda: [m.text for m in pane.messages()][-2:] == ["Second question", "Second answer"],
                    timeout=30000)
    assert [m.text for m in pane.messages()] == [
        "First question", "First answer", "Second question", "Second answer"]
    assert not pane.queued and pane.queued_label.isHidden()
    runner.wait_for_done()


def test_updating_memory_shows_on_the_reply_and_in_the_status_bar_with_elapsed_time(
        qtbot: Any, opened_window: MainWindow, scripted_llm: Any) -> None:
    """35-104 s of silence after each reply: now the reply and the status bar say memory is being
    updated, counting seconds, until "Memory updated" replaces it."""
    scripted_llm.script(FACTS, Fault.delay(3, then='["The user has a daughter called Lena"]'), times=1)
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(is_chat, "Lovely name!")
    window = opened_window
    ws = open_demo(qtbot, window)
    window.show_tab(CHAT_TAB)
    qtbot.waitUntil(lambda: ws.chat.conversation is not None, timeout=10000)
    ws.chat.input.setPlainText("My daughter is called Lena.")
    with qtbot.waitSignal(ws.chat.reply_finished, timeout=60000):
        ws.chat.send_button.click()
    reply = ws.chat.messages()[-1]
    assert reply.updating and reply.outcome_label.text().startswith("Updating memory…")
    label = window.status.memory_label
    assert label.isVisibleTo(window.status) and label.text().startswith("Updating memory…")
    qtbot.wait(1400)  # the FACTS call takes 3 s: the count has moved on by now
    assert "Updating memory… 0 s" not in label.text() and "… 0 s" not in reply.outcome_label.text()
    qtbot.waitUntil(lambda: not reply.updating, timeout=60000)
    assert reply.outcome_label.text().startswith("Memory updated: added")
    assert label.isHidden() and ws.chat.updating_memory == 0


def test_llm_is_not_shown_unreachable_while_a_retried_reply_streams(
        qtbot: Any, opened_window: MainWindow, scripted_llm: Any) -> None:
    class Unreachable(Exception):
        kind, message = "unreachable", "Cannot reach the LLM"

    scripted_llm.script(is_chat, "It works again.")
    window = opened_window
    ws = open_demo(qtbot, window)
    window.show_tab(CHAT_TAB)
    qtbot.waitUntil(lambda: ws.chat.conversation is not None, timeout=10000)
    status = window.status
    qtbot.waitUntil(lambda: status.llm_label.text() == "LLM: connected", timeout=30000)  # first probe
    status._on_llm_failed(Unreachable())  # the last probe failed (the server was down)
    assert status.llm_label.text() == "LLM: unreachable"
    ws.chat.input.setPlainText("Are you there?")
    with qtbot.waitSignal(ws.chat.llm_answered, timeout=60000):
        ws.chat.send_button.click()
    assert status.llm_label.text() == "LLM: connected"
    status.check_llm()  # the minute's probe while the reply streams: not sent (it would queue behind it)
    status._on_llm_failed(Unreachable(), 0)  # a probe sent before the reply, failing late
    assert status.llm_label.text() == "LLM: connected"
    qtbot.waitUntil(lambda: not ws.chat.busy, timeout=30000)


def test_an_older_reply_shows_the_memory_record_kept_with_its_turn(
        qtbot: Any, engine: Any, runner: Any, settle: Any) -> None:
    """What an old answer used stays checkable after switching conversations, a Settings save or
    a restart: the pane reads the record kept with the turn (engine/chat/turn_memory.py)."""
    trip = engine.new_conversation("Weekend plans")
    home = engine.new_conversation("Home")
    fact = engine.add("The user works as a nurse", source="llm")
    engine.add("What is my job?", conversation_id=trip, role="user")
    reply = engine.add("You work as a nurse.", conversation_id=trip, role="assistant")
    engine.edit(reply.id, meta={
        "memory_used": {"version": 1, "model": "local", "strategy": "trimming", "summary": None,
                        "memories": [{"id": fact.id, "scope": "user", "conversation_id": "global",
                                      "role": "memory", "text": fact.text, "score": 0.71,
                                      "from_conversation": home}],
                        "other_conversations": ["global", home]},
        "memory_updated": {"version": 1, "added": [{"id": "x", "scope": "user",
                                                    "text": "The user has a daughter"}],
                           "updated": [], "deleted": [], "summary_changed": True}})
    pane = ChatPane(engine, runner)
    qtbot.addWidget(pane)
    pane.set_titles({trip: "Weekend plans", home: "Home"})
    pane.set_conversation(trip)
    settle(runner)
    shown = pane.messages()[-1]
    panel = shown.used_panel
    # the user's facts are named as such, not counted as another conversation
    assert panel is not None
    assert panel.toggle.text() == ("Memory used: 1 memory + your facts + 1 other conversation · "
                                   "strategy trimming")
    assert [b.text() for b in panel.memory_buttons] == ["The user works as a nurse"]
    assert panel.origin_labels[0].text().startswith("yours (learned in “Home”)")
    assert shown.outcome_label.text() == ("Memory updated: added “The user has a daughter” · "
                                          "summary updated")
    with qtbot.waitSignal(pane.memory_requested) as requested:
        panel.memory_buttons[0].click()
    assert requested.args[0] == fact.id
    pane.set_conversation(home)  # away and back: the record is read again, not lost
    settle(runner)
    pane.set_conversation(trip)
    settle(runner)
    assert pane.messages()[-1].used_panel is not None


def test_cancel_stops_the_memory_update_of_a_reply(qtbot: Any, opened_window: MainWindow,
                                                   scripted_llm: Any) -> None:
    scripted_llm.script(FACTS, Fault.delay(3, then='["The user has a daughter called Lena"]'), times=1)
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(is_chat, "Lovely name!")
    window = opened_window
    ws = open_demo(qtbot, window)
    window.show_tab(CHAT_TAB)
    qtbot.waitUntil(lambda: ws.chat.conversation is not None, timeout=10000)
    ws.chat.input.setPlainText("My daughter is called Lena.")
    with qtbot.waitSignal(ws.chat.reply_finished, timeout=60000):
        ws.chat.send_button.click()
    reply = ws.chat.messages()[-1]
    assert reply.updating and not reply.cancel_update_button.isHidden()
    assert not window.status.memory_cancel.isHidden()  # the status bar's Cancel too
    reply.cancel_update_button.click()
    qtbot.waitUntil(lambda: not reply.updating, timeout=60000)
    assert reply.outcome_label.text().startswith("Memory update cancelled")
    assert window.engine is not None
    texts = [m.text for m in window.engine.list_memories(role="memory")]
    assert "The user has a daughter called Lena" not in texts
    assert window.engine.transcript(ws.chat.conversation or "")[-1].text == "Lovely name!"  # kept


def test_memory_used_and_updated_stay_under_a_reply_after_switching_and_a_settings_save(
        qtbot: Any, opened_window: MainWindow, scripted_llm: Any) -> None:
    scripted_llm.script(FACTS, '["The user has a daughter called Lena"]', times=1)
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(is_chat, "Lovely name!")
    window = opened_window
    ws = open_demo(qtbot, window)
    window.show_tab(CHAT_TAB)
    qtbot.waitUntil(lambda: ws.conversations.model.row_of("garden") is not None, timeout=10000)
    ws.conversations.select("trip-to-lisbon")
    qtbot.waitUntil(lambda: ws.chat.conversation == "trip-to-lisbon" and bool(ws.chat.messages()),
                    timeout=10000)
    ws.chat.input.setPlainText("My daughter is called Lena.")
    with qtbot.waitSignal(ws.chat.reply_finished, timeout=60000):
        ws.chat.send_button.click()
    reply = ws.chat.messages()[-1]
    qtbot.waitUntil(lambda: not reply.updating and reply.outcome_label.isVisibleTo(reply), timeout=60000)
    used, updated = reply.used_panel.toggle.text(), reply.outcome_label.text()  # type: ignore[union-attr]
    assert updated.startswith("Memory updated: added")

    def shown_again(workspace: Any) -> None:
        qtbot.waitUntil(lambda: bool(workspace.chat.messages())
                        and workspace.chat.messages()[-1].text == "Lovely name!", timeout=10000)
        again = workspace.chat.messages()[-1]
        assert again.used_panel is not None and again.used_panel.toggle.text().startswith("Memory used:")
        assert again.used_panel.record is not None  # read back from the turn, not kept in the window
        assert again.outcome_label.text() == updated, (used, updated)

    ws.conversations.select("garden")
    qtbot.waitUntil(lambda: ws.chat.conversation == "garden", timeout=10000)
    ws.conversations.select("trip-to-lisbon")
    shown_again(ws)
    ws.chat.settings_requested.emit()
    with qtbot.waitSignal(window.store_opened, timeout=60000):
        window.settings_dialog.save()
    assert window.workspace is not None and window.workspace is not ws
    shown_again(window.workspace)


def test_checking_the_endpoint_again_is_not_painted_red(qtbot: Any, engine: Any, runner: Any,
                                                        settle: Any) -> None:
    """After Settings fixed the URL the label read "LLM: checking…" in the red of the old failure."""
    class Unreachable(Exception):
        kind, message = "unreachable", "Cannot reach the LLM"

    status = StatusBar(runner)
    qtbot.addWidget(status)
    status._on_llm_failed(Unreachable())
    assert status.llm_label.property("state") == "bad"
    status.set_engine(engine)  # the store reopened with the new settings
    status.check_llm()
    assert status.llm_label.text() == "LLM: checking…" and status.llm_label.property("state") == ""
    settle(runner)
    status.set_engine(None)


def test_the_editor_names_the_conversation_by_title(qtbot: Any, opened_window: MainWindow) -> None:
    window = opened_window
    ws = open_demo(qtbot, window)
    qtbot.waitUntil(lambda: ws.conversations.model.row_of("trip-to-lisbon") is not None, timeout=10000)
    qtbot.waitUntil(lambda: ws.browser.model.rowCount() > 5, timeout=30000)
    assert window.engine is not None
    fact = next(m for m in window.engine.list_memories(conversation_id="trip-to-lisbon", role="memory"))
    ws.open_memory(fact.id)
    qtbot.waitUntil(lambda: ws.editor.memory is not None and ws.editor.memory.id == fact.id, timeout=10000)
    assert "“Trip to Lisbon”" in ws.editor.title_label.text()


def test_the_memory_used_panel_lists_each_of_the_users_facts_once(qtbot: Any, engine: Any) -> None:
    # issue #39: a fact shown as a used memory was listed again in the "Your facts" line
    from desktop_mem.engine.api import MemoryUsed, ScoreBreakdown
    from desktop_mem.engine.index.retrieval import SearchResult
    from desktop_mem.ui.chat.memory_used_panel import MemoryUsedPanel

    name = engine.add("The user's name is Mara")
    engine.add("The user works as a nurse")
    scores = ScoreBreakdown(None, 0.8, 0.5, None, 0.5, 1.0, 0.4)
    used = MemoryUsed("trip", None, (SearchResult(name, scores),),
                      (("global", "- The user's name is Mara\n- The user works as a nurse"),),
                      "trimming", 10, 10)
    panel = MemoryUsedPanel(used)
    qtbot.addWidget(panel)
    panel.toggle.click()
    notes = [label.text() for label in panel.findChildren(QLabel) if label.text().startswith("Your facts")]
    assert notes == ["Your facts, read in every conversation (2): also The user works as a nurse"]
