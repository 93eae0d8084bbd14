"""A Settings save reopens the store: what the window shows for one engine goes with that engine.

The review badge, the idle tidy-up's clock and an open review list belong to the store that was
open; after a reopen the status bar shows one "Review (N)" badge, one clock follows the new
store, and an old clock cannot start a tidy-up the user just turned off.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import shiboken6

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.memories.idle_tidy import IdleTidy
from desktop_mem.ui.memories.review_pane import ReviewBadge
from tests.ui.conftest import duplicate_store, open_indexed_window

TIDY_MINUTES = "memory.tidy_when_idle_minutes"


def _shown_badges(win: MainWindow) -> list[str]:
    return [b.text() for b in win.status.findChildren(ReviewBadge) if shiboken6.isValid(b) and b.isVisible()]


def _wait_for_one_badge(qtbot: Any, win: MainWindow) -> None:
    with contextlib.suppress(qtbot.TimeoutError):  # then say what shows instead
        qtbot.waitUntil(lambda: _shown_badges(win) == ["Review (1)"], timeout=10000)
    assert _shown_badges(win) == ["Review (1)"]


def _alive(objects: list[Any]) -> list[Any]:
    return [o for o in objects if shiboken6.isValid(o)]


def _save_settings(qtbot: Any, win: MainWindow, minutes: int) -> None:
    win.open_settings()
    dialog = win.settings_dialog
    dialog.editors[TIDY_MINUTES].setValue(minutes)  # type: ignore[attr-defined]
    with qtbot.waitSignal(win.index_ready, timeout=60000), qtbot.waitSignal(win.store_opened, timeout=30000):
        dialog.save()


def test_reopening_the_store_replaces_the_review_badge_and_the_idle_tidy_clock(
        qtbot: Any, make_config: Any, scripted_llm: Any, tmp_path: Path) -> None:
    config = duplicate_store(make_config, scripted_llm)
    with MemoryEngine(config) as engine:  # one tidy-up proposal waits in Review
        engine.open_index()
        assert len(engine.tidy_up().proposals) == 1
    win = open_indexed_window(qtbot, config, tmp_path)
    try:
        _wait_for_one_badge(qtbot, win)
        first_badge = win.review_badge
        assert first_badge is not None
        first_badge.open_review()
        old_dialog = first_badge.dialog
        assert old_dialog is not None and old_dialog.isVisible()

        _save_settings(qtbot, win, 5)  # idle tidy-up on: the new store gets the clock
        _wait_for_one_badge(qtbot, win)
        assert win.review_badge is not first_badge
        # the review list of the closed store is gone: its Accept would write through a closed engine
        qtbot.waitUntil(lambda: not shiboken6.isValid(old_dialog) or not old_dialog.isVisible(),
                        timeout=5000)
        clock = win.idle_tidy
        assert clock is not None and clock.enabled
        qtbot.waitUntil(lambda: _alive(win.findChildren(IdleTidy)) == [clock], timeout=5000)  # one: the new
        clock._timer.setInterval(60_000)  # a minute, not five: it must not ring during the test
        assert win.engine is not None
        win.runner.submit_write(win.engine.add, "The user drinks tea", quiet=True)  # a change starts it
        qtbot.waitUntil(lambda: clock.waiting, timeout=10000)

        told: list[str] = []
        win.operation_finished.connect(told.append)
        _save_settings(qtbot, win, 0)  # turned off while the clock runs
        _wait_for_one_badge(qtbot, win)
        if shiboken6.isValid(clock) and clock.waiting:  # the old store's clock still runs:
            clock._timer.setInterval(10)  # its minutes are up now
        qtbot.wait(3000)
        assert told == []  # no tidy-up: the user turned it off, and the clock that ran was the old store's
        qtbot.waitUntil(lambda: _alive(win.findChildren(IdleTidy)) == [win.idle_tidy], timeout=5000)
        assert win.idle_tidy is not None and not win.idle_tidy.enabled
        assert not shiboken6.isValid(clock) or not clock.waiting
    finally:
        win.shutdown()
