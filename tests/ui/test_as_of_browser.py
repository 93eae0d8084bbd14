"""The memory browser's "As of" control: time travel through what the app held as true."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from PySide6.QtCore import QDate

from desktop_mem.ui.memory_browser import MemoryBrowser


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
