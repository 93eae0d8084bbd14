"""Claude's memory tool (`memory_20250818`) on a desktop-mem store: the command payloads of the
tool's documentation, each mutating command one commit attributed to the tool, soft deletes,
the secrets gate, paths that cannot leave /memories, and the store held by `serve`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EventType
from desktop_mem.integrations.claude_memory import PATH_KEY, run_command
from tests.mcp_clients import ServeProcess, git

pytestmark = pytest.mark.timeout(400)

NOTES = "Meeting notes:\n- Discussed project timeline\n- Next steps defined\n"


def _commits(store: Path) -> int:
    return int(git(store, "rev-list", "--count", "--all").strip() or 0) if (store / ".git").exists() else 0


def _engine(store: Path) -> MemoryEngine:
    return MemoryEngine(load_config(flags={"store.path": str(store)}))


def test_the_documented_commands_each_one_commit_on_markdown_files(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run = lambda **command: run_command(store, command)  # noqa: E731

    assert run(command="view", path="/memories").startswith(
        "Here're the files and directories up to 2 levels deep in /memories")
    before = _commits(store)
    assert run(command="create", path="/memories/notes.txt", file_text=NOTES) == (
        "File created successfully at: /memories/notes.txt")
    assert run(command="create", path="/memories/preferences.txt",
               file_text="Favorite color: blue\nEditor: vim").startswith("File created")
    assert run(command="create", path="/memories/todo.txt", file_text="- Write tests\n- Ship\n")
    assert run(command="create", path="/memories/project/draft.txt", file_text="Plan: use SQLite")
    assert run(command="create", path="/memories/notes.txt", file_text="again") == (
        "Error: File /memories/notes.txt already exists")

    listing = run(command="view", path="/memories")
    for line in ("/memories/notes.txt", "/memories/preferences.txt", "/memories/project/",
                 "/memories/project/draft.txt", "/memories/todo.txt"):
        assert f"\t{line}" in listing, listing
    assert run(command="view", path="/memories/notes.txt", view_range=[1, 2]) == (
        "Here's the content of /memories/notes.txt with line numbers:\n"
        "     1\tMeeting notes:\n     2\t- Discussed project timeline")

    assert run(command="str_replace", path="/memories/preferences.txt", old_str="Favorite color: blue",
               new_str="Favorite color: green").startswith("The memory file has been edited.")
    assert run(command="str_replace", path="/memories/preferences.txt", old_str="purple",
               new_str="x").startswith("Error: No replacement was performed")
    assert run(command="insert", path="/memories/todo.txt", insert_line=2,
               insert_text="- Review memory tool documentation\n") == (
        "The file /memories/todo.txt has been edited.")
    assert run(command="insert", path="/memories/todo.txt", insert_line=99, insert_text="x").startswith(
        "Error: Invalid `insert_line`")
    assert run(command="rename", old_path="/memories/project/draft.txt",
               new_path="/memories/project/final.txt") == (
        "Successfully renamed /memories/project/draft.txt to /memories/project/final.txt")
    assert run(command="rename", old_path="/memories/project", new_path="/memories/archive") == (
        "Successfully renamed /memories/project to /memories/archive")
    assert run(command="delete", path="/memories/notes.txt") == "Successfully deleted /memories/notes.txt"
    assert run(command="view", path="/memories/notes.txt").startswith("Error: The path /memories/notes.txt "
                                                                      "does not exist")
    assert run(command="delete", path="/memories") == "Error: Cannot delete the /memories directory itself"

    # nine mutating commands that did something: nine commits, each attributed to the tool
    assert _commits(store) - before == 9
    clients = git(store, "log", f"-{9}", "--format=%(trailers:key=Desktop-Mem-Client,valueonly,separator=)")
    assert clients.split("\n")[:9] == ["claude memory tool"] * 9
    assert git(store, "status", "--porcelain").strip() == ""

    assert "     2\tFavorite color: green" not in run(command="view", path="/memories/preferences.txt")
    assert run(command="view", path="/memories/preferences.txt").endswith("     1\tFavorite color: green\n"
                                                                          "     2\tEditor: vim")
    assert run(command="view", path="/memories/todo.txt").endswith(
        "     2\t- Ship\n     3\t- Review memory tool documentation")
    assert "archive/final.txt" in run(command="view", path="/memories/archive")

    with _engine(store) as engine:
        live = {m.extra.get(PATH_KEY): m for m in engine.list_memories(role="memory")}
        assert set(live) == {"preferences.txt", "todo.txt", "archive/final.txt"}
        # each file is a Markdown memory with its place and its author in front matter
        text = (store / live["todo.txt"].path).read_text(encoding="utf-8")
        assert "memory_path: todo.txt" in text and "client: claude memory tool" in text
        # the deleted file is soft-deleted: on the Timeline, and restorable
        commits = engine.history(limit=10)
        assert [e.type for e in commits[0].events] == [EventType.DELETE]
        notes = next(m for m in engine.list_memories(role="memory", include_deleted=True)
                     if m.deleted and m.extra.get(PATH_KEY) == "notes.txt")
        engine.restore(notes.id)
        assert [h.memory.id for h in engine.search("project timeline", top_k=3)][0] == notes.id
    assert run(command="view", path="/memories/notes.txt").startswith("Here's the content")


BAD_PATHS = ["/memories/../secrets.txt", "/memories/a/../../x", "/etc/passwd", "memories/x", "/memoriesx/y",
             "/memories/%2e%2e/x", "/memories/..%2fx", "/memories/\uff0e\uff0e/x", "/memories/a\\..\\b",
             "/memories/./x", "/memories//x", "/memories/x\x00y", "/memories/ ../x", ""]


@pytest.mark.parametrize("command", ["create", "view", "delete", "rename"])
def test_paths_cannot_leave_the_view(tmp_path: Path, command: str) -> None:
    store, outside = tmp_path / "store", tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text("outside", encoding="utf-8")
    run_command(store, {"command": "create", "path": "/memories/ok.md", "file_text": "fine"})
    # a symlink named like the view inside the store leads nowhere: the view is not a folder
    os.symlink(outside, store / "memories")
    before = _commits(store)
    for bad in BAD_PATHS:
        payload = {"command": command, "path": bad, "file_text": "pwned"}
        if command == "rename":
            payload = {"command": command, "old_path": "/memories/ok.md", "new_path": bad}
        answer = run_command(store, payload)
        assert answer.startswith("Error:"), (bad, answer)
    assert _commits(store) == before
    assert sorted(p.name for p in outside.iterdir()) == ["x"] and (outside / "x").read_text() == "outside"
    assert "outside" not in run_command(store, {"command": "view", "path": "/memories"})


def test_a_likely_secret_is_redacted_and_the_model_told(tmp_path: Path) -> None:
    store = tmp_path / "store"
    key = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    answer = run_command(store, {"command": "create", "path": "/memories/keys.md",
                                 "file_text": f"The deploy key is {key}"})
    assert answer.startswith("File created successfully") and "redacted" in answer
    shown = run_command(store, {"command": "view", "path": "/memories/keys.md"})
    assert key not in shown and "redacted" in shown
    assert key not in git(store, "log", "-p")


def test_forwarded_to_serve_when_it_holds_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    serve = ServeProcess(store).wait_ready()
    try:
        assert run_command(store, {"command": "create", "path": "/memories/held.md",
                                   "file_text": "Written while serve held the store"}).startswith("File")
        assert run_command(store, {"command": "view", "path": "/memories/held.md"}).endswith(
            "     1\tWritten while serve held the store")
        assert run_command(store, {"command": "view", "path": "/memories/nope"}).startswith("Error: The path")
        client = git(store, "log", "-1", "--format=%(trailers:key=Desktop-Mem-Client,valueonly,separator=)")
        assert client.strip() == "claude memory tool"
    finally:
        serve.stop()


def test_the_sdk_memory_tool_class_runs_the_same_view(tmp_path: Path) -> None:
    """With the Anthropic SDK installed (it is not a dependency), its abstract memory tool is
    subclassed: the SDK's own `call` (what its tool runner calls with the model's input) runs here."""
    pytest.importorskip("anthropic.lib.tools")
    from desktop_mem.integrations.claude_memory import DesktopMemMemoryTool

    assert DesktopMemMemoryTool is not None
    tool = DesktopMemMemoryTool(tmp_path / "store")
    try:
        assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
        assert tool.call({"command": "create", "path": "/memories/notes.txt", "file_text": NOTES}) == (
            "File created successfully at: /memories/notes.txt")
        assert tool.call({"command": "view", "path": "/memories/notes.txt", "view_range": [1, 1]}) == (
            "Here's the content of /memories/notes.txt with line numbers:\n     1\tMeeting notes:")
        assert tool.call({"command": "view", "path": "/memories/../x"}).startswith("Error:")
    finally:
        tool.close()
    assert "claude memory tool" in git(tmp_path / "store", "log", "-1", "--format=%B")
