"""The memory editor over a real engine: save, validation, delete/restore, outside edits, conflicts."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.ui.memories.memory_editor import MemoryEditor


def _editor(qtbot: Any, engine: Any, runner: Any, answers: list[bool] | None = None) -> MemoryEditor:
    asked: list[bool] = answers if answers is not None else []

    def confirm(_parent: Any, _title: str, _text: str) -> bool:
        return asked.pop(0) if asked else False

    editor = MemoryEditor(engine, runner, confirm)
    qtbot.addWidget(editor)
    return editor


def _outside_edit(engine: Any, rel: str, old: str, new: str) -> None:
    """Edit the file like another editor would, then let the engine notice (from another thread)."""
    path: Path = engine.root / rel
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    watcher = threading.Thread(target=engine.apply_external_changes, args=([rel],))
    watcher.start()
    watcher.join()


def test_edit_and_save_writes_the_file_and_commits(qtbot: Any, indexed_engine: Any, runner: Any,
                                                   settle: Any) -> None:
    memory = indexed_engine.add("The user likes tea")
    editor = _editor(qtbot, indexed_engine, runner)
    editor.open_memory(memory)
    editor.body_edit.setPlainText("The user likes green tea")
    editor.kind_combo.setCurrentText("preference")
    assert editor.is_dirty()
    with qtbot.waitSignal(editor.saved):
        editor.save_button.click()
    on_disk = (indexed_engine.root / memory.path).read_text(encoding="utf-8")
    assert "The user likes green tea" in on_disk and "kind: preference" in on_disk
    assert not editor.is_dirty()
    assert indexed_engine.history(limit=1)[0].subject.startswith("Edit fact")
    assert indexed_engine.search("green tea")[0].memory.text == "The user likes green tea"


def test_validation_blocks_empty_text_and_past_expiry(qtbot: Any, indexed_engine: Any, runner: Any,
                                                      settle: Any) -> None:
    memory = indexed_engine.add("The user likes tea")
    editor = _editor(qtbot, indexed_engine, runner)
    editor.open_memory(memory)
    settle(runner)  # opening a fact reads its provenance line on the pool
    editor.body_edit.setPlainText("   ")
    editor.save()
    assert "needs some text" in editor.error_label.text()
    assert not runner.busy
    editor.body_edit.setPlainText("The user likes tea a lot")
    editor.expires_check.setChecked(True)
    editor.expires_edit.setDateTime(editor.expires_edit.dateTime().addYears(-5))
    editor.save()
    assert "Expiry must be later" in editor.error_label.text()
    assert "likes tea\n" in (indexed_engine.root / memory.path).read_text(encoding="utf-8")


def test_unknown_front_matter_keys_are_shown_and_kept(qtbot: Any, indexed_engine: Any, runner: Any) -> None:
    memory = indexed_engine.add("The user likes tea")
    path = indexed_engine.root / memory.path
    path.write_text(path.read_text(encoding="utf-8").replace("---\n\n", "mood: sunny\n---\n\n", 1),
                    encoding="utf-8")
    indexed_engine.apply_external_changes([memory.path])
    memory = indexed_engine.get(memory.id)
    editor = _editor(qtbot, indexed_engine, runner)
    editor.open_memory(memory)
    assert "mood: sunny" in editor.extra_view.toPlainText() and editor.extra_view.isReadOnly()
    editor.body_edit.setPlainText("The user likes black tea")
    with qtbot.waitSignal(editor.saved):
        editor.save()
    assert "mood: sunny" in path.read_text(encoding="utf-8")


def test_new_delete_and_restore(qtbot: Any, indexed_engine: Any, runner: Any) -> None:
    editor = _editor(qtbot, indexed_engine, runner)
    editor.new_memory("global")
    editor.body_edit.setPlainText("The user plays the cello")
    with qtbot.waitSignal(editor.saved) as created:
        editor.save()
    memory = created.args[0]
    assert indexed_engine.get(memory.id).text == "The user plays the cello"
    with qtbot.waitSignal(editor.saved):
        editor.delete_button.click()
    assert indexed_engine.get(memory.id).deleted and editor.delete_button.text() == "Restore"
    with qtbot.waitSignal(editor.saved):
        editor.delete_button.click()
    assert not indexed_engine.get(memory.id).deleted and editor.delete_button.text() == "Delete"


def test_an_outside_edit_reloads_the_open_memory(qtbot: Any, indexed_engine: Any, bridge: Any, runner: Any,
                                                 settle: Any) -> None:
    memory = indexed_engine.add("The user likes cats")
    editor = _editor(qtbot, indexed_engine, runner)
    bridge.store_changed.connect(editor.on_store_changed)
    editor.open_memory(memory)
    _outside_edit(indexed_engine, memory.path, "likes cats", "likes dogs")
    qtbot.waitUntil(lambda: editor.body_edit.toPlainText() == "The user likes dogs", timeout=5000)
    assert editor.banner.isHidden()


@pytest.mark.parametrize("keep_mine", [False, True])
def test_a_conflict_is_caught_and_never_overwrites_silently(qtbot: Any, indexed_engine: Any, runner: Any,
                                                            settle: Any, keep_mine: bool) -> None:
    memory = indexed_engine.add("The user likes cats")
    answers = [True]
    editor = _editor(qtbot, indexed_engine, runner, answers=answers)
    editor.open_memory(memory)
    editor.body_edit.setPlainText("The user likes birds")
    # Changed on disk after the editor loaded it; the editor is not subscribed, so only the hash tells.
    _outside_edit(indexed_engine, memory.path, "likes cats", "likes dogs")
    with qtbot.waitSignal(editor.conflict_shown):
        editor.save()
    path = indexed_engine.root / memory.path
    assert "likes dogs" in path.read_text(encoding="utf-8")
    assert not editor.banner.isHidden()
    assert "changed on disk" in editor.banner_label.text()
    assert editor.body_edit.toPlainText() == "The user likes birds"
    if keep_mine:
        with qtbot.waitSignal(editor.saved):
            editor.keep_button.click()
            assert editor.banner.isHidden(), "Keep mine dismisses the banner at once"
        assert "likes birds" in path.read_text(encoding="utf-8")
        assert indexed_engine.get(memory.id).text == "The user likes birds"
        assert answers == [True], "the banner was the question: Keep mine asks nothing more"
        assert not editor.is_dirty() and editor.banner.isHidden()
        editor.save()  # nothing left to save, and nothing asked again
        settle(runner)
        assert answers == [True] and editor.banner.isHidden()
    else:
        editor.reload_button.click()
        settle(runner)
        assert editor.body_edit.toPlainText() == "The user likes dogs"
        assert "likes dogs" in path.read_text(encoding="utf-8")


def test_edits_made_here_then_outside_show_the_conflict_banner(qtbot: Any, indexed_engine: Any, bridge: Any,
                                                               runner: Any) -> None:
    memory = indexed_engine.add("The user likes cats")
    editor = _editor(qtbot, indexed_engine, runner)
    bridge.store_changed.connect(editor.on_store_changed)
    editor.open_memory(memory)
    editor.body_edit.setPlainText("The user likes birds")
    with qtbot.waitSignal(editor.conflict_shown, timeout=5000):
        _outside_edit(indexed_engine, memory.path, "likes cats", "likes dogs")
    assert editor.body_edit.toPlainText() == "The user likes birds"


@pytest.mark.parametrize(("answer", "expected"),
                         [("redact", "[redacted:"), ("keep", "sk-proj-"), (None, None)])
def test_a_likely_secret_asks_before_anything_is_committed(qtbot: Any, indexed_engine: Any, runner: Any,
                                                          settle: Any, answer: str | None,
                                                          expected: str | None) -> None:
    memory = indexed_engine.add("The user's deploy notes")
    commits = len(indexed_engine.history(limit=100))
    editor = _editor(qtbot, indexed_engine, runner)
    asked: list[str] = []
    editor._ask_secret = lambda _parent, findings: asked.append(findings) or answer  # type: ignore[method-assign]
    editor.open_memory(memory)
    editor.body_edit.setPlainText("The deploy key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z")
    editor.save_button.click()
    settle(runner)
    assert asked and "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" not in asked[0], "findings are shown masked"
    on_disk = (indexed_engine.root / memory.path).read_text(encoding="utf-8")
    if expected is None:
        assert "deploy key" not in on_disk and len(indexed_engine.history(limit=100)) == commits
        assert "secret" in editor.error_label.text()
    else:
        assert expected in on_disk and len(indexed_engine.history(limit=100)) == commits + 1
