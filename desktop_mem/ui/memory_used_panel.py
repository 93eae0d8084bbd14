"""The expandable "memory used" panel under a reply: the summary and each injected memory, scored.

It explains a reply: which rolling summary and which memories the read path put in front of the
model, with every stage's score (keyword, dense, rerank, recency, final, MMR rank). Clicking a
memory asks the window to open it in the editor.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from desktop_mem.engine.api import MemoryUsed, ScoreBreakdown
from desktop_mem.ui.memory_model import first_line


def describe_scores(scores: ScoreBreakdown) -> str:
    """One line of the score breakdown; stages that did not run show as a dash."""

    def fmt(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    rank = f"#{scores.mmr_rank}" if scores.mmr_rank is not None else "—"
    return (f"keyword {fmt(scores.keyword)} · dense {fmt(scores.dense)} · rerank {fmt(scores.rerank)}"
            f" · recency {fmt(scores.recency)} · final {fmt(scores.final)} · MMR rank {rank}")


def headline(used: MemoryUsed) -> str:
    """The collapsed panel's one-line summary of what was used."""
    parts = []
    if used.summary is not None:
        parts.append("summary")
    count = len(used.memories)
    parts.append(f"{count} {'memory' if count == 1 else 'memories'}")
    if used.cross_session:
        parts.append(f"{len(used.cross_session)} other conversation(s)")
    tokens = f" · context {used.tokens_before}→{used.tokens_after} tokens" if used.tokens_freed else ""
    return f"Memory used: {' + '.join(parts)} · strategy {used.strategy}{tokens}"


class MemoryUsedPanel(QWidget):
    """Collapsed to one line; expands to list the summary and the scored memories."""

    memory_requested = Signal(str)  # memory id

    def __init__(self, used: MemoryUsed, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._used = used
        self.memory_buttons: list[QPushButton] = []
        self.transcript_note: QLabel | None = None
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.setObjectName("memoryUsedPanel")
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("memoryUsedToggle")
        self.toggle.setCheckable(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setText(headline(self._used))
        self.body = QWidget(self)
        body = QVBoxLayout(self.body)
        body.setContentsMargins(18, 0, 0, 4)
        body.setSpacing(2)
        used = self._used
        if used.summary is not None:
            summary = QPushButton(f"Summary: {first_line(used.summary.text, 140)}", self.body)
            summary.setObjectName("memoryLink")
            summary.setFlat(True)
            summary.setToolTip(used.summary.text)
            summary.clicked.connect(lambda _=False, mid=used.summary.id: self.memory_requested.emit(mid))
            body.addWidget(summary)
        for result in used.memories:
            button = QPushButton(first_line(result.memory.text, 140), self.body)
            button.setObjectName("memoryLink")
            button.setFlat(True)
            memory = result.memory
            button.setToolTip(f"{memory.text}\n\n{memory.conversation_id} · {memory.path}")
            button.clicked.connect(lambda _=False, mid=result.memory.id: self.memory_requested.emit(mid))
            scores = QLabel(describe_scores(result.scores), self.body)
            scores.setObjectName("scoreLabel")
            body.addWidget(button)
            body.addWidget(scores)
            self.memory_buttons.append(button)
        if used.in_transcript and used.memories:
            count = used.in_transcript
            note = QLabel(f"{count} more matching {'message is' if count == 1 else 'messages are'} in "
                          "this conversation already, so not repeated here (the MMR ranks skip "
                          f"{'it' if count == 1 else 'them'}).", self.body)
            note.setObjectName("mutedLabel")
            note.setWordWrap(True)
            body.addWidget(note)
            self.transcript_note = note
        for conversation, text in used.cross_session:
            other = QLabel(f"From “{conversation}”: {first_line(text, 140)}", self.body)
            other.setObjectName("mutedLabel")
            other.setToolTip(text)
            body.addWidget(other)
        if used.summary is None and not used.memories and not used.cross_session:
            body.addWidget(QLabel("No stored memory matched this message.", self.body))
        self.body.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.body)

    def _connect_signals(self) -> None:
        self.toggle.toggled.connect(self._on_toggle_toggled)

    @property
    def used(self) -> MemoryUsed:
        """What this panel shows."""
        return self._used

    def expanded(self) -> bool:
        """True when the details are shown."""
        return self.toggle.isChecked()

    @Slot(bool)
    def _on_toggle_toggled(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.body.setVisible(on)
