"""Projects in the window (issue #38, item 3): a conversation is put in a project with the picker
under the conversations, a project's memories are found with the Memories and Timeline filters,
and a project is never listed as a conversation to chat in. Real engine, index and git; the
window's own pools."""

from __future__ import annotations

from typing import Any

from desktop_mem.engine.api import project_scope
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.project_picker import NEW_PROJECT, NO_PROJECT
from desktop_mem.ui.workspace import MEMORIES_TAB, TIMELINE_TAB
from tests.ui.conftest import open_demo

SHOP = project_scope("shop")


def test_a_conversation_is_put_in_a_project_and_its_memories_are_filtered(
        qtbot: Any, opened_window: MainWindow) -> None:
    window = opened_window
    ws = open_demo(qtbot, window)
    engine = window.engine
    assert engine is not None
    engine.add("The shop's orders live in PostgreSQL 16", conversation_id=SHOP)  # as an agent would
    side = ws.conversations
    picker = side.project_picker
    side.reload()
    qtbot.waitUntil(lambda: [p.id for p in side.projects] == [SHOP], timeout=10000)
    assert SHOP not in side.model.ids(), "a project is no conversation to chat in"

    # the picker offers the project for the selected conversation, which is in none yet
    side.select("trip-to-lisbon")
    qtbot.waitUntil(lambda: side.current == "trip-to-lisbon", timeout=5000)
    items = [picker.combo.itemText(i) for i in range(picker.combo.count())]
    assert items == [NO_PROJECT, "shop", NEW_PROJECT]
    assert picker.combo.currentText() == NO_PROJECT and picker.combo.isEnabled()

    picker.combo.setCurrentIndex(1)
    picker.combo.activated.emit(1)  # as a click on "shop" does
    qtbot.waitUntil(lambda: engine.conversation_project("trip-to-lisbon") == SHOP, timeout=10000)
    qtbot.waitUntil(lambda: next(c for c in side.model.rows() if c.id == "trip-to-lisbon").project == SHOP,
                    timeout=10000)
    assert picker.combo.currentText() == "shop"
    # a conversation's reply reads the project's memories now (the engine's own promise)
    found = {r.memory.conversation_id for r in engine.search("which database for orders",
                                                            conversation_id="trip-to-lisbon", top_k=10)}
    assert SHOP in found

    # a new project by name; a name with no letters is refused, saying why, and changes nothing
    side.select("garden")
    qtbot.waitUntil(lambda: side.current == "garden", timeout=5000)
    picker.choose("///")
    assert picker.error_label.isVisibleTo(picker) and "no letters or digits" in picker.error_label.text()
    assert picker.combo.currentText() == NO_PROJECT
    picker.choose("Allotment plans")
    qtbot.waitUntil(lambda: engine.conversation_project("garden") == project_scope("Allotment plans"),
                    timeout=10000)
    qtbot.waitUntil(lambda: len(side.projects) == 2, timeout=10000)
    assert not picker.error_label.isVisibleTo(picker)
    picker.choose(None)  # "No project" takes it out again
    qtbot.waitUntil(lambda: engine.conversation_project("garden") is None, timeout=10000)

    # the Memories filter names the project and lists its memories only
    window.show_tab(MEMORIES_TAB)
    browser = ws.browser
    qtbot.waitUntil(lambda: browser.conversation_combo.findData(SHOP) >= 0, timeout=10000)
    assert browser.conversation_combo.itemText(browser.conversation_combo.findData(SHOP)) == "Project: shop"
    browser.conversation_combo.setCurrentIndex(browser.conversation_combo.findData(SHOP))

    def browser_rows() -> list[Any]:
        return [browser.model.memory_at(r) for r in range(browser.model.rowCount())]

    qtbot.waitUntil(lambda: [m.text for m in browser_rows()] == ["The shop's orders live in PostgreSQL 16"],
                    timeout=10000)
    browser.search_edit.setText("orders database")
    qtbot.waitUntil(lambda: browser.model.searching and [m.conversation_id for m in browser_rows()] == [SHOP],
                    timeout=20000)

    # the Timeline filter too: the project's commit only
    window.show_tab(TIMELINE_TAB)
    timeline = ws.timeline
    qtbot.waitUntil(lambda: timeline.conversation_combo.findData(SHOP) >= 0, timeout=10000)
    assert timeline.conversation_combo.itemText(timeline.conversation_combo.findData(SHOP)) == "Project: shop"
    timeline.conversation_combo.setCurrentIndex(timeline.conversation_combo.findData(SHOP))

    def subjects() -> list[str]:
        return [c.subject for r in range(timeline.model.rowCount()) if (c := timeline.model.commit_at(r))]

    qtbot.waitUntil(lambda: len(subjects()) == 1, timeout=20000)
    assert "PostgreSQL" in subjects()[0]
