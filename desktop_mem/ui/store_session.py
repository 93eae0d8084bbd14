"""The store's lifecycle under the window: open it, keep the view across a reopen, open its
index, serve its endpoint, close it.

Most of it is work the window hands to a thread ("Run on the writer", "in the read pool"), kept
here apart from the widgets, which never touch the engine, git or the index themselves; what runs
on the GUI thread says so (`KeptView`, `import_panes`, `start_endpoint_when_idle`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from desktop_mem.engine.config import Config
from desktop_mem.ui.status_bar import last_commit_line
from desktop_mem.ui.task_runner import TaskRunner

if TYPE_CHECKING:
    # Imported where first used: the engine pulls in chromadb (about a second), which must load on
    # the writer thread after the window is on screen, not before it.
    from desktop_mem.engine.api import MemoryEngine, MemoryPage
    from desktop_mem.engine.models import SecretHeldBack
    from desktop_mem.ui.memories.browser_loader import BrowserQuery
    from desktop_mem.ui.workspace import Workspace

# The loopback endpoint starts once nobody typed for this long and no reply streams. Its server
# (FastAPI, uvicorn, the routes) loads only when a first caller connects (api/app_endpoint.py);
# loading it holds the GIL up to ~90 ms at a time, which froze search-as-you-type for 150-200 ms
# when it loaded with the index (benchmarks/gui_start.py, py-spy).
ENDPOINT_IDLE_MS = 1500
# The longest the catalog's load waits for the window to show the last session's first page.
FIRST_PAGE_WAIT_S = 2.0


@dataclass(frozen=True)
class OpenedStore:
    """The result of opening a store in a worker."""

    engine: MemoryEngine
    empty: bool
    last_commit: str
    held_back: tuple[SecretHeldBack, ...] = ()  # hand edits with a likely secret, found at start
    # The last session's first page of the memory list, shown while the catalog loads (the
    # window runs `finish_open` next); None: the store opened whole.
    first_page: MemoryPage | None = None


@dataclass(frozen=True)
class FinishedOpen:
    """What the rest of a store's opening found (`finish_open`)."""

    last_commit: str
    held_back: tuple[SecretHeldBack, ...]


@dataclass(frozen=True)
class KeptView:
    """What the user was looking at when Settings reopened the store."""

    conversation: str | None
    tab: int
    typed: str
    failure: tuple[str, str] | None = None  # (conversation, why its last reply failed)
    # the Memories pane's search, filters and selection (MemoryBrowser.view_state)
    memories: tuple[BrowserQuery, str | None] | None = None

    @classmethod
    def of(cls, workspace: Workspace) -> KeptView:
        """Remember the workspace's conversation, tab, unsent message and failed reply, and what
        the Memories pane shows."""
        return cls(workspace.conversations.current, workspace.tabs.currentIndex(),
                   workspace.chat.input.toPlainText(), workspace.chat.failure_note(),
                   workspace.browser.view_state())

    def restore(self, workspace: Workspace) -> None:
        """Show them again in the new workspace (the transcript reloads from the store; the
        unanswered message gets its interrupted reply and Retry back from there)."""
        if self.failure is not None:
            workspace.chat.keep_failure_note(*self.failure)
        if self.conversation is not None:
            workspace.conversations.select(self.conversation)
        workspace.tabs.setCurrentIndex(self.tab)
        workspace.chat.input.setPlainText(self.typed)
        if self.memories is not None:
            workspace.browser.restore_view(self.memories)


def open_store(config: Config, read_only: bool) -> OpenedStore:
    """Run on the writer: take the lock, init git, read the catalog (no index yet). A store the
    last session left a first page for (store/first_page.py) is handed over before its catalog
    loads, with that page: run `finish_open` next (at 100,000 memories the catalog takes a
    second or more; issue #36)."""
    from desktop_mem.engine.api import MemoryEngine

    engine = MemoryEngine.open_first(config, read_only=read_only)
    try:
        first_page = engine.cached_first_page()
        if first_page is not None:
            return OpenedStore(engine, False, last_commit_line(engine), first_page=first_page)
        engine.finish_opening()
        return OpenedStore(engine, engine.is_empty(), last_commit_line(engine), engine.held_back_files())
    except BaseException:
        engine.close()  # no window gets this engine: its lock must not outlive the failure
        raise


def finish_open(engine: MemoryEngine, page_shown: threading.Event | None = None) -> FinishedOpen:
    """Run on the writer after `open_store` handed over a first page: load the catalog and commit
    what changed while the app was closed. Every read of the store waits for this.

    It starts once the window has shown that page (`page_shown`, waited for FIRST_PAGE_WAIT_S at
    most): the load holds the interpreter most of the time, and beside it the GUI thread building
    the panes got it back only every few milliseconds (docs/benchmarks.md, issue #36)."""
    if page_shown is not None:
        page_shown.wait(FIRST_PAGE_WAIT_S)
    engine.finish_opening()
    return FinishedOpen(last_commit_line(engine), engine.held_back_files())


class StoreOpening:
    """One open of the store on the writer; the engine it opened is kept here too.

    The window gets that engine through a delivery queued to the GUI thread, which a window closed
    (or reopened) meanwhile gets after its close, or never once the event loop ended: its close has
    the writer close the engine from here instead, right after the open (`close_opened`).
    """

    def __init__(self, config: Config, read_only: bool) -> None:
        self.config = config
        self.read_only = read_only
        self.engine: MemoryEngine | None = None  # written and read on the writer only

    def open(self) -> OpenedStore:
        """Run on the writer: `open_store`, keeping its engine."""
        opened = open_store(self.config, self.read_only)
        self.engine = opened.engine
        return opened


def import_index_modules() -> None:
    """Run in the read pool: import chromadb, onnxruntime and the index modules (seconds of
    imports) before the index opens on the writer, so saves made meanwhile do not wait for them.
    Imports only: no engine state is touched."""
    from desktop_mem.engine import api

    api.import_index_modules()


def import_panes() -> None:
    """Import the workspace's modules (run on the GUI thread while the store opens)."""
    import desktop_mem.ui.workspace  # noqa: F401


def open_index_and_watch(engine: MemoryEngine, progress: Callable[[int, int], None] | None = None) -> str:
    """Run on the writer after the panes show: sync the index, then watch for outside edits."""
    engine.open_index(progress)
    engine.hold_chat_scope()  # the first chat turn's or search's global facts, read now
    return "on" if engine.start_watcher() else "off"


def start_endpoint(engine: MemoryEngine) -> None:
    """Run on the writer: serve the app's loopback endpoint, which AI tools' `desktop-mem mcp`
    processes write through (its server loads in its own thread)."""
    from desktop_mem.api.app_endpoint import start_app_endpoint

    start_app_endpoint(engine)


def start_endpoint_when_idle(workspace: Workspace, runner: TaskRunner,
                             current: Callable[[], MemoryEngine | None]) -> None:
    """On the GUI thread: start the loopback endpoint of the `current()` engine once the user
    pauses (see ENDPOINT_IDLE_MS)."""
    engine = current()
    timer = QTimer(workspace)
    timer.setSingleShot(True)
    timer.setInterval(ENDPOINT_IDLE_MS)
    typing = (workspace.browser.search_edit.textChanged, workspace.chat.input.textChanged)

    def restart(*_: object) -> None:
        timer.start()

    for typed in typing:
        typed.connect(restart)

    def start() -> None:
        if engine is None or engine is not current():
            return  # closed or reopened meanwhile: the new engine has its own timer
        if workspace.chat.busy:
            timer.start()
            return
        for typed in typing:
            typed.disconnect(restart)
        runner.submit_write(start_endpoint, engine, quiet=True)

    timer.timeout.connect(start)
    timer.start()


def close_engine(engine: MemoryEngine) -> None:
    """Run on the writer: stop watching, let write paths finish, release the lock."""
    from desktop_mem.api.app_endpoint import stop_app_endpoint

    stop_app_endpoint(engine)
    engine.stop_watcher()
    engine.wait_idle(30)
    engine.close()


def close_opened(opening: StoreOpening) -> None:
    """Run on the writer after `opening`'s open: close the engine it opened, if it did."""
    if opening.engine is not None:
        close_engine(opening.engine)
