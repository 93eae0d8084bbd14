"""The timeline pane over a real store whose history holds every event type, a plain-git
replacement and a `git rm`: chips, paging, filters, diffs, lineage and the actions' commits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from PySide6.QtCore import QDate, Qt
from PySide6.QtWidgets import QMessageBox, QPlainTextEdit

from desktop_mem.engine.models import EventType
from desktop_mem.ui.engine_bridge import EngineBridge
from desktop_mem.ui.timeline.lineage_view import LineageView, show_lineage_dialog
from desktop_mem.ui.timeline.timeline_model import BY_HAND_ROLE, CHIPS_ROLE
from desktop_mem.ui.timeline.timeline_pane import TimelinePane
from tests.test_timeline_query import Built, build_history

DELETED = "background-color:#ffcdd2"
INSERTED = "background-color:#c8e6c9"


@pytest.fixture
def built(engine: Any) -> Built:
    return build_history(engine)


@pytest.fixture
def make_pane(qtbot: Any, engine: Any, runner: Any, settle: Any) -> Iterator[Callable[..., TimelinePane]]:
    """A loaded pane whose store changes arrive through a real EngineBridge, as in the app."""
    bridge = EngineBridge(engine)

    def factory(page_size: int = 100) -> TimelinePane:
        pane = TimelinePane(engine, runner, page_size=page_size)
        qtbot.addWidget(pane)
        bridge.store_changed.connect(pane.on_store_changed)
        pane.reload()
        settle(runner)
        return pane

    yield factory
    bridge.close()


def subjects(pane: TimelinePane) -> list[str]:
    return [pane.model.commit_at(r).subject for r in range(pane.model.rowCount())]  # type: ignore[union-attr]


def committed(qtbot: Any, pane: TimelinePane, runner: Any, settle: Any, do: Callable[[], Any]) -> None:
    """Do something that commits, and wait until the pane showed the new commit."""
    with qtbot.waitSignal(pane.page_loaded, timeout=20000):
        do()
    settle(runner)


def snapshot_text(dialog: Any) -> str:
    text: str = dialog.findChild(QPlainTextEdit, "memoryAtText").toPlainText()
    return text


def select(pane: TimelinePane, runner: Any, settle: Any, subject: str, kind: EventType | None = None,
           nth: int = 0) -> None:
    """Select the nth commit with this subject (and in it the first event of `kind`)."""
    rows = [r for r, s in enumerate(subjects(pane)) if s == subject]
    pane.select_commit(rows[nth])
    if kind is not None:
        commit = pane.current_commit()
        assert commit is not None
        pane.select_event(next(i for i, e in enumerate(commit.events) if e.type == kind))
    settle(runner)


def test_every_commit_newest_first_with_chips_and_the_by_hand_marker(
        qtbot: Any, qtmodeltester: Any, engine: Any, built: Built, make_pane: Any) -> None:
    pane = make_pane()
    qtmodeltester.check(pane.model)
    assert [pane.model.commit_at(r).sha for r in range(pane.model.rowCount())] == [  # type: ignore[union-attr]
        c.sha for c in engine.history(limit=200)]
    model = pane.model
    chips = {kind for r in range(model.rowCount()) for kind, _ in model.index(r, 0).data(CHIPS_ROLE)}
    assert chips == {t.value for t in EventType}
    by_hand = [s for r, s in enumerate(subjects(pane)) if model.index(r, 0).data(BY_HAND_ROLE)]
    assert by_hand == ["forget the cat", "switch colour by hand"]
    assert "by hand" in model.index(0, 0).data(0x03)  # the tooltip says why
    assert "outside" in pane.count_label.text() or "start of history" in pane.count_label.text()
    pane.resize(900, 500)
    assert not pane.commit_view.grab().isNull()  # the chip delegate paints without a Qt warning


def test_edits_in_an_external_editor_show_as_by_hand(qtbot: Any, engine: Any, built: Built, make_pane: Any,
                                                     runner: Any, settle: Any) -> None:
    pane = make_pane()
    dog = engine.get(built.dog)
    path = engine.root / dog.path
    path.write_text(path.read_text(encoding="utf-8").replace("User has a dog", "User has two dogs"),
                    encoding="utf-8")
    committed(qtbot, pane, runner, settle, lambda: engine.apply_external_changes([dog.path]))  # the watcher
    top = pane.model.commit_at(0)
    assert top is not None and top.subject.startswith("Edit outside the app")
    assert pane.model.index(0, 0).data(BY_HAND_ROLE)
    assert [e.type for e in top.events] == [EventType.EDIT]


def test_pages_arrive_as_the_list_scrolls(qtbot: Any, qtmodeltester: Any, engine: Any, built: Built,
                                          make_pane: Any, runner: Any, settle: Any) -> None:
    expected = [c.sha for c in engine.history(limit=200)]
    pane = make_pane(page_size=3)
    pane.commit_view.setFixedHeight(90)  # a short list: each page of 3 overflows it
    pane.show()
    qtbot.waitExposed(pane)
    settle(runner)
    assert 3 <= pane.model.rowCount() < len(expected)  # the view only fetches what fills it
    bar = pane.commit_view.verticalScrollBar()
    for _ in range(len(expected)):
        if not pane.model.canFetchMore(pane.model.index(-1, 0).parent()):
            break
        bar.setValue(bar.maximum())
        settle(runner)
    shown = [pane.model.commit_at(r).sha for r in range(pane.model.rowCount())]  # type: ignore[union-attr]
    assert shown == expected
    assert "start of history" in pane.count_label.text()
    qtmodeltester.check(pane.model)


def test_only_deletes_and_replacements(built: Built, make_pane: Any, runner: Any, settle: Any) -> None:
    pane = make_pane(page_size=2)
    pane.only_check.setChecked(True)
    settle(runner)
    while pane.model.cursor is not None:  # pages until the end, as scrolling would
        pane.model.fetchMore(pane.model.index(-1, 0).parent())
        settle(runner)
    assert subjects(pane) == [
        "forget the cat", "switch colour by hand", "Evict fact: User likes jazz",
        "Delete fact: User has a dog",
        "Update fact: User lives in Hamburg. -> User lives in Hamburg, Altona.",
        "Update fact: User lives in Munich. -> User lives in Hamburg.",
    ]


def test_filter_by_type_text_conversation_and_dates(built: Built, make_pane: Any, runner: Any,
                                                    settle: Any, qtbot: Any) -> None:
    pane = make_pane()
    for kind, action in pane.type_actions.items():
        action.setChecked(kind == EventType.SUMMARY)
    settle(runner)
    assert subjects(pane) == ["Update summary", "Update summary"]
    assert pane.types_button.text() == "SUMMARY"
    for action in pane.type_actions.values():
        action.setChecked(True)
    settle(runner)

    pane.search_edit.setText("colour")  # typed: the list follows after a short pause
    qtbot.waitUntil(lambda: subjects(pane) == ["switch colour by hand",
                                               "Add fact: User's favourite colour is blue"])
    pane.search_edit.clear()
    qtbot.waitUntil(lambda: len(subjects(pane)) == 16)

    pane.conversation_combo.setCurrentText("c1")
    settle(runner)
    assert len(subjects(pane)) == 8
    assert all(e.conversation_id == "c1" for r in range(8) for e in pane.model.commit_at(r).events)  # type: ignore[union-attr]
    pane.conversation_combo.setCurrentIndex(0)

    pane.since_edit.setDate(QDate(2024, 1, 1))
    pane.until_edit.setDate(QDate(2024, 1, 31))
    pane.dates_check.setChecked(True)
    settle(runner)
    assert subjects(pane) == ["switch colour by hand"]


def test_diff_of_an_edit_highlights_words_and_lists_front_matter(
        qtmodeltester: Any, built: Built, make_pane: Any, runner: Any, settle: Any) -> None:
    pane = make_pane()
    select(pane, runner, settle, "Edit fact: User lives in Munich.", EventType.EDIT)
    view = pane.diff_view
    assert view.details is not None and view.details.event.type == EventType.EDIT
    assert f'<span style="{DELETED}' in view.html["inline"] and ">Berlin</span>" in view.html["inline"]
    assert f'<span style="{INSERTED}' in view.html["inline"] and ">Munich</span>" in view.html["inline"]
    assert view.inline_view.toPlainText() == "User lives in BerlinMunich."
    view.side_check.setChecked(True)
    assert view.old_view.toPlainText() == "User lives in Berlin."
    assert view.new_view.toPlainText() == "User lives in Munich."
    assert view.text_stack.currentWidget() is view.sides
    qtmodeltester.check(view.fields_model)
    fields = view.fields_model
    assert [fields.index(r, 0).data() for r in range(fields.rowCount())] == ["updated_at"]
    assert fields.index(0, 1).data() == "added"

    view.raw_button.click()
    settle(runner)
    assert view.stack.currentWidget() is view.raw_view
    assert "-User lives in Berlin." in view.raw_view.toPlainText()
    assert "+User lives in Munich." in view.raw_view.toPlainText()
    view.raw_button.click()
    assert view.stack.currentWidget() is not view.raw_view


def test_diff_of_a_hand_made_update(built: Built, make_pane: Any, runner: Any, settle: Any) -> None:
    pane = make_pane()
    select(pane, runner, settle, "switch colour by hand", EventType.UPDATE)
    view = pane.diff_view
    assert ">blue</span>" in view.html["inline"] and ">green</span>" in view.html["inline"]
    fields = view.fields_model
    rows = {fields.index(r, 0).data(): (fields.index(r, 1).data(), fields.index(r, 3).data())
            for r in range(fields.rowCount())}
    assert rows == {"deleted_at": ("added", "2024-01-15T10:00:00+00:00"),
                    "replaced_by": ("added", "hand-green")}


def test_memory_text_is_shown_as_text_never_as_html(engine: Any, make_pane: Any, runner: Any,
                                                    settle: Any) -> None:
    engine.add('User said <img src="http://127.0.0.1:9/x.png"> & <b>bold</b>')
    pane = make_pane()
    select(pane, runner, settle, pane.model.commit_at(0).subject, EventType.ADD)  # type: ignore[union-attr]
    view = pane.diff_view
    assert "<img" not in view.html["inline"] and "&lt;img src=" in view.html["inline"]
    assert view.inline_view.toPlainText() == 'User said <img src="http://127.0.0.1:9/x.png"> & <b>bold</b>'


def test_lineage_of_the_selected_event_and_in_a_dialog(
        qtbot: Any, qtmodeltester: Any, built: Built, make_pane: Any, runner: Any, settle: Any) -> None:
    pane = make_pane()
    select(pane, runner, settle, "Update fact: User lives in Hamburg. -> User lives in Hamburg, Altona.",
           EventType.UPDATE)
    model = pane.lineage_view.model
    qtmodeltester.check(model)
    assert [model.step_at(r).memory_id for r in range(model.rowCount())] == [built.a, built.b, built.c]  # type: ignore[union-attr]
    assert [model.index(r, 2).data() for r in range(3)] == ["replaced", "replaced", "live"]
    assert [model.index(r, 0).data() for r in range(3)] == [
        "User lives in Munich.", "User lives in Hamburg.", "User lives in Hamburg, Altona."]
    created = [model.step_at(r).created_in for r in range(3)]  # type: ignore[union-attr]
    tips = [model.index(r, 0).data(Qt.ItemDataRole.ToolTipRole) for r in range(3)]
    assert all(c is not None and f"created in {c.sha[:8]}" in t for t, c in zip(tips, created, strict=True))
    assert model.index(1, 1).data() == "this memory"
    assert built.b in model.index(1, 0).data(Qt.ItemDataRole.ToolTipRole)  # the id: on hover

    dialog = show_lineage_dialog(None, runner, pane._engine, built.c)
    qtbot.addWidget(dialog)
    settle(runner)
    view = dialog.findChild(LineageView, "lineageView")
    assert view is not None and view.lineage is not None
    assert [s.memory_id for s in view.lineage.chain] == [built.a, built.b, built.c]
    assert view.model.index(2, 1).data() == "this memory"


def test_restore_a_git_rm_and_an_eviction(qtbot: Any, engine: Any, built: Built, make_pane: Any, runner: Any,
                                          settle: Any) -> None:
    pane = make_pane()
    select(pane, runner, settle, "forget the cat", EventType.DELETE)
    assert pane.restore_button.isEnabled() and not pane.revert_button.isEnabled()
    committed(qtbot, pane, runner, settle, pane.restore_button.click)
    assert subjects(pane)[:2] == ["Restore fact: User has a cat", "forget the cat"]
    assert not engine.get(built.cat).deleted
    assert pane.status_label.text() == "Restored."

    select(pane, runner, settle, "Evict fact: User likes jazz", EventType.EVICT)
    committed(qtbot, pane, runner, settle, pane.restore_button.click)
    top = pane.model.commit_at(0)
    assert top is not None and [e.type for e in top.events] == [EventType.RESTORE]
    assert top.events[0].memory_id == built.jazz and not engine.get(built.jazz).deleted


def test_revert_a_replacement(qtbot: Any, engine: Any, built: Built, make_pane: Any, runner: Any,
                              settle: Any) -> None:
    pane = make_pane()
    select(pane, runner, settle, "Update fact: User lives in Hamburg. -> User lives in Hamburg, Altona.",
           EventType.UPDATE)
    committed(qtbot, pane, runner, settle, pane.revert_button.click)
    assert subjects(pane)[0] == "Revert update: User lives in Hamburg, Altona. -> User lives in Hamburg."
    assert not engine.get(built.b).deleted and engine.get(built.c).deleted
    # The lineage shown follows the store: b is live again, c a tombstone.
    assert pane.lineage_view.lineage is not None and pane.lineage_view.lineage.current.live
    # and tells its whole story, the revert included (issue #39: "Never replaced, and replaced
    # nothing" beside the UPDATE and Revert rows of the same memory)
    qtbot.waitUntil(lambda: "Revert update" in pane.lineage_view.note_label.text(), timeout=10000)
    assert "Never replaced" not in pane.lineage_view.note_label.text()


def test_revert_and_restore_are_off_once_done_so_a_second_press_asks_nothing(
        qtbot: Any, engine: Any, built: Built, make_pane: Any, runner: Any, settle: Any) -> None:
    """Pressing Revert (or Restore) a second time used to ask a confusing "changed since" question
    about the app's own action. Once done, the button is off and says so, also when the event is
    selected again."""
    subject = "Update fact: User lives in Hamburg. -> User lives in Hamburg, Altona."
    pane = make_pane()
    select(pane, runner, settle, subject, EventType.UPDATE)
    committed(qtbot, pane, runner, settle, pane.revert_button.click)
    assert not pane.revert_button.isEnabled() and "already" in pane.revert_button.toolTip()
    select(pane, runner, settle, "forget the cat", EventType.DELETE)
    committed(qtbot, pane, runner, settle, pane.restore_button.click)
    assert not pane.restore_button.isEnabled()
    select(pane, runner, settle, subject, EventType.UPDATE)  # back to the reverted event
    assert not pane.revert_button.isEnabled()
    assert "already" in pane.status_label.text()
    heads = subjects(pane)[:2]
    assert heads[0].startswith("Restore") and heads[1].startswith("Revert update")


def test_restore_an_older_summary_version(qtbot: Any, engine: Any, built: Built, make_pane: Any, runner: Any,
                                          settle: Any) -> None:
    pane = make_pane()
    select(pane, runner, settle, "Update summary", EventType.SUMMARY, nth=1)  # the older one
    assert pane.summary_button.isEnabled()
    committed(qtbot, pane, runner, settle, pane.summary_button.click)
    assert subjects(pane)[0].startswith("Restore summary of c1 to")
    assert engine.summary("c1").text == "The user has a dog."


def test_open_as_it_was(built: Built, make_pane: Any, runner: Any, settle: Any, qtbot: Any) -> None:
    pane = make_pane()
    select(pane, runner, settle, "Edit fact: User lives in Munich.", EventType.EDIT)
    pane.open_button.click()
    settle(runner)
    dialog = pane.snapshot_dialog
    assert dialog is not None
    qtbot.addWidget(dialog)
    assert snapshot_text(dialog) == "User lives in Munich."

    select(pane, runner, settle, "forget the cat", EventType.DELETE)  # gone from that commit: shown before
    pane.open_button.click()
    settle(runner)
    qtbot.addWidget(pane.snapshot_dialog)
    assert snapshot_text(pane.snapshot_dialog) == "User has a cat"


@pytest.mark.parametrize("answer", [QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes])
def test_a_restore_of_something_changed_since_asks_first(
        qtbot: Any, engine: Any, built: Built, make_pane: Any, runner: Any, settle: Any,
        monkeypatch: pytest.MonkeyPatch, answer: QMessageBox.StandardButton) -> None:
    engine.delete(built.dog)
    tomb = engine.get(built.dog)
    path = engine.root / tomb.path
    path.write_text(path.read_text(encoding="utf-8").replace("User has a dog", "User has a big dog"),
                    encoding="utf-8")
    engine.apply_external_changes([tomb.path])  # the tombstone was edited after the delete
    asked: list[str] = []

    def question(_parent: Any, _title: str, text: str, *_args: Any) -> QMessageBox.StandardButton:
        asked.append(text)
        return answer

    monkeypatch.setattr(QMessageBox, "question", question)
    pane = make_pane()
    select(pane, runner, settle, "Delete fact: User has a dog", EventType.DELETE)  # the newest delete
    before = subjects(pane)
    done = pane.action_failed if answer == QMessageBox.StandardButton.No else pane.page_loaded
    with qtbot.waitSignal(done, timeout=20000):
        pane.restore_button.click()
    settle(runner)
    assert len(asked) == 1 and "edited after" in asked[0]
    if answer == QMessageBox.StandardButton.No:
        assert subjects(pane) == before and engine.get(built.dog).deleted
        assert pane.status_label.text() == "Nothing was changed."
    else:
        assert subjects(pane)[0] == "Restore fact: User has a big dog"
        assert not engine.get(built.dog).deleted


def test_the_memory_editor_opens_the_lineage(qtbot: Any, engine: Any, built: Built, runner: Any,
                                             settle: Any) -> None:
    from desktop_mem.ui.memories.memory_editor import MemoryEditor

    editor = MemoryEditor(engine, runner)
    qtbot.addWidget(editor)
    assert not editor.lineage_button.isEnabled()
    editor.open_memory(engine.get(built.b))
    editor.lineage_button.click()
    settle(runner)
    view = editor.findChild(LineageView, "lineageView")
    assert view is not None and view.lineage is not None
    assert [s.memory_id for s in view.lineage.chain] == [built.a, built.b, built.c]
    assert "1 earlier, 1 later" in view.note_label.text()
