"""`desktop-mem mcp setup CLIENT`: the user's MCP client config gets desktop-mem added, merged with
what is there (other servers, unknown keys, TOML comments), with a backup, and a command that
starts the server from anywhere. Real files in temp folders; the written command is run with
the official MCP SDK client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from desktop_mem.cli.mcp_setup import (
    CLIENTS,
    SetupError,
    apply,
    config_path,
    plan,
    server_command,
)

ROOT = Path(__file__).resolve().parents[1]
HOME = Path("/home/ann")


@pytest.mark.parametrize(("client", "platform", "env", "expected"), [
    ("claude-desktop", "win32", {"APPDATA": r"C:\Users\ann\AppData\Roaming"},
     Path(r"C:\Users\ann\AppData\Roaming") / "Claude" / "claude_desktop_config.json"),
    ("claude-desktop", "darwin", {}, HOME / "Library/Application Support/Claude/claude_desktop_config.json"),
    ("claude-desktop", "linux", {}, HOME / ".config/Claude/claude_desktop_config.json"),
    ("claude-desktop", "linux", {"XDG_CONFIG_HOME": "/cfg"}, Path("/cfg/Claude/claude_desktop_config.json")),
    ("cursor", "win32", {"APPDATA": r"C:\x"}, HOME / ".cursor" / "mcp.json"),
    ("cursor", "darwin", {}, HOME / ".cursor/mcp.json"),
    ("cursor", "linux", {}, HOME / ".cursor/mcp.json"),
    ("vscode", "win32", {"APPDATA": r"C:\Users\ann\AppData\Roaming"},
     Path(r"C:\Users\ann\AppData\Roaming") / "Code" / "User" / "mcp.json"),
    ("vscode", "win32", {}, HOME / "AppData/Roaming/Code/User/mcp.json"),
    ("vscode", "darwin", {}, HOME / "Library/Application Support/Code/User/mcp.json"),
    ("vscode", "linux", {}, HOME / ".config/Code/User/mcp.json"),
    ("codex", "win32", {}, HOME / ".codex" / "config.toml"),
    ("codex", "darwin", {}, HOME / ".codex/config.toml"),
    ("codex", "linux", {"CODEX_HOME": "/opt/codex"}, Path("/opt/codex/config.toml")),
])
def test_each_clients_config_file_is_found_where_that_client_reads_it(
        client: str, platform: str, env: dict[str, str], expected: Path) -> None:
    assert config_path(client, platform=platform, env=env, home=HOME) == expected


def _servers(client: str, path: Path) -> dict[str, Any]:
    if client == "codex":
        return dict(tomllib.loads(path.read_text())["mcp_servers"])
    return dict(json.loads(path.read_text())["servers" if client == "vscode" else "mcpServers"])


EXISTING = {
    "claude-desktop": '{\n  "mcpServers": {\n    "files": {"command": "npx", "args": ["-y", "fs"]}\n  },\n'
                      '  "globalShortcut": "Ctrl+Space"\n}\n',
    "cursor": '{"mcpServers": {"files": {"command": "npx", "args": ["-y", "fs"]}}, "x-note": 1}',
    "vscode": '{\n    "servers": {"files": {"type": "stdio", "command": "npx", "args": ["-y", "fs"]}},\n'
              '    "inputs": [{"id": "key", "type": "promptString"}]\n}\n',
    "codex": '# my settings\nmodel = "o4"  # the model I like\n\n[mcp_servers.files]\ncommand = "npx"\n'
             'args = ["-y", "fs"]\n\n[profiles.work]\nmodel = "o3"\n',
}


@pytest.mark.parametrize("client", CLIENTS)
def test_setup_merges_into_the_users_config_keeps_everything_else_and_a_backup(tmp_path: Path,
                                                                                client: str) -> None:
    path = tmp_path / ("config.toml" if client == "codex" else "mcp.json")
    path.write_text(EXISTING[client], encoding="utf-8")
    command, args = server_command(tmp_path / "store")
    setup = plan(client, command, args, path)
    backup = apply(setup, now=datetime(2026, 11, 24, 17, 30, 5))

    assert backup == path.with_name(f"{path.name}.20261124-173005.bak")
    assert backup.read_text(encoding="utf-8") == EXISTING[client]  # the old file, byte for byte
    servers = _servers(client, path)
    assert servers["files"]["command"] == "npx"  # the user's other server is still there
    ours = servers["desktop-mem"]
    assert Path(ours["command"]).is_absolute() and ours["args"][-1] == "mcp"
    assert ours["args"][ours["args"].index("--store") + 1] == str(tmp_path / "store")
    if client == "vscode":
        assert ours["type"] == "stdio"
        assert json.loads(path.read_text())["inputs"][0]["id"] == "key"
    if client == "codex":  # comments and other tables stay exactly as written
        text = path.read_text()
        assert text.startswith(EXISTING["codex"])
        assert tomllib.loads(text)["profiles"]["work"]["model"] == "o3"
    if client == "claude-desktop":
        assert json.loads(path.read_text())["globalShortcut"] == "Ctrl+Space"
    if client == "cursor":
        assert json.loads(path.read_text())["x-note"] == 1
    assert "+" in setup.diff() and "desktop-mem" in setup.diff()

    again = plan(client, command, args, path)  # running it twice changes nothing
    assert not again.changed and apply(again) is None


def test_codex_replaces_only_its_own_table_and_keeps_the_users_keys_in_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    text = ('[mcp_servers.desktop-mem]\ncommand = "/old/desktop-mem"\nargs = ["mcp"]\n'
            'startup_timeout_sec = 30\n\n[mcp_servers.desktop-mem.env]\nDESKTOP_MEM_TOKEN_FILE = "/t"\n\n'
            '# keep me\n[mcp_servers.other]\ncommand = "x"\n')
    path.write_text(text)
    setup = plan("codex", "/new/desktop-mem", ["--store", "/s", "mcp"], path)
    apply(setup)
    doc = tomllib.loads(path.read_text())
    ours = doc["mcp_servers"]["desktop-mem"]
    assert ours["command"] == "/new/desktop-mem" and ours["args"] == ["--store", "/s", "mcp"]
    assert ours["startup_timeout_sec"] == 30 and ours["env"] == {"DESKTOP_MEM_TOKEN_FILE": "/t"}
    assert doc["mcp_servers"]["other"] == {"command": "x"}
    assert "# keep me\n[mcp_servers.other]" in path.read_text()


@pytest.mark.parametrize(("client", "text", "says"), [
    ("cursor", '{"mcpServers": {"a": 1},}', "not valid JSON"),
    ("vscode", '{\n  // my servers\n  "servers": {}\n}', "comments"),
    ("claude-desktop", '["not", "an", "object"]', "not an object"),
    ("cursor", '{"mcpServers": ["a"]}', "not an object"),
    ("codex", "model = \n", "not valid TOML"),
    ("codex", 'mcp_servers = { desktop-mem = { command = "x" } }\n', "by hand"),
])
def test_a_config_we_cannot_read_is_an_error_and_stays_untouched(
        tmp_path: Path, client: str, text: str, says: str) -> None:
    path = tmp_path / "cfg"
    path.write_text(text)
    out = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(tmp_path / "s"), "mcp",
                          "setup", client, "--config", str(path)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert out.returncode == 1 and says in out.stderr and "Traceback" not in out.stderr
    assert path.read_text() == text and [p.name for p in tmp_path.iterdir()] == ["cfg"]
    with pytest.raises(SetupError):
        plan(client, "/x", ["mcp"], path)


def test_dry_run_prints_the_change_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    out = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(tmp_path / "s"), "mcp",
                          "setup", "claude-desktop", "--config", str(path), "--dry-run"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert '+    "desktop-mem": {' in out.stdout and "dry run" in out.stdout
    assert not path.exists()


@pytest.mark.timeout(300)
def test_the_written_command_starts_the_server_outside_the_venv(tmp_path: Path) -> None:
    """What the client will run, run as a client does: no venv on PATH, no VIRTUAL_ENV, another cwd."""
    path = tmp_path / "mcp.json"
    command, args = server_command(tmp_path / "store")
    apply(plan("cursor", command, args, path))
    entry = json.loads(path.read_text())["mcpServers"]["desktop-mem"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    async def tools() -> set[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env, cwd="/")
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return {t.name for t in (await session.list_tools()).tools}

    assert {"search_memory", "add_memories", "delete_memories"} <= anyio.run(tools)


def test_the_packaged_app_points_the_client_at_its_own_executable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = tmp_path / "desktop-mem-app"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(app))
    assert server_command(tmp_path / "s") == (str(app), ["--store", str(tmp_path / "s"), "mcp"])


def _setup_cli(tmp_path: Path, client: str, path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(tmp_path / "s"), "mcp",
                           "setup", client, "--config", str(path), *extra], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)


@pytest.mark.parametrize("client", CLIENTS)
def test_a_symlinked_config_is_written_at_its_target_and_stays_a_link(tmp_path: Path, client: str) -> None:
    """A config kept in a dotfiles repository and linked into place: the link stays a link and the
    repository's file gets our entry (it was replaced by a regular file, cut off from the repo)."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / ("config.toml" if client == "codex" else "mcp.json")
    target.write_text(EXISTING[client], encoding="utf-8")
    link = tmp_path / "app" / target.name
    link.parent.mkdir()
    link.symlink_to(Path("..") / "dotfiles" / target.name)  # relative, as dotfile managers make them
    out = _setup_cli(tmp_path, client, link)
    assert out.returncode == 0, out.stderr
    assert link.is_symlink() and link.resolve() == target
    assert "desktop-mem" in _servers(client, target) and "files" in _servers(client, target)
    assert [p.name for p in link.parent.iterdir()] == [target.name]  # no backup, no temp beside the link


@pytest.mark.parametrize("client", CLIENTS)
def test_a_read_only_config_is_left_alone_and_the_snippet_is_printed(tmp_path: Path, client: str) -> None:
    """`chmod a-w` on a config means "do not touch": it is not rewritten (it was: the rename went
    through the writable folder, even as root), exit 1, and the entry to paste is printed."""
    path = tmp_path / ("config.toml" if client == "codex" else "mcp.json")
    path.write_text(EXISTING[client], encoding="utf-8")
    path.chmod(0o444)
    out = _setup_cli(tmp_path, client, path)
    assert out.returncode == 1 and "read-only" in out.stderr and "Traceback" not in out.stderr
    assert path.read_text(encoding="utf-8") == EXISTING[client]
    assert oct(path.stat().st_mode & 0o777) == "0o444"
    assert [p.name for p in tmp_path.iterdir() if p.name != "s"] == [path.name]  # no backup either
    if client == "codex":
        assert tomllib.loads(out.stdout)["mcp_servers"]["desktop-mem"]["args"][-1] == "mcp"
    else:
        pasted = json.loads(out.stdout)
        assert pasted["servers" if client == "vscode" else "mcpServers"]["desktop-mem"]["args"][-1] == "mcp"


SECRET = "ghp_0123456789abcdefSECRETxyz"
OTHERS = {  # another server's token next to where our entry goes, in layouts people write
    "one line": '{"mcpServers": {"gh": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "%s"}}}, "n": 1.50e2}',
    "pretty": '{\n  "mcpServers": {\n    "gh": {\n      "command": "gh-mcp",\n'
              '      "env": {"GITHUB_TOKEN": "%s"}\n    }\n  },\n  "theme": "caf\\u00e9"\n}\n',
    "ours between two": '{\n\t"mcpServers": {\n\t\t"a": {"env": {"T": "%s"}},\n'
                        '\t\t"desktop-mem": {"command": "old", "args": [], "env": {"KEEP": "yes"}},\n'
                        '\t\t"b": {"env": {"T": "%s"}}\n\t}\n}',
    "no servers yet": '{\n    "key": "%s"\n}',
    "empty servers": '{"mcpServers": {}, "key": "%s"}',
}


@pytest.mark.parametrize("layout", list(OTHERS))
def test_only_our_entry_changes_and_no_other_entrys_secret_is_printed(tmp_path: Path, layout: str) -> None:
    """The file is edited, not re-serialised: take our entry out of the new text and what is left
    is the old text without ours, byte for byte (number spellings, escapes, tabs, key order). The
    printed diff shows our entry and never another entry's token (the whole file was printed
    again before, tokens and all)."""
    text = OTHERS[layout].replace("%s", SECRET)
    path = tmp_path / "mcp.json"
    path.write_text(text, encoding="utf-8")
    out = _setup_cli(tmp_path, "cursor", path)
    assert out.returncode == 0, out.stderr
    assert SECRET not in out.stdout + out.stderr
    assert '"desktop-mem"' in out.stdout and '"mcp"' in out.stdout
    after = path.read_text(encoding="utf-8")
    doc = json.loads(after)
    ours = doc["mcpServers"].pop("desktop-mem")
    assert ours["args"][-1] == "mcp" and (layout != "ours between two" or ours["env"] == {"KEEP": "yes"})
    old = json.loads(text)
    old.get("mcpServers", {}).pop("desktop-mem", None)
    assert doc == {**old, "mcpServers": old.get("mcpServers", {})}
    if layout != "no servers yet":  # otherwise the servers object itself is new
        assert _without_ours(after) == _without_ours(text)  # every other byte, white space aside
    assert '1.50e2' in after or layout != "one line"
    assert '"caf\\u00e9"' in after or layout != "pretty"


def _without_ours(text: str) -> str:
    """The text with our member (key, value and one comma) cut out and white space removed."""
    start = text.find('"desktop-mem"')
    if start >= 0:
        value_at = text.index(":", start) + 1
        value_at += len(text[value_at:]) - len(text[value_at:].lstrip())
        _, end = json.JSONDecoder().raw_decode(text, value_at)
        rest = text[end:].lstrip()
        text = text[:start] + (rest[1:] if rest.startswith(",") else rest)
        text = text.rstrip() if not rest.startswith(",") else text
    return "".join(text.split()).replace(",}", "}")
