"""The memory browser over a real engine: listing, filters, search, problems, live updates."""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import Qt

from desktop_mem.ui.memories.memory_browser import MemoryBrowser
from desktop_mem.ui.memories.memory_model import FETCH_BATCH, MemoryTableModel


def _texts(browser: MemoryBrowser) -> list[str]:
    model = browser.model
    return [model.memory_at(r).text for r in range(model.rowCount())]  # type: ignore[union-attr]


def _browser(qtbot: Any, engine: Any, runner: Any, settle: Any) -> MemoryBrowser:
    browser = MemoryBrowser(engine, runner)
    qtbot.addWidget(browser)
    browser.refresh()
    settle(runner)
    return browser


def test_lists_filters_and_hides_deleted_until_asked(qtbot: Any, indexed_engine: Any, runner: Any,
                                                      settle: Any, qtmodeltester: Any) -> None:
    indexed_engine.add("The user likes green tea", kind="preference")
    indexed_engine.add("The user lives in Lisbon", conversation_id="trip")
    gone = indexed_engine.add("The user owns a red bicycle")
    indexed_engine.delete(gone.id)
    browser = _browser(qtbot, indexed_engine, runner, settle)
    qtmodeltester.check(browser.model)
    assert sorted(_texts(browser)) == ["The user likes green tea", "The user lives in Lisbon"]
    assert browser.count_label.text() == "2 memories"

    browser.set_conversations(indexed_engine.conversations())
    browser.conversation_combo.setCurrentIndex(browser.conversation_combo.findData("trip"))
    settle(runner)
    assert _texts(browser) == ["The user lives in Lisbon"]

    browser.conversation_combo.setCurrentIndex(0)
    browser.kind_combo.setCurrentIndex(browser.kind_combo.findData("preference"))
    settle(runner)
    assert _texts(browser) == ["The user likes green tea"]

    browser.kind_combo.setCurrentIndex(0)
    browser.deleted_check.setChecked(True)
    settle(runner)
    assert "The user owns a red bicycle" in _texts(browser)
    row = _texts(browser).index("The user owns a red bicycle")
    assert browser.model.index(row, 4).data() == "deleted"


def test_search_combines_meaning_and_keywords_and_shows_scores(qtbot: Any, indexed_engine: Any, runner: Any,
                                                                settle: Any) -> None:
    indexed_engine.add("The user drinks green tea every morning")
    indexed_engine.add("The user's car is a blue Volvo")
    indexed_engine.add("The user is allergic to peanuts")
    browser = _browser(qtbot, indexed_engine, runner, settle)
    qtbot.keyClicks(browser.search_edit, "tea")
    qtbot.waitUntil(lambda: browser.model.searching, timeout=5000)
    settle(runner)
    texts = _texts(browser)
    assert texts[0] == "The user drinks green tea every morning"
    assert browser.count_label.text().startswith("1 match")
    assert not browser.table.isColumnHidden(5)
    assert float(browser.model.index(0, 5).data()) > 0

    browser.search_edit.clear()
    qtbot.waitUntil(lambda: not browser.model.searching, timeout=5000)
    settle(runner)
    assert len(_texts(browser)) == 3 and browser.table.isColumnHidden(5)


def test_search_shows_only_matches_until_all_ranked_is_asked_for(qtbot: Any, indexed_engine: Any,
                                                                 runner: Any, settle: Any) -> None:
    texts = ["The user loves shrimp, oysters and grilled fish", "The user's car is a blue Volvo",
             "The user plays chess on Tuesdays", "The user's sister lives in Oslo",
             "The user works as a nurse", "The user eats seafood paella every Friday"]
    for text in texts:
        indexed_engine.add(text)
    browser = _browser(qtbot, indexed_engine, runner, settle)
    header = browser.table.horizontalHeader()
    assert header.sortIndicatorSection() == -1, "a newest-first listing shows no column's arrow"
    qtbot.keyClicks(browser.search_edit, "seafood")
    qtbot.waitUntil(lambda: browser.model.searching, timeout=5000)
    settle(runner)
    shown = _texts(browser)
    # the keyword hit and the one close in meaning, in rank order (e5 + fusion may put either first)
    assert set(shown) == {"The user eats seafood paella every Friday",
                          "The user loves shrimp, oysters and grilled fish"}
    assert "The user's car is a blue Volvo" not in shown and "The user plays chess on Tuesdays" not in shown
    assert len(shown) < len(texts) and "below the cut-off" in browser.count_label.text()
    assert header.sortIndicatorSection() == -1, "rank order: no column's arrow"
    assert browser.all_ranked_check.isVisibleTo(browser)
    browser.all_ranked_check.setChecked(True)
    settle(runner)
    assert sorted(_texts(browser)) == sorted(texts) and "below" not in browser.count_label.text()
    browser.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)  # the user sorts by Text
    assert header.sortIndicatorSection() == 0 and _texts(browser) == sorted(_texts(browser), key=str.lower)


def test_broken_files_are_listed_as_problems(qtbot: Any, indexed_engine: Any, runner: Any, settle: Any,
                                            qtmodeltester: Any) -> None:
    bad = indexed_engine.root / "entries" / "global" / "facts" / "broken.md"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("---\nkind: [unclosed\n---\n\nbody\n", encoding="utf-8")
    indexed_engine.refresh()
    browser = _browser(qtbot, indexed_engine, runner, settle)
    qtmodeltester.check(browser.problems_model)
    assert browser.tabs.tabText(1) == "Problems (1)"
    assert browser.problems_model.index(0, 0).data() == "entries/global/facts/broken.md"
    assert browser.problems_model.index(0, 1).data()


def test_an_outside_edit_appears_in_the_list(qtbot: Any, indexed_engine: Any, bridge: Any, runner: Any,
                                             settle: Any) -> None:
    memory = indexed_engine.add("The user likes cats")
    browser = _browser(qtbot, indexed_engine, runner, settle)
    bridge.store_changed.connect(browser.on_store_changed)
    path = indexed_engine.root / memory.path
    path.write_text(path.read_text(encoding="utf-8").replace("likes cats", "likes dogs"), encoding="utf-8")
    # What the watcher does, from its own thread.
    watcher = threading.Thread(target=indexed_engine.apply_external_changes, args=([memory.path],))
    watcher.start()
    watcher.join()
    qtbot.waitUntil(lambda: _texts(browser) == ["The user likes dogs"], timeout=5000)


def test_the_model_exposes_big_snapshots_lazily_and_sorts_all_rows(qtmodeltester: Any,
                                                                   indexed_engine: Any) -> None:
    for i in range(3):
        indexed_engine.add(f"fact number {i}")
    memories = indexed_engine.list_memories() * (FETCH_BATCH // 3 + 10)
    model = MemoryTableModel()
    model.set_memories(memories)
    assert model.rowCount() == FETCH_BATCH and model.total() == len(memories)
    assert model.canFetchMore(model.index(-1, -1))
    model.fetchMore(model.index(-1, -1))
    assert model.rowCount() == len(memories)
    model.sort(0)
    assert model.index(0, 0).data() == "fact number 0"
    qtmodeltester.check(model)


def test_lineage_is_one_right_click_away(qtbot: Any, indexed_engine: Any, runner: Any, settle: Any) -> None:
    from PySide6.QtCore import Qt

    from desktop_mem.ui.timeline.lineage_view import LineageView

    first = indexed_engine.add("The user lives in Berlin")
    _tomb, second = indexed_engine.replace(first.id, "The user lives in Munich")
    browser = _browser(qtbot, indexed_engine, runner, settle)
    row = next(r for r in range(browser.model.rowCount()) if browser.model.memory_at(r).id == second.id)
    browser.table.selectRow(row)
    assert browser.table.contextMenuPolicy() == Qt.ContextMenuPolicy.ActionsContextMenu
    assert browser.lineage_action in browser.table.actions()
    browser.lineage_action.trigger()
    settle(runner)
    view = browser.last_lineage_dialog.findChild(LineageView, "lineageView")
    assert view is not None and view.lineage is not None
    assert [s.memory_id for s in view.lineage.chain] == [first.id, second.id]


def _many(engine: Any, n: int) -> list[Any]:
    """n facts, one a minute, the oldest first: "Fact 00 ..." sorts first by text and is the last
    row of a newest-first listing."""
    from datetime import UTC, datetime, timedelta

    from desktop_mem.engine.models import Operation

    start = datetime(2025, 1, 1, tzinfo=UTC)
    with engine._parts.writer.transaction(Operation.IMPORT, f"{n} facts") as tx:
        for i in range(n):
            tx.add(f"Fact {i:02d} about the garden", conversation_id="garden", kind="fact",
                   source="import", created_at=start + timedelta(minutes=i))
    return engine.list_memories()


def _paged_browser(qtbot: Any, engine: Any, runner: Any, settle: Any, page: int) -> MemoryBrowser:
    browser = MemoryBrowser(engine, runner)
    qtbot.addWidget(browser)
    browser.model.page_size = page
    browser.refresh()
    settle(runner)
    return browser


def test_a_big_store_opens_with_one_page_of_rows_and_scrolls_in_the_rest(
        qtbot: Any, engine: Any, runner: Any, settle: Any, qtmodeltester: Any) -> None:
    """At 100k memories the window listed every memory at start (4.3 s); now it holds one page
    and the count of all, and asks the engine for the next page as the table scrolls."""
    memories = _many(engine, 12)
    browser = _paged_browser(qtbot, engine, runner, settle, page=5)
    model = browser.model
    assert model.fetched() == 5 and model.rowCount() == 5  # one page held, not 12 rows
    assert model.total() == 12 and browser.count_label.text() == "12 memories"
    assert _texts(browser) == [m.text for m in reversed(memories)][:5]  # newest first
    while model.canFetchMore(model.index(-1, -1)):
        model.fetchMore(model.index(-1, -1))
        settle(runner)
    assert _texts(browser) == [m.text for m in reversed(memories)]  # each row once, in order
    qtmodeltester.check(model)


def test_sorting_a_paged_listing_sorts_every_memory_not_the_fetched_page(
        qtbot: Any, engine: Any, runner: Any, settle: Any) -> None:
    _many(engine, 12)
    browser = _paged_browser(qtbot, engine, runner, settle, page=5)
    assert "Fact 00 about the garden" not in _texts(browser)  # the oldest: not on the first page
    browser.table.sortByColumn(0, Qt.SortOrder.AscendingOrder)  # a click on "Text"
    settle(runner)
    assert _texts(browser) == [f"Fact {i:02d} about the garden" for i in range(5)]
    assert browser.model.fetched() == 5
    browser.table.sortByColumn(0, Qt.SortOrder.DescendingOrder)
    settle(runner)
    assert _texts(browser)[0] == "Fact 11 about the garden"
    browser.model.fetchMore(browser.model.index(-1, -1))  # the next page comes in the same order
    settle(runner)
    assert _texts(browser)[5:7] == ["Fact 06 about the garden", "Fact 05 about the garden"]


def test_a_page_of_a_listing_replaced_meanwhile_is_not_added(
        qtbot: Any, engine: Any, runner: Any, settle: Any) -> None:
    memories = _many(engine, 12)
    browser = _paged_browser(qtbot, engine, runner, settle, page=5)
    stale = tuple(memories[:5])
    browser.model.set_listing(12, tuple(reversed(memories))[:5])  # a new listing replaced it
    browser.model.add_page(10, stale)  # an answer for an offset this listing did not ask for
    assert browser.model.fetched() == 5


def test_a_change_to_the_store_keeps_the_rows_the_reader_scrolled_to(
        qtbot: Any, engine: Any, runner: Any, settle: Any) -> None:
    """Editing a memory deep in a 100k list read the list again from its first page, and the
    reader lost their place; now the same listing comes back with as many rows as were held."""
    memories = _many(engine, 12)
    browser = _paged_browser(qtbot, engine, runner, settle, page=5)
    model = browser.model
    model.fetchMore(model.index(-1, -1))
    settle(runner)
    assert model.fetched() == 10
    engine.add("A new fact written meanwhile", conversation_id="garden")
    browser.refresh()  # what a store change does, debounced
    settle(runner)
    assert model.total() == 13 and model.fetched() >= 10
    assert _texts(browser)[:2] == ["A new fact written meanwhile", memories[-1].text]
    browser.kind_combo.setCurrentIndex(browser.kind_combo.findData("fact"))  # another listing
    settle(runner)
    assert model.fetched() == 5


def test_search_shows_the_users_facts_first_and_never_hides_them_under_the_cut(
        qtbot: Any, indexed_engine: Any, runner: Any, settle: Any) -> None:
    # issue #39: "where do I live" showed chat turns only; the facts were under the cut-off
    indexed_engine.add("The user lives in Ghent")
    indexed_engine.add("The user works as a nurse")
    indexed_engine.add("The user's car is a blue Volvo")
    for said in ("Where do I live again? I keep forgetting things", "I live in Ghent, near the river",
                 "Do you know where I could live cheaply?"):
        indexed_engine.add(said, conversation_id="trip", role="user")
    browser = _browser(qtbot, indexed_engine, runner, settle)
    qtbot.keyClicks(browser.search_edit, "where do I live")
    qtbot.waitUntil(lambda: browser.model.searching, timeout=5000)
    settle(runner)
    shown = _texts(browser)
    assert shown[0] == "The user lives in Ghent", shown
    roles = [browser.model.memory_at(r).role for r in range(len(shown))]  # type: ignore[union-attr]
    assert roles == sorted(roles, key=lambda role: role != "memory"), "facts above turns"
    assert "The user's car is a blue Volvo" not in shown
