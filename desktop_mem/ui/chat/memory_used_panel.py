"""The expandable "memory used" panel under a reply: the summary and each injected memory, scored.

It explains a reply: which rolling summary and which memories the read path put in front of the
model, with every stage's score (keyword, dense, rerank, recency, final, MMR rank), and whose
memory each one is (the user's own, this conversation's, another conversation's). Live replies
show the full breakdown; an older reply shows the record kept with its turn (turn_memory.py), so
a user can check later what an old answer used. Clicking a memory opens it in the editor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import QLabel, QPushButton, QToolButton, QVBoxLayout, QWidget

from desktop_mem.engine.api import MemoryUsed, ScoreBreakdown, TurnMemory, learned_in, scope_of, updated_line
from desktop_mem.engine.models import GLOBAL_CONVERSATION
from desktop_mem.ui.memories.memory_model import first_line

SCOPE_NAMES = {"user": "yours", "conversation": "this chat", "other": "another chat"}
USER_FACTS = "your facts"


def describe_scores(scores: ScoreBreakdown) -> str:
    """One line of the score breakdown; stages that did not run show as a dash."""

    def fmt(value: float | None) -> str:
        return "—" if value is None else f"{value:.2f}"

    rank = f"#{scores.mmr_rank}" if scores.mmr_rank is not None else "—"
    return (f"keyword {fmt(scores.keyword)} · dense {fmt(scores.dense)} · rerank {fmt(scores.rerank)}"
            f" · recency {fmt(scores.recency)} · final {fmt(scores.final)} · MMR rank {rank}")


def where_from(scope: str, conversation_id: str, learned: str | None,
               titles: dict[str, str] | None = None) -> str:
    """Whose memory it is, in words: 'yours (learned in “Trip”)', 'this chat', 'from “Trip”'
    (conversations by title when known)."""
    titles = titles or {}
    if scope == "other":
        return f"from “{titles.get(conversation_id, conversation_id)}”"
    name = SCOPE_NAMES.get(scope, scope)
    return f"{name} (learned in “{titles.get(learned, learned)}”)" if learned else name


@dataclass(frozen=True)
class UsedRow:
    """One memory in the panel."""

    id: str
    text: str
    origin: str  # where_from(...)
    detail: str  # scores, one line


def headline(used: MemoryUsed) -> str:
    """The collapsed panel's one-line summary of what was used."""
    parts = []
    if used.summary is not None:
        parts.append("summary")
    count = len(used.memories)
    parts.append(f"{count} {'memory' if count == 1 else 'memories'}")
    parts += _beside(c for c, _text in used.cross_session)
    tokens = f" · context {used.tokens_before}→{used.tokens_after} tokens" if used.tokens_freed else ""
    return f"Memory used: {' + '.join(parts)} · strategy {used.strategy}{tokens}"


def record_headline(record: TurnMemory) -> str:
    """The collapsed panel's line for a stored record (an older reply)."""
    parts = []
    if record.summary_id:
        parts.append("summary (out of date, not used)" if record.summary_stale else "summary")
    count = len(record.used)
    parts.append(f"{count} {'memory' if count == 1 else 'memories'}")
    parts += _beside(record.other_conversations)
    strategy = f" · strategy {record.strategy}" if record.strategy else ""
    return f"Memory used: {' + '.join(parts)}{strategy}"


def _beside(conversations: Iterable[str]) -> list[str]:
    """What the system prompt held besides the summary and the memories: the user's facts (the
    "global" scope, read in every conversation: not another conversation) and other
    conversations' summaries."""
    names = list(conversations)
    others = sum(c != GLOBAL_CONVERSATION for c in names)
    return ([USER_FACTS] if GLOBAL_CONVERSATION in names else []) + (
        [f"{others} other {'conversation' if others == 1 else 'conversations'}"] if others else [])


def describe_record_update(record: TurnMemory) -> str:
    """The "Memory updated" line of a stored record ('' when the write path recorded nothing)."""
    if not record.updated:
        return ""
    parts: list[str] = []
    if record.added:
        parts.append("added " + "; ".join(f"“{first_line(m.text, 48)}”" for m in record.added))
    for m in record.replaced:
        parts.append(f"updated “{first_line(m.old_text or '', 48)}” → “{first_line(m.text, 48)}”")
    if record.deleted:
        parts.append("deleted " + "; ".join(f"“{first_line(m.text, 48)}”" for m in record.deleted))
    if record.summary_changed:
        parts.append("summary updated")
    return updated_line(parts, record.waiting)


class MemoryUsedPanel(QWidget):
    """Collapsed to one line; expands to list the summary and the memories, with their origin."""

    memory_requested = Signal(str)  # memory id

    def __init__(self, used: MemoryUsed | None = None, parent: QWidget | None = None, *,
                 record: TurnMemory | None = None, titles: dict[str, str] | None = None) -> None:
        super().__init__(parent)
        self._used = used
        self.record = record
        self._titles = titles or {}
        self.memory_buttons: list[QPushButton] = []
        self.origin_labels: list[QLabel] = []
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
        self.body = QWidget(self)
        self._body = QVBoxLayout(self.body)
        self._body.setContentsMargins(18, 0, 0, 4)
        self._body.setSpacing(2)
        if self._used is not None:
            self._fill_live(self._used)
        elif self.record is not None:
            self._fill_record(self.record)
        self.body.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.body)

    def _fill_live(self, used: MemoryUsed) -> None:
        self.toggle.setText(headline(used))
        if used.summary is not None:
            summary = used.summary
            self._add_link(summary.id, f"Summary: {first_line(summary.text, 140)}", summary.text)
        for result in used.memories:
            memory = result.memory
            origin = where_from(scope_of(memory, used.conversation_id), memory.conversation_id,
                                learned_in(memory), self._titles)
            self._add_row(UsedRow(memory.id, memory.text, origin, describe_scores(result.scores)),
                          f"{memory.text}\n\n{memory.conversation_id} · {memory.path}")
        if used.in_transcript and used.memories:
            count = used.in_transcript
            self.transcript_note = self._add_note(
                f"{count} more matching {'message is' if count == 1 else 'messages are'} in this "
                "conversation already, so not repeated here (the MMR ranks skip "
                f"{'it' if count == 1 else 'them'}).")
        for conversation, text in used.cross_session:
            if conversation == GLOBAL_CONVERSATION:
                facts = [line.removeprefix("- ") for line in text.splitlines() if line.strip()]
                listed = {r.memory.text.strip() for r in used.memories}
                rest = [f for f in facts if f.strip() not in listed]  # each fact shown once (issue #39)
                shown = "; ".join(first_line(f, 60) for f in rest[:3]) + ("; …" if len(rest) > 3 else "")
                label = (f"Your facts, read in every conversation ({len(facts)}): "
                         + (f"also {shown}" if rest else "those listed above"))
            else:
                label = f"From “{self._titles.get(conversation, conversation)}”: {first_line(text, 140)}"
            other = QLabel(label, self.body)
            other.setObjectName("mutedLabel")
            other.setWordWrap(True)
            other.setToolTip(text)
            self._body.addWidget(other)
        if used.summary is None and not used.memories and not used.cross_session:
            self._body.addWidget(QLabel("No stored memory matched this message.", self.body))

    def _fill_record(self, record: TurnMemory) -> None:
        self.toggle.setText(record_headline(record))
        if record.summary_id:
            stale = " (it was out of date, so not used as is)" if record.summary_stale else ""
            self._add_link(record.summary_id, f"The conversation's summary{stale}", "")
        for item in record.used:
            score = f"final score {item.score:.2f}" if item.score is not None else "no score recorded"
            origin = where_from(item.scope, item.conversation_id, item.from_conversation, self._titles)
            self._add_row(UsedRow(item.id, item.text, origin, score), item.text)
        others = [c for c in record.other_conversations if c != GLOBAL_CONVERSATION]
        if GLOBAL_CONVERSATION in record.other_conversations:
            self._add_note("Your facts, read in every conversation, were in the prompt too.")
        if others:
            self._add_note("Summaries of other conversations: "
                           + ", ".join(f"“{self._titles.get(c, c)}”" for c in others))
        if not record.summary_id and not record.used and not record.other_conversations:
            self._body.addWidget(QLabel("No stored memory matched this message.", self.body))
        self._add_note("As recorded with this reply; a memory changed since opens as it is now.")

    def _add_link(self, memory_id: str, text: str, tooltip: str) -> QPushButton:
        button = QPushButton(text, self.body)
        button.setObjectName("memoryLink")
        button.setFlat(True)
        button.setToolTip(tooltip)
        button.clicked.connect(lambda _=False, mid=memory_id: self.memory_requested.emit(mid))
        self._body.addWidget(button)
        return button

    def _add_row(self, row: UsedRow, tooltip: str) -> None:
        self.memory_buttons.append(self._add_link(row.id, first_line(row.text, 140), tooltip))
        detail = QLabel(f"{row.origin} · {row.detail}", self.body)
        detail.setObjectName("scoreLabel")
        self._body.addWidget(detail)
        self.origin_labels.append(detail)

    def _add_note(self, text: str) -> QLabel:
        note = QLabel(text, self.body)
        note.setObjectName("mutedLabel")
        note.setWordWrap(True)
        self._body.addWidget(note)
        return note

    def _connect_signals(self) -> None:
        self.toggle.toggled.connect(self._on_toggle_toggled)

    @property
    def used(self) -> MemoryUsed | None:
        """What this panel shows, for a live reply (None: a stored record)."""
        return self._used

    def expanded(self) -> bool:
        """True when the details are shown."""
        return self.toggle.isChecked()

    @Slot(bool)
    def _on_toggle_toggled(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.body.setVisible(on)
