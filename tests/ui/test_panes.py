"""Summary pane, simple timeline list, conversation list and settings dialog over a real store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from desktop_mem.engine.config import SETTINGS
from desktop_mem.ui.conversation_list import ConversationList
from desktop_mem.ui.settings.settings_dialog import SettingsDialog
from desktop_mem.ui.summary.summary_pane import SummaryPane, word_diff_html


def test_summary_pane_shows_the_summary_its_versions_and_their_diff(qtbot: Any, indexed_engine: Any,
                                                                     runner: Any, settle: Any) -> None:
    indexed_engine.create_demo()
    pane = SummaryPane(indexed_engine, runner)
    qtbot.addWidget(pane)
    pane.set_conversation("trip-to-lisbon")
    settle(runner)
    state = pane.state
    assert state is not None and state.summary is not None
    assert "Lisbon" in pane.summary_view.toPlainText() and "**" not in pane.summary_view.toPlainText()
    assert f"Summarizes {state.summary.summarized_count} messages" in pane.meta_label.text()
    assert len(state.versions) >= 2 and pane.from_combo.count() == len(state.versions)
    html = pane.diff_view.toHtml()
    assert "line-through" in html  # words of the older version struck through
    pane.set_conversation("garden")
    settle(runner)
    assert pane.state is not None and pane.state.summary is None
    assert "No summary yet" in pane.meta_label.text()


def test_word_diff_marks_removed_and_added_words() -> None:
    html = word_diff_html("Sam likes tea", "Sam likes green tea <b>")
    assert "Sam likes" in html and "green" in html and "&lt;b&gt;" in html
    assert "line-through" not in word_diff_html("same", "same")


def test_conversation_list_model_lists_titles(qtbot: Any, indexed_engine: Any, runner: Any, settle: Any,
                                              qtmodeltester: Any) -> None:
    indexed_engine.new_conversation("Book club")
    indexed_engine.add("The user reads Dune", conversation_id="book-club")
    conversations = ConversationList(indexed_engine, runner)
    qtbot.addWidget(conversations)
    conversations.reload()
    settle(runner)
    qtmodeltester.check(conversations.model)
    assert conversations.current == "book-club"
    assert conversations.model.index(conversations.model.row_of("book-club"), 0).data() == "Book club"


def test_settings_dialog_is_generated_from_settings_and_saves_changes(qtbot: Any, make_config: Any,
                                                                       tmp_path: Path, runner: Any,
                                                                       settle: Any,
                                                                       scripted_llm: Any) -> None:
    config = make_config()
    dialog = SettingsDialog(config, runner)
    qtbot.addWidget(dialog)
    assert set(dialog.editors) == {s.name for s in SETTINGS}
    key = dialog.editors["llm.api_key"]
    assert key.echoMode() == key.EchoMode.Password  # type: ignore[attr-defined]
    assert dialog.editors["context.strategy"].count() == 5  # type: ignore[attr-defined]
    assert "OpenAI-compatible endpoint" in dialog.editors["llm.base_url"].toolTip()

    dialog.editors["llm.base_url"].setText(scripted_llm.base_url)  # type: ignore[attr-defined]
    dialog.editors["llm.model"].setText("test-model")  # type: ignore[attr-defined]
    dialog.test_connection()
    settle(runner)
    assert dialog.test_label.text().startswith("✔ Connected")
    dialog.editors["llm.model"].setText("no-such-model")  # type: ignore[attr-defined]
    dialog.test_connection()
    settle(runner)
    assert dialog.test_label.text().startswith("✘") and "no-such-model" in dialog.test_label.text()

    dialog.editors["retrieval.top_k"].setValue(9)  # type: ignore[attr-defined]
    with qtbot.waitSignal(dialog.saved) as saved:
        dialog.save()
    assert saved.args[0]["retrieval.top_k"] == 9
    written = yaml.safe_load(Path(config.file).read_text(encoding="utf-8"))
    assert written["retrieval"]["top_k"] == 9 and written["llm"]["model"] == "no-such-model"


def test_the_summary_pane_marks_a_summary_that_states_a_forgotten_fact(qtbot: Any, indexed_engine: Any,
                                                                       runner: Any, settle: Any) -> None:
    indexed_engine.create_demo()
    pane = SummaryPane(indexed_engine, runner)
    qtbot.addWidget(pane)
    pane.set_conversation("trip-to-lisbon")
    settle(runner)
    assert not pane.stale_banner.isVisibleTo(pane)
    assert pane.title_label.text() == f"Summary of “{indexed_engine.conversation_title('trip-to-lisbon')}”"
    anna = next(m for m in indexed_engine.list_memories(conversation_id="trip-to-lisbon", role="memory")
                if "Anna" in m.text)
    indexed_engine.delete(anna.id)  # forgotten: the summary still names Anna until the next turn
    pane.reload()
    settle(runner)
    assert pane.stale_banner.isVisibleTo(pane)
    assert "The user travels with their sister Anna" in pane.stale_banner.text()
    assert "Out of date" in pane.stale_banner.text()
