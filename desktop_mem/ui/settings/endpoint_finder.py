"""Find the model servers this computer runs and pick one: a Find button, the servers and models
found, and Use. The probing (a second at most) runs on the task runner, never the GUI thread."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from desktop_mem.engine.api import FoundEndpoint, discover_endpoints, nothing_found_advice
from desktop_mem.ui.task_runner import TaskRunner


def find_endpoints(env: Mapping[str, str], configured_url: str, configured_key: str) -> list[FoundEndpoint]:
    """Run in a worker."""
    return discover_endpoints(env, configured_url, configured_key)


class EndpointFinder(QWidget):
    """`chosen(base_url, model)` when the user picks a server's model."""

    chosen = Signal(str, str)

    def __init__(self, runner: TaskRunner, configured_url: str = "", configured_key: str = "",
                 parent: QWidget | None = None, *, env: Mapping[str, str] | None = None,
                 current: Callable[[], tuple[str, str]] | None = None, url_field: bool = False) -> None:
        super().__init__(parent)
        self._url_field = url_field  # the welcome page: a server on another port is typed here
        self._runner = runner
        self._configured = (configured_url, configured_key)
        self._current = current  # the URL and key as typed now (the Settings form), read at each Find
        self._env = dict(os.environ if env is None else env)
        self.found: list[FoundEndpoint] = []
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.find_button = QPushButton("Find servers", self)
        self.find_button.setToolTip("Look for Ollama, LM Studio, llama.cpp's server and vLLM on this "
                                    "computer, and OPENAI_BASE_URL")
        self.choices = QComboBox(self)
        self.choices.setMinimumContentsLength(28)
        self.choices.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.choices.setVisible(False)
        self.use_button = QPushButton("Use", self)
        self.use_button.setVisible(False)
        self.status_label = QLabel(self)
        self.status_label.setObjectName("mutedLabel")
        self.status_label.setWordWrap(True)
        self.url_edit = QLineEdit(self._configured[0], self)
        self.url_edit.setPlaceholderText("http://127.0.0.1:8080/v1")
        self.url_edit.setToolTip("The OpenAI-compatible URL of your model server (…/v1)")
        self.use_url_button = QPushButton("Use this URL", self)
        url_row = QHBoxLayout()
        url_row.setContentsMargins(0, 0, 0, 0)
        url_row.addWidget(QLabel("Server URL", self))
        url_row.addWidget(self.url_edit, 1)
        url_row.addWidget(self.use_url_button)
        if self._url_field:
            self._current = lambda: (self.url_edit.text().strip(), self._configured[1])
        else:
            for widget in (self.url_edit, self.use_url_button):
                widget.hide()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.find_button)
        row.addWidget(self.choices, 1)
        row.addWidget(self.use_button)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        if self._url_field:
            column.addLayout(url_row)
        column.addLayout(row)
        column.addWidget(self.status_label)

    def _connect_signals(self) -> None:
        self.find_button.clicked.connect(self.find_servers)
        self.use_button.clicked.connect(self._on_use_button_clicked)
        self.use_url_button.clicked.connect(self._on_use_url_button_clicked)
        self.url_edit.returnPressed.connect(self.find_servers)

    @Slot()
    def find_servers(self) -> None:
        self.find_button.setEnabled(False)
        if self._current is not None:
            self._configured = self._current()
        self.status_label.setText("Looking for model servers on this computer…")
        self._runner.submit(find_endpoints, self._env, *self._configured, key="endpoint-find",
                            on_result=self._on_found, on_error=self._on_failed)

    def _on_found(self, found: list[FoundEndpoint]) -> None:
        self.find_button.setEnabled(True)
        self.found = found
        self.choices.clear()
        for endpoint in found:
            for model in endpoint.models:
                self.choices.addItem(f"{model} — {endpoint.name} ({endpoint.base_url})",
                                     (endpoint.base_url, model))
        answering = [e for e in found if e.found]
        self.choices.setVisible(bool(answering))
        self.use_button.setVisible(bool(answering))
        if answering:
            names = ", ".join(dict.fromkeys(e.name for e in answering))
            models = sum(len(e.models) for e in answering)
            text = f"Found {names}: {models} model(s). Pick one and press Use."
        elif any(e.listening for e in found):
            text = "; ".join(f"{e.name} at {e.base_url} {e.error}" for e in found if e.listening)
        else:
            text = nothing_found_advice()
        # the URL in the form first, with its state (it may answer where no usual port does), and
        # when this search ran: a second Find visibly runs again
        lines = [line for line in (self._configured_state(found), text) if line]
        lines.append(f"Looked at {len(found)} place(s) at {time.strftime('%H:%M:%S')}.")
        self.status_label.setText("\n".join(lines))

    def _configured_state(self, found: list[FoundEndpoint]) -> str:
        url = self._configured[0].rstrip("/")
        mine = next((e for e in found if e.base_url.rstrip("/") == url), None)
        if not url or mine is None:
            return ""
        if mine.found:
            return f"Your URL {url} answers: {len(mine.models)} model(s)."
        return f"Your URL {url} does not answer: {mine.error}"

    def _on_failed(self, error: BaseException) -> None:
        self.find_button.setEnabled(True)
        self.status_label.setText(f"Could not look for servers: {error}")

    @Slot()
    def _on_use_url_button_clicked(self) -> None:
        url = self.url_edit.text().strip()
        if url:
            self.chosen.emit(url, "")  # no model picked: Settings keeps the model it has

    @Slot()
    def _on_use_button_clicked(self) -> None:
        data = self.choices.currentData()
        if data:
            self.chosen.emit(*data)
