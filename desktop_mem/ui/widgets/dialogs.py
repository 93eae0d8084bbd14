"""Yes/no questions, injected into widgets so tests can answer them without a modal loop."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QMessageBox, QWidget

from desktop_mem.engine.models import SecretsPolicy

Confirm = Callable[[QWidget | None, str, str], bool]


def ask(parent: QWidget | None, title: str, text: str) -> bool:
    """Ask the user a yes/no question (the default `Confirm`)."""
    answer = QMessageBox.question(parent, title, text,
                                  QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                  QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes


SecretChoice = Callable[[QWidget | None, str], str | None]


def ask_secret(parent: QWidget | None, findings: str) -> str | None:
    """A memory looks like it holds a secret: "redact", "keep" or None (cancel, nothing saved)."""
    box = QMessageBox(QMessageBox.Icon.Warning, "Possible secret",
                      "This memory looks like it contains a secret, which would be committed to "
                      f"the store's git history:\n\n{findings}\n\nRedact it, keep it as typed, or "
                      "cancel?", QMessageBox.StandardButton.Cancel, parent)
    redact = box.addButton("Redact", QMessageBox.ButtonRole.AcceptRole)
    keep = box.addButton("Keep as typed", QMessageBox.ButtonRole.DestructiveRole)
    box.setDefaultButton(redact)
    box.exec()
    clicked = box.clickedButton()
    if clicked is redact:
        return SecretsPolicy.REDACT
    if clicked is keep:
        return SecretsPolicy.KEEP
    return None
