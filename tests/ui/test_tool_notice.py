"""The desktop app while an AI tool writes through MCP: the app serves /mcp on loopback, a
`desktop-mem mcp` process an MCP client spawned forwards to it, and the window shows a notice
with Undo and the timeline a source chip and filter."""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest

from desktop_mem.engine.store.store_lock import read_holder
from desktop_mem.ui.chat.tool_notice import notice_text
from desktop_mem.ui.main_window import MainWindow
from desktop_mem.ui.store_session import ENDPOINT_IDLE_MS
from desktop_mem.ui.timeline.timeline_model import SOURCE_ROLE
from desktop_mem.ui.workspace import TIMELINE_TAB
from tests.mcp_clients import CLAUDE, call, stdio_session

pytestmark = pytest.mark.timeout(300)


def _in_background(fn: Any) -> dict[str, Any]:
    """Run an MCP client scenario off the GUI thread; the test keeps the event loop turning."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = anyio.run(fn)
        except BaseException as exc:  # reported by the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    box["thread"] = thread
    return box


def test_mcp_writes_through_the_open_app_show_a_notice_with_undo_and_a_timeline_chip(
    qtbot: Any, opened_window: MainWindow
) -> None:
    window = opened_window
    engine = window.engine
    assert engine is not None and not engine.read_only
    qtbot.waitUntil(lambda: "endpoint" in read_holder(engine.root), timeout=30000)
    assert read_holder(engine.root)["endpoint"].startswith("unix:")  # a private socket (issue #22)

    async def claude_adds() -> dict[str, Any]:
        async with stdio_session(engine.root, CLAUDE) as session:
            return await call(session, "add_memories",
                              texts=["Prefers window seats", "Flies out of Schiphol"])

    box = _in_background(claude_adds)
    qtbot.waitUntil(lambda: not box["thread"].is_alive(), timeout=120000)
    assert "error" not in box, box.get("error")
    ids = [m["id"] for m in box["result"]["added"]]
    assert all(engine.get(i).source == "mcp" and engine.get(i).extra["client"] == "Claude Desktop"
               for i in ids)  # the app's own engine wrote them

    notice = window.tool_notice
    assert notice is not None
    # the batch is one commit, one change (all or nothing, issue #22)
    qtbot.waitUntil(lambda: notice.isVisible() and len(notice.changes) == 1, timeout=10000)
    assert notice.label.text() == "Claude Desktop added 2 memories"
    assert notice.isVisibleTo(window) and not notice.isWindow()  # inside the window, not a dialog

    ws = window.workspace
    assert ws is not None
    window.show_tab(TIMELINE_TAB)  # the user opens the Timeline (a hidden one loads when first shown)
    timeline = ws.timeline
    qtbot.waitUntil(lambda: timeline.model.rowCount() >= 1
                    and timeline.model.index(0, 0).data(SOURCE_ROLE) == "Claude Desktop · MCP", timeout=20000)
    timeline.source_combo.setCurrentIndex(timeline.source_combo.findData("mcp"))
    qtbot.waitUntil(lambda: timeline.model.rowCount() == 1 and not timeline.model.loading, timeout=20000)
    chips = {timeline.model.index(r, 0).data(SOURCE_ROLE) for r in range(timeline.model.rowCount())}
    assert chips == {"Claude Desktop · MCP"}

    with qtbot.waitSignal(notice.undone, timeout=30000) as undone:
        notice.undo_button.click()
    assert undone.args == [2] and not notice.isVisible()
    assert all(engine.get(i).deleted for i in ids)
    assert [c.subject.split(":")[0] for c in engine.history(limit=2)] == ["Delete fact", "Delete fact"]


def test_notice_text_counts_by_operation() -> None:
    from desktop_mem.engine.models import Operation, StoreChange

    changes = [StoreChange(Operation.ADD, ("a",), None, None, source="mcp", client="Cursor"),
               StoreChange(Operation.ADD, ("b", "c"), None, None, source="mcp", client="Cursor"),
               StoreChange(Operation.DELETE, ("d",), None, None, source="mcp", client="Cursor")]
    assert notice_text(changes) == "Cursor added 3 memories and deleted 1 memory"
    assert notice_text([StoreChange(Operation.UPDATE, ("n", "o"), None, None, source="mcp")]) == \
        "An AI tool updated 1 memory"


def test_the_loopback_endpoint_starts_once_the_user_pauses_typing(qtbot: Any,
                                                                  opened_window: MainWindow) -> None:
    """Loading the endpoint's server holds the GIL up to ~90 ms at a time: it waits until nobody
    types (search-as-you-type froze 150-200 ms when it started with the index)."""
    window = opened_window
    engine = window.engine
    assert engine is not None and window.workspace is not None
    search = window.workspace.browser.search_edit
    qtbot.waitUntil(lambda: window.status.index_label.text() == "Index ready", timeout=60000)
    typed_until = time.monotonic() + 2 * ENDPOINT_IDLE_MS / 1000
    while time.monotonic() < typed_until:
        search.setText(search.text() + "t")
        qtbot.wait(ENDPOINT_IDLE_MS // 5)
        assert "endpoint" not in read_holder(engine.root), "the endpoint started while the user typed"
    qtbot.waitUntil(lambda: "endpoint" in read_holder(engine.root), timeout=30000)
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)  # the searches typed above answered


def test_undo_of_an_ai_tools_update_is_one_commit_and_refused_after_a_later_edit(engine: Any) -> None:
    from desktop_mem.api import mcp_tools
    from desktop_mem.engine.models import ConflictError, Operation, StoreChange
    from desktop_mem.ui.chat.tool_notice import undo_changes

    changes: list[StoreChange] = []
    engine.subscribe(changes.append)
    ghent = engine.add("User lives in Ghent")
    mcp_tools.update(engine, ghent.id, "User lives in Leuven", "Claude Desktop")
    head = engine._parts.git.head()
    assert undo_changes(engine, changes[-1:]) == 1
    assert engine.history(limit=2)[1].sha == head and changes[-1].operation == Operation.REVERT_UPDATE
    assert [m.text for m in engine.list_memories(role="memory")] == ["User lives in Ghent"]

    update = mcp_tools.update(engine, ghent.id, "User lives in Bruges", "Claude Desktop")
    made = changes[-1]
    engine.edit(update["updated"]["id"], text="User lives in Bruges, by the canal")
    head = engine._parts.git.head()
    with pytest.raises(ConflictError):
        undo_changes(engine, [made])
    assert engine._parts.git.head() == head, "refused: nothing changed"
