"""`desktop-mem mcp setup CLIENT`: add desktop-mem to an MCP client's own config file.

Each client keeps its servers in its own file and format (checked against their documentation):

- Claude Desktop: `claude_desktop_config.json`, `{"mcpServers": {NAME: {command, args}}}`, in
  %APPDATA%\\Claude (Windows), ~/Library/Application Support/Claude (macOS), ~/.config/Claude (Linux).
- Cursor: `~/.cursor/mcp.json` (every platform), `{"mcpServers": {...}}`.
- VS Code: the user profile's `mcp.json`, `{"servers": {NAME: {"type": "stdio", command, args}}}`, in
  %APPDATA%\\Code\\User, ~/Library/Application Support/Code/User, ~/.config/Code/User.
- Codex: `$CODEX_HOME/config.toml` (default ~/.codex/config.toml), a `[mcp_servers.NAME]` table.

The file is edited, never re-serialised: only our entry's text changes, every other byte (other
servers, keys, layout, TOML comments) stays as it was. A symlinked config (dotfiles) is written at
its target; a read-only one is not written at all (the snippet to paste is printed instead). The
old file is kept as a timestamped backup next to it, the new one is written atomically, and the
change is shown as a diff in which only our entry's lines show their values (another server's
token never reaches the terminal). A file that
does not parse is an error and is left untouched. The command written is absolute and works
outside any virtualenv: the installed `desktop-mem` script beside this Python, else this Python
with `-m desktop_mem.cli` (the packaged app: its own executable).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from desktop_mem.cli.json_text_edit import JSONTextError, find_member, set_member
from desktop_mem.cli.masked_diff import masked_diff

SERVER_NAME = "desktop-mem"
CLIENTS = ("claude-desktop", "cursor", "vscode", "codex")
CLIENT_TITLES = {"claude-desktop": "Claude Desktop", "cursor": "Cursor", "vscode": "VS Code",
                 "codex": "Codex"}


class SetupError(Exception):
    """A config file we must not change (it does not parse, or has an unexpected shape)."""


class ReadOnlyConfig(SetupError):
    """The user made the config file read-only: we do not write it; the snippet is theirs to paste."""

    def __init__(self, path: Path, snippet: str) -> None:
        super().__init__(f"{path} is read-only; nothing was changed. Add this to it by hand:")
        self.snippet = snippet


def _read_only(path: Path) -> bool:
    """No write permission bit at all (what `chmod a-w` does; root could still write it, so the
    bits are asked, not only access()), or no access for this user."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    return not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(path, os.W_OK)


@dataclass(frozen=True)
class SetupPlan:
    """What `setup` would write: the file, its text before and after, and the entry itself."""

    client: str
    path: Path
    before: str | None  # None: the file does not exist yet
    after: str
    snippet: str  # what to paste by hand, in the client's format
    own_after: tuple[int, int] = (0, 0)  # where our entry is in `after` (offsets)
    own_before: tuple[int, int] = (0, 0)  # and where it was in `before` (empty: it was not)

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        """The change as a unified diff in which only our own entry's lines show their values."""
        return masked_diff(self.before, self.after, str(self.path), self.own_before, self.own_after)


# ----------------------------------------------------------------------------- where, what


def config_path(client: str, *, platform: str | None = None, env: Mapping[str, str] | None = None,
                home: Path | None = None) -> Path:
    """The client's user-level config file on this (or the given) platform."""
    platform = platform or sys.platform
    env = os.environ if env is None else env
    home = home or Path.home()
    windows, mac = platform.startswith("win"), platform == "darwin"

    def app_dir() -> Path:  # where desktop apps keep per-user settings
        if windows:
            return Path(env["APPDATA"]) if env.get("APPDATA") else home / "AppData" / "Roaming"
        if mac:
            return home / "Library" / "Application Support"
        return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"

    if client == "claude-desktop":
        return app_dir() / "Claude" / "claude_desktop_config.json"
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if client == "vscode":
        return app_dir() / "Code" / "User" / "mcp.json"
    if client == "codex":
        return (Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex") / "config.toml"
    raise SetupError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}")


def server_command(store: Path, config_file: Path | None = None) -> tuple[str, list[str]]:
    """An absolute command that starts `desktop-mem mcp` on this store from anywhere."""
    here = Path(sys.executable).absolute()
    script = here.parent / ("desktop-mem.exe" if sys.platform.startswith("win") else "desktop-mem")
    args = ["--store", str(store.expanduser().absolute())]
    if config_file is not None:
        args += ["--config", str(config_file.expanduser().absolute())]
    args.append("mcp")
    if getattr(sys, "frozen", False):  # the packaged app (PyInstaller) is the desktop-mem command
        return str(here), args
    if script.is_file():
        return str(script), args
    return str(here), ["-m", "desktop_mem.cli", *args]


def entry_for(client: str, command: str, args: Sequence[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": command, "args": list(args)}
    return {"type": "stdio", **entry} if client == "vscode" else entry


# ---------------------------------------------------------------------------------- plan


def plan(client: str, command: str, args: Sequence[str], path: Path | None = None) -> SetupPlan:
    """Read the client's config (if any) and work out the merged text. Raises SetupError for a
    file that does not parse or whose servers are not a table."""
    if client not in CLIENTS:
        raise SetupError(f"unknown client {client!r}: one of {', '.join(CLIENTS)}")
    # A config kept in a dotfiles repository is a symlink to it: the file written is its target
    # (os.replace on the link would put a regular file in its place and cut it off).
    path = Path(os.path.realpath(path or config_path(client)))
    snippet = snippet_for(client, command, args)
    if _read_only(path):
        raise ReadOnlyConfig(path, snippet)
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read {path}: {exc}") from exc
    entry = entry_for(client, command, args)
    if client == "codex":
        after, own_after, own_before = _merge_toml(path, before, entry)
        return SetupPlan(client, path, before, after, snippet, own_after, own_before)
    key = "servers" if client == "vscode" else "mcpServers"
    after, own_after, own_before = _merge_json(path, before, key, entry)
    return SetupPlan(client, path, before, after, snippet, own_after, own_before)


def snippet_for(client: str, command: str, args: Sequence[str]) -> str:
    """What to paste into the client's config by hand, in its format."""
    entry = entry_for(client, command, args)
    if client == "codex":
        return _toml_table(entry)
    key = "servers" if client == "vscode" else "mcpServers"
    return json.dumps({key: {SERVER_NAME: entry}}, indent=2) + "\n"


Merged = tuple[str, tuple[int, int], tuple[int, int]]


def _merge_json(path: Path, before: str | None, key: str, entry: dict[str, Any]) -> Merged:
    """Our server's entry set by editing the text (json_text_edit): every other byte of the file
    stays as it was. Returns the new text and the spans of our entry in it and in the old text."""
    if before is None or not before.strip():
        text = json.dumps({key: {SERVER_NAME: entry}}, indent=2) + "\n"
        return text, (0, len(text)), (0, 0)
    try:
        loaded = json.loads(before)
    except json.JSONDecodeError as exc:
        hint = (" (comments or trailing commas are not rewritten: add the snippet by hand)"
                if "//" in before or "/*" in before else "")
        raise SetupError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                         f"{exc.msg}){hint}; nothing was changed") from exc
    if not isinstance(loaded, dict):
        raise SetupError(f"{path} holds a JSON {type(loaded).__name__}, not an object; "
                         "nothing was changed")
    servers = loaded.get(key, {})
    if not isinstance(servers, dict):
        raise SetupError(f"{path}: {key!r} is a {type(servers).__name__}, not an object; nothing was changed")
    old = servers.get(SERVER_NAME)
    merged = {**old, **entry} if isinstance(old, dict) else entry  # keep the user's extra keys (env ...)
    try:
        after, span = set_member(before, (key, SERVER_NAME), merged)
        same = json.loads(after) == {**loaded, key: {**servers, SERVER_NAME: merged}}
    except (JSONTextError, json.JSONDecodeError):
        same = False
    if not same:
        raise SetupError(f"could not merge into {path} without changing other settings; add this "
                         f"by hand:\n{json.dumps({key: {SERVER_NAME: merged}}, indent=2)}")
    return after, span, find_member(before, (key, SERVER_NAME)) or (0, 0)


_TABLE = re.compile(r"^\s*\[\s*mcp_servers\s*\.\s*(?:\"desktop-mem\"|'desktop-mem'|desktop-mem)\s*(\.|\])")
_HEADER = re.compile(r"^\s*\[")


_OUR_KEY = re.compile(r"^\s*\"?(command|args|type)\"?\s*=")


def _is_our_table(line: str) -> bool:
    """`[mcp_servers.desktop-mem]` itself (not one of its sub-tables)."""
    match = _TABLE.match(line)
    return match is not None and match.group(1) == "]"


def _toml_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise SetupError(f"cannot write {value!r} as TOML")


def _toml_table(entry: Mapping[str, Any]) -> str:
    lines = [f"[mcp_servers.{SERVER_NAME}]"] + [f"{k} = {_toml_value(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


def _merge_toml(path: Path, before: str | None, entry: dict[str, Any]) -> Merged:
    """Replace (or append) our `[mcp_servers.desktop-mem]` table's lines; everything else, the
    user's comments included, stays byte for byte. The result must parse to the old document with
    only our server changed, else nothing is written."""
    text = before or ""
    try:
        old_doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{path} is not valid TOML ({exc}); nothing was changed") from exc
    servers = old_doc.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise SetupError(f"{path}: mcp_servers is not a table; nothing was changed")
    old_entry = servers.get(SERVER_NAME)
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _is_our_table(line)), None)
    table = _toml_table(entry)
    if start is None:
        if old_entry is not None:
            raise SetupError(f"{path} defines mcp_servers.{SERVER_NAME} inline; change it by hand "
                             f"to:\n{table}")
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        new_text = f"{text}{sep}{table}"
        own_after, own_before = (len(text) + len(sep), len(new_text)), (0, 0)
    else:
        end = start + 1
        while end < len(lines) and not _HEADER.match(lines[end]):
            end += 1
        # Our keys are rewritten; every other line of the table (keys, comments) stays as it is.
        kept, skipping = [], False
        for line in lines[start + 1:end]:
            if skipping:
                skipping = "]" not in line
                continue
            if (match := _OUR_KEY.match(line)) and match.group(1) in entry:
                skipping = line.count("[") > line.count("]")  # a multi-line array
                continue
            kept.append(line)
        new_text = "".join(lines[:start]) + table + "".join(kept) + "".join(lines[end:])
        head = len("".join(lines[:start]))
        own_after = (head, head + len(table) + len("".join(kept)))
        own_before = (head, len("".join(lines[:end])))
    try:
        new_doc = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError as exc:  # pragma: no cover - a bug here must never reach the file
        raise SetupError(f"could not merge into {path} safely ({exc}); nothing was changed") from exc
    expected_servers = {**servers, SERVER_NAME: {**(old_entry or {}), **entry}}
    if {**old_doc, "mcp_servers": expected_servers} != new_doc:
        raise SetupError(f"could not merge into {path} without changing other settings; add this "
                         f"by hand:\n{table}")
    return new_text, own_after, own_before


# ---------------------------------------------------------------------------------- write


def apply(setup: SetupPlan, *, now: datetime | None = None) -> Path | None:
    """Write the plan: a timestamped backup of the old file first, then the new text atomically.
    Returns the backup's path (None when there was no file, or nothing changed)."""
    if not setup.changed:
        return None
    path = setup.path
    if _read_only(path):
        raise ReadOnlyConfig(path, setup.snippet)
    path.parent.mkdir(parents=True, exist_ok=True)
    backup = None
    if setup.before is not None:
        current = path.read_text(encoding="utf-8")
        if current != setup.before:
            raise SetupError(f"{path} changed while this ran; nothing was written, run it again")
        stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
        backup = path.with_name(f"{path.name}.{stamp}.bak")
        n = 1
        while backup.exists():
            backup = path.with_name(f"{path.name}.{stamp}-{n}.bak")
            n += 1
        shutil.copy2(path, backup)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as handle:
            handle.write(setup.after)
            handle.flush()
            os.fsync(handle.fileno())
        if setup.before is not None:
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return backup


def show_and_write(setup: SetupPlan, *, dry_run: bool, out: Any, unchanged: str) -> tuple[bool, Path | None]:
    """Print the diff and write the plan unless it is a dry run: (written, the backup's path).
    Also for `hooks install` (cli/hooks.py); SetupError and OSError reach the caller."""
    if not setup.changed:
        print(f"{unchanged}; nothing to change.", file=out)
        return False, None
    print(setup.diff(), end="", file=out)
    if dry_run:
        print(f"(dry run: {setup.path} was not changed)", file=out)
        return False, None
    return True, apply(setup)


def run(client: str, store: Path, *, config_file: Path | None = None, target: Path | None = None,
        dry_run: bool = False, out: Any = None) -> int:
    """The CLI command: plan, show the diff, write (unless a dry run). 0 on success, 1 on error."""
    out = out or sys.stdout
    command, args = server_command(store, config_file)
    try:
        setup = plan(client, command, args, target)
        written, backup = show_and_write(setup, dry_run=dry_run, out=out,
                                         unchanged=f"{setup.path} already runs desktop-mem this way")
        if not written:
            return 0
    except ReadOnlyConfig as exc:
        print(f"desktop-mem: {exc}", file=sys.stderr)
        print(exc.snippet, end="", file=out)
        return 1
    except (SetupError, OSError) as exc:
        print(f"desktop-mem: {exc}", file=sys.stderr)
        return 1
    kept = f" (the old file is kept as {backup})" if backup else ""
    print(f"Added desktop-mem to {setup.path}{kept}. Restart {CLIENT_TITLES[client]} to use it.",
          file=out)
    return 0
