"""First run: an empty store opens to a short welcome offering a demo store.

`WelcomePage` is the page; `welcome_page` builds it for the window with the model servers found
on this computer and makes the demo store on the writer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from desktop_mem.engine.config import Config
from desktop_mem.ui.task_runner import TaskRunner

if TYPE_CHECKING:
    from desktop_mem.engine.api import MemoryEngine

WELCOME = """<h2>Welcome to desktop-mem</h2>
<p>Chat with a language model that remembers. What it learns is kept as plain Markdown files in
<b>{store}</b>, versioned with git: you can read, search, edit and restore every memory.</p>
<p>Start with a small demo store to look around (three conversations with facts, an updated fact,
a deleted one and a summary, all real commits), or start from an empty store.</p>"""


class WelcomePage(QWidget):
    """Two ways to start: a demo store or an empty one."""

    demo_requested = Signal()
    start_requested = Signal()

    def __init__(self, store: str, parent: QWidget | None = None, *,
                 endpoint_finder: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("welcomePage")
        text = QLabel(WELCOME.format(store=store), self)
        text.setWordWrap(True)
        text.setTextFormat(Qt.TextFormat.RichText)
        text.setMaximumWidth(560)
        self.demo_button = QPushButton("Create a demo store", self)
        self.demo_button.setObjectName("primaryButton")
        self.empty_button = QPushButton("Start with an empty store", self)
        self.status_label = QLabel(self)
        self.status_label.setObjectName("mutedLabel")
        buttons = QHBoxLayout()
        buttons.addWidget(self.demo_button)
        buttons.addWidget(self.empty_button)
        buttons.addStretch(1)
        column = QVBoxLayout()
        column.addStretch(1)
        column.addWidget(text)
        column.addLayout(buttons)
        column.addWidget(self.status_label)
        if endpoint_finder is not None:  # which model server to chat with, found for the user
            model_label = QLabel("<b>Your model server</b> — the app talks to any OpenAI-compatible "
                                 "server; these are the ones found on this computer:", self)
            model_label.setWordWrap(True)
            model_label.setMaximumWidth(560)
            endpoint_finder.setMaximumWidth(560)
            column.addSpacing(12)
            column.addWidget(model_label)
            column.addWidget(endpoint_finder)
        column.addStretch(2)
        layout = QHBoxLayout(self)
        layout.addStretch(1)
        layout.addLayout(column)
        layout.addStretch(1)
        self.demo_button.clicked.connect(self.demo_requested)
        self.empty_button.clicked.connect(self.start_requested)

    def set_busy(self, text: str) -> None:
        """Creating the demo store: disable the buttons and say so."""
        self.demo_button.setEnabled(False)
        self.empty_button.setEnabled(False)
        self.status_label.setText(text)


def welcome_page(engine: Callable[[], MemoryEngine | None], runner: TaskRunner, config: Config, *,
                 open_settings: Callable[..., Any], started: Callable[[], None],
                 parent: QWidget) -> WelcomePage:
    """The welcome for the window's `engine()` (its store is empty): it looks for model servers at
    once, makes the demo store on the writer when asked, and calls `started` to show the panes."""
    from desktop_mem.ui.settings.endpoint_finder import EndpointFinder

    current = engine()
    assert current is not None
    finder = EndpointFinder(runner, str(config["llm.base_url"]), str(config["llm.api_key"]), url_field=True)
    # A server picked (or a URL typed) here opens Settings on the Endpoint tab with it filled
    # in: the user sees and saves it there (where environment variables and overrides are handled).
    finder.chosen.connect(lambda url, model: open_settings(
        "llm", prefill={"llm.base_url": url, **({"llm.model": model} if model else {})}))
    page = WelcomePage(str(current.root), parent, endpoint_finder=finder)
    finder.find_servers()  # first start: look at once

    def create_demo() -> None:
        store = engine()
        if store is None:
            return  # the store was closed meanwhile
        page.set_busy("Creating the demo store…")
        runner.submit_write(store.create_demo, on_result=lambda _: started(),
                            on_error=lambda exc: page.set_busy(f"Could not create the demo store: {exc}"))

    page.demo_requested.connect(create_demo)
    page.start_requested.connect(started)
    return page
