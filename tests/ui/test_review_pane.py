"""Review mode in the window: the badge counts waiting changes; the list accepts, edits or
rejects them, one commit each, on the writer thread."""

from __future__ import annotations

from typing import Any

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.ui.memories.review_pane import ReviewBadge, ReviewDialog
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat


def _engine_with_proposals(make_config: Any, scripted_llm: Any) -> MemoryEngine:
    engine = MemoryEngine(make_config(**{
        "llm.base_url": scripted_llm.base_url, "llm.model": "test-model", "llm.api_key": "test",
        "memory.review": "changes"}))
    engine.open_index()
    engine.add("The user lives in Ghent")
    engine.add("The user plays the cello")
    scripted_llm.script(FACTS, '["The user lives in Leuven", "The user no longer plays the cello"]')
    scripted_llm.script(RECONCILE, '[{"event": "UPDATE", "id": "0", "text": "The user lives in Leuven"}, '
                                   '{"event": "DELETE", "id": "1", "text": "The user plays the cello"}]')
    scripted_llm.script(SUMMARY, "Moved; stopped the cello.")
    scripted_llm.script(is_chat, "Noted!")
    engine.chat("talk", "I moved to Leuven and I stopped playing the cello")
    assert engine.wait_idle(30)
    return engine


def _facts(engine: MemoryEngine) -> list[str]:
    return sorted(m.text for m in engine.list_memories(role="memory"))


def test_the_badge_counts_and_the_list_accepts_and_rejects(qtbot: Any, make_config: Any, scripted_llm: Any,
                                                          runner: Any, settle: Any, monkeypatch: Any) -> None:
    engine = _engine_with_proposals(make_config, scripted_llm)
    try:
        assert len(engine.proposals()[0]) == 2
        badge = ReviewBadge(engine, runner)
        qtbot.addWidget(badge)
        settle(runner)
        assert badge.text() == "Review (2)" and not badge.isHidden()

        badge.click()
        dialog = badge.dialog
        assert isinstance(dialog, ReviewDialog)
        settle(runner)
        assert dialog.list.count() == 2
        rows = [dialog.list.item(i).text() for i in range(2)]
        update_row = next(i for i, t in enumerate(rows) if t.startswith("Update:"))
        dialog.list.setCurrentRow(update_row)
        from PySide6.QtWidgets import QInputDialog
        monkeypatch.setattr(QInputDialog, "getMultiLineText",
                            staticmethod(lambda *_a, **_k: ("The user lives in Leuven, Belgium", True)))
        dialog.edit_button.click()
        settle(runner)
        # (review mode "changes": the new fact the model added went in at once)
        assert _facts(engine) == ["The user lives in Leuven, Belgium", "The user no longer plays the cello",
                                  "The user plays the cello"]
        assert dialog.list.count() == 1 and dialog.list.item(0).text().startswith("Forget:")
        dialog.list.setCurrentRow(0)
        dialog.reject_button.click()
        settle(runner)
        assert dialog.list.count() == 0 and "The user plays the cello" in _facts(engine)
        badge.refresh()
        settle(runner)
        assert badge.isHidden() and badge.count == 0
        subjects = [c.subject for c in engine.history(limit=2)]
        assert subjects[0].startswith("Reject proposal: Forget") and subjects[1].startswith("Accept proposal")
        dialog.close()
    finally:
        engine.close()
