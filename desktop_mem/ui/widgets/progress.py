"""Long work in the status bar: what runs, how far it is, and Cancel.

The engine's long operations (index sync and rebuild, import) take a `progress(done, total)`
callback and run on the writer thread. A `ProgressReporter` is that callback: it crosses to the
GUI thread through a queued signal, and once Cancel was pressed it raises `Cancelled` inside the
operation. That is safe for each of them: an import is all or nothing (its files are removed
again), and the index is derived (what was not indexed is synced at the next start).
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget


class Cancelled(Exception):  # noqa: N818 - what the user did, not an error
    """The user pressed Cancel; raised inside the operation at its next progress report."""


class ProgressReporter(QObject):
    """A thread-safe `progress(done, total)` for one operation; `progress(done, total, step)`
    also names the step ("reading later messages") when an operation has several."""

    progressed = Signal(int, int, str)  # emitted from the worker; delivered queued on the GUI thread

    def __init__(self, title: str, cancellable: bool, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.title = title
        self.cancellable = cancellable
        self._cancel = threading.Event()
        self.finished = False  # set on the GUI thread when the operation's result arrived

    def __call__(self, done: int, total: int, step: str = "") -> None:
        if self._cancel.is_set():
            raise Cancelled(f"{self.title} was cancelled")
        self.progressed.emit(done, total, step)

    def cancel(self) -> None:
        """Ask the operation to stop at its next report."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        """True once Cancel was pressed."""
        return self._cancel.is_set()


class ProgressPanel(QWidget):
    """The status bar's progress: a label, a bar (busy when the total is unknown) and Cancel."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._reporter: ProgressReporter | None = None
        self.label = QLabel(self)
        self.bar = QProgressBar(self)
        self.bar.setMaximumWidth(180)
        self.bar.setTextVisible(False)
        self.cancel_button = QToolButton(self)
        self.cancel_button.setText("Cancel")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.cancel_button.clicked.connect(self._on_cancel_button_clicked)
        self.hide()

    @property
    def reporter(self) -> ProgressReporter | None:
        """The operation shown."""
        return self._reporter

    def start(self, reporter: ProgressReporter) -> None:
        """Show an operation (busy until its first report)."""
        self._reporter = reporter
        reporter.progressed.connect(self._on_reporter_progressed)
        self.label.setText(f"{reporter.title}…")
        self.bar.setRange(0, 0)
        self.cancel_button.setVisible(reporter.cancellable)
        self.cancel_button.setEnabled(True)
        self.show()

    def finish(self, reporter: ProgressReporter) -> None:
        """The operation ended (done, failed or cancelled)."""
        reporter.finished = True
        if reporter is self._reporter:
            self._reporter = None
            self.hide()

    @Slot(int, int, str)
    def _on_reporter_progressed(self, done: int, total: int, step: str) -> None:
        reporter = self._reporter
        if reporter is None or self.sender() is not reporter:
            return
        where = f"{step}, " if step else ""
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(done)
            self.label.setText(f"{reporter.title}: {where}{done:,} of {total:,}")
        elif step:
            self.label.setText(f"{reporter.title}: {step}…")

    @Slot()
    def _on_cancel_button_clicked(self) -> None:
        if self._reporter is not None:
            self._reporter.cancel()
            self.cancel_button.setEnabled(False)
            self.label.setText(f"{self._reporter.title}: cancelling…")
