"""The chat pane over the real engine and the scripted LLM server."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QUrl

from desktop_mem.ui.chat.chat_pane import ChatPane
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.markdown_view import MarkdownView
from tests.scripted_llm import Fault

FACTS = "You extract facts about the user"
RECONCILE = "You keep a memory of facts about the user"
SUMMARY = "You maintain a short running summary"
REPLY = "Nice, **Berlin** is a great city to live in. Enjoy the lakes in summer!"


def is_chat(body: dict[str, Any]) -> bool:
    system = " ".join(str(m.get("content", "")) for m in body["messages"] if m["role"] == "system")
    return FACTS not in system and RECONCILE not in system and SUMMARY not in system


def _pane(qtbot: Any, engine: Any, runner: Any, bridge: Any) -> ChatPane:
    pane = ChatPane(engine, runner)
    qtbot.addWidget(pane)
    bridge.outcome_ready.connect(pane.on_outcome)
    pane.resize(700, 600)
    pane.show()
    pane.set_conversation("trip")
    return pane


def test_send_streams_the_reply_then_shows_memory_used_and_memory_updated(
        qtbot: Any, indexed_engine: Any, bridge: Any, scripted_llm: Any) -> None:
    indexed_engine.add("The user has a sister called Anna", conversation_id="trip")
    scripted_llm.script(FACTS, '["The user lives in Berlin"]', times=1)
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(SUMMARY, "The user lives in Berlin.")
    scripted_llm.script(is_chat, REPLY)
    runner = TaskRunner()  # the real pools: the reply streams on the writer thread
    pane = _pane(qtbot, indexed_engine, runner, bridge)
    qtbot.waitUntil(lambda: not runner.busy)
    qtbot.keyClicks(pane.input, "I live in Berlin with my sister Anna.")
    with qtbot.waitSignal(pane.reply_finished, timeout=30000) as finished:
        qtbot.keyClick(pane.input, "\r", modifier=qtbot_ctrl())
    reply = finished.args[0]
    assert reply.ok and reply.text == REPLY
    user, assistant = pane.messages()
    assert user.text == "I live in Berlin with my sister Anna."
    assert assistant.text == REPLY
    assert "Berlin is a great city" in assistant.view.toPlainText()  # Markdown rendered, no ** shown
    assert pane.last_token_count == len(REPLY.split())  # it streamed word by word
    assert pane.send_button.isEnabled() and not pane.stop_button.isEnabled()

    panel = assistant.used_panel
    assert panel is not None and panel.toggle.text().startswith("Memory used:")
    assert not panel.expanded()
    panel.toggle.click()
    assert panel.expanded()
    texts = [b.text() for b in panel.memory_buttons]
    assert "The user has a sister called Anna" in texts
    with qtbot.waitSignal(pane.memory_requested) as requested:
        panel.memory_buttons[texts.index("The user has a sister called Anna")].click()
    assert indexed_engine.get(requested.args[0]).text == "The user has a sister called Anna"

    qtbot.waitUntil(lambda: assistant.outcome_label.isVisible() and not assistant.updating, timeout=30000)
    assert assistant.outcome_label.text().startswith("Memory updated: added")
    assert "The user lives in Berlin" in assistant.outcome_label.text()
    runner.wait_for_done()


def test_tokens_are_repainted_in_coalesced_steps(qtbot: Any, indexed_engine: Any, bridge: Any,
                                                 scripted_llm: Any) -> None:
    long_reply = " ".join(f"word{i}" for i in range(400))
    scripted_llm.script(is_chat, long_reply)
    runner = TaskRunner()
    pane = _pane(qtbot, indexed_engine, runner, bridge)
    progress: list[str] = []
    pane.reply_progressed.connect(progress.append)
    pane.input.setPlainText("Tell me a long story")
    with qtbot.waitSignal(pane.reply_finished, timeout=30000):
        pane.send_button.click()
    assert pane.messages()[-1].text == long_reply
    # Far fewer repaints than tokens, and every repaint shows a prefix of the final reply.
    assert all(long_reply.startswith(p) for p in progress)
    assert pane.last_token_count == 400 and len(progress) < 400
    runner.wait_for_done()


def test_stop_keeps_the_text_so_far(qtbot: Any, indexed_engine: Any, bridge: Any, runner: Any,
                                    scripted_llm: Any) -> None:
    scripted_llm.script(is_chat, Fault.delay(3, then="A reply that should be stopped"))
    threaded = TaskRunner()
    pane = _pane(qtbot, indexed_engine, threaded, bridge)
    pane.input.setPlainText("Hello")
    pane.send_button.click()
    assert pane.busy and pane.stop_button.isEnabled()
    with qtbot.waitSignal(pane.reply_finished, timeout=30000) as finished:
        pane.stop_button.click()
    assert finished.args[0].cancelled
    assert "Stopped" in pane.messages()[-1].status_label.text()
    assert pane.send_button.isEnabled()
    threaded.wait_for_done()


def test_an_unreachable_llm_shows_a_banner_with_a_settings_link(qtbot: Any, make_config: Any,
                                                                runner: Any, settle: Any) -> None:
    from desktop_mem.engine.facade import MemoryEngine
    from desktop_mem.ui.engine_bridge import EngineBridge

    engine = MemoryEngine(make_config(llm__base_url="http://127.0.0.1:9/v1", llm__model="m", llm__timeout=2))
    try:
        bridge = EngineBridge(engine)
        pane = _pane(qtbot, engine, runner, bridge)
        pane.input.setPlainText("Hello?")
        with qtbot.waitSignal(pane.reply_finished, timeout=30000) as finished:
            pane.send_button.click()
        assert finished.args[0].error_kind == "unreachable"
        assert not pane.banner.isHidden()
        assert "Settings" in pane.banner_label.text()
        with qtbot.waitSignal(pane.settings_requested):
            pane.banner_label.linkActivated.emit("settings")
        engine.wait_idle(30)
        settle(runner)
        bridge.close()
    finally:
        engine.close()


def test_history_is_shown_when_a_conversation_opens(qtbot: Any, indexed_engine: Any, bridge: Any,
                                                    runner: Any, settle: Any) -> None:
    indexed_engine.add("What is the capital of France?", conversation_id="quiz", role="user")
    indexed_engine.add("Paris.", conversation_id="quiz", role="assistant")
    pane = _pane(qtbot, indexed_engine, runner, bridge)
    pane.set_conversation("quiz")
    settle(runner)
    assert [(m.role, m.text) for m in pane.messages()] == [
        ("user", "What is the capital of France?"), ("assistant", "Paris.")]


def test_a_long_conversation_opens_on_its_latest_messages_and_shows_earlier_ones_on_request(
        qtbot: Any, indexed_engine: Any, bridge: Any, runner: Any, settle: Any) -> None:
    """Each message is a widget built on the GUI thread: a conversation of thousands of turns
    opened whole froze the window. It opens on its latest page; older pages come on request, in
    order, above what the user is reading."""
    from desktop_mem.ui.chat.transcript import HISTORY_PAGE

    turns = 2 * HISTORY_PAGE + 8  # ends on a reply (an unanswered question would offer Retry)
    engine = indexed_engine
    for i in range(turns):
        engine.add(f"Turn number {i}", conversation_id="long", role="user" if i % 2 == 0 else "assistant")
    pane = _pane(qtbot, engine, runner, bridge)
    pane.set_conversation("long")
    settle(runner)
    shown = [m.text for m in pane.messages()]
    assert shown == [f"Turn number {i}" for i in range(turns - HISTORY_PAGE, turns)]
    assert pane.earlier_button.isVisible()
    assert f"{turns - HISTORY_PAGE} more" in pane.earlier_button.text()
    bar = pane.scroll_area.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum())  # at the newest
    bar.setValue(bar.maximum() - 50)  # the user scrolled up a little to read
    qtbot.mouseClick(pane.earlier_button, Qt.MouseButton.LeftButton)
    two_pages = [f"Turn number {i}" for i in range(turns - 2 * HISTORY_PAGE, turns)]
    assert [m.text for m in pane.messages()] == two_pages
    qtbot.waitUntil(lambda: bar.maximum() - bar.value() == 50)  # still on the message being read
    pane.show_earlier()
    assert [m.text for m in pane.messages()] == [f"Turn number {i}" for i in range(turns)]
    assert not pane.earlier_button.isVisible()
    pane.set_conversation("other")
    settle(runner)
    assert pane.messages() == [] and not pane.earlier_button.isVisible()


def test_markdown_view_never_fetches_and_opens_web_links_only_on_click(qtbot: Any) -> None:
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown("![x](http://127.0.0.1:9/tracker.png) and [a link](https://example.org)")
    assert view.loadResource(2, QUrl("http://127.0.0.1:9/tracker.png")) is None
    assert not view.openLinks() and not view.openExternalLinks()
    with qtbot.waitSignal(view.link_activated) as internal:
        view.anchorClicked.emit(QUrl("memory:abc"))
    assert internal.args[0].toString() == "memory:abc"


def qtbot_ctrl() -> Any:
    from PySide6.QtCore import Qt

    return Qt.KeyboardModifier.ControlModifier


def test_memory_used_says_why_mmr_ranks_skip_numbers(
        qtbot: Any, indexed_engine: Any, bridge: Any, scripted_llm: Any) -> None:
    """A recalled message the model reads in the transcript is not repeated in the memory block;
    the panel says so, instead of leaving a user to wonder about MMR ranks #2, #5 ..."""
    indexed_engine.add("The user has a sister called Anna", conversation_id="trip")
    indexed_engine.add("My sister Anna and I love hiking in the Alps.", conversation_id="trip", role="user")
    indexed_engine.add("Hiking in the Alps sounds wonderful!", conversation_id="trip", role="assistant")
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(is_chat, "Try the Eiger trail.")
    runner = TaskRunner()
    pane = _pane(qtbot, indexed_engine, runner, bridge)
    qtbot.waitUntil(lambda: not runner.busy)
    qtbot.keyClicks(pane.input, "Where should Anna and I go hiking in the Alps?")
    with qtbot.waitSignal(pane.reply_finished, timeout=30000):
        qtbot.keyClick(pane.input, "\r", modifier=qtbot_ctrl())
    panel = pane.messages()[-1].used_panel
    assert panel is not None
    used = panel.used
    assert used.in_transcript >= 1
    ranks = [r.scores.mmr_rank for r in used.memories if r.scores.mmr_rank is not None]
    assert ranks != list(range(1, len(ranks) + 1))  # the ranks skip the left-out messages
    assert panel.transcript_note is not None
    assert panel.transcript_note.text().startswith(f"{used.in_transcript} more matching")
    runner.wait_for_done()
