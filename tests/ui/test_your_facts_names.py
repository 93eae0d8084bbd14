"""The user's own facts are "Your facts" wherever the window names a scope (issue #39 item 8):
the Timeline's event list showed "global" beside a replaced fact."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

from desktop_mem.engine.models import GLOBAL_CONVERSATION, EventType, TimelineEvent
from desktop_mem.ui.timeline.timeline_model import EventListModel
from desktop_mem.ui.widgets.names import YOUR_FACTS, scope_title


def test_the_timeline_names_the_users_own_facts_and_conversations_by_title(qtbot: Any) -> None:
    model = EventListModel()
    model.titles = {"trip-to-lisbon": "Trip to Lisbon"}
    events = [TimelineEvent(EventType.UPDATE, "abc", "m1", GLOBAL_CONVERSATION, "entries/global/facts/a.md",
                            old_text="The user works as a teacher", new_text="The user works as a nurse"),
              TimelineEvent(EventType.ADD, "abc", "m2", "trip-to-lisbon", "entries/trip-to-lisbon/facts/b.md",
                            new_text="The user likes seafood")]
    model.show(events, None)
    shown = [model.data(model.index(row, 0), Qt.ItemDataRole.DisplayRole) for row in range(2)]
    assert f"·  {YOUR_FACTS}  ·" in shown[0] and "global" not in shown[0]
    assert "·  Trip to Lisbon  ·" in shown[1]
    assert scope_title(None, {}) == "?" and scope_title("x", {}) == "x"
