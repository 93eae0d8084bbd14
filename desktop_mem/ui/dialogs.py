"""Yes/no questions, injected into widgets so tests can answer them without a modal loop."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QMessageBox, QWidget

Confirm = Callable[[QWidget | None, str, str], bool]


def ask(parent: QWidget | None, title: str, text: str) -> bool:
    """Ask the user a yes/no question (the default `Confirm`)."""
    answer = QMessageBox.question(parent, title, text,
                                  QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                  QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes
