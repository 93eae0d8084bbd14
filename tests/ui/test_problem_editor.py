"""A broken file opens in the app as raw text with its parse error and can be fixed in place."""

from __future__ import annotations

from typing import Any

from desktop_mem.ui.memories.problem_editor import ProblemEditor


def test_a_broken_file_is_fixed_in_the_app_and_becomes_a_memory(qtbot: Any, indexed_engine: Any,
                                                                 runner: Any, settle: Any) -> None:
    bad = indexed_engine.root / "entries" / "global" / "facts" / "broken.md"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("---\nkind: [unclosed\n---\n\nThe user keeps bees\n", encoding="utf-8")
    indexed_engine.refresh()
    (problem,) = indexed_engine.problems()
    dialog = ProblemEditor(indexed_engine, runner, problem)
    qtbot.addWidget(dialog)
    settle(runner)
    assert dialog.text_edit.toPlainText() == bad.read_text(encoding="utf-8")
    assert "could not be read" in dialog.reason_label.text() and problem.reason in dialog.reason_label.text()

    fixes: list[str] = []
    dialog.fixed.connect(fixes.append)
    dialog.reason_label.setText("")
    dialog.text_edit.setPlainText("---\nkind: [still broken\n---\n\nThe user keeps bees\n")
    dialog.save_button.click()
    settle(runner)
    assert not fixes and "could not be read" in dialog.reason_label.text(), "still broken: a new reason"
    assert dialog.text_edit.toPlainText().startswith("---\nkind: [still broken")  # the text stays
    assert indexed_engine.problems() and "still broken" in bad.read_text(encoding="utf-8")

    commits_before = len(indexed_engine.history(limit=100))
    dialog.text_edit.setPlainText("---\nkind: fact\n---\n\nThe user keeps bees\n")
    with qtbot.waitSignal(dialog.fixed, timeout=10000) as fixed:
        dialog.save_button.click()
    assert fixed.args[0] == "entries/global/facts/broken.md"
    assert indexed_engine.problems() == []
    assert "The user keeps bees" in [m.text for m in indexed_engine.list_memories()]
    assert len(indexed_engine.history(limit=100)) == commits_before + 1, "the fix is one commit"
    assert indexed_engine.search("bees")[0].memory.text == "The user keeps bees"  # and indexed
