"""A Timeline the user has not opened costs nothing when the store changes (issue #25).

At 100,000 memories every chat turn's commit made the hidden Timeline list the newest commits:
the import's 100,000 files were read from git, classified and their events built, and the window
kept ~100 MB more for a pane nobody had looked at. The pane loads when first shown, with every
commit made meanwhile.
"""

from __future__ import annotations

from typing import Any

import pytest

from desktop_mem.engine.history import timeline_query
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.workspace import CHAT_TAB, MEMORIES_TAB, TIMELINE_TAB
from tests.ui.conftest import open_demo


def _counting_pages(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    page = timeline_query.timeline_page

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return page(*args, **kwargs)

    monkeypatch.setattr(timeline_query, "timeline_page", counting)  # what engine.timeline.page runs
    return calls


def _listed(ws: Any, text: str) -> bool:
    model = ws.timeline.model
    return any(e.new_text == text for r in range(model.rowCount()) for e in model.commit_at(r).events)


def test_store_changes_do_not_load_a_timeline_never_shown_and_showing_it_lists_them(
        qtbot: Any, opened_window: MainWindow, monkeypatch: pytest.MonkeyPatch) -> None:
    window = opened_window
    ws = open_demo(qtbot, window)
    window.show_tab(MEMORIES_TAB)
    calls = _counting_pages(monkeypatch)
    assert window.engine is not None
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=20000)
    before = ws.browser.model.total()
    for i in range(3):
        window.engine.add(f"Hidden timeline fact {i}", conversation_id="global")
    qtbot.waitUntil(lambda: ws.browser.model.total() >= before + 3, timeout=20000)  # the panes heard
    qtbot.wait(300)
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=20000)
    assert calls == [], "the hidden Timeline listed commits on a store change"
    assert ws.timeline.model.rowCount() == 0

    window.show_tab(TIMELINE_TAB)
    qtbot.waitUntil(lambda: ws.timeline.model.rowCount() > 0, timeout=30000)
    assert _listed(ws, "Hidden timeline fact 2")

    # Once shown it stays current, in view or not: a later change reaches it.
    window.show_tab(CHAT_TAB)
    window.engine.add("Fact after the timeline was shown", conversation_id="global")
    qtbot.waitUntil(lambda: _listed(ws, "Fact after the timeline was shown"), timeout=30000)
    assert calls, "the shown Timeline did not list the new commits"
