"""The "From … to …" date editors the memory browser and the timeline filter share."""

from __future__ import annotations

from PySide6.QtCore import QDate
from PySide6.QtWidgets import QDateEdit, QWidget


def date_range_edits(parent: QWidget) -> tuple[QDateEdit, QDateEdit]:
    """Two calendar date editors, the last month by default, disabled until a filter enables them."""
    since = QDateEdit(QDate.currentDate().addMonths(-1), parent)
    until = QDateEdit(QDate.currentDate(), parent)
    for edit in (since, until):
        edit.setCalendarPopup(True)
        edit.setDisplayFormat("yyyy-MM-dd")
        edit.setEnabled(False)
    return since, until
