"""First run: an empty store opens to a short welcome offering a demo store."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

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
