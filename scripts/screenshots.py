"""Screenshots of every pane with the demo store, under Xvfb, into docs/screenshots/.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--display :97]

Starts its own Xvfb with a 1366×768 screen (a common laptop; installing Xvfb with apt-get when
missing), builds the demo store in a temp dir, points the app at the scripted OpenAI-compatible
test server so the chat pane shows a real streamed exchange, fills the screen with the window
and saves the whole screen (the X root window, as `import -window root` would) as chat.png,
memories.png, editor.png, summary.png, timeline.png, lineage.png, settings.png, chat-updating.png,
chat-interrupted.png and project.png (a conversation put in a project, the Memories pane filtered
by it; the project's facts added as an agent would). It fails if the window or the dialog does
not fit the screen.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

APT_PACKAGES = ["xvfb", "libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0", "libxcb-render-util0",
                "libxcb-xkb1", "libxkbcommon-x11-0", "libxcb-cursor0"]
DISPLAY = ":97"
SIZE = (1366, 768)
FACTS = "You extract facts about the user"
RECONCILE = "You keep a memory of facts about the user"
SUMMARY = "You maintain a short running summary"
REPLY = ("Since you and **Anna** like quiet places and seafood, here is a relaxed day in Lisbon:\n\n"
         "1. **Morning** – walk up through *Alfama* before the crowds, coffee at a miradouro.\n"
         "2. **Lunch** – grilled sardines near the river.\n"
         "3. **Evening** – Cais do Sodré for seafood; book ahead on weekends.\n\n"
         "Want me to add a rainy-day option?")


def start_xvfb(display: str = DISPLAY) -> subprocess.Popen[bytes]:
    """Start Xvfb on `display` (installing it first when missing)."""
    if shutil.which("Xvfb") is None:
        subprocess.run(["apt-get", "install", "-y", *APT_PACKAGES], check=True)
    screen = f"{SIZE[0]}x{SIZE[1]}x24"
    proc = subprocess.Popen(["Xvfb", display, "-screen", "0", screen, "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    if proc.poll() is not None:
        raise SystemExit("Xvfb did not start")
    os.environ["DISPLAY"] = display
    os.environ["QT_QPA_PLATFORM"] = "xcb"
    return proc


def wait_until(predicate: Callable[[], bool], timeout: float = 60.0) -> None:
    """Run the event loop until `predicate()` holds (a script, not the app: a plain loop is fine)."""
    from PySide6.QtCore import QEventLoop, QTimer

    deadline = time.monotonic() + timeout
    loop = QEventLoop()
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the window did not reach the expected state")
        QTimer.singleShot(30, loop.quit)
        loop.exec()


def pause(seconds: float) -> None:
    """Let the window repaint."""
    end = time.monotonic() + seconds
    wait_until(lambda: time.monotonic() >= end)


def is_chat(body: dict[str, object]) -> bool:
    messages = body.get("messages") or []
    system = " ".join(str(m.get("content", "")) for m in messages if isinstance(m, dict)  # type: ignore[union-attr]
                      and m.get("role") == "system")
    return FACTS not in system and RECONCILE not in system and SUMMARY not in system


def shoot(window: object, path: Path) -> None:
    """The whole screen, after checking that the window fits on it."""
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QWidget

    assert isinstance(window, QWidget)
    frame = window.frameGeometry()
    if frame.width() > SIZE[0] or frame.height() > SIZE[1]:
        raise SystemExit(f"{path.name}: the window is {frame.width()}×{frame.height()}, "
                         f"larger than the {SIZE[0]}×{SIZE[1]} screen")
    screen = QGuiApplication.primaryScreen()
    screen.grabWindow(0).save(str(path))


def take(out: Path) -> None:
    from PySide6.QtCore import QSettings

    from desktop_mem.engine.api import MemoryEngine, project_scope
    from desktop_mem.engine.config import load_config
    from desktop_mem.ui.app import application
    from desktop_mem.ui.main_window import MainWindow
    from desktop_mem.ui.settings.settings_dialog import SettingsDialog
    from desktop_mem.ui.workspace import CHAT_TAB, MEMORIES_TAB, SUMMARY_TAB, TIMELINE_TAB
    from tests.scripted_llm import Fault, ScriptedLLM

    server = ScriptedLLM().start()
    # Slow, as a local model is: the chat pane shows "Updating memory…" meanwhile.
    server.script(FACTS, Fault.delay(4, then='["The user is allergic to shellfish"]'), times=1)
    server.script(FACTS, "[]")
    server.script(RECONCILE, '[{"event": "ADD", "text": "The user is allergic to shellfish"}]')
    server.script(SUMMARY, "Sam plans a May trip to Lisbon with Anna; quiet places, seafood.")
    server.script(is_chat, REPLY)
    tmp = Path(tempfile.mkdtemp(prefix="desktop-mem-shots-"))
    # Settings in the config file, as a user's would be (flags would show as "set by --set").
    (tmp / "config.yaml").write_text(
        f"store:\n  path: {tmp / 'store'}\nllm:\n  base_url: {server.base_url}\n  model: test-model\n"
        "  api_key: test\nwatcher:\n  enabled: false\n", encoding="utf-8")
    os.environ["DESKTOP_MEM_CONFIG"] = str(tmp / "config.yaml")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_MODEL", "DESKTOP_MEM_STORE"):
        os.environ.pop(name, None)
    config = load_config()
    engine = MemoryEngine.open(config)
    engine.create_demo()
    planner = project_scope("invoice-tool")
    for fact in ("The invoice tool's API keeps invoices in PostgreSQL 16",
                 "The invoice tool deploys through GitHub Actions on every tag",
                 "The invoice tool's front end is written in TypeScript with Svelte"):
        engine.add(fact, conversation_id=planner)
    engine.set_conversation_project("work-notes", planner)
    engine.close()

    app = application([])
    window = MainWindow(config, settings=QSettings(str(tmp / "ui.ini"), QSettings.Format.IniFormat))
    window.setGeometry(0, 0, *SIZE)
    window.show()
    ready: list[bool] = []
    window.index_ready.connect(lambda: ready.append(True))
    window.open_store()
    wait_until(lambda: bool(ready) and window.workspace is not None)
    ws = window.workspace
    assert ws is not None
    wait_until(lambda: ws.conversations.model.row_of("trip-to-lisbon") is not None)
    ws.conversations.select("trip-to-lisbon")
    window.show_tab(CHAT_TAB)
    wait_until(lambda: len(ws.chat.messages()) >= 4)
    wait_until(lambda: window.status.llm_label.text() == "LLM: connected")

    outcome: list[str] = []
    ws.chat.outcome_shown.connect(outcome.append)
    ws.chat.input.setPlainText("Any ideas for a calm day there? I'm allergic to shellfish, by the way.")
    ws.chat.send()
    wait_until(lambda: bool(ws.chat.messages()[-1].text) and not ws.chat.busy, timeout=60)
    pause(1.6)
    shoot(window, out / "chat-updating.png")
    wait_until(lambda: bool(outcome), timeout=60)
    last = ws.chat.messages()[-1]
    if last.used_panel is not None:
        last.used_panel.toggle.setChecked(True)
    pause(0.6)
    shoot(window, out / "chat.png")

    def browser_idle() -> bool:
        return ws.browser.count_label.text() not in ("searching…", "loading…")

    window.show_tab(MEMORIES_TAB)
    ws.browser.search_edit.setText("Lisbon trip")
    wait_until(lambda: ws.browser.model.searching and browser_idle())
    ws.browser.table.selectRow(0)
    pause(0.6)
    shoot(window, out / "memories.png")

    ws.browser.search_edit.clear()
    wait_until(lambda: not ws.browser.model.searching and browser_idle())
    row = next(r for r in range(ws.browser.model.rowCount())
               if (m := ws.browser.model.memory_at(r)) is not None and m.kind == "preference")
    ws.browser.table.selectRow(row)
    pause(0.6)
    shoot(window, out / "editor.png")

    window.show_tab(SUMMARY_TAB)
    wait_until(lambda: ws.summary.state is not None and ws.summary.state.summary is not None)
    pause(0.6)
    shoot(window, out / "summary.png")

    window.show_tab(TIMELINE_TAB)
    timeline = ws.timeline
    wait_until(lambda: timeline.model.rowCount() > 0)
    update_row = next(r for r in range(timeline.model.rowCount())
                      if (c := timeline.model.commit_at(r)) is not None
                      and any(e.type.value == "UPDATE" for e in c.events))
    timeline.select_commit(update_row)
    timeline.diff_view.side_check.setChecked(True)
    pause(1.5)
    shoot(window, out / "timeline.png")
    timeline.detail_tabs.setCurrentWidget(timeline.lineage_view)
    wait_until(lambda: timeline.lineage_view.lineage is not None)
    pause(0.6)
    shoot(window, out / "lineage.png")

    dialog = SettingsDialog(window.config, window.runner, window, group="llm")
    dialog.show()
    dialog.move(window.geometry().center() - dialog.rect().center())
    dialog.test_connection()
    wait_until(lambda: dialog.test_label.text().startswith(("✔", "✘")))
    pause(0.4)
    shoot(dialog, out / "settings.png")
    dialog.close()

    # A reply the server cuts short: kept, marked interrupted, counted, with Retry; no Settings link.
    window.show_tab(CHAT_TAB)
    server.reset()
    server.script(is_chat, Fault.cut_stream(9, "Yes: on a rainy day, try the tile museum and then the "
                                               "covered market for lunch."))
    finished: list[object] = []
    ws.chat.reply_finished.connect(finished.append)
    ws.chat.input.setPlainText("Yes, a rainy-day option please.")
    ws.chat.send()
    wait_until(lambda: bool(finished), timeout=60)
    pause(0.8)
    shoot(window, out / "chat-interrupted.png")

    # A project: "Work notes" works in one; the Memories pane filtered by it.
    ws.conversations.select("work-notes")
    wait_until(lambda: ws.conversations.project_picker.project == planner)
    window.show_tab(MEMORIES_TAB)
    combo = ws.browser.conversation_combo
    wait_until(lambda: combo.findData(planner) >= 0)
    combo.setCurrentIndex(combo.findData(planner))
    wait_until(lambda: ws.browser.model.rowCount() == 3 and browser_idle())
    ws.browser.table.selectRow(0)
    pause(0.6)
    shoot(window, out / "project.png")

    window.shutdown()
    window.close()
    server.stop()
    app.quit()
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--display", default=DISPLAY, help="the X display Xvfb takes (default %(default)s)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    xvfb = start_xvfb(args.display)
    try:
        take(args.out)
    finally:
        xvfb.terminate()
        xvfb.wait(5)
    print(f"screenshots written to {args.out}", flush=True)
    # Worker threads of the closed store (chroma, the write path) may linger; a script may just end.
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
