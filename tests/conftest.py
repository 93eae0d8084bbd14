"""Shared fixtures: a real temporary store with real git; the scripted LLM server plugin."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["tests.scripted_llm"]

# Tests never read the developer's own config file or environment endpoints.
for _var in (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "OPENAI_SUMMARY_MODEL",
    "OPENAI_SUMMARY_URL",
    "DESKTOP_MEM_STORE",
    "DESKTOP_MEM_TOKEN",
):
    os.environ.pop(_var, None)
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["GIT_CONFIG_GLOBAL"] = os.devnull  # no user identity or hooks leak into test repos
os.environ["GIT_CONFIG_NOSYSTEM"] = "1"


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg_dir = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("DESKTOP_MEM_CONFIG", str(cfg_dir / "config.yaml"))
    (cfg_dir / "config.yaml").write_text("", encoding="utf-8")


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., Any]:
    """Build a Config for a store under tmp_path, with setting overrides by dotted name."""
    from desktop_mem.engine.config import load_config

    def factory(store: Path | None = None, **overrides: Any) -> Any:
        flags = {k.replace("__", "."): v for k, v in overrides.items()}
        flags.setdefault("store.path", str(store or tmp_path / "store"))
        flags.setdefault("watcher.enabled", False)
        return load_config(flags=flags)

    return factory


@pytest.fixture
def engine(make_config: Callable[..., Any]) -> Iterator[Any]:
    """A writing MemoryEngine over a fresh store (no index, no watcher)."""
    from desktop_mem.engine.facade import MemoryEngine

    eng = MemoryEngine.open(make_config())
    yield eng
    eng.close()


@pytest.fixture
def chat_engine(make_config: Callable[..., Any], scripted_llm: Any) -> Iterator[Any]:
    """A writing MemoryEngine with its index open, talking to the scripted LLM server."""
    from desktop_mem.engine.facade import MemoryEngine

    eng = MemoryEngine.open(
        make_config(
            **{
                "llm.base_url": scripted_llm.base_url,
                "llm.model": "test-model",
                "llm.api_key": "test",
                "llm.timeout": 5,
            }
        )
    )
    eng.open_index()
    yield eng
    eng.close()


# The whole suite passes and then, while the interpreter tears down, a C extension's refcount bug
# aborts it ("Fatal Python error: bool_dealloc", exit 134) - seen in two fresh-clone CI runs on
# 2026-11-28 after every one of 1308 tests passed; not reproduced with any single file. Until the
# extension is found (candidates: regex 2026.11.19, new with dateparser; the Qt and ONNX
# bindings), the run ends with pytest's own exit status once everything has reported, without
# the interpreter's final garbage collection. Everything a test writes is closed by its fixtures.
_SESSION_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _SESSION_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if _SESSION_STATUS and not os.environ.get("DESKTOP_MEM_TEST_FULL_TEARDOWN"):
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_SESSION_STATUS[-1])
