"""Claude's memory tool (`memory_20250818`) backed by a desktop-mem store.

The model sends `view`, `create`, `str_replace`, `insert`, `delete` and `rename` commands on a
`/memories` folder; the API client executes them. Here that folder is a view of the store: each
file is one memory whose front matter names its place (`memory_path: notes/project.md`), its
text is the file's text. So the bare folder gains what the store has: every change is one commit
(source `mcp`, client "claude memory tool", shown in the app and on the Timeline), a deleted file
is soft-deleted and can be restored, likely secrets are redacted, and the files are searchable
with everything else.

Paths cannot leave the view: it is not a folder on disk, a path is only a key, and a key that
names a parent (`..`), starts elsewhere, carries percent-encoding or control characters, or
folds (NFKC) into any of those is refused. Each mutating command is one engine write.

`run_command(store, command)` is the plain entry point (the store held by the app or `serve`:
the command is sent to it); `DesktopMemMemoryTool` subclasses the Anthropic SDK's
`BetaAbstractMemoryTool` when the SDK is installed (it is not a dependency).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from desktop_mem.engine.api import MemoryEngine
from desktop_mem.engine.config import load_config
from desktop_mem.engine.models import (
    GLOBAL_CONVERSATION,
    EngineError,
    Memory,
    SecretsPolicy,
    Source,
    StoreLockedError,
)

ROOT = "/memories"
PATH_KEY = "memory_path"  # front matter: the file's place in the view, relative to /memories
CLIENT = "claude memory tool"
LINE_WIDTH = 6  # line numbers as the reference implementation prints them
MAX_DEPTH = 2


class ToolError(Exception):
    """A command the view cannot carry out; its message is the tool result the model reads."""


# ------------------------------------------------------------------------------------- paths

def view_path(path: object) -> str:
    """The key of `path` inside /memories ("" for the folder itself), or ToolError.

    Refused: anything not under /memories, `.` / `..` / empty segments, backslashes,
    percent-encoding, control characters, and forms that NFKC folds into any of those
    (fullwidth dots and slashes)."""
    if not isinstance(path, str) or not path:
        raise ToolError("A path is required, e.g. /memories/notes.md")
    folded = unicodedata.normalize("NFKC", path)
    bad = [ch for ch in folded if unicodedata.category(ch)[0] == "C"]
    if bad or "\\" in folded or "%" in folded:
        raise ToolError(f"Path {path!r} is not allowed: no control characters, backslashes or %-encoding")
    if folded != ROOT and not folded.startswith(ROOT + "/"):
        raise ToolError(f"Path must start with {ROOT}, got: {path}")
    rel = folded[len(ROOT) + 1:].rstrip("/")  # "/memories/dir/" is the folder dir
    parts = rel.split("/") if rel else []
    if any(p in ("", ".", "..") or p.strip() != p for p in parts):
        raise ToolError(f"Path {path} would escape {ROOT} directory")
    return "/".join(parts)


def _shown(rel: str) -> str:
    return f"{ROOT}/{rel}" if rel else ROOT


def _files(engine: MemoryEngine) -> dict[str, Memory]:
    """The view: live memories with a place, by key (a held-back hand edit is left out, as the
    engine's reads leave it out; two with one place: the newest shows)."""
    found: dict[str, Memory] = {}
    for m in sorted(engine.list_memories(role="memory"), key=lambda m: m.created_at):
        key = m.extra.get(PATH_KEY)
        if isinstance(key, str):
            try:
                found[view_path(_shown(key))] = m
            except ToolError:
                continue  # a hand-edited key that would leave the view
    return found


def _under(files: Mapping[str, Memory], rel: str) -> dict[str, Memory]:
    prefix = rel + "/" if rel else ""
    return {k: m for k, m in files.items() if k.startswith(prefix)}


def _size(text: str) -> str:
    n = float(len(text.encode("utf-8")))
    for unit in ("B", "K", "M"):
        if n < 1024 or unit == "M":
            return f"{int(n)}{unit}" if n == int(n) else f"{n:.1f}{unit}"
        n /= 1024
    return f"{n:.1f}M"


def _numbered(lines: list[str], start: int = 1) -> str:
    return "\n".join(f"{str(i).rjust(LINE_WIDTH)}\t{line}" for i, line in enumerate(lines, start))


# ---------------------------------------------------------------------------------- commands

class MemoryView:
    """The /memories view over an open engine; each method is one command of the tool."""

    def __init__(self, engine: MemoryEngine, conversation: str = GLOBAL_CONVERSATION) -> None:
        self.engine = engine
        self.conversation = conversation

    def run(self, command: Mapping[str, Any]) -> str:
        """One tool input, as the model sent it; the tool result text (ToolError for a refusal)."""
        if not isinstance(command, Mapping):
            raise ToolError("The tool input must be an object with a `command`")
        name = command.get("command")
        handler = {"view": self.view, "create": self.create, "str_replace": self.str_replace,
                   "insert": self.insert, "delete": self.delete, "rename": self.rename}.get(str(name))
        if handler is None:
            raise ToolError(f"Unknown command: {name}")
        try:
            return handler(command)
        except KeyError as exc:
            raise ToolError(f"The {name} command needs `{exc.args[0]}`") from None
        except StoreLockedError:
            raise
        except EngineError as exc:  # a validation, size or secrets refusal: nothing was saved
            raise ToolError(f"{exc} (nothing was changed)") from None

    @property
    def _policy(self) -> str:
        return SecretsPolicy.unattended(self.engine.config["security.secrets"])

    def _file(self, rel: str, path: str) -> Memory:
        found = _files(self.engine).get(rel)
        if found is None:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return found

    def _text(self, command: Mapping[str, Any], key: str) -> str:
        value = command[key]
        if not isinstance(value, str):
            raise ToolError(f"`{key}` must be a string")
        return value

    def view(self, command: Mapping[str, Any]) -> str:
        path = command["path"]
        rel = view_path(path)
        files = _files(self.engine)
        if rel in files:
            lines = files[rel].text.split("\n")
            start, end = 1, len(lines)
            window = command.get("view_range")
            if isinstance(window, list | tuple) and len(window) == 2:
                start = max(1, int(window[0]))
                end = len(lines) if int(window[1]) == -1 else min(len(lines), int(window[1]))
            shown = _numbered(lines[start - 1:end], start)
            return f"Here's the content of {path} with line numbers:\n{shown}"
        inside = _under(files, rel)
        if rel and not inside:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        return self._listing(path, rel, inside)

    def _listing(self, path: str, rel: str, inside: Mapping[str, Memory]) -> str:
        prefix = rel + "/" if rel else ""
        rows: dict[str, str] = {}
        for key, memory in inside.items():
            parts = key[len(prefix):].split("/")
            for depth in range(1, min(len(parts), MAX_DEPTH) + 1):
                entry = "/".join(parts[:depth])
                is_file = depth == len(parts)
                rows.setdefault(entry + ("" if is_file else "/"), _size(memory.text) if is_file else "-")
        total = _size("".join(m.text for m in inside.values()))
        lines = [f"{total}\t{path.rstrip('/')}"] + [f"{size}\t{_shown(prefix + entry)}"
                                                      for entry, size in sorted(rows.items())]
        return (f"Here're the files and directories up to {MAX_DEPTH} levels deep in {path}, "
                "excluding hidden items:\n" + "\n".join(lines))

    def create(self, command: Mapping[str, Any]) -> str:
        path, text = command["path"], self._text(command, "file_text")
        rel = view_path(path)
        files = _files(self.engine)
        if not rel or _under(files, rel):
            raise ToolError(f"The path {path} is a directory")
        if rel in files:
            raise ToolError(f"File {path} already exists")
        memory = self.engine.add(text, conversation_id=self.conversation, kind="context", source=Source.MCP,
                                 secrets=self._policy, client=CLIENT, meta={PATH_KEY: rel})
        return f"File created successfully at: {path}" + _redacted_note(text, memory.text)

    def str_replace(self, command: Mapping[str, Any]) -> str:
        path = command["path"]
        old, new = self._text(command, "old_str"), self._text(command, "new_str")
        memory = self._file(view_path(path), path)
        content = memory.text
        count = content.count(old) if old else 0
        if count == 0:
            raise ToolError(f"No replacement was performed, old_str `{old}` did not appear verbatim "
                            f"in {path}.")
        if count > 1:
            lines, at = [], content.find(old)
            while at != -1:
                lines.append(content[:at].count("\n") + 1)
                at = content.find(old, at + 1)
            raise ToolError(f"No replacement was performed. Multiple occurrences of old_str `{old}` in "
                            f"lines: {', '.join(map(str, lines))}. Please ensure it is unique")
        changed_line = content[:content.find(old)].count("\n")
        wanted = content.replace(old, new)
        saved = self._edit(memory, wanted)
        new_lines = saved.split("\n")
        first = max(0, changed_line - 2)
        snippet = _numbered(new_lines[first:changed_line + 3], first + 1)
        return ("The memory file has been edited. Here is the snippet showing the change "
                f"(with line numbers):\n{snippet}{_redacted_note(wanted, saved)}")

    def insert(self, command: Mapping[str, Any]) -> str:
        path, text = command["path"], self._text(command, "insert_text")
        line = command["insert_line"]
        memory = self._file(view_path(path), path)
        lines = memory.text.split("\n")
        if not isinstance(line, int) or isinstance(line, bool) or not 0 <= line <= len(lines):
            raise ToolError(f"Invalid `insert_line` parameter: {line}. It should be within the range "
                            f"[0, {len(lines)}].")
        lines.insert(line, text.rstrip("\n"))
        wanted = "\n".join(lines)
        saved = self._edit(memory, wanted)
        return f"The file {path} has been edited." + _redacted_note(wanted, saved)

    def _edit(self, memory: Memory, text: str) -> str:
        if not text.strip():
            raise ToolError("A memory file cannot be left empty; delete it instead")
        edited = self.engine.edit(memory.id, text=text, secrets=self._policy, source=Source.MCP,
                                  client=CLIENT, expected_hash=memory.content_hash or None)
        return edited.text

    def delete(self, command: Mapping[str, Any]) -> str:
        path = command["path"]
        rel = view_path(path)
        if not rel:
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        files = _files(self.engine)
        gone = [files[rel]] if rel in files else list(_under(files, rel).values())
        if not gone:
            raise ToolError(f"The path {path} does not exist")
        self.engine.delete_many([m.id for m in gone], source=Source.MCP, client=CLIENT)
        return f"Successfully deleted {path}"

    def rename(self, command: Mapping[str, Any]) -> str:
        old_path, new_path = command["old_path"], command["new_path"]
        old, new = view_path(old_path), view_path(new_path)
        if not old:
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        files = _files(self.engine)
        if not new or new in files or _under(files, new):
            raise ToolError(f"The destination {new_path} already exists")
        if old in files:
            moves = {old: new}
        elif moving := _under(files, old):
            if new.startswith(old + "/"):
                raise ToolError(f"Cannot move {old_path} into itself")
            moves = {k: new + k[len(old):] for k in moving}
        else:
            raise ToolError(f"The path {old_path} does not exist")
        self.engine.retag_many({files[k].id: {PATH_KEY: v} for k, v in moves.items()},
                               source=Source.MCP, client=CLIENT)
        return f"Successfully renamed {old_path} to {new_path}"


def _redacted_note(wanted: str, saved: str) -> str:
    """What the model must know when the store did not keep its text as sent."""
    if wanted.strip() == saved.strip():
        return ""
    return ("\nNote: a likely secret was redacted before saving (desktop-mem never stores secrets); "
            "view the file to see the saved text.")


# ------------------------------------------------------------------------------ entry points

@contextmanager
def open_view(store: Path | str, conversation: str = GLOBAL_CONVERSATION) -> Iterator[MemoryView]:
    """The view over the store at `store`, writing (StoreLockedError if another process holds it)."""
    with MemoryEngine(load_config(flags={"store.path": str(store)})) as engine:
        yield MemoryView(engine, conversation)


def run_command(store: Path | str, command: dict[str, Any]) -> str:
    """Execute one memory-tool input on the store and return the tool result text.

    A refusal (missing file, path outside /memories, ...) is returned as an `Error: ...` text, as
    a tool result the model reads. When the app or `serve` holds the store, the command runs
    there (its private endpoint; nothing else is trusted)."""
    try:
        with open_view(store) as view:
            return view.run(command)
    except ToolError as exc:
        return f"Error: {exc}"
    except StoreLockedError:
        from desktop_mem.cli.forward import remote_memory_tool

        remote = remote_memory_tool(Path(store))
        if remote is None:
            raise
        return remote.run(command)


def _sdk_tool() -> type | None:
    """`DesktopMemMemoryTool`, a subclass of the Anthropic SDK's abstract memory tool; None
    without the SDK."""
    try:
        from anthropic.lib.tools import BetaAbstractMemoryTool
    except ImportError:
        return None

    class DesktopMemMemoryTool(BetaAbstractMemoryTool):  # type: ignore[misc]
        """Claude's memory tool on a desktop-mem store, for `client.beta.messages.tool_runner`.
        Keeps the store open (the writer) until `close()`."""

        def __init__(self, store: Path | str, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._engine = MemoryEngine(load_config(flags={"store.path": str(store)}))
            self._view = MemoryView(self._engine)

        def close(self) -> None:
            self._engine.close()

        def _run(self, command: Any) -> str:
            data = command.model_dump() if hasattr(command, "model_dump") else dict(command)
            try:
                return self._view.run(data)
            except ToolError as exc:  # the result text the model reads, as run_command answers
                return f"Error: {exc}"

        def view(self, command: Any) -> str:
            return self._run(command)

        def create(self, command: Any) -> str:
            return self._run(command)

        def str_replace(self, command: Any) -> str:
            return self._run(command)

        def insert(self, command: Any) -> str:
            return self._run(command)

        def delete(self, command: Any) -> str:
            return self._run(command)

        def rename(self, command: Any) -> str:
            return self._run(command)

    return DesktopMemMemoryTool


DesktopMemMemoryTool = _sdk_tool()
