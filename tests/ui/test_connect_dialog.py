"""Help → Connect an AI tool…: the window adds desktop-mem to a client's own settings file, as
`desktop-mem mcp setup` does (merged, backed up), and shows the snippet to paste by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.ui.settings.connect_dialog import ConnectDialog


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every client's settings live under a temp home (never the real one)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))
    return tmp_path / "home"


def _choose(dialog: ConnectDialog, client: str) -> None:
    dialog.client_box.setCurrentIndex(dialog.client_box.findData(client))


def test_the_window_adds_desktop_mem_to_cursor_keeping_the_other_servers(
        qtbot: Any, runner: Any, settle: Any, home: Path, tmp_path: Path) -> None:
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text('{"mcpServers": {"files": {"command": "npx"}}}')
    dialog = ConnectDialog(tmp_path / "store", runner)
    qtbot.addWidget(dialog)
    _choose(dialog, "cursor")
    settle(runner)
    assert dialog.path_label.text() == str(cursor)
    assert '"desktop-mem"' in dialog.snippet.toPlainText() and "mcpServers" in dialog.snippet.toPlainText()
    assert dialog.add_button.isEnabled()

    dialog.add_button.click()
    settle(runner)
    servers = json.loads(cursor.read_text())["mcpServers"]
    assert servers["files"] == {"command": "npx"} and servers["desktop-mem"]["args"][-1] == "mcp"
    assert len(list(cursor.parent.glob("mcp.json.*.bak"))) == 1
    assert "Restart Cursor" in dialog.status.text()
    assert not dialog.add_button.isEnabled()


def test_a_settings_file_it_cannot_read_is_left_alone_and_the_snippet_still_shows(
        qtbot: Any, runner: Any, settle: Any, home: Path, tmp_path: Path) -> None:
    vscode = home / ".config" / "Code" / "User" / "mcp.json"
    vscode.parent.mkdir(parents=True)
    vscode.write_text('{\n  // mine\n  "servers": {}\n}')
    dialog = ConnectDialog(tmp_path / "store", runner)
    qtbot.addWidget(dialog)
    _choose(dialog, "vscode")
    settle(runner)
    assert "Cannot add it automatically" in dialog.status.text() and "comments" in dialog.status.text()
    assert not dialog.add_button.isEnabled()
    assert '"type": "stdio"' in dialog.snippet.toPlainText()  # the snippet to paste by hand
    assert vscode.read_text() == '{\n  // mine\n  "servers": {}\n}'
