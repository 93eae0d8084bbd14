"""Import (ChatGPT export, JSON memories, Markdown bullets) and export (JSON, zip) on real stores."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import Operation, ValidationError
from desktop_mem.engine.transfer.exporters import export_json, export_zip
from desktop_mem.engine.transfer.importers import ImportFileError, apply_import, plan_import
from tests.llm_roles import FACTS


def node(nid: str, role: str | None, text: Any, parent: str | None, children: list[str],
         t: float | None = None, content_type: str = "text") -> dict[str, Any]:
    message = None
    if role is not None:
        parts = text if isinstance(text, list) else [text]
        message = {"id": nid, "author": {"role": role}, "create_time": t,
                   "content": {"content_type": content_type, "parts": parts}, "metadata": {}}
    return {"id": nid, "message": message, "parent": parent, "children": children}


def chatgpt_export() -> list[Any]:
    trip = {
        "title": "Trip to Rome", "create_time": 1_700_000_000.0, "conversation_id": "conv-trip",
        "current_node": "a2",
        "mapping": {
            "root": node("root", None, None, None, ["sys"]),
            "sys": node("sys", "system", "", "root", ["u1"]),
            "u1": node("u1", "user", "I am planning a trip to Rome in May", "sys", ["a1"], 1_700_000_010.0),
            "a1": node("a1", "assistant", "Rome in May is lovely.", "u1", ["u2-old", "u2"], 1_700_000_020.0),
            # an edited message: the old branch is not what the user saw last
            "u2-old": node("u2-old", "user", "Where should I eat?", "a1", [], 1_700_000_030.0),
            "u2": node("u2", "user", [{"asset_pointer": "file-service://x"}], "a1", ["t1"], 1_700_000_031.0,
                       "multimodal_text"),
            "t1": node("t1", "tool", "search results", "u2", ["a2"], 1_700_000_032.0),
            "a2": node("a2", "assistant", "Try Trastevere for dinner.", "t1", [], 1_700_000_040.0),
        },
    }
    work = {
        "title": "Work", "create_time": 1_700_100_000.0, "id": "conv-work",
        "mapping": {  # no current_node: walk from the root
            "r": node("r", None, None, None, ["w1"]),
            "w1": node("w1", "user", "My manager is called Dana", "r", ["w2"], 1_700_100_010.0),
            "w2": node("w2", "assistant", ["Noted.", "Dana is your manager."], "w1", [], None),
        },
    }
    return [trip, "not a conversation", work]


@pytest.fixture
def chatgpt_file(tmp_path: Path) -> Path:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export()), encoding="utf-8")
    return path


def test_chatgpt_dry_run_reports_and_writes_nothing(engine: MemoryEngine, chatgpt_file: Path) -> None:
    commits = engine._parts.git.count()
    plan = plan_import(engine._parts, chatgpt_file)
    assert plan.format == "chatgpt"
    assert (plan.conversations, plan.turns, plan.facts) == (2, 5, 0)
    reasons = {s.where: s.reason for s in plan.skipped}
    assert reasons["conversation 1 'Trip to Rome': message 5"] == "has no text parts (only images or files)"
    assert "conversation 2" in reasons and "mapping" in reasons["conversation 2"]
    assert any("system, tool" in n for n in plan.notes)
    assert any("Rome in May is lovely" in line for line in plan.preview())
    assert engine._parts.git.count() == commits
    assert engine.list_memories() == []
    assert not (engine.root / "entries").exists()


def test_chatgpt_import_makes_one_commit_and_reimport_adds_nothing(
    engine: MemoryEngine, chatgpt_file: Path
) -> None:
    before = engine._parts.git.count()
    seen: list[tuple[int, int]] = []
    plan = plan_import(engine._parts, chatgpt_file)
    result = apply_import(engine._parts, plan, progress=lambda d, t: seen.append((d, t)))
    assert engine._parts.git.count() == before + 1
    head = engine.history(limit=1)[0]
    assert head.subject == "Import conversations.json: 2 conversations, 5 turns, 0 facts"
    assert head.trailers["Operation"] == "import"
    assert seen[-1] == (5, 5)
    trip = [c for c in engine.conversations() if engine.conversation_title(c) == "Trip to Rome"]
    assert len(trip) == 1
    turns = engine.messages(trip[0])
    # the branch the user last saw, in order, without system/tool/image-only messages
    assert [(m["role"], m["content"]) for m in turns] == [
        ("user", "I am planning a trip to Rome in May"), ("assistant", "Rome in May is lovely."),
        ("assistant", "Try Trastevere for dinner."),
    ]
    work = next(c for c in engine.conversations() if engine.conversation_title(c) == "Work")
    assert [m["content"] for m in engine.messages(work)] == [
        "My manager is called Dana", "Noted.\n\nDana is your manager."]
    assert all(m.source == "import" for m in result.memories)

    again = plan_import(engine._parts, chatgpt_file)
    assert (again.turns, again.conversations, again.already_present) == (0, 0, 5)
    second = apply_import(engine._parts, again)
    assert second.commit is None and engine._parts.git.count() == before + 1
    assert len(engine.list_memories()) == 5


def test_chatgpt_import_can_extract_facts_with_the_llm(
    make_config: Callable[..., Any], scripted_llm: Any, chatgpt_file: Path
) -> None:
    scripted_llm.script(FACTS, '["The user\'s manager is called Dana"]')
    scripted_llm.default_reply = "[]"
    with MemoryEngine(make_config(**{"llm.base_url": scripted_llm.base_url, "llm.model": "test-model",
                                                  "llm.api_key": "test", "llm.timeout": 5})) as eng:
        plan = eng.transfer.plan_import(chatgpt_file, extract=True)
        result = eng.transfer.apply_import(plan)
        facts = eng.list_memories(role="memory")
        assert result.notes == () or all("extraction" not in n for n in result.notes)
        assert result.facts == len(facts) >= 1
        assert "The user's manager is called Dana" in {f.text for f in facts}
        assert all(f.source == "import" for f in facts)
        assert eng.history(limit=1)[0].subject.endswith(f"{result.facts} facts")
        assert eng.transfer.apply_import(eng.transfer.plan_import(chatgpt_file, extract=True)).commit is None


def test_json_memory_list_imports_good_entries_and_reports_bad_ones(
    engine: MemoryEngine, tmp_path: Path
) -> None:
    path = tmp_path / "memories.json"
    path.write_text(json.dumps([
        {"text": "User lives in Lisbon"},
        {"content": "User loves fado", "type": "preference", "conversation_id": "Trip to Rome"},
        {"text": "Dinner booked", "kind": "context", "created_at": "2024-05-01T19:00:00Z"},
        {"text": ""},
        {"text": "Mystery", "kind": "rumour"},
        ["not", "an", "object"],
        {"text": "User said hi", "role": "narrator"},
    ]), encoding="utf-8")
    plan = plan_import(engine._parts, path)
    assert (plan.format, plan.facts) == ("json", 3)
    assert [(s.where, s.reason) for s in plan.skipped] == [
        ("memory 4", 'has no "text" (or "content")'),
        ("memory 5", "kind 'rumour' is not one of fact, preference, context"),
        ("memory 6", 'is not an object with a "text"'),
        ("memory 7", "role 'narrator' is not one of memory, user, assistant"),
    ]
    apply_import(engine._parts, plan)
    by_text = {m.text: m for m in engine.list_memories()}
    assert by_text["User loves fado"].kind == "preference"
    assert by_text["User loves fado"].conversation_id == "trip-to-rome"
    assert by_text["Dinner booked"].created_at.isoformat() == "2024-05-01T19:00:00+00:00"
    assert by_text["User lives in Lisbon"].conversation_id == "global"
    assert plan_import(engine._parts, path).facts == 0


def test_markdown_bullets_become_facts_under_their_heading(engine: MemoryEngine, tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text(
        "- Likes green tea\n* Has a cat named Miso\n\n# Work projects\n"
        "- Leads the billing rewrite\n  due in June\nSome prose that is not a bullet.\n- [x] Shipped v2\n",
        encoding="utf-8",
    )
    plan = plan_import(engine._parts, path)
    assert plan.format == "markdown"
    assert [(s.where, s.reason) for s in plan.skipped] == [
        ("line 7", "is not a '- ' or '* ' bullet (only bullets become facts)")]
    apply_import(engine._parts, plan)
    assert {m.text for m in engine.list_memories(conversation_id="global")} == {
        "Likes green tea", "Has a cat named Miso"}
    assert [m.text for m in engine.list_memories(conversation_id="work-projects")] == [
        "Leads the billing rewrite due in June", "Shipped v2"]
    assert engine.conversation_title("work-projects") == "Work projects"
    assert next(m for m in engine.list_memories() if m.text == "Likes green tea").kind == "preference"


@pytest.mark.parametrize(("content", "fmt", "message"), [
    (b"this is { not json", "json", "is not valid JSON"),
    (b'[{"title": "Trip", "mapping": {"a": {"message"', None, "looks cut off"),
    (b'{"something": "else"}', "json", "is not a list of memories"),
    (b'{"title": "x"}', "chatgpt", "expected a list of conversations"),
    (b"\xff\xfe\x00garbage", "json", "not UTF-8"),
    (b"just some words\nand more", "markdown", "has no '- ' bullet lines"),
])
def test_malformed_files_fail_clearly_and_write_nothing(
    engine: MemoryEngine, tmp_path: Path, content: bytes, fmt: str | None, message: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(content)
    commits = engine._parts.git.count()
    with pytest.raises(ImportFileError, match=message) as info:
        plan_import(engine._parts, path, fmt)
    assert str(path) in str(info.value)
    assert engine._parts.git.count() == commits and engine.list_memories() == []


def test_a_failing_write_rolls_back_the_whole_import(engine: MemoryEngine, tmp_path: Path) -> None:
    path = tmp_path / "memories.json"
    path.write_text(json.dumps([
        {"text": "First", "conversation_id": "alpha"}, {"text": "Second", "conversation_id": "alpha"},
        {"text": "Third", "conversation_id": "beta"},
    ]), encoding="utf-8")
    plan = plan_import(engine._parts, path)
    (engine.root / "entries").mkdir(exist_ok=True)
    (engine.root / "entries" / "beta").write_text("a file where a folder must go", encoding="utf-8")
    commits = engine._parts.git.count()
    with pytest.raises(OSError):
        apply_import(engine._parts, plan)
    assert not (engine.root / "entries" / "alpha").exists() or not any(
        (engine.root / "entries" / "alpha").rglob("*.md"))
    engine.refresh()
    assert engine.list_memories() == [] and engine._parts.git.count() == commits


@pytest.fixture
def rich_store(engine: MemoryEngine) -> MemoryEngine:
    conv = engine.new_conversation("Trip planning")
    engine.add("User lives in Berlin")
    engine.add("User prefers aisle seats", conversation_id=conv, kind="preference")
    gone = engine.add("User has a dog", conversation_id=conv)
    engine.delete(gone.id)
    old = engine.add("User works at Acme", conversation_id=conv)
    engine.replace(old.id, "User works at Globex")
    tagged = engine.add("User is learning Italian", conversation_id=conv, kind="context")
    engine.edit(tagged.id, meta={"mood": "curious"})
    engine.add("Book me a flight to Rome", conversation_id=conv, role="user")
    engine.add("Which dates?", conversation_id=conv, role="assistant", source="llm")
    with engine._parts.writer.transaction(Operation.SUMMARY, "Summary", conv) as tx:
        tx.write_summary(conv, "The user plans a trip to Rome.", 2)
    return engine


def _snapshot(engine: MemoryEngine) -> set[tuple[Any, ...]]:
    return {(m.id, m.text, m.role, m.kind, m.conversation_id, m.created_at, m.deleted, m.replaced_by,
             m.path, tuple(sorted(m.extra.items())))
            for m in engine.list_memories(include_deleted=True)}


def test_json_export_imported_into_an_empty_store_gives_the_same_memories(
    rich_store: MemoryEngine, make_config: Callable[..., Any], tmp_path: Path
) -> None:
    out = tmp_path / "export.json"
    result = export_json(rich_store._parts, out)
    assert result.memories == len(rich_store.list_memories(include_deleted=True)) == 9
    assert result.deleted == 2
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["format"] == "desktop-mem-export"
    with MemoryEngine(make_config(store=tmp_path / "other")) as other:
        plan = plan_import(other._parts, out)
        assert plan.skipped == ()
        apply_import(other._parts, plan)
        assert _snapshot(other) == _snapshot(rich_store)
        conv = next(c for c in other.conversations() if c != "global")
        assert other.conversation_title(conv) == "Trip planning"
        assert other.summary(conv) is not None
        assert plan_import(other._parts, out).entries == ()


def test_conversation_export_holds_only_that_conversation(rich_store: MemoryEngine, tmp_path: Path) -> None:
    conv = next(c for c in rich_store.conversations() if c != "global")
    data_path = tmp_path / "one.json"
    export_json(rich_store._parts, data_path, conv)
    data = json.loads(data_path.read_text(encoding="utf-8"))
    assert {m["conversation_id"] for m in data["memories"]} == {conv}
    assert data["conversations"] == [{"id": conv, "title": "Trip planning"}]
    with pytest.raises(ValidationError, match="no conversation 'nope'"):
        export_json(rich_store._parts, tmp_path / "x.json", "nope")


def test_zip_export_is_the_markdown_tree_with_a_readme(rich_store: MemoryEngine, tmp_path: Path) -> None:
    out = tmp_path / "store.zip"
    export_zip(rich_store._parts, out)
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        assert "README.txt" in names
        assert all(n == "README.txt" or n.startswith("entries/") for n in names)
        for m in rich_store.list_memories(include_deleted=True):
            assert m.path in names
            assert archive.read(m.path) == (rich_store.root / m.path).read_bytes()
    with pytest.raises(ValidationError, match="already exists"):
        export_zip(rich_store._parts, out)
    conv = next(c for c in rich_store.conversations() if c != "global")
    one = tmp_path / "one.zip"
    export_zip(rich_store._parts, one, conv)
    with zipfile.ZipFile(one) as archive:
        assert all(n == "README.txt" or n.startswith(f"entries/{conv}/") for n in archive.namelist())


def test_cli_dry_run_import_export_and_sync_errors(
    tmp_path: Path, chatgpt_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from desktop_mem.cli import main

    store = tmp_path / "cli-store"
    assert main(["--store", str(store), "import", str(chatgpt_file), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would add 2 conversations, 5 turns, 0 facts" in out
    assert "skipped: conversation 1 'Trip to Rome': message 5: has no text parts" in out
    assert "dry run: nothing was written" in out
    assert not (store / "entries").exists()

    assert main(["--store", str(store), "import", str(chatgpt_file)]) == 0
    assert "imported 2 conversations, 5 turns, 0 facts" in capsys.readouterr().out
    out_file = tmp_path / "all.zip"
    assert main(["--store", str(store), "export", "--format", "zip", "--output", str(out_file)]) == 0
    assert zipfile.is_zipfile(out_file)
    assert main(["--store", str(store), "export", "--format", "zip", "--output", str(out_file)]) == 1
    assert "already exists" in capsys.readouterr().err
    assert main(["--store", str(store), "sync"]) == 1
    assert "sync.remote_url" in capsys.readouterr().err
    assert main(["--store", str(store), "import", str(tmp_path / "missing.json")]) == 1
    assert "does not exist" in capsys.readouterr().err
