"""The editor shows when a fact was true and lets the user correct it; a bad date saves nothing."""

from __future__ import annotations

from typing import Any

from desktop_mem.ui.memories.memory_editor import MemoryEditor


def _editor(qtbot: Any, engine: Any, runner: Any) -> MemoryEditor:
    editor = MemoryEditor(engine, runner, lambda *_: False)
    qtbot.addWidget(editor)
    return editor


def test_the_editor_shows_and_saves_when_a_fact_was_true(qtbot: Any, engine: Any, runner: Any) -> None:
    ghent = engine.add("The user lives in Ghent")
    tomb, _leuven = engine.replace(ghent.id, "The user has lived in Leuven since March 2024")
    editor = _editor(qtbot, engine, runner)
    editor.open_memory(engine.get(tomb.id))
    assert editor.valid_to_edit.text() == tomb.valid_to
    assert f"– {tomb.valid_to[:10]}" in editor.info_label.text()

    fact = engine.add("The user works at Acme")
    editor.open_memory(fact)
    assert editor.valid_from_edit.text() == fact.valid_from and editor.valid_to_edit.text() == ""
    editor.valid_from_edit.setText("2019-09")
    editor.valid_to_edit.setText("2024-01-31")
    with qtbot.waitSignal(editor.saved):
        editor.save_button.click()
    saved = engine.get(fact.id)
    assert (saved.valid_from, saved.valid_to) == ("2019-09", "2024-01-31")
    assert "true 2019-09 – 2024-01-31" in editor.info_label.text()


def test_a_date_that_is_not_one_is_refused_before_anything_is_written(
        qtbot: Any, engine: Any, runner: Any, settle: Any) -> None:
    fact = engine.add("The user works at Acme")
    before = (engine.root / fact.path).read_bytes()
    editor = _editor(qtbot, engine, runner)
    editor.open_memory(fact)
    settle(runner)  # the provenance line is read on the pool when a fact opens
    editor.valid_from_edit.setText("last spring")
    assert editor.is_dirty()
    editor.save()
    assert "valid_from 'last spring' is not a date" in editor.error_label.text()
    editor.valid_from_edit.setText("2024-05")
    editor.valid_to_edit.setText("2023")
    editor.save()
    assert "before" in editor.error_label.text()
    assert not runner.busy and (engine.root / fact.path).read_bytes() == before


def test_the_timeline_says_from_when_a_change_holds(engine: Any) -> None:
    from desktop_mem.engine.models import EventType
    from desktop_mem.ui.timeline.timeline_model import describe

    ghent = engine.edit(engine.add("The user lives in Ghent").id, meta={"valid_from": "2019"})
    engine.replace(ghent.id, "The user has lived in Leuven since March 2024")
    [update] = [e for c in engine.history(limit=1) for e in c.events]
    assert update.type == EventType.UPDATE and update.valid_to == "2024-03"
    assert describe(update) == ("The user lives in Ghent → The user has lived in Leuven since March 2024"
                                " (from 2024-03)")
    fact = engine.add("The user works at Acme")
    engine.edit(fact.id, meta={"valid_from": "2019", "valid_to": "2025-06"})
    [edit] = [e for c in engine.history(limit=1) for e in c.events]
    assert describe(edit) == "The user works at Acme (true 2019 – 2025-06)"
