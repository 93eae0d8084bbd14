"""With no display, a bare `desktop-mem` says so in one line instead of Qt aborting."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland displays are a Linux matter")
def test_no_display_says_so_in_one_line_and_points_to_the_cli(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    proc = subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(tmp_path / "s")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no display" in lines[0]
    assert "desktop-mem --help" in lines[0] and "desktop-mem serve" in lines[0]
    assert not (tmp_path / "s").exists(), "nothing is created when the window cannot open"
