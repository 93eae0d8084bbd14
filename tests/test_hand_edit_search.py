"""A hand-edited memory is found by a word only it holds, whatever the meaning search finds.

At 100,000 memories a fact written by hand with a new name was "not found within 60 s" (issue
#25): it was indexed at once, but its keyword hit was the only one, the z-scored keyword list
did not spread, and the only memory holding the word ranked like those that do not - below the
40 nearest in meaning, which at that size never include it.
"""

from __future__ import annotations

from typing import Any

from desktop_mem.engine.models import Operation
from desktop_mem.engine.store import front_matter

NAME = "zanzibarqqzkt"


def test_the_only_memory_with_a_rare_name_is_found_by_it(engine: Any) -> None:
    # More than the dense pool (40) of near-homonyms: closer in meaning to the bare name than the
    # fact is, and none of them holds the word itself.
    with engine._parts.writer.transaction(Operation.IMPORT, "Import near-homonyms", "global") as tx:
        for a in "bcdfghjk":
            for b in "lmnpqrs":
                tx.add(f"zanzibarqq{a}{b}t", conversation_id="global")
    engine.open_index()
    rel = f"entries/global/facts/hand-{NAME}.md"
    raw = front_matter.render({"id": f"hand-{NAME}", "role": "memory", "kind": "fact", "source": "manual",
                               "created_at": "2026-01-01T10:00:00Z"},
                              f"The user keeps a pet tortoise called {NAME}.")
    (engine.root / rel).write_text(raw, encoding="utf-8")
    assert engine.apply_external_changes([rel]) is not None  # what the watcher calls

    results = engine.search(NAME, top_k=3)

    assert results[0].memory.id == f"hand-{NAME}"
    assert results[0].scores.dense is None  # the meaning search did not reach it: the word did
