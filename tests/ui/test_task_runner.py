"""The task runner: results on the GUI thread, one writer in order, latest wins by key."""

from __future__ import annotations

import threading
from typing import Any

from PySide6.QtCore import QThread

from desktop_mem.ui.task_runner import SyncTaskRunner, TaskRunner


def test_results_arrive_on_the_gui_thread_from_worker_threads(qtbot: Any) -> None:
    runner = TaskRunner()
    gui = QThread.currentThread()
    seen: list[tuple[str, bool]] = []

    def record(result: str) -> None:
        seen.append((result, QThread.currentThread() is gui))

    def work(name: str) -> str:
        return f"{name}:{threading.current_thread() is threading.main_thread()}"

    runner.submit(work, "read", on_result=record)
    runner.submit_write(work, "write", on_result=record)
    qtbot.waitUntil(lambda: len(seen) == 2)
    assert sorted(seen) == [("read:False", True), ("write:False", True)]


def test_the_writer_runs_one_task_at_a_time_in_submission_order(qtbot: Any) -> None:
    runner = TaskRunner()
    order: list[int] = []
    active = []
    overlap = []
    lock = threading.Lock()

    def write(n: int) -> int:
        with lock:
            active.append(n)
            overlap.append(len(active) > 1)
        threading.Event().wait(0.01)
        with lock:
            active.remove(n)
        return n

    for n in range(8):
        runner.submit_write(write, n, on_result=order.append)
    qtbot.waitUntil(lambda: len(order) == 8)
    assert order == list(range(8))
    assert not any(overlap)


def test_latest_wins_drops_stale_results_for_the_same_key(qtbot: Any) -> None:
    runner = SyncTaskRunner()
    shown: list[str] = []
    for text in ("t", "te", "tea"):
        runner.submit(str.upper, text, key="search", on_result=shown.append)
    qtbot.waitUntil(lambda: not runner.busy)
    assert shown == ["TEA"]


def test_errors_go_to_the_error_callback_not_the_result(qtbot: Any) -> None:
    runner = SyncTaskRunner()
    errors: list[BaseException] = []
    results: list[Any] = []
    runner.submit(int, "not a number", on_result=results.append, on_error=errors.append)
    assert errors == []  # never delivered inside submit
    qtbot.waitUntil(lambda: not runner.busy)
    assert results == [] and isinstance(errors[0], ValueError)


def test_a_result_for_a_deleted_pane_is_not_delivered(qtbot: Any) -> None:
    # Seen in the suite: a page of memories arrived after its browser was deleted, and the
    # callback raised "Internal C++ object (QTableView) already deleted" in the event loop.
    from functools import partial

    import shiboken6
    from PySide6.QtWidgets import QTableView

    runner = TaskRunner()
    gate = threading.Event()
    delivered: list[object] = []

    class Pane(QTableView):
        def shown(self, page: object) -> None:
            delivered.append(page)
            self.horizontalHeader()

    pane = Pane()
    runner.submit(gate.wait, 5, on_result=pane.shown)
    runner.submit(gate.wait, 5, on_result=partial(pane.shown), on_error=lambda e: None)
    runner.submit(gate.wait, 5, on_result=lambda r: delivered.append("alive"))
    shiboken6.delete(pane)
    gate.set()
    qtbot.waitUntil(lambda: not runner.busy)
    assert delivered == ["alive"]
