"""UI test fixtures: Qt warnings fail tests, a synchronous runner, a real engine with its index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

UI_DIR = Path(__file__).parent
TIDY_PAIR = "Compare fact A and fact B"  # the tidy-up's question about two facts


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/ui fails on a Qt warning (pytest-qt's qt_log_level_fail)."""
    for item in items:
        if Path(str(item.fspath)).is_relative_to(UI_DIR):
            item.add_marker(pytest.mark.qt_log_level_fail("WARNING"))
            # The offscreen platform itself says this about every shown top-level window.
            item.add_marker(pytest.mark.qt_log_ignore("does not support propagateSizeHints", extend=True))


@pytest.fixture
def runner(qtbot: Any) -> Iterator[Any]:
    """A SyncTaskRunner: tasks run inline, results still arrive through the event loop."""
    from desktop_mem.ui.task_runner import SyncTaskRunner

    task_runner = SyncTaskRunner()
    yield task_runner
    task_runner.deleteLater()


@pytest.fixture
def settle(qtbot: Any) -> Callable[[Any], None]:
    """Wait until a runner delivered every result it owes."""

    def wait(task_runner: Any, timeout: int = 20000) -> None:
        qtbot.waitUntil(lambda: not task_runner.busy, timeout=timeout)

    return wait


@pytest.fixture
def indexed_engine(make_config: Callable[..., Any], scripted_llm: Any) -> Iterator[Any]:
    """A writing engine with its real index open, pointed at the scripted LLM server."""
    from desktop_mem.engine.facade import MemoryEngine

    eng = MemoryEngine.open(make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model",
                                   llm__api_key="test"))
    eng.open_index()
    yield eng
    eng.wait_idle(30)
    eng.close()


@pytest.fixture
def bridge(indexed_engine: Any, qtbot: Any) -> Iterator[Any]:
    """The engine's changes and write outcomes as Qt signals."""
    from desktop_mem.ui.engine_bridge import EngineBridge

    engine_bridge = EngineBridge(indexed_engine)
    yield engine_bridge
    engine_bridge.close()


@pytest.fixture
def opened_window(qtbot: Any, make_config: Any, scripted_llm: Any, tmp_path: Path) -> Iterator[Any]:
    """A main window (real pools) over a fresh store, opened: the welcome page shows."""
    from PySide6.QtCore import QSettings

    from desktop_mem.ui.main_window import MainWindow
    from desktop_mem.ui.task_runner import TaskRunner

    config = make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model", llm__api_key="test")
    win = MainWindow(config, TaskRunner(),
                     settings=QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat),
                     confirm=lambda *_: True)
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.store_opened, timeout=30000):
        win.open_store()
    yield win
    win.shutdown()


def open_demo(qtbot: Any, window: Any) -> Any:
    """Fill the opened window's empty store with the demo store; returns the shown workspace."""
    assert window.welcome is not None
    window.welcome.demo_button.click()
    qtbot.waitUntil(lambda: window.stack.currentWidget() is window.workspace, timeout=60000)
    assert window.workspace is not None
    return window.workspace


def duplicate_store(make_config: Any, scripted_llm: Any) -> Any:
    """The config of a store holding one fact twice; the scripted model says the two are the same."""
    from desktop_mem.engine.facade import MemoryEngine

    config = make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model", llm__api_key="test")
    with MemoryEngine(config) as engine:
        engine.add("The user lives in Utrecht", source="llm")
        engine.add("The user lives in Utrecht.", source="llm")
    scripted_llm.script(TIDY_PAIR, '{"relation": "same", "merged": "The user lives in Utrecht"}')
    return config


def open_indexed_window(qtbot: Any, config: Any, tmp_path: Path) -> Any:
    """A main window (real pools) over `config`'s store, shown, its store and index open (the
    caller shuts it down)."""
    from PySide6.QtCore import QSettings

    from desktop_mem.ui.main_window import MainWindow
    from desktop_mem.ui.task_runner import TaskRunner

    settings = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    win = MainWindow(config, TaskRunner(), settings=settings, confirm=lambda *_: True)
    qtbot.addWidget(win)
    win.show()
    try:
        with qtbot.waitSignal(win.index_ready, timeout=60000), \
                qtbot.waitSignal(win.store_opened, timeout=30000):
            win.open_store()
    except BaseException:
        win.shutdown()
        raise
    return win


@pytest.fixture
def app_style(qapp: Any) -> Iterator[None]:
    """The app's style sheet (its padded buttons, rows and arrows), as `desktop-mem` runs with it."""
    from desktop_mem.ui.app import apply_style

    before = qapp.styleSheet()
    apply_style(qapp)
    try:
        yield
    finally:
        qapp.setStyleSheet(before)
