"""Fix a file that failed to parse, in the app: its raw text, the parse error, Save.

A broken file is not a Memory, so the memory editor cannot open it. This dialog shows the file
as raw text with the reason it failed; Save hands the text to the engine, which writes it
atomically and takes it in as an edit (re-read, indexed, one commit), on the writer. If it still
does not parse, the new reason is shown and the text stays for another try.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.models import Problem
from desktop_mem.ui.task_runner import TaskRunner


@dataclass(frozen=True)
class RawFile:
    """A store file's text as it is on disk."""

    path: str
    text: str


def load_raw(engine: MemoryEngine, rel: str) -> RawFile:
    """Run in a worker: the file's bytes as text (undecodable bytes shown, not lost silently)."""
    return RawFile(rel, engine.problem_text(rel))


def save_raw(engine: MemoryEngine, rel: str, text: str) -> Problem | None:
    """Run on the writer: the engine saves the text and takes it in; the problem left, if any."""
    return engine.save_problem_file(rel, text)


class ProblemEditor(QDialog):
    """A broken file as raw text, its parse error, and Save."""

    fixed = Signal(str)  # the path now parses

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, problem: Problem,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._problem = problem
        self._setup_ui()
        self._connect_signals()
        self._runner.submit(load_raw, engine, problem.path, key=f"problem-{problem.path}",
                            on_result=self._on_loaded, on_error=self._on_failed)

    def _setup_ui(self) -> None:
        self.setWindowTitle(f"Fix {self._problem.path}")
        self.resize(720, 480)
        self.reason_label = QLabel(self._reason_text(self._problem), self)
        self.reason_label.setObjectName("errorLabel")
        self.reason_label.setWordWrap(True)
        self.reason_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text_edit = QPlainTextEdit(self)
        self.text_edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text_edit.setPlaceholderText("Loading…")
        self.text_edit.setEnabled(False)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.save_button = QPushButton("Save", self)
        self.save_button.setEnabled(False)
        self.buttons.addButton(self.save_button, QDialogButtonBox.ButtonRole.ApplyRole)
        layout = QVBoxLayout(self)
        layout.addWidget(self.reason_label)
        layout.addWidget(self.text_edit, 1)
        layout.addWidget(self.buttons)

    def _connect_signals(self) -> None:
        self.buttons.rejected.connect(self.reject)
        self.save_button.clicked.connect(self.save)

    @staticmethod
    def _reason_text(problem: Problem) -> str:
        return f"This file could not be read: {problem.reason}\nFix it below and Save."

    @Slot()
    def save(self) -> None:
        """Write the text on the writer; the engine re-reads, indexes and commits it."""
        if self._engine.read_only:
            return
        self.save_button.setEnabled(False)
        self.save_button.setText("Saving…")
        self._runner.submit_write(save_raw, self._engine, self._problem.path, self.text_edit.toPlainText(),
                                  on_result=self._on_saved, on_error=self._on_failed)

    def _on_loaded(self, raw: RawFile) -> None:
        self.text_edit.setPlainText(raw.text)
        self.text_edit.setEnabled(True)
        self.save_button.setEnabled(not self._engine.read_only)

    def _on_saved(self, problem: Problem | None) -> None:
        self.save_button.setText("Save")
        self.save_button.setEnabled(True)
        if problem is None:
            self.fixed.emit(self._problem.path)
            self.accept()
            return
        self._problem = problem
        self.reason_label.setText(self._reason_text(problem))

    def _on_failed(self, error: BaseException) -> None:
        self.save_button.setText("Save")
        self.save_button.setEnabled(not self._engine.read_only)
        self.reason_label.setText(f"{self._reason_text(self._problem)}\n{error}")
