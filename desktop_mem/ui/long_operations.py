"""Long operations on the writer with a cancellable progress bar in the status bar: the first
index of a store, a rebuild of the index, an import and a sync.

Worker functions here take the `progress` callback the panel's reporter provides; their results
come back on the GUI thread like any other task. Each operation also says in one line what it did.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer

from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.progress import ProgressPanel, ProgressReporter

if TYPE_CHECKING:
    from desktop_mem.engine.api import ImportResult, MemoryEngine, SyncResult, TidyReport

REVEAL_MS = 400  # a quick operation never flashes a bar


def import_file(engine: MemoryEngine, path: Path, progress: Callable[[int, int], None]) -> ImportResult:
    """Run on the writer: plan and apply an import (all or nothing)."""
    plan = engine.transfer.plan_import(path)
    # one commit (the CLI commits every 5,000): Cancel in the window still means nothing was imported
    return engine.transfer.apply_import(plan, progress, batch_size=max(1, len(plan.entries)))


def describe_import(result: ImportResult) -> str:
    """One line for the status bar."""
    if result.commit is None:
        return f"Nothing new to import ({result.already_present:,} already in the store)."
    skipped = f", {len(result.skipped):,} skipped" if result.skipped else ""
    return (f"Imported {result.facts:,} facts and {result.turns:,} turns in {result.conversations:,} "
            f"conversation(s){skipped}.")


def rebuild_index(engine: MemoryEngine, progress: Callable[[int, int], None]) -> int:
    """Run on the writer: drop and rebuild the derived indexes; returns how many were indexed."""
    return engine.reindex(progress).embedded


def tidy_memory(engine: MemoryEngine, progress: Callable[[int, int, str], None]) -> TidyReport:
    """Run on the writer: propose a clean-up (review proposals, one commit); Cancel proposes nothing.
    Its steps are named ("reading later messages, 2 of 4")."""
    return engine.tidy_up(progress=lambda step, done, total: progress(done, total, step))


def describe_tidy(report: TidyReport) -> str:
    """One line for the status bar."""
    counts = ", ".join(f"{n} {kind}" for kind, n in report.counts().items() if n)
    note = f" ({report.model_error})" if report.model_error else ""
    if not report.proposals:
        again = f"; {report.skipped_rejected} you rejected before" if report.skipped_rejected else ""
        return f"Tidy-up found nothing to propose{again}.{note}"
    return f"Tidy-up: {len(report.proposals)} proposals wait in Review ({counts}).{note}"


def sync_store(engine: MemoryEngine, progress: Callable[[int, int], None]) -> SyncResult:
    """Run on the writer: git sync has no steps to count, so the bar stays busy."""
    del progress
    return engine.transfer.sync()


class LongOperations(QObject):
    """Runs operations on the writer, each shown in the progress panel until it ends."""

    def __init__(self, runner: TaskRunner, panel: ProgressPanel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._panel = panel

    def run(self, title: str, fn: Callable[..., Any], *args: Any, cancellable: bool = True,
            on_result: Callable[[Any], None], on_error: Callable[[BaseException], None]) -> ProgressReporter:
        """Start `fn(*args, progress=reporter)` on the writer and show it."""
        reporter = ProgressReporter(title, cancellable, self)
        QTimer.singleShot(REVEAL_MS, lambda: self._reveal(reporter))

        def done(result: Any) -> None:
            self._panel.finish(reporter)
            on_result(result)

        def failed(error: BaseException) -> None:
            self._panel.finish(reporter)
            on_error(error)

        self._runner.submit_write(fn, *args, progress=reporter, quiet=True, on_result=done, on_error=failed)
        return reporter

    def _reveal(self, reporter: ProgressReporter) -> None:
        if not reporter.finished:
            self._panel.start(reporter)
