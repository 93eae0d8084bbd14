"""The memory browser's "As of" control: time travel through what the app held as true."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from PySide6.QtCore import QDate

from desktop_mem.ui.memories.memory_browser import MemoryBrowser


def _texts(browser: MemoryBrowser) -> list[str]:
    model = browser.model
    return [model.memory_at(r).text for r in range(model.rowCount())]  # type: ignore[union-attr]


def test_as_of_a_day_lists_and_searches_what_was_true_then(qtbot: Any, indexed_engine: Any, runner: Any,
                                                          settle: Any) -> None:
    ghent = indexed_engine.add("The user lives in Ghent", created_at=datetime(2025, 1, 1, tzinfo=UTC))
    indexed_engine.replace(ghent.id, "The user lives in Leuven")
    browser = MemoryBrowser(indexed_engine, runner)
    qtbot.addWidget(browser)
    browser.role_combo.setCurrentIndex(browser.role_combo.findData("memory"))
    settle(runner)
    assert _texts(browser) == ["The user lives in Leuven"]

    browser.as_of_edit.setDate(QDate(2025, 6, 1))
    browser.as_of_check.setChecked(True)
    settle(runner)
    assert _texts(browser) == ["The user lives in Ghent"]
    assert not browser.deleted_check.isEnabled()

    browser.search_edit.setText("Which city does the user live in?")
    browser.refresh()
    settle(runner)
    assert _texts(browser) == ["The user lives in Ghent"]

    browser.as_of_check.setChecked(False)
    settle(runner)
    assert _texts(browser)[0] == "The user lives in Leuven"


def test_as_of_takes_a_time_and_an_empty_list_leaves_nothing_selected(qtbot: Any, indexed_engine: Any,
                                                                      runner: Any, settle: Any) -> None:
    from datetime import timedelta

    from PySide6.QtCore import QDateTime

    now = datetime.now(UTC)
    ghent = indexed_engine.add("The user lives in Ghent", created_at=now - timedelta(hours=3))
    indexed_engine.replace(ghent.id, "The user lives in Leuven")  # this morning's fact was Ghent
    browser = MemoryBrowser(indexed_engine, runner)
    qtbot.addWidget(browser)
    browser.role_combo.setCurrentIndex(browser.role_combo.findData("memory"))
    settle(runner)
    browser.select_memory(browser.model.memory_at(0).id)  # type: ignore[union-attr]
    assert browser.model.memory_at(0).text == "The user lives in Leuven"  # type: ignore[union-attr]
    browser.as_of_edit.setDateTime(QDateTime.fromSecsSinceEpoch(int((now - timedelta(hours=1)).timestamp())))
    # Leuven is not in it: the editor empties
    with qtbot.waitSignal(browser.selection_cleared, timeout=10000):
        browser.as_of_check.setChecked(True)
        settle(runner)
    assert _texts(browser) == ["The user lives in Ghent"]  # an hour ago, not the end of today
    assert not browser.table.selectionModel().hasSelection()
    browser.as_of_edit.setDateTime(QDateTime.fromSecsSinceEpoch(int((now - timedelta(days=9)).timestamp())))
    settle(runner)
    assert _texts(browser) == []
