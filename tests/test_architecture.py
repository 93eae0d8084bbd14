"""Architecture contracts: Qt stays out of the engine (import-linter); the engine type-checks strictly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> str:
    found = Path(sys.executable).parent / name
    return str(found) if found.exists() else (shutil.which(name) or name)


def test_engine_never_imports_qt_or_front_ends() -> None:
    proc = subprocess.run([_tool("lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BROKEN" not in proc.stdout


def test_engine_passes_mypy_strict() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--ignore-missing-imports",
            "--no-incremental",
            "desktop_mem/engine",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_the_windows_start_path_imports_no_index_or_llm_library() -> None:
    """numpy, chromadb, onnxruntime and openai load once the memory list is on screen: imported
    with the engine they held the GIL for tenths of a second before the first listing
    (benchmarks/gui_start.py, docs/benchmarks.md "Store shapes")."""
    code = ("import sys, desktop_mem.ui.main_window, desktop_mem.engine.facade, desktop_mem.ui.workspace\n"
            "print(' '.join(m for m in ('numpy', 'chromadb', 'onnxruntime', 'openai') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [], f"imported at start-up: {proc.stdout.strip()}"
