"""The memory browser's filter row: conversation, role, kind, dates, deleted, "As of", "Show all
ranked" and the count of what is shown. It wraps (a FlowLayout), so the pane stays narrow enough
for a 1280-px screen beside the editor; the browser wires its controls and reads their values.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, time

from PySide6.QtCore import QDateTime, Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QDateTimeEdit, QLabel, QWidget

from desktop_mem.engine.models import KINDS, ROLES
from desktop_mem.ui.widgets.date_range import date_range_edits
from desktop_mem.ui.widgets.flow_layout import FlowLayout, group

ANY = "Any"
ALL_CONVERSATIONS = "All conversations"


class BrowserFilters(QWidget):
    """The filters the memory browser's listing and search take, in one wrapping row."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._setup_ui()

    def _setup_ui(self) -> None:
        self.conversation_combo = QComboBox(self)
        self.conversation_combo.addItem(ALL_CONVERSATIONS, None)
        self.conversation_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.conversation_combo.setMinimumContentsLength(14)  # long ids elide instead of widening
        self.role_combo = self._combo((ANY, *ROLES))
        self.kind_combo = self._combo((ANY, *KINDS))
        self.date_check = QCheckBox("From", self)
        self.since_edit, self.until_edit = date_range_edits(self)
        self.deleted_check = QCheckBox("Include deleted", self)
        self.as_of_check = QCheckBox("As of", self)
        self.as_of_check.setToolTip("Time travel: list and search what the app held as true at that "
                                    "moment (validity and the git history)")
        self.as_of_edit = QDateTimeEdit(QDateTime.currentDateTime(), self)  # "this morning" is a time
        self.as_of_edit.setCalendarPopup(True)
        self.as_of_edit.setDisplayFormat("yyyy-MM-dd HH:mm")
        self.as_of_edit.setEnabled(False)
        self.all_ranked_check = QCheckBox("Show all ranked", self)
        self.all_ranked_check.setToolTip("Also list ranked results that neither contain a search word "
                                         "nor come close in meaning (below the embedding model's "
                                         "similarity cut-off)")
        self.all_ranked_check.setVisible(False)
        self.count_label = QLabel(self)
        self.count_label.setObjectName("mutedLabel")

        filters = FlowLayout(self)
        filters.addWidget(group(self, "Conversation", self.conversation_combo))
        filters.addWidget(group(self, "Role", self.role_combo))
        filters.addWidget(group(self, "Kind", self.kind_combo))
        filters.addWidget(group(self, self.date_check, self.since_edit, "to", self.until_edit))
        filters.addWidget(self.deleted_check)
        filters.addWidget(group(self, self.as_of_check, self.as_of_edit))
        filters.addWidget(self.all_ranked_check)
        filters.addWidget(self.count_label)

    def _combo(self, items: tuple[str, ...]) -> QComboBox:
        combo = QComboBox(self)
        for item in items:
            combo.addItem(item, None if item == ANY else item)
        return combo

    def set_conversations(self, rows: Sequence[tuple[str, str]]) -> None:
        """Offer these (id, title) conversations by title; keeps the current choice if still there."""
        combo = self.conversation_combo
        current = combo.currentData()
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(ALL_CONVERSATIONS, None)
        for conv, title in rows:
            combo.addItem(title, conv)
            combo.setItemData(combo.count() - 1, conv, Qt.ItemDataRole.ToolTipRole)
        found = combo.findData(current)
        combo.setCurrentIndex(max(found, 0))
        combo.blockSignals(False)

    def dates(self) -> tuple[datetime | None, datetime | None]:
        """(since, until) when "From" is ticked: the local calendar days shown, as UTC instants."""
        if not self.date_check.isChecked():
            return None, None
        first, last = self.since_edit.date(), self.until_edit.date()
        since = datetime(first.year(), first.month(), first.day()).astimezone(UTC)
        until = datetime.combine(date(last.year(), last.month(), last.day()), time.max).astimezone(UTC)
        return since, until

    def as_of(self) -> datetime | None:
        """The end of the chosen local minute, in UTC, when "As of" is ticked."""
        if not self.as_of_check.isChecked():
            return None
        chosen = datetime.fromtimestamp(self.as_of_edit.dateTime().toSecsSinceEpoch()).astimezone()
        return chosen.replace(second=59, microsecond=999999).astimezone(UTC)
