"""The question the window asks when a file edited outside the app holds a likely secret.

Under `security.secrets: ask` the engine holds such a file back (uncommitted, unindexed) and
announces it (`SecretHeldBack`: the path, the kinds found and a redacted preview, never the
secret). This bar asks "Redact" or "Keep as written" (or opens the file), runs the answer on the
writer thread and says what happened. Files held back while the app was closed are asked about
when the store opens; several are asked about one after another.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from desktop_mem.engine.models import HeldBackChoice, Operation, SecretHeldBack

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine
    from desktop_mem.engine.models import StoreChange
    from desktop_mem.ui.task_runner import TaskRunner

RESULT_MS = 12_000  # how long the last answer's result stays once nothing is left to ask
_KIND_NAMES = {"openai_key": "OpenAI API key", "anthropic_key": "Anthropic API key",
               "aws_access_key": "AWS access key", "github_token": "GitHub token",
               "private_key": "private key", "jwt": "JSON web token",
               "password_or_key": "password or key", "url_credentials": "password in a URL"}
_DOING = {HeldBackChoice.REDACT: "Redacting the likely secret in", HeldBackChoice.KEEP: "Committing"}
_DONE = {HeldBackChoice.REDACT: "Redacted the likely secret in {name} and recorded the edit.",
         HeldBackChoice.KEEP: "Recorded {name} as written; this secret will not be asked about again."}


def kinds_text(kinds: tuple[str, ...]) -> str:
    """"OpenAI API key and AWS access key"."""
    names = [_KIND_NAMES.get(k, k.replace("_", " ")) for k in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def question_text(held: SecretHeldBack, more: int) -> str:
    """What the bar asks about one held-back file (never the secret: kinds and a redacted preview)."""
    later = f" ({more} more file{'s' if more > 1 else ''} after this one)" if more else ""
    return (f"A memory edited outside the app holds a likely {kinds_text(held.kinds)}: “{held.preview}” "
            f"({Path(held.path).name}). It is not saved to history until you choose.{later}")


def _open_with_system(path: Path) -> None:
    QDesktopServices.openUrl(QUrl.fromLocalFile(str(path)))


class HeldBackNotice(QFrame):
    """"A memory … holds a likely OpenAI API key … [Redact] [Keep as written] [Open] [Later]"."""

    resolved = Signal(str)  # the result shown after an answer went through
    resolve_failed = Signal(str)  # why an answer did not go through (the question stays)

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None, *,
                 open_file: Callable[[Path], None] = _open_with_system) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._open_file = open_file
        self._queue: dict[str, SecretHeldBack] = {}  # by path, oldest question first
        self._pending: SecretHeldBack | None = None
        self._setup_ui()
        self._connect_signals()
        self.hide()

    def _setup_ui(self) -> None:
        self.setObjectName("heldBackNotice")
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.result_label = QLabel(self)
        self.result_label.setWordWrap(True)
        self.result_label.hide()
        self.redact_button = QPushButton("Redact", self)
        self.redact_button.setToolTip("Replace the likely secret in the file by [redacted:<kind>], then save")
        self.keep_button = QPushButton("Keep as written", self)
        self.keep_button.setToolTip("Save the file as it is, secret included, to the store's git history")
        self.open_button = QPushButton("Open", self)
        self.open_button.setToolTip("Open the file in your editor")
        self.later_button = QToolButton(self)
        self.later_button.setText("Later")
        self.later_button.setToolTip("Hide; `desktop-mem secrets` lists the held-back files")
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(RESULT_MS)
        texts = QVBoxLayout()
        texts.addWidget(self.label)
        texts.addWidget(self.result_label)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 4, 6, 4)
        layout.addLayout(texts, 1)
        for button in (self.redact_button, self.keep_button, self.open_button, self.later_button):
            layout.addWidget(button)

    def _connect_signals(self) -> None:
        self.redact_button.clicked.connect(self._on_redact_button_clicked)
        self.keep_button.clicked.connect(self._on_keep_button_clicked)
        self.open_button.clicked.connect(self._on_open_button_clicked)
        self.later_button.clicked.connect(self.hide)
        self._timer.timeout.connect(self._on_timer_timeout)

    @property
    def current(self) -> SecretHeldBack | None:
        """The held-back file the bar asks about now."""
        return next(iter(self._queue.values()), None)

    # ------------------------------------------------------------------ events

    @Slot(object)
    def on_held_back(self, held: SecretHeldBack) -> None:
        """Ask about a newly held-back file (a newer version of a file replaces its question)."""
        if self._pending is not None and self._pending.path == held.path:
            self._pending = None  # the file changed under the answer: ask again about this version
        self._queue[held.path] = held
        self._show_question()

    @Slot(object)
    def on_store_changed(self, change: StoreChange) -> None:
        """A file committed some other way (edited again without the secret, removed) is not asked
        about any more."""
        if change.operation == Operation.PROBLEM:
            return
        done = set(change.paths) | set(change.memory_ids)
        gone = [p for p, h in self._queue.items()
                if (p in done or h.memory_id in done) and h is not self._pending]
        for path in gone:
            del self._queue[path]
        if not gone or self._pending is not None:
            return
        if self._queue:
            self._show_question()
        else:
            self.hide()

    # ------------------------------------------------------------------ answers

    @Slot()
    def _on_redact_button_clicked(self) -> None:
        self._answer(HeldBackChoice.REDACT)

    @Slot()
    def _on_keep_button_clicked(self) -> None:
        self._answer(HeldBackChoice.KEEP)

    @Slot()
    def _on_open_button_clicked(self) -> None:
        held = self.current
        if held is not None:
            self._open_file(self._engine.root / held.path)

    def _answer(self, choice: HeldBackChoice) -> None:
        held = self.current
        if held is None or self._pending is not None:
            return
        self._pending = held
        self._set_buttons_enabled(False)
        self.result_label.setText(f"{_DOING[choice]} {Path(held.path).name}…")
        self.result_label.show()
        self._runner.submit_write(
            self._engine.resolve_held_back, held.path, choice, expected_hash=held.content_hash,
            on_result=lambda _change: self._on_answered(held, choice),
            on_error=lambda error: self._on_answer_failed(held, choice, error))

    def _on_answered(self, held: SecretHeldBack, choice: HeldBackChoice) -> None:
        if self._pending is held:
            self._pending = None
        if self._queue.get(held.path) is held:
            del self._queue[held.path]
        message = _DONE[choice].format(name=Path(held.path).name)
        self._show_question(message)
        self.resolved.emit(message)

    def _on_answer_failed(self, held: SecretHeldBack, choice: HeldBackChoice, error: BaseException) -> None:
        if self._pending is held:
            self._pending = None
        verb = "redact" if choice is HeldBackChoice.REDACT else "keep"
        message = f"Could not {verb} {Path(held.path).name}: {error}"
        self._show_question(message)
        self.resolve_failed.emit(message)

    # ------------------------------------------------------------------ view

    def _show_question(self, result: str = "") -> None:
        held = self.current
        if result:
            self.result_label.setText(result)
        self.result_label.setVisible(bool(result) and held is not None)
        self.later_button.setText("Close" if held is None else "Later")
        if held is None:
            self.label.setText(result)
            self._set_buttons_visible(False)
            self._timer.start()
        else:
            self._timer.stop()
            self.label.setText(question_text(held, len(self._queue) - 1))
            self.label.setToolTip(held.path)
            self._set_buttons_visible(True)
            self._set_buttons_enabled(self._pending is None)
        self.show()

    def _set_buttons_visible(self, visible: bool) -> None:
        for button in (self.redact_button, self.keep_button, self.open_button):
            button.setVisible(visible)

    def _set_buttons_enabled(self, enabled: bool) -> None:
        for button in (self.redact_button, self.keep_button, self.open_button):
            button.setEnabled(enabled)

    @Slot()
    def _on_timer_timeout(self) -> None:
        if self.current is None:
            self.hide()
