"""The panes of one open store, wired together: conversations, Chat, Memories, Summary, Timeline.

Composition only (FeelUOwn's "pages"): each pane gets the engine, the runner and the bridge
through its constructor; this widget connects their signals in one place.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal, Slot
from PySide6.QtWidgets import QSplitter, QTabWidget, QVBoxLayout, QWidget

from desktop_mem.engine.api import MemoryEngine, MemoryPage
from desktop_mem.engine.models import GLOBAL_CONVERSATION, Memory, Operation, Problem, StoreChange
from desktop_mem.ui.chat.chat_pane import ChatPane
from desktop_mem.ui.conversation_list import ConversationList
from desktop_mem.ui.engine_bridge import EngineBridge
from desktop_mem.ui.memories.memory_browser import MemoryBrowser
from desktop_mem.ui.memories.memory_editor import MemoryEditor
from desktop_mem.ui.summary.summary_pane import SummaryPane
from desktop_mem.ui.task_runner import TaskRunner
from desktop_mem.ui.timeline.timeline_pane import TimelinePane
from desktop_mem.ui.widgets.dialogs import Confirm
from desktop_mem.ui.widgets.names import YOUR_FACTS

CHAT_TAB, MEMORIES_TAB, SUMMARY_TAB, TIMELINE_TAB = range(4)
MEMORIES_SHARE = (63, 37)  # list : editor
BROWSER_MIN_WIDTH, EDITOR_MIN_WIDTH = 420, 340


class Workspace(QWidget):
    """Everything shown once a store is open."""

    settings_requested = Signal()
    llm_problem = Signal(str)
    llm_answered = Signal()  # a reply is streaming
    reply_ended = Signal()  # it finished, failed or was stopped
    memory_activity = Signal(str, bool)  # "Updating memory… N s" ('' when idle), cancellable

    def __init__(self, engine: MemoryEngine, runner: TaskRunner, bridge: EngineBridge, confirm: Confirm,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.engine = engine
        self._runner = runner
        self._bridge = bridge
        self.conversations = ConversationList(engine, runner, confirm, self)
        self.chat = ChatPane(engine, runner, self)
        self.browser = MemoryBrowser(engine, runner, self)
        self.editor = MemoryEditor(engine, runner, confirm, self)
        self.summary = SummaryPane(engine, runner, self)
        self.timeline = TimelinePane(engine, runner, self, confirm=confirm)
        self._timeline_loaded = False  # the timeline loads when first shown (start() or a tab switch)
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.memories_splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.memories_splitter.addWidget(self.browser)
        self.memories_splitter.addWidget(self.editor)
        # Fixed proportions: explicit minimum widths (not the editor's content, whose path label
        # and buttons used to widen it on every selection) and a 63/37 share that only a drag
        # changes.
        self.browser.setMinimumWidth(BROWSER_MIN_WIDTH)
        self.editor.setMinimumWidth(EDITOR_MIN_WIDTH)
        self.memories_splitter.setChildrenCollapsible(False)
        self.memories_splitter.setStretchFactor(0, MEMORIES_SHARE[0])
        self.memories_splitter.setStretchFactor(1, MEMORIES_SHARE[1])
        self.memories_splitter.setSizes(list(MEMORIES_SHARE))
        self._memories_dragged = False  # a drag of the handle wins over the share from then on
        self.memories_splitter.installEventFilter(self)
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.chat, "Chat")
        self.tabs.addTab(self.memories_splitter, "Memories")
        self.tabs.addTab(self.summary, "Summary")
        self.tabs.addTab(self.timeline, "Timeline")
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.conversations)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([220, 980])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.splitter)

    def _connect_signals(self) -> None:
        self.conversations.conversation_selected.connect(self._on_conversations_conversation_selected)
        self.conversations.loaded.connect(self._on_conversations_loaded)
        self.chat.memory_requested.connect(self.open_memory)
        self.chat.settings_requested.connect(self.settings_requested)
        self.chat.llm_problem.connect(self.llm_problem)
        self.chat.llm_answered.connect(self.llm_answered)
        self.chat.reply_finished.connect(self.reply_ended)
        self.chat.reply_stopped.connect(self.reply_ended)
        self.chat.memory_activity.connect(self._on_chat_memory_activity)
        self.chat.conversation_created.connect(self.conversations.show_created)
        self.browser.memory_activated.connect(self._on_browser_memory_activated)
        self.browser.problem_activated.connect(self._on_browser_problem_activated)
        self.browser.selection_cleared.connect(self.editor.close_memory)
        self._bridge.store_changed.connect(self._on_bridge_store_changed)
        self._bridge.outcome_ready.connect(self.chat.on_outcome)
        self._bridge.write_progressed.connect(self.chat.on_write_progress)
        self.tabs.currentChanged.connect(self._on_tabs_current_changed)
        self.memories_splitter.splitterMoved.connect(self._on_memories_splitter_moved)

    def start(self, first_page: MemoryPage | None = None) -> None:
        """Load the first content of the panes in view; the timeline loads when first shown. The
        Memories pane shows `first_page` (the last session's) until the store's own listing.

        Classifying the newest commits reads their blobs: after an import of 10,000 files that
        is seconds of git work competing with the first listing (measured with py-spy).
        """
        self.conversations.reload()
        if first_page is not None:
            self.browser.refresh_over(first_page)
        else:
            self.browser.refresh()
        self._timeline_loaded = False
        self._on_tabs_current_changed(self.tabs.currentIndex())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        """Keep the Memories split at MEMORIES_SHARE as the window resizes (until dragged)."""
        if watched is self.memories_splitter and event.type() == QEvent.Type.Resize \
                and not self._memories_dragged:
            width = self.memories_splitter.width()
            browser = width * MEMORIES_SHARE[0] // sum(MEMORIES_SHARE)
            self.memories_splitter.setSizes([browser, width - browser])
        return super().eventFilter(watched, event)

    @Slot(int, int)
    def _on_memories_splitter_moved(self, _pos: int, _index: int) -> None:
        self._memories_dragged = True

    @Slot(int)
    def _on_tabs_current_changed(self, index: int) -> None:
        if index == TIMELINE_TAB and not self._timeline_loaded:
            self._timeline_loaded = True
            self.timeline.reload()

    # --------------------------------------------------------------- public

    def focus_search(self) -> None:
        """Ctrl+F: the Memories tab with the cursor in the search box."""
        self.tabs.setCurrentIndex(MEMORIES_TAB)
        self.browser.focus_search()

    def new_conversation(self) -> None:
        """Ctrl+N."""
        self.conversations.new_button.click()

    def new_memory(self) -> None:
        """A new fact in the current conversation."""
        self.tabs.setCurrentIndex(MEMORIES_TAB)
        self.editor.new_memory(self.conversations.current or GLOBAL_CONVERSATION)

    @Slot(str)
    def open_memory(self, memory_id: str) -> None:
        """Show a memory in the editor (from "memory used", the timeline, ...)."""
        # raw: the editor shows the file as it is (a held-back hand edit too, to be fixed there)
        self._runner.submit(self.engine.get_raw, memory_id, key="open-memory", on_result=self._show_memory)

    # ---------------------------------------------------------------- slots

    def _show_memory(self, memory: Memory) -> None:
        self.tabs.setCurrentIndex(MEMORIES_TAB)
        if self.editor.open_memory(memory):
            self.browser.select_memory(memory.id)

    @Slot(str)
    def _on_chat_memory_activity(self, text: str) -> None:
        self.memory_activity.emit(text, self.chat.can_cancel_memory_update)

    @Slot(str)
    def _on_conversations_conversation_selected(self, conversation_id: str) -> None:
        self.chat.set_conversation(conversation_id)
        self.summary.set_conversation(conversation_id)

    @Slot()
    def _on_conversations_loaded(self) -> None:
        chats = [(c.id, c.title) for c in self.conversations.model.rows()]
        projects = [(p.id, p.title) for p in self.conversations.projects]  # "Project: shop"
        rows = [(GLOBAL_CONVERSATION, YOUR_FACTS), *chats, *projects]  # the Memories pane filters by any
        self.browser.set_conversations(rows)
        self.chat.set_titles(dict(rows))
        self.editor.titles = dict(rows)

    @Slot(object)
    def _on_browser_memory_activated(self, memory: Memory) -> None:
        self.editor.open_memory(memory)

    @Slot(object)
    def _on_browser_problem_activated(self, problem: Problem) -> None:
        """A broken file: fix it in place (raw text and the parse error), not in an outside app."""
        from desktop_mem.ui.memories.problem_editor import ProblemEditor

        self.problem_editor = ProblemEditor(self.engine, self._runner, problem, self)
        self.problem_editor.fixed.connect(lambda _path: self.browser.refresh())
        self.problem_editor.open()

    @Slot(object)
    def _on_bridge_store_changed(self, change: StoreChange) -> None:
        self.browser.on_store_changed(change)
        self.editor.on_store_changed(change)
        self.summary.on_store_changed(change)
        if self._timeline_loaded:  # else it loads when first shown: listing the newest commits
            # then is wasted work, and held memory (one import's 100,000 files: ~100 MB at 100k).
            self.timeline.on_store_changed(change)
        if change.operation in (Operation.CONVERSATION, Operation.DELETE, Operation.ADD,
                                Operation.EXTERNAL_EDIT, Operation.IMPORT, Operation.SYNC):
            self.conversations.reload()
            shown = change.conversation_id in (None, self.chat.conversation)
            if shown and change.operation != Operation.DELETE:
                self.chat.reload_if_idle()  # e.g. the demo writes a conversation's turns after it is shown
