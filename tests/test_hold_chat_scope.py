"""The window, `serve` and `desktop-mem chat` read the global facts' vectors into memory when the
index opens (engine.hold_chat_scope), so the first chat turn's search does not wait for them
(0.3-0.8 s at 100,000 memories; issue #25). Real store, real chromadb, real e5."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.index.vector_index import VectorIndex

pytestmark = pytest.mark.timeout(300)


def test_the_first_chat_search_reads_only_its_own_conversation(
    make_config: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
) -> None:
    with MemoryEngine.open(make_config()) as eng:
        facts = [eng.add(f"The user owns a {thing}") for thing in ("kayak", "telescope", "sourdough starter")]
        eng.add("We talked about paddling on the lake", conversation_id="weekend", role="user")
        eng.open_index()
        read: list[list[str]] = []
        real_fetch = VectorIndex._fetch
        monkeypatch.setattr(VectorIndex, "_fetch",
                            lambda self, ids: read.append(list(ids)) or real_fetch(self, ids))
        eng.hold_chat_scope()
        assert sorted(i for part in read for i in part) == sorted(f.id for f in facts)
        read.clear()
        found = eng.search("what boat does the user have", conversation_id="weekend")
        assert found[0].memory.id == facts[0].id
        assert all(eng.get(i).conversation_id == "weekend" for part in read for i in part)  # global: held
