"""The settings dialog, generated from config.SETTINGS: one tab per group, one widget per setting.

Nothing here lists settings by hand: a new setting declared in config.py shows up with the
right widget (check box, spin box, combo for choices, password field for secrets) and its
description as tooltip. Saving writes only what changed, with save_config.

A value that comes from an environment variable is shown with that source and stays editable:
a different value saved here is kept as this app's override (in the window's QSettings, not the
config file, which the environment would shadow) and wins over the variable in the window; the
command line and `serve` still follow the environment. A --set flag wins over everything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QSettings, Signal, Slot
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

from desktop_mem.engine.api import LLMEndpoint, check_endpoint
from desktop_mem.engine.config import SETTINGS, Config, Setting, default_config_path, save_config
from desktop_mem.engine.models import EngineError
from desktop_mem.ui.app_overrides import APP_SOURCE, OVERRIDES_GROUP
from desktop_mem.ui.settings.endpoint_finder import EndpointFinder
from desktop_mem.ui.task_runner import TaskRunner

# "Endpoint": the name the LLM errors use ("Check Settings > Endpoint").
GROUP_TITLES = {"store": "Store", "llm": "Endpoint", "embedding": "Embeddings", "chroma": "Index",
                "retrieval": "Retrieval", "memory": "Memory", "context": "Context", "watcher": "Watcher",
                "server": "Server"}
INT_LIMIT = 2_000_000_000


def _label(setting: Setting) -> str:
    return setting.name.split(".", 1)[1].replace("_", " ").capitalize()


class SettingsDialog(QDialog):
    """Edit the config file; `saved` carries the new Config."""

    saved = Signal(object)  # Config

    def __init__(self, config: Config, runner: TaskRunner, parent: QWidget | None = None, *,
                 app_settings: QSettings | None = None, group: str | None = None,
                 env: Mapping[str, str] | None = None, prefill: Mapping[str, str] | None = None) -> None:
        super().__init__(parent)
        self._config = config
        self._runner = runner
        self._app_settings = app_settings if app_settings is not None else QSettings()
        self._env = os.environ if env is None else env
        self._path = config.file or default_config_path()
        self.editors: dict[str, QWidget] = {}
        self.source_labels: dict[str, QLabel] = {}
        self._groups: list[str] = []
        self._setup_ui()
        self._connect_signals()
        for name, value in (prefill or {}).items():  # e.g. a server picked on the welcome page
            self.set_text(name, value)
        if group is not None and group in self._groups:
            self.tabs.setCurrentIndex(self._groups.index(group))

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
                self._groups.append(setting.group)
            editor = self._editor_for(setting)
            tip = setting.description + (f"\nEnvironment variable: {setting.env}" if setting.env else "")
            source = self._config.source(setting.name)
            if source == "flag":
                editor.setEnabled(False)  # --set is this run's explicit choice
            editor.setToolTip(tip)
            label = QLabel(_label(setting))
            label.setToolTip(tip)
            self.editors[setting.name] = editor
            note = self._source_note(setting, source)
            if note:
                field = QWidget()
                column = QVBoxLayout(field)
                column.setContentsMargins(0, 0, 0, 0)
                column.setSpacing(1)
                column.addWidget(editor)
                source_label = QLabel(note)
                source_label.setObjectName("mutedLabel")
                source_label.setWordWrap(True)
                column.addWidget(source_label)
                self.source_labels[setting.name] = source_label
                forms[setting.group].addRow(label, field)
            else:
                forms[setting.group].addRow(label, editor)
        # Endpoint tab: find the servers this computer runs and fill in URL and model.
        self.endpoint_finder = EndpointFinder(self._runner, str(self._config["llm.base_url"]),
                                              str(self._config["llm.api_key"]), self, env=self._env,
                                              current=lambda: (str(self.value("llm.base_url")),
                                                               str(self.value("llm.api_key"))))
        forms["llm"].insertRow(0, QLabel("Find"), self.endpoint_finder)
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

    def _env_value(self, setting: Setting) -> str | None:
        return self._env.get(setting.env) or None if setting.env else None

    def _source_note(self, setting: Setting, source: str) -> str:
        """Where the value comes from and which source wins, when it is not the file or a default."""
        if source == "flag":
            return "Set by --set for this run; it wins over everything else."
        env_value = self._env_value(setting)
        if env_value is None:
            return ""
        shown = "***" if setting.secret else env_value
        if source == APP_SOURCE:
            return (f"Overrides {setting.env}={shown} in this app. Set the value back to the "
                    "environment's to follow it again.")
        return (f"From the environment: {setting.env}. A different value saved here overrides it in "
                "this app (the command line still uses the environment).")

    def _editor_for(self, setting: Setting) -> QWidget:
        value = self._config.value(setting.name)
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
        self.endpoint_finder.chosen.connect(self._on_endpoint_finder_chosen)

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

    def set_text(self, name: str, value: str) -> None:
        """Put `value` in a text setting's editor (not saved until Save)."""
        editor = self.editors[name]
        if isinstance(editor, QLineEdit) and editor.isEnabled():
            editor.setText(value)

    @Slot(str, str)
    def _on_endpoint_finder_chosen(self, base_url: str, model: str) -> None:
        self.set_text("llm.base_url", base_url)
        self.set_text("llm.model", model)
        self.test_label.setText(f"{model} at {base_url}: press Save to use it (or Test connection first)")

    def changes(self) -> dict[str, Any]:
        """Settings whose editor differs from the current config."""
        return {s.name: self.value(s.name) for s in SETTINGS
                if self.editors[s.name].isEnabled() and self.value(s.name) != self._config.value(s.name)}

    @Slot()
    def save(self) -> None:
        """Write the changed settings and close: file values to the config file, values over an
        environment variable as this app's overrides (set back to the environment's: removed)."""
        changes = self.changes()
        by_name = {s.name: s for s in SETTINGS}
        over_env = {n: v for n, v in changes.items() if self._env_value(by_name[n]) is not None}
        to_file = {n: v for n, v in changes.items() if n not in over_env}
        try:
            if to_file:
                save_config(self._path, to_file)
            new_config = self._config.with_overrides(to_file, source=str(self._path)) if to_file \
                else self._config
            for name, value in over_env.items():
                env_value = self._env_value(by_name[name])
                key = f"{OVERRIDES_GROUP}/{name.replace('.', '/')}"
                if str(value) == env_value:
                    self._app_settings.remove(key)
                    new_config = new_config.with_overrides({name: env_value},
                                                           source=f"environment variable {by_name[name].env}")
                else:
                    self._app_settings.setValue(key, str(value))
                    new_config = new_config.with_overrides({name: value}, source=APP_SOURCE)
            self._app_settings.sync()
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
