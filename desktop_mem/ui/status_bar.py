"""The status bar: LLM endpoint reachable (or why not), fact count, index, watcher, last commit,
and "Updating memory… N s" with Cancel while a reply's write path runs.

Every value is computed off the GUI thread (the LLM probe is a network call) and refreshed after
store changes and every minute for the endpoint. The last commit is read once when the store
opens and then taken from each StoreChange, so the status bar adds no git reads of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer, Signal, Slot
from PySide6.QtWidgets import QLabel, QPushButton, QStatusBar, QWidget

from desktop_mem.ui.memories.memory_model import when
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.widgets.flow_layout import ElidedLabel
from desktop_mem.ui.widgets.progress import ProgressPanel

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine
    from desktop_mem.engine.models import StoreChange

LLM_RECHECK_MS = 60_000
LLM_FIRST_CHECK_MS = 5_000


@dataclass(frozen=True)
class StoreStatus:
    """Counts read in a worker: facts apart from chat messages and summaries."""

    facts: int
    problems: int
    turns: int = 0
    summaries: int = 0
    versioning: str | None = None  # why git cannot commit (issue #34): said in red, never silent

    def line(self) -> str:
        """'12 facts' (the messages and summaries are in the tooltip)."""
        problems = f" · {self.problems} problem file(s)" if self.problems else ""
        return f"{self.facts:,} fact{'' if self.facts == 1 else 's'}{problems}"

    def breakdown(self) -> str:
        """Every kind of stored file, counted."""
        return (f"{self.facts:,} facts remembered, {self.turns:,} chat messages, "
                f"{self.summaries:,} conversation summaries")


def read_status(engine: MemoryEngine) -> StoreStatus:
    """Run in a worker."""
    listed = engine.list_memories()
    return StoreStatus(sum(m.is_fact for m in listed), len(engine.problems()),
                       sum(m.is_turn for m in listed), sum(m.is_summary for m in listed),
                       engine.versioning_problem())


def last_commit_line(engine: MemoryEngine) -> str:
    """Run on the writer when the store opens: the newest commit as one line.

    The raw log, not the classified history: classifying an import of 10,000 files reads every
    blob (seconds at start-up, measured with py-spy) to show one subject.
    """
    newest = engine.newest_commit()
    return f"{newest.subject} ({when(newest.committed_at)})" if newest is not None else "no commits yet"


class StatusBar(QStatusBar):
    """Permanent labels for the window's health; set_engine() starts the checks."""

    cancel_memory_update_requested = Signal()

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = runner
        self._engine: MemoryEngine | None = None
        self._last_failure = ""  # why the last reply failed, kept in the LLM label's tooltip
        self._llm_checked = False
        # Probes are numbered: one sent before a reply started streaming must not, when it fails
        # late, paint "unreachable" over a server that is answering right now.
        self._llm_probe = 0
        self._llm_answered_at = 0
        self._streaming = False  # a reply streams: the endpoint is known to work, do not probe it
        self.progress = ProgressPanel(self)  # long work: indexing, import, sync (cancellable)
        self.saving_label = QLabel(self)  # pending writes: every save is visibly under way
        self.saving_label.hide()
        self.memory_label = QLabel(self)  # a reply's write path: "Updating memory… 12 s"
        self.memory_label.setObjectName("memoryActivityLabel")
        self.memory_label.hide()
        self.memory_cancel = QPushButton("Cancel", self)
        self.memory_cancel.setToolTip("Stop updating memory from the last reply(s)")
        self.memory_cancel.setFlat(True)
        self.memory_cancel.hide()
        self.memory_cancel.clicked.connect(self.cancel_memory_update_requested)
        self.llm_label = QLabel("LLM: not checked", self)
        self.count_label = QLabel(self)
        self.index_label = QLabel(self)
        self.watcher_label = QLabel(self)
        self.commit_label = ElidedLabel("", self)  # a long subject must not widen the window
        self.commit_label.setObjectName("mutedLabel")
        for label in (self.memory_label, self.memory_cancel, self.saving_label, self.llm_label,
                      self.count_label, self.index_label, self.watcher_label):
            self.addPermanentWidget(label)
        self.addWidget(self.commit_label, 1)
        self.addWidget(self.progress)
        self._llm_timer = QTimer(self)
        self._llm_timer.setInterval(LLM_RECHECK_MS)
        self._llm_timer.timeout.connect(self.check_llm)
        runner.writes_pending.connect(self._on_runner_writes_pending)

    def set_engine(self, engine: MemoryEngine | None) -> None:
        """Follow this engine (None while the store is closed or loading)."""
        self._engine = engine
        self._llm_checked = False
        self._streaming = False
        if engine is None:
            self._llm_timer.stop()
            self.set_memory_activity("")
            for label in (self.count_label, self.index_label, self.watcher_label, self.commit_label):
                label.clear()
            return
        self.refresh()
        # The first probe imports openai (about a second of CPU): it waits until the window lists
        # the store (the window calls check_llm then), or at most LLM_FIRST_CHECK_MS.
        QTimer.singleShot(LLM_FIRST_CHECK_MS, self._first_llm_check)
        self._llm_timer.start()

    @Slot()
    def refresh(self) -> None:
        """Re-read counts and the last commit."""
        if self._engine is not None:
            self._runner.submit(read_status, self._engine, key="status", on_result=self._on_status)

    @Slot()
    def _first_llm_check(self) -> None:
        if not self._llm_checked:
            self.check_llm()

    @Slot()
    def check_llm(self) -> None:
        """Probe the chat endpoint (a network call, so in a worker)."""
        if self._engine is not None and not self._streaming:
            # (A one-request-at-a-time local server would time the probe out behind the reply.)
            if not self._llm_checked:  # a busy or slow server can take its whole timeout
                self.llm_label.setText("LLM: checking…")
                self.llm_label.setProperty("state", "")  # neither red nor green until it answers
                self._repolish()
            self._llm_checked = True
            self._llm_probe += 1
            probe = self._llm_probe
            self._runner.submit(self._engine.llm_check, key="llm-check",
                                on_result=self._on_llm_ok,
                                on_error=lambda error: self._on_llm_failed(error, probe))

    @Slot()
    def on_llm_answered(self) -> None:
        """A reply is streaming: the endpoint works, whatever an earlier probe said."""
        self._llm_answered_at = self._llm_probe
        self._streaming = True
        self._last_failure = ""
        self._on_llm_ok("The chat model is answering.")

    @Slot()
    def on_reply_ended(self) -> None:
        """The reply finished or was stopped: the minute's probes resume."""
        self._streaming = False

    def set_memory_activity(self, text: str, cancellable: bool = False) -> None:
        """'Updating memory… 12 s' while write paths run ('' hides it), with Cancel if possible."""
        self.memory_label.setText(text)
        self.memory_label.setVisible(bool(text))
        self.memory_cancel.setVisible(bool(text) and cancellable)

    def set_last_commit(self, text: str) -> None:
        """The newest change of the store, one line."""
        self.commit_label.setText(f"Last change: {text}")
        if self.commit_label.property("state") == "bad":  # a commit worked again
            self.commit_label.setProperty("state", "")
            self.commit_label.setToolTip("")
            self._repolish(self.commit_label)

    def on_store_changed(self, change: StoreChange) -> None:
        """A change was committed: count again and show it as the last change (or, in red, that
        git could not commit it)."""
        if change.commit_error:
            self.show_versioning_problem(change.commit_error)
        elif change.commit:
            ids = f" {len(change.memory_ids)} memor{'y' if len(change.memory_ids) == 1 else 'ies'}" \
                if change.memory_ids else ""
            self.set_last_commit(f"{change.operation}{ids} · {change.commit[:8]} "
                                 f"({when(datetime.now(UTC))})")
        self.refresh()

    def set_index_state(self, text: str) -> None:
        """Indexing progress or readiness."""
        self.index_label.setText(text)

    def set_watcher(self, on: bool, reason: str = "") -> None:
        """Whether outside edits are picked up."""
        self.watcher_label.setText("Watcher on" if on else "Watcher off")
        self.watcher_label.setToolTip(reason or ("Edits made outside the app are picked up" if on
                                                 else "Edits made outside the app are not picked up"))

    def show_llm_problem(self, message: str) -> None:
        """A reply failed: probe the server now, so the label says its real state.

        A reply cut short by a server that is up must not read "unreachable".
        """
        self._last_failure = message
        self.check_llm()

    @Slot(int)
    def _on_runner_writes_pending(self, count: int) -> None:
        self.saving_label.setText("Saving…" if count == 1 else f"Saving… ({count} changes)")
        self.saving_label.setVisible(count > 0)

    def _on_status(self, status: StoreStatus) -> None:
        self.count_label.setText(status.line())
        self.count_label.setToolTip(status.breakdown())
        if status.versioning:
            self.show_versioning_problem(status.versioning)

    def show_versioning_problem(self, message: str) -> None:
        """Git cannot commit: the changes are saved in the files but not versioned. Said in red
        until a commit works again."""
        self.commit_label.setText(f"Not versioned: {message}")
        self.commit_label.setToolTip(message)
        self.commit_label.setProperty("state", "bad")
        self._repolish(self.commit_label)

    def _on_llm_ok(self, message: str) -> None:
        self.llm_label.setText("LLM: connected")
        self.llm_label.setProperty("state", "good")
        last = f"\nThe last reply failed: {self._last_failure}" if self._last_failure else ""
        self.llm_label.setToolTip(message + last)
        self._repolish()

    def _on_llm_failed(self, error: BaseException, probe: int | None = None) -> None:
        if probe is not None and probe <= self._llm_answered_at:
            return  # sent before a reply streamed: out of date
        # An LLMError carries .kind and a user-facing .message (imported lazily: openai is slow to load).
        message = str(getattr(error, "message", error))
        kind = str(getattr(error, "kind", "error"))
        self.llm_label.setText("LLM: unreachable" if kind in ("unreachable", "timeout") else f"LLM: {kind}")
        self.llm_label.setProperty("state", "bad")
        self.llm_label.setToolTip(message)
        self._repolish()

    def _repolish(self, label: QLabel | None = None) -> None:
        label = label or self.llm_label
        label.style().unpolish(label)
        label.style().polish(label)
