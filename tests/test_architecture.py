"""Architecture contracts: Qt stays out of the engine (import-linter); the engine type-checks
strictly and the front ends type-check."""

from __future__ import annotations

import ast
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


def _mypy(*args: str) -> subprocess.CompletedProcess[str]:
    """mypy over `args` (the project's [tool.mypy] settings apply), from scratch."""
    command = [sys.executable, "-m", "mypy", "--ignore-missing-imports", "--no-incremental", *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True)


def test_engine_passes_mypy_strict() -> None:
    proc = _mypy("--strict", "desktop_mem/engine")
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_front_ends_pass_mypy() -> None:
    """The front ends type-check too (not strictly): 39 errors had piled up unseen in them, among
    them a widget attribute hiding QWidget.actions() and a method overriding QWidget.find."""
    proc = _mypy("desktop_mem/api", "desktop_mem/cli", "desktop_mem/ui", "desktop_mem/integrations")
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


# The one import the import-linter cannot see is one made by name at run time. The front ends
# once took 97 engine names through such a door (engine/api.py's module __getattr__ over a name
# table), 57 file -> module edges that the "front ends import only the public API" contract passed.
# So imports by name are forbidden in the package, but for these (a third-party module that
# must load late), each with why.
IMPORTS_BY_NAME_ALLOWED = {
    "desktop_mem/engine/index/chroma_telemetry.py": "chromadb's telemetry exporter, loaded on first use",
}
_BY_NAME = ("import_module", "__import__")


def _imports_by_name(path: Path) -> list[int]:
    """The lines of `path` that import by name, or define a module-level __getattr__."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = [n.lineno for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and n.attr in _BY_NAME
             or isinstance(n, ast.Name) and n.id in _BY_NAME
             or isinstance(n, ast.alias) and n.name in _BY_NAME]
    return lines + [n.lineno for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "__getattr__"]


def test_no_engine_name_is_imported_by_name_at_run_time() -> None:
    """Every import in the package is a plain import statement (the contracts above see it): no
    importlib.import_module, no __import__, no module-level __getattr__ handing out names."""
    offenders = {}
    for path in sorted((ROOT / "desktop_mem").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        lines = _imports_by_name(path)
        if lines and rel not in IMPORTS_BY_NAME_ALLOWED:
            offenders[rel] = lines
    assert not offenders, f"imports by name (the import contracts cannot see them): {offenders}"


ENGINE_PARTS = {"store", "git", "lock", "writer", "manifest", "catalog", "raw", "index", "retriever",
                "chat_service", "memory_llm", "_parts", "_p"}  # `_parts`: the test-only door to them


def _engine_named(node: ast.expr) -> bool:
    """`engine`, `self.engine`, `self._engine`, `window.engine`, `opened.engine` ..."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.lstrip("_") == "engine"


def test_front_ends_reach_no_engine_part() -> None:
    """A front end talks to MemoryEngine's methods and sub-facades, never to a part one dot
    behind it (engine.lock.acquire, engine.store.memory_from_bytes were 19 such reaches)."""
    reaches = []
    for front in ("ui", "cli", "api", "integrations"):
        for path in sorted((ROOT / "desktop_mem" / front).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in ENGINE_PARTS \
                        and _engine_named(node.value):
                    reaches.append(f"{path.relative_to(ROOT)}:{node.lineno} engine.{node.attr}")
    assert not reaches, f"front ends reach engine parts: {reaches}"
