"""Issue #22: one secret gate for everything written. A key must not reach a file, a path, the
git history or the index by any side door: a conversation id, a conversation's title (a first
message), a client's name in front matter and trailers, a commit subject, or a fact the model
extracted from "my password is ...".
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import Operation, ValidationError
from tests.llm_roles import FACTS, SUMMARY, is_chat
from tests.scripted_llm import ScriptedLLM

KEY = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
PLAIN_KEY = "ghp_" + "A" * 36  # a well-known prefix whose random part looks plain


def _everywhere(root: Path) -> bytes:
    """Every byte the store holds: files (outside .git) and the whole git history."""
    history = subprocess.run(["git", "-C", str(root), "log", "-p", "--all", "--format=%B"],
                             capture_output=True, check=True).stdout
    objects = subprocess.run(["git", "-C", str(root), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    names = "\n".join(str(p) for p in root.rglob("*")).encode()
    files = b"".join(p.read_bytes() for p in root.rglob("*")
                     if p.is_file() and ".git" not in p.relative_to(root).parts)
    return history + objects + names + files


@pytest.mark.parametrize("secret", [KEY, PLAIN_KEY])
def test_a_key_given_as_a_conversation_id_is_refused_before_anything_is_written(
    engine: MemoryEngine, secret: str
) -> None:
    before = engine._parts.git.head()
    with pytest.raises(ValidationError, match="looks like a secret") as caught:
        engine.add("The user likes tea", conversation_id=secret)
    assert secret not in str(caught.value)
    assert engine._parts.git.head() == before
    assert secret.encode() not in _everywhere(engine.root)


def test_a_first_message_with_a_key_names_the_conversation_without_it(engine: MemoryEngine) -> None:
    conv = engine.new_conversation(f"my openai key is {KEY} please keep it")
    engine.rename_conversation(conv, f"the wifi password is BlueOtter42! and {PLAIN_KEY}")
    assert KEY not in conv
    for secret in (KEY, PLAIN_KEY, "BlueOtter42!"):
        assert secret.encode() not in _everywhere(engine.root), secret


def test_a_client_name_holding_a_key_reaches_neither_front_matter_nor_trailers(engine: MemoryEngine) -> None:
    memory = engine.add("The user likes tea", client=f"evil {KEY}", source="mcp")
    assert KEY not in (engine.root / memory.path).read_text(encoding="utf-8")
    assert KEY.encode() not in _everywhere(engine.root)


def test_a_commit_subject_and_trailer_holding_a_key_are_redacted(engine: MemoryEngine) -> None:
    with engine._parts.writer.transaction(Operation.ADD, conversation="global",
                                   trailers={"Client": f"x {PLAIN_KEY}"}) as tx:
        tx.add("The user likes coffee", conversation_id="global")
        tx.subject = f"Add fact: the key {KEY}"
    message = subprocess.run(["git", "-C", str(engine.root), "log", "-1", "--format=%B"],
                             capture_output=True, text=True, check=True).stdout
    assert "[redacted:openai_key]" in message and KEY not in message and PLAIN_KEY not in message


def test_a_password_said_in_chat_never_becomes_a_fact(
    chat_engine: MemoryEngine, scripted_llm: ScriptedLLM
) -> None:
    scripted_llm.script(FACTS, '["The user\'s bank password is hunter2", "The user banks with Argenta"]')
    scripted_llm.script(SUMMARY, "The user banks with Argenta.")
    scripted_llm.script(is_chat, "Noted.")
    outcomes: list[Any] = []
    chat_engine.subscribe_outcomes(outcomes.append)
    assert chat_engine.chat("bank", "my password for the bank is hunter2, and I bank with Argenta").ok
    assert chat_engine.wait_idle(30)
    facts = [m.text for m in chat_engine.list_memories(role="memory", include_deleted=True)]
    assert not any("password" in f for f in facts), facts
    assert b"hunter2" not in _everywhere(chat_engine.root)


def test_a_hand_made_file_with_a_key_in_its_name_or_front_matter_is_never_committed(
    engine: MemoryEngine,
) -> None:
    engine.add("The user likes tea")
    engine.close()
    facts = engine.root / "entries" / "global" / "facts"
    named = facts / f"20250101T000000Z__{PLAIN_KEY}.md"
    named.write_text("---\nid: 0123456789abcdef0123456789abcdef\nrole: memory\n---\n\nA plain fact\n",
                     encoding="utf-8")
    fronted = facts / "20250102T000000Z__fedcba9876543210fedcba9876543210.md"
    fronted.write_text(f"---\nid: fedcba9876543210fedcba9876543210\nrole: memory\napi_key: {KEY}\n---\n\n"
                       "Another plain fact\n", encoding="utf-8")
    good = facts / "20250103T000000Z__00112233445566778899aabbccddeeff.md"
    good.write_text("---\nid: 00112233445566778899aabbccddeeff\nrole: memory\n---\n\nA good hand edit\n",
                    encoding="utf-8")
    with MemoryEngine(engine.config) as eng:  # the start-up commit of edits made while closed
        tracked = subprocess.run(["git", "-C", str(eng.root), "ls-files"], capture_output=True, text=True,
                                 check=True).stdout
        assert good.name in tracked
        assert named.name not in tracked and fronted.name not in tracked
        history = subprocess.run(["git", "-C", str(eng.root), "log", "-p", "--all"], capture_output=True,
                                 check=True).stdout
        assert KEY.encode() not in history and PLAIN_KEY.encode() not in history
        notes = " ".join(eng.doctor().notes)
        assert "file name or front matter holds a likely secret" in notes
        assert KEY not in notes and PLAIN_KEY not in notes
