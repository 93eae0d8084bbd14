"""The settings dialog, generated from config.SETTINGS: one tab per group, one widget per setting.

Nothing here lists settings by hand: a new setting declared in config.py shows up with the
right widget (check box, spin box, combo for choices, password field for secrets) and its
description as tooltip. Saving writes only what changed, with save_config.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop_mem.engine.chat.llm_client import LLMEndpoint
from desktop_mem.engine.config import SETTINGS, Config, Setting, default_config_path, save_config
from desktop_mem.engine.models import EngineError
from desktop_mem.ui.task_runner import TaskRunner

GROUP_TITLES = {"store": "Store", "llm": "LLM", "embedding": "Embeddings", "chroma": "Index",
                "retrieval": "Retrieval", "memory": "Memory", "context": "Context", "watcher": "Watcher",
                "server": "Server"}
INT_LIMIT = 2_000_000_000


def check_endpoint(endpoint: LLMEndpoint) -> str:
    """Run in a worker: probe an endpoint with unsaved settings (raises LLMError)."""
    from desktop_mem.engine.chat.llm_client import LLMClient

    return LLMClient(endpoint).check()


def _label(setting: Setting) -> str:
    return setting.name.split(".", 1)[1].replace("_", " ").capitalize()


class SettingsDialog(QDialog):
    """Edit the config file; `saved` carries the new Config."""

    saved = Signal(object)  # Config

    def __init__(self, config: Config, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._config = config
        self._runner = runner
        self._path = config.file or default_config_path()
        self.editors: dict[str, QWidget] = {}
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.setWindowTitle("Settings")
        self.resize(780, 520)
        self.tabs = QTabWidget(self)
        forms: dict[str, QFormLayout] = {}
        for setting in SETTINGS:
            if setting.group not in forms:
                page = QWidget()
                forms[setting.group] = QFormLayout(page)
                scroll = QScrollArea()
                scroll.setWidgetResizable(True)
                scroll.setWidget(page)
                self.tabs.addTab(scroll, GROUP_TITLES.get(setting.group, setting.group.capitalize()))
            editor = self._editor_for(setting)
            tip = setting.description + (f"\nEnvironment variable: {setting.env}" if setting.env else "")
            source = self._config.source(setting.name)
            if source.startswith("environment") or source == "flag":
                editor.setEnabled(False)
                tip += f"\nSet by {source}; change it there."
            editor.setToolTip(tip)
            label = QLabel(_label(setting))
            label.setToolTip(tip)
            self.editors[setting.name] = editor
            forms[setting.group].addRow(label, editor)
        self.test_button = QPushButton("Test connection", self)
        self.test_label = QLabel(self)
        self.test_label.setWordWrap(True)
        self.test_label.setObjectName("mutedLabel")
        test_row = QHBoxLayout()
        test_row.addWidget(self.test_button)
        test_row.addWidget(self.test_label, 1)
        self.error_label = QLabel(self)
        self.error_label.setObjectName("errorLabel")
        self.error_label.setWordWrap(True)
        path_label = QLabel(f"Saved to {self._path}", self)
        path_label.setObjectName("mutedLabel")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                        | QDialogButtonBox.StandardButton.Cancel, self)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addLayout(test_row)
        layout.addWidget(self.error_label)
        layout.addWidget(path_label)
        layout.addWidget(self.buttons)

    def _editor_for(self, setting: Setting) -> QWidget:
        value = self._config[setting.name]
        if setting.choices:
            combo = QComboBox()
            combo.addItems(list(setting.choices))
            combo.setCurrentText(str(value))
            return combo
        if setting.type is bool:
            check = QCheckBox()
            check.setChecked(bool(value))
            return check
        if setting.type is int:
            spin = QSpinBox()
            spin.setRange(int(setting.minimum if setting.minimum is not None else -INT_LIMIT),
                          int(setting.maximum if setting.maximum is not None else INT_LIMIT))
            spin.setValue(int(value))
            return spin
        if setting.type is float:
            dspin = QDoubleSpinBox()
            dspin.setDecimals(3)
            dspin.setSingleStep(0.05 if (setting.maximum or 0) <= 1 else 1.0)
            dspin.setRange(setting.minimum if setting.minimum is not None else -1e9,
                           setting.maximum if setting.maximum is not None else 1e9)
            dspin.setValue(float(value))
            return dspin
        line = QLineEdit(str(value))
        if setting.secret:
            line.setEchoMode(QLineEdit.EchoMode.Password)
        if setting.name == "store.path":
            line.setPlaceholderText(str(self._config.store_path))
        return line

    def _connect_signals(self) -> None:
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self.test_button.clicked.connect(self.test_connection)

    def value(self, name: str) -> Any:
        """The value an editor holds now."""
        editor = self.editors[name]
        if isinstance(editor, QComboBox):
            return editor.currentText()
        if isinstance(editor, QCheckBox):
            return editor.isChecked()
        if isinstance(editor, QSpinBox | QDoubleSpinBox):
            return editor.value()
        assert isinstance(editor, QLineEdit)
        return editor.text()

    def changes(self) -> dict[str, Any]:
        """Settings whose editor differs from the current config."""
        return {s.name: self.value(s.name) for s in SETTINGS
                if self.editors[s.name].isEnabled() and self.value(s.name) != self._config[s.name]}

    @Slot()
    def save(self) -> None:
        """Write the changed settings to the config file and close."""
        changes = self.changes()
        try:
            if changes:
                save_config(self._path, changes)
            new_config = self._config.with_overrides(changes, source=str(self._path))
        except (EngineError, OSError) as exc:
            self.error_label.setText(f"Not saved: {exc}")
            return
        self.saved.emit(new_config)
        self.accept()

    @Slot()
    def test_connection(self) -> None:
        """Probe the endpoint as currently typed (off the GUI thread)."""
        endpoint = LLMEndpoint(self.value("llm.base_url"), self.value("llm.api_key"), self.value("llm.model"),
                               float(self.value("llm.timeout")))
        self.test_button.setEnabled(False)
        self.test_label.setText(f"Testing {endpoint.base_url}…")
        self._runner.submit(check_endpoint, endpoint, key="settings-test",
                            on_result=self._on_test_passed, on_error=self._on_test_failed)

    def _on_test_passed(self, message: str) -> None:
        self.test_button.setEnabled(True)
        self.test_label.setText(f"✔ {message}")

    def _on_test_failed(self, error: BaseException) -> None:
        self.test_button.setEnabled(True)
        message = str(getattr(error, "message", error))  # LLMError carries a user-facing message
        self.test_label.setText(f"✘ {message}")
