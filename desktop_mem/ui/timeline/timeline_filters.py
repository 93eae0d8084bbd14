"""The Timeline's filter bar: conversation (or project), event types, dates, text, soft deletes
only, and who made the change; it wraps to fit a 1280-px screen and says when a filter changed
(a typed search once the user pauses)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from PySide6.QtCore import QDate, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QCheckBox, QComboBox, QLineEdit, QMenu, QSizePolicy, QToolButton, QWidget

from desktop_mem.engine.api import TimelineQuery
from desktop_mem.engine.models import EventType
from desktop_mem.ui.conversation_list import Conversation
from desktop_mem.ui.widgets.date_range import date_range_edits
from desktop_mem.ui.widgets.flow_layout import FlowLayout, group

ALL_CONVERSATIONS = "All conversations"
SEARCH_DELAY_MS = 300
SOURCE_FILTERS = (("All sources", None), ("AI tools (MCP)", "mcp"), ("desktop-mem", "app"),
                  ("Outside (git)", "git"))


class TimelineFilters(QWidget):
    """The filters as a TimelineQuery (`query()`); `changed` when the user sets one."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._setup_ui()
        self._connect_signals()

    def _setup_ui(self) -> None:
        self.conversation_combo = QComboBox(self)
        self.conversation_combo.addItem(ALL_CONVERSATIONS, None)
        self.conversation_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.conversation_combo.setMinimumContentsLength(14)
        self.types_button = QToolButton(self)
        self.types_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        types_menu = QMenu(self.types_button)
        self.type_actions: dict[EventType, QAction] = {}
        for kind in EventType:
            action = types_menu.addAction(kind.value)
            action.setCheckable(True)
            action.setChecked(True)
            self.type_actions[kind] = action
        self.types_button.setMenu(types_menu)
        self.dates_check = QCheckBox("From", self)
        self.since_edit, self.until_edit = date_range_edits(self)
        self.search_edit = QLineEdit(self)
        self.search_edit.setPlaceholderText("Search subjects and texts")
        self.search_edit.setClearButtonEnabled(True)
        self.only_check = QCheckBox("Only soft deletes and replacements", self)
        self.source_combo = QComboBox(self)  # who made the change: the app, an MCP tool, plain git
        for label, source in SOURCE_FILTERS:
            self.source_combo.addItem(label, source)
        self.search_timer = QTimer(self)
        self.search_timer.setSingleShot(True)
        self.search_timer.setInterval(SEARCH_DELAY_MS)
        filters = FlowLayout(self)  # wraps: the pane fits a 1280-px screen
        filters.setContentsMargins(0, 0, 0, 0)
        filters.addWidget(self.conversation_combo)
        filters.addWidget(self.types_button)
        filters.addWidget(group(self, self.dates_check, self.since_edit, "to", self.until_edit))
        self.search_edit.setMinimumWidth(140)
        self.search_edit.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        filters.addWidget(self.search_edit)
        filters.addWidget(self.only_check)
        filters.addWidget(self.source_combo)
        self._update_types_label()

    def _connect_signals(self) -> None:
        self.conversation_combo.currentIndexChanged.connect(self.changed)
        for action in self.type_actions.values():
            action.toggled.connect(self._on_type_action_toggled)
        self.dates_check.toggled.connect(self._on_dates_check_toggled)
        self.since_edit.dateChanged.connect(self.changed)
        self.until_edit.dateChanged.connect(self.changed)
        self.search_edit.textChanged.connect(self.search_timer.start)
        self.search_timer.timeout.connect(self.changed)
        self.only_check.toggled.connect(self.changed)
        self.source_combo.currentIndexChanged.connect(self.changed)

    def query(self) -> TimelineQuery:
        """The filters as set in the bar."""
        conversation = self.conversation_combo.currentData() or ALL_CONVERSATIONS
        types = {kind for kind, action in self.type_actions.items() if action.isChecked()}
        since = until = None
        if self.dates_check.isChecked():
            since = _local_midnight(self.since_edit.date())
            until = _local_midnight(self.until_edit.date()) + timedelta(days=1, microseconds=-1)
        return TimelineQuery(
            conversation=None if conversation == ALL_CONVERSATIONS else conversation,
            event_types=None if len(types) in (0, len(EventType)) else frozenset(types),
            since=since, until=until, text=self.search_edit.text().strip() or None,
            only_deletes_and_replacements=self.only_check.isChecked(),
            source=self.source_combo.currentData(),
        )

    def set_conversations(self, conversations: Sequence[Conversation]) -> None:
        """Offer the conversations (and projects) by title; the id is the item's data and tooltip."""
        combo = self.conversation_combo
        current = combo.currentData()
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(ALL_CONVERSATIONS, None)
        for conv in conversations:
            combo.addItem(conv.title, conv.id)
            combo.setItemData(combo.count() - 1, conv.id, Qt.ItemDataRole.ToolTipRole)
        if current is not None and combo.findData(current) < 0:
            combo.addItem(current, current)  # a filter stays as set, even if now empty
        combo.setCurrentIndex(max(combo.findData(current), 0))
        combo.blockSignals(False)

    @Slot(bool)
    def _on_type_action_toggled(self, _on: bool) -> None:
        self._update_types_label()
        self.changed.emit()

    def _update_types_label(self) -> None:
        checked = [k.value for k, a in self.type_actions.items() if a.isChecked()]
        label = "All types" if len(checked) in (0, len(EventType)) else ", ".join(checked)
        self.types_button.setText(label if len(label) <= 28 else f"{len(checked)} types")

    @Slot(bool)
    def _on_dates_check_toggled(self, on: bool) -> None:
        self.since_edit.setEnabled(on)
        self.until_edit.setEnabled(on)
        self.changed.emit()


def _local_midnight(day: QDate) -> datetime:
    """The start of `day` in local time, as an aware datetime."""
    return datetime(day.year(), day.month(), day.day()).astimezone()
