"""Importing what people bring from other tools: Claude's data export and mem0 / OpenMemory
exports, in their real shapes, the same transactional way as the ChatGPT importer: a dry run
that writes nothing, one commit, re-import adds nothing, secrets checked."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.store.secrets_scan import SecretDetectedError
from desktop_mem.engine.transfer.importers import ImportFileError, apply_import, plan_import

ACCOUNT = "5c1c4a8e-0000-4000-8000-00000000acc7"
PROJECT = "7d0e9b1a-0000-4000-8000-000000000p01"


def claude_conversations() -> list[dict[str, Any]]:
    """conversations.json as Claude's export writes it (2025 shape: `content` blocks beside
    the flat `text`)."""
    return [
        {
            "uuid": "c0a1", "name": "Moving to Ghent", "created_at": "2025-03-01T09:00:00.000000Z",
            "updated_at": "2025-03-01T09:05:00.000000Z", "account": {"uuid": ACCOUNT},
            "chat_messages": [
                {"uuid": "m1", "sender": "human", "text": "I am moving to Ghent in April.",
                 "content": [{"type": "text", "text": "I am moving to Ghent in April.",
                              "start_timestamp": "2025-03-01T09:00:00Z", "citations": []}],
                 "created_at": "2025-03-01T09:00:00.000000Z", "attachments": [], "files": []},
                {"uuid": "m2", "sender": "assistant", "text": "",
                 "content": [{"type": "tool_use", "name": "web_search", "input": {"q": "Ghent"}},
                             {"type": "tool_result", "name": "web_search", "content": []},
                             {"type": "text", "text": "Ghent is a lovely city."}],
                 "created_at": "2025-03-01T09:00:10.000000Z", "attachments": [], "files": []},
                {"uuid": "m3", "sender": "human", "text": "",
                 "content": [], "created_at": "2025-03-01T09:01:00.000000Z",
                 "attachments": [{"file_name": "lease.pdf", "file_size": 100}], "files": []},
            ],
        },
        {"uuid": "c0a2", "name": "", "created_at": "2025-03-02T10:00:00Z", "chat_messages": []},
        {"uuid": "c0a3", "name": "Old shape", "created_at": "2024-05-01T10:00:00Z",
         "chat_messages": [{"uuid": "o1", "sender": "human", "text": "My cat is called Miso.",
                            "created_at": "2024-05-01T10:00:00Z"},
                           {"uuid": "o2", "sender": "system", "text": "?", "created_at": None}]},
    ]


def claude_memories() -> list[dict[str, Any]]:
    return [{
        "conversations_memory": "**Work context**\n\nThe user is a nurse at the university hospital. "
                                "They prefer short answers.\n\n**Personal**\n\n- Has a daughter, Lena\n",
        "project_memories": {PROJECT: "Planning a garden. Wants native plants."},
        "account_uuid": ACCOUNT,
    }]


def claude_zip(tmp_path: Path, conversations: Any = None) -> Path:
    path = tmp_path / "data-2025-11-20-10-00-00-batch-0000.zip"
    with zipfile.ZipFile(path, "w") as archive:
        folder = "data-2025-11-20-10-00-00/"
        archive.writestr(folder + "conversations.json",
                         json.dumps(claude_conversations() if conversations is None else conversations))
        archive.writestr(folder + "memories.json", json.dumps(claude_memories()))
        archive.writestr(folder + "projects.json", json.dumps([{"uuid": PROJECT, "name": "Garden"}]))
        archive.writestr(folder + "users.json", json.dumps([{"uuid": ACCOUNT, "full_name": "A"}]))
    return path


def _texts(engine: MemoryEngine, role: str) -> list[str]:
    return sorted(m.text for m in engine.list_memories() if m.role == role)


def test_claude_export_dry_run_says_what_and_writes_nothing(engine: MemoryEngine, tmp_path: Path) -> None:
    commits = engine._parts.git.count()
    plan = plan_import(engine._parts, claude_zip(tmp_path))
    assert plan.format == "claude"
    # two chats with text, the user's own facts (global) and the Garden project's memory
    assert (plan.conversations, plan.turns) == (4, 3)
    # Claude's own memory note becomes facts: headings are context, each statement one fact
    assert plan.facts == 5
    reasons = {s.where: s.reason for s in plan.skipped}
    assert "has no text" in reasons["conversation 1 'Moving to Ghent': message 3"]
    assert "conversation 2 'Untitled'" in reasons
    assert "neither human nor assistant" in reasons["conversation 3 'Old shape': message 2"]
    assert any("tool calls" in n for n in plan.notes)
    assert engine._parts.git.count() == commits and engine.list_memories() == []


def test_claude_export_imports_in_one_commit_and_again_adds_nothing(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    path = claude_zip(tmp_path)
    before = engine._parts.git.count()
    apply_import(engine._parts, plan_import(engine._parts, path))
    assert engine._parts.git.count() == before + 1
    assert engine.history(limit=1)[0].trailers["Operation"] == "import"
    ghent = next(c for c in engine.conversations() if engine.conversation_title(c) == "Moving to Ghent")
    assert [(m["role"], m["content"]) for m in engine.messages(ghent)] == [
        ("user", "I am moving to Ghent in April."), ("assistant", "Ghent is a lovely city.")]
    facts = {m.text: m for m in engine.list_memories() if m.role == "memory"}
    assert set(facts) == {"The user is a nurse at the university hospital.", "They prefer short answers.",
                          "Has a daughter, Lena", "Planning a garden.", "Wants native plants."}
    assert facts["Has a daughter, Lena"].conversation_id == "global"  # the user's, in every chat
    garden = facts["Planning a garden."].conversation_id
    assert engine.conversation_title(garden) == "Garden"  # the project's memory stays with it

    again = plan_import(engine._parts, path)
    assert again.turns == again.facts == again.conversations == 0
    assert apply_import(engine._parts, again).commit is None and engine._parts.git.count() == before + 1


def test_claude_conversations_json_alone_is_recognised(engine: MemoryEngine, tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(claude_conversations()), encoding="utf-8")
    plan = plan_import(engine._parts, path)
    assert plan.format == "claude" and (plan.conversations, plan.turns, plan.facts) == (2, 3, 0)
    memories = tmp_path / "memories.json"
    memories.write_text(json.dumps(claude_memories()), encoding="utf-8")
    alone = plan_import(engine._parts, memories)
    assert alone.format == "claude" and (alone.turns, alone.facts) == (0, 5)


def test_a_secret_in_a_claude_export_is_caught_before_anything_is_written(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    convs = claude_conversations()
    convs[0]["chat_messages"][0]["content"][0]["text"] = (
        "my key is sk-proj-Q3v9XcT2LmN8bR4kW7yZ1aE5fH6jP0sD")
    with pytest.raises(SecretDetectedError):
        plan_import(engine._parts, claude_zip(tmp_path, convs), secrets="ask")
    redacted = plan_import(engine._parts, claude_zip(tmp_path, convs), secrets="redact")
    apply_import(engine._parts, redacted)
    assert all("Q3v9XcT2LmN8bR4kW7yZ1aE5fH6jP0sD" not in m.text for m in engine.list_memories())


def test_a_zip_without_an_export_inside_is_refused_clearly(engine: MemoryEngine, tmp_path: Path) -> None:
    path = tmp_path / "photos.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.jpg", b"\xff\xd8")
    with pytest.raises(ImportFileError, match="no conversations.json or memories.json"):
        plan_import(engine._parts, path)


# ---------------------------------------------------------------------------------- mem0


def mem0_get_all() -> dict[str, Any]:
    """What mem0's `client.get_all(user_id=...)` (platform v1/v2 and OSS) returns."""
    return {"results": [
        {"id": "8f1e0c3a-0000-4000-8000-000000000001", "memory": "Is a vegetarian",
         "hash": "a1", "metadata": None, "categories": ["food"], "user_id": "alex",
         "created_at": "2025-06-01T10:00:00.000000-07:00", "updated_at": "2025-06-01T10:00:00-07:00"},
        {"id": "8f1e0c3a-0000-4000-8000-000000000002", "memory": "Allergic to nuts", "hash": "a2",
         "metadata": {"source": "chat"}, "categories": ["health"], "user_id": "alex",
         "created_at": "2025-06-01T10:00:01-07:00", "updated_at": None},
        {"id": "8f1e0c3a-0000-4000-8000-000000000003", "memory": "", "user_id": "alex"},
    ]}


def openmemory_zip(tmp_path: Path) -> Path:
    """OpenMemory's backup export (POST /api/v1/backup/export): memories.json + memories.jsonl.gz."""
    data = {
        "user": {"id": "u1", "user_id": "alex", "name": None, "email": None},
        "apps": [{"id": "app1", "name": "openmemory"}],
        "categories": [{"id": "cat1", "name": "personal"}],
        "memories": [
            {"id": "m-1", "user_id": "u1", "app_id": "app1", "content": "Lives in Leuven",
             "metadata": {}, "state": "active", "created_at": "2025-07-01T08:00:00+00:00",
             "updated_at": "2025-07-01T08:00:00+00:00", "archived_at": None, "deleted_at": None,
             "category_ids": ["cat1"]},
            {"id": "m-2", "user_id": "u1", "app_id": "app1", "content": "Lives in Ghent",
             "metadata": {}, "state": "deleted", "created_at": "2025-01-01T08:00:00+00:00",
             "updated_at": "2025-07-01T08:00:00+00:00", "archived_at": None,
             "deleted_at": "2025-07-01T08:00:00+00:00", "category_ids": []},
        ],
        "memory_categories": [{"memory_id": "m-1", "category_id": "cat1"}],
        "status_history": [], "access_controls": [],
        "export_meta": {"version": "1", "generated_at": "2025-11-20T10:00:00+00:00"},
    }
    path = tmp_path / "memories_export_alex.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("memories.json", json.dumps(data))
        archive.writestr("memories.jsonl.gz", b"\x1f\x8b")
    return path


def test_mem0_get_all_json_imports_the_user_facts(engine: MemoryEngine, tmp_path: Path) -> None:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(mem0_get_all()), encoding="utf-8")
    before = engine._parts.git.count()
    plan = plan_import(engine._parts, path)
    assert plan.format == "mem0" and plan.facts == 2
    assert {s.where: s.reason for s in plan.skipped} == {"memory 3": 'has no "memory" (or "content") text'}
    apply_import(engine._parts, plan)
    assert engine._parts.git.count() == before + 1
    facts = [m for m in engine.list_memories() if m.role == "memory"]
    assert sorted(m.text for m in facts) == ["Allergic to nuts", "Is a vegetarian"]
    assert all(m.conversation_id == "global" and m.source == "import" for m in facts)
    assert plan_import(engine._parts, path).facts == 0  # again: nothing new


def test_openmemory_export_keeps_deleted_memories_deleted(engine: MemoryEngine, tmp_path: Path) -> None:
    plan = plan_import(engine._parts, openmemory_zip(tmp_path))
    assert plan.format == "mem0"
    assert any("archived or deleted" in n for n in plan.notes)
    apply_import(engine._parts, plan)
    live = [m.text for m in engine.list_memories() if m.role == "memory"]
    assert live == ["Lives in Leuven"]  # the deleted one is never told to the model
    gone = [m for m in engine.list_memories(include_deleted=True) if m.text == "Lives in Ghent"]
    assert len(gone) == 1 and gone[0].deleted_at is not None
    assert gone[0].path.split("/")[2] == "deleted"  # restorable from deleted/, never destroyed


def test_the_cli_imports_a_claude_export_with_a_dry_run_first(tmp_path: Path) -> None:
    from desktop_mem.cli.main import main

    store = tmp_path / "store"
    path = claude_zip(tmp_path)
    assert main(["--store", str(store), "import", str(path), "--dry-run"]) == 0
    assert not (store / "entries").exists()
    assert main(["--store", str(store), "import", str(path), "--format", "claude"]) == 0
    assert main(["--store", str(store), "import", str(path), "--format", "nonsense"]) != 0
