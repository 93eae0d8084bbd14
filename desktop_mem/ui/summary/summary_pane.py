"""The summary viewer: a conversation's rolling summary, its earlier versions and what changed.

The versions come from git (every rewrite of summary.md is a commit); the diff between two
chosen versions is highlighted word by word. Everything is read in a worker.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from desktop_mem.engine.api import MemoryEngine, word_diff
from desktop_mem.engine.models import GLOBAL_CONVERSATION, EngineError, Memory, StoreChange
from desktop_mem.ui.memories.memory_model import when
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.timeline.diff_view import inline_html
from desktop_mem.ui.widgets.flow_layout import ElidedLabel
from desktop_mem.ui.widgets.markdown_view import MarkdownView

MAX_VERSIONS = 50


@dataclass(frozen=True)
class SummaryVersion:
    """The summary's text as one commit left it."""

    sha: str
    subject: str
    when: str
    text: str
    summarized_count: int | None


@dataclass(frozen=True)
class SummaryState:
    """The current summary (None if the conversation has none yet) and its versions, newest first."""

    conversation_id: str
    summary: Memory | None
    versions: tuple[SummaryVersion, ...]
    title: str = ""  # the conversation's title (its id when none was chosen)
    stale: bool = False  # a fact it speaks for changed since it was written
    gone: tuple[str, ...] = ()  # forgotten or replaced facts it still states


def load_summary(engine: MemoryEngine, conversation_id: str) -> SummaryState:
    """Run in a worker: the summary and the text of each of its versions in git."""
    summary = engine.summary(conversation_id)
    title = engine.conversation_title(conversation_id)
    if summary is None:
        return SummaryState(conversation_id, None, (), title)
    stale, gone = engine.summary_out_of_date(conversation_id)
    versions: list[SummaryVersion] = []
    for commit in engine.memory_history(summary.id, limit=MAX_VERSIONS):
        try:
            old = engine.version_at(summary, commit.sha)
        except (EngineError, ValueError):
            continue  # a commit that only moved or removed the file has no text to show
        if versions and versions[-1].text == old.text:
            continue
        versions.append(SummaryVersion(commit.sha, commit.subject, when(commit.committed_at), old.text,
                                       old.summarized_count))
    return SummaryState(conversation_id, summary, tuple(versions), title, stale, tuple(gone))


def out_of_date_note(state: SummaryState) -> str:
    """What the Summary pane says above a summary that no longer holds ('' when it does)."""
    if state.gone:
        said = "; ".join(f"“{t}”" for t in state.gone[:3]) + (" …" if len(state.gone) > 3 else "")
        return (f"Out of date: it still states {said}, forgotten or replaced since. The model is sent "
                "the current facts instead; the next chat turn rewrites it.")
    if state.stale:
        return ("Out of date: a fact it speaks for changed since it was written. The model is sent the "
                "current facts instead; the next chat turn rewrites it.")
    return ""


def word_diff_html(old: str, new: str) -> str:
    """HTML of `new` with words removed since `old` struck through and added words highlighted."""
    return inline_html(word_diff(old, new))


class SummaryPane(QWidget):
    """Per conversation: the summary rendered, its count and date, versions and their diff."""

    loaded = Signal(object)  # SummaryState

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._engine = engine
        self._runner = runner
        self._conversation: str | None = None
        self._state: SummaryState | None = None
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.title_label = ElidedLabel("", self)
        self.title_label.setObjectName("paneTitle")
        self.meta_label = QLabel(self)
        self.meta_label.setObjectName("mutedLabel")
        self.meta_label.setWordWrap(True)
        self.stale_banner = QLabel(self)
        self.stale_banner.setObjectName("warningBanner")
        self.stale_banner.setWordWrap(True)
        self.stale_banner.setContentsMargins(8, 4, 8, 4)
        self.stale_banner.hide()
        self.summary_view = MarkdownView(self)
        self.from_combo = QComboBox(self)
        self.to_combo = QComboBox(self)
        self.diff_view = MarkdownView(self)
        compare = QHBoxLayout()
        compare.addWidget(QLabel("Compare", self))
        compare.addWidget(self.from_combo, 1)
        compare.addWidget(QLabel("with", self))
        compare.addWidget(self.to_combo, 1)
        right = QWidget(self)
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(ElidedLabel("Earlier versions (from git)", right))
        right_layout.addLayout(compare)
        right_layout.addWidget(self.diff_view, 1)
        left = QWidget(self)
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addWidget(self.title_label)
        left_layout.addWidget(self.meta_label)
        left_layout.addWidget(self.stale_banner)
        left_layout.addWidget(self.summary_view, 1)
        splitter = QSplitter(self)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setSizes([460, 440])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(splitter)

    def _connect_signals(self) -> None:
        self.from_combo.currentIndexChanged.connect(self._on_versions_chosen)
        self.to_combo.currentIndexChanged.connect(self._on_versions_chosen)

    @property
    def state(self) -> SummaryState | None:
        """What is shown."""
        return self._state

    def set_conversation(self, conversation_id: str | None) -> None:
        """Show this conversation's summary."""
        self._conversation = conversation_id
        self.reload()

    def reload(self) -> None:
        """Read the summary and its versions again."""
        if self._conversation is None:
            return
        self._runner.submit(load_summary, self._engine, self._conversation, key="summary", serial=True,
                            on_result=self._on_loaded, on_error=self._on_failed)

    def on_store_changed(self, change: StoreChange) -> None:
        """Reload when the shown conversation's summary may have changed."""
        if self._conversation is not None and (
                change.conversation_id in (None, self._conversation, GLOBAL_CONVERSATION)
                or any("/summaries/" in p for p in change.paths)):
            self.reload()

    def _on_loaded(self, state: SummaryState) -> None:
        if state.conversation_id != self._conversation:
            return
        self._state = state
        summary = state.summary
        self.title_label.setText(f"Summary of “{state.title or state.conversation_id}”")
        note = out_of_date_note(state)
        self.stale_banner.setText(note)
        self.stale_banner.setVisible(bool(note))
        if summary is None:
            self.meta_label.setText("No summary yet: one is written once the conversation grows "
                                    "past the summary threshold.")
            self.summary_view.set_markdown("")
        else:
            count = summary.summarized_count if summary.summarized_count is not None else "?"
            self.meta_label.setText(f"Summarizes {count} messages · last updated "
                                    f"{when(summary.updated_at or summary.created_at)} · "
                                    f"{len(state.versions)} version(s) in history")
            self.summary_view.set_markdown(summary.text)
        for combo in (self.from_combo, self.to_combo):
            combo.blockSignals(True)
            combo.clear()
            for version in state.versions:
                count = f" · {version.summarized_count} msgs" if version.summarized_count is not None else ""
                combo.addItem(f"{version.when} · {version.sha[:8]}{count}", version.sha)
            combo.blockSignals(False)
        if len(state.versions) >= 2:
            self.from_combo.setCurrentIndex(1)
        self.to_combo.setCurrentIndex(0 if state.versions else -1)
        self._on_versions_chosen()
        self.loaded.emit(state)

    def _on_failed(self, error: BaseException) -> None:
        self.meta_label.setText(f"Could not read the summary: {error}")

    @Slot()
    def _on_versions_chosen(self) -> None:
        state = self._state
        if state is None or not state.versions:
            self.diff_view.setHtml("<p>No earlier versions.</p>")
            return
        by_sha = {v.sha: v for v in state.versions}
        old = by_sha.get(self.from_combo.currentData())
        new = by_sha.get(self.to_combo.currentData())
        if old is None or new is None:
            return
        if old.sha == new.sha:
            self.diff_view.setHtml(word_diff_html(new.text, new.text)
                                   + "<p><i>Same version on both sides: pick an older one.</i></p>")
            return
        self.diff_view.setHtml(word_diff_html(old.text, new.text))
