"""A temporary chat reads memory as any turn does and writes nothing: no turn files, no facts,
no summary, no commit, no index change (issue #35). Real store, git, index; scripted LLM."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

from desktop_mem.engine.facade import MemoryEngine
from tests.llm_roles import FACTS, SUMMARY, is_chat


def _tree(root: Path) -> dict[str, str]:
    """Every file of the memory (what git tracks or would: not the derived index files, whose
    SQLite shared-memory file changes on any read) with a digest of its bytes."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
                            check=True, capture_output=True, text=True).stdout
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest()
            for name in sorted(filter(None, listed.split("\0")))}


def _state(engine: MemoryEngine) -> tuple[Any, ...]:
    retriever = engine._parts.search_index.retriever
    tree = _tree(engine.root)
    assert any(name.startswith("entries/") for name in tree) or not engine.list_memories()
    return (tree, [c.sha for c in engine.history(limit=50)],
            retriever.vectors.count(), retriever.keywords.count(), engine._parts.git.dirty_paths())


def test_a_temporary_turn_reads_memory_and_writes_nothing(
    chat_engine: MemoryEngine, scripted_llm: Any
) -> None:
    scripted_llm.script(FACTS, '{"user": ["The user lives in Berlin"], "task": []}', times=1)
    scripted_llm.script(FACTS, '{"user": [], "task": []}')
    scripted_llm.script(SUMMARY, "The user lives in Berlin.")
    scripted_llm.script(is_chat, "Noted.", times=1)
    assert chat_engine.chat("trip", "I live in Berlin.").ok
    assert chat_engine.wait_idle(30)
    before = _state(chat_engine)
    assert before[2] > 0 and before[3] > 0, "the stored turns and the fact are indexed"

    scripted_llm.script(FACTS, '{"user": ["The user has a dog named Rex"], "task": []}')
    scripted_llm.script(is_chat, "You live in Berlin.")
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    reply = chat_engine.chat("trip", "Where do I live? Also, I have a dog named Rex.", temporary=True)
    assert reply.ok and reply.text == "You live in Berlin." and reply.temporary and reply.turn_id is None
    # It read memory: the stored fact went to the model.
    assert any("Berlin" in r.memory.text for r in reply.used.memories)
    sent = [r.body for r in scripted_llm.chat_requests if is_chat(r.body)][-1]
    assert "Berlin" in sent["messages"][0]["content"]
    assert sent["messages"][-1]["content"].startswith("Where do I live?")
    # And wrote nothing: same files, same commits, same index, nothing pending; no write path ran.
    assert chat_engine.wait_idle(30)
    assert _state(chat_engine) == before
    assert outcomes == []
    assert not any("Rex" in m.text for m in chat_engine.list_memories(include_deleted=True))
    assert not any(FACTS in r.system_text and "Rex" in r.last_user_text for r in scripted_llm.requests)


def test_a_temporary_conversation_is_never_created(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    scripted_llm.script(is_chat, "Hello.")
    before = _state(chat_engine)
    reply = chat_engine.chat("scratch", "Hi there", temporary=True)
    assert reply.ok and reply.text == "Hello."
    assert chat_engine.wait_idle(30)
    assert _state(chat_engine) == before
    assert "scratch" not in chat_engine.conversations()


def test_a_read_only_store_can_have_a_temporary_chat(chat_engine: MemoryEngine, scripted_llm: Any) -> None:
    chat_engine.add("The user lives in Berlin", conversation_id="trip")
    reader = MemoryEngine.open(chat_engine.config, read_only=True)  # another process holds the writer
    try:
        reader.open_index()
        scripted_llm.script(is_chat, "In Berlin.")
        reply = reader.chat("trip", "Where do I live?", temporary=True)
        assert reply.ok and reply.temporary
        assert any("Berlin" in r.memory.text for r in reply.used.memories)
    finally:
        reader.close()
