"""The window shows no held-back hand edit's secret outside the editor the user fixes it in.

ENUMERATED: every function of desktop_mem.ui that takes the engine (the work the window sends to
a worker thread) is either called here with the held-back memories' conversations, events and
ids, or named as a write / the editor's raw view with the reason. The bridge's signals during a
hand edit are checked too. Real engine, real git, real index.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import pkgutil
from collections.abc import Callable
from typing import Any

import desktop_mem.ui
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EngineError, Operation
from desktop_mem.ui.engine_bridge import EngineBridge
from desktop_mem.ui.memories.memory_browser import BrowserQuery
from tests.test_hand_edit_secrets import KEY, _hand_edit

NOT_READS: dict[str, str] = {
    "long_operations.import_file": "write", "long_operations.rebuild_index": "write",
    "long_operations.sync_store": "write", "long_operations.tidy_memory": "write (review proposals)",
    "store_session.close_engine": "lifecycle",
    "store_session.open_index_and_watch": "lifecycle", "store_session.start_endpoint": "lifecycle",
    "problem_editor.save_raw": "write", "tool_notice.undo_changes": "write",
    "problem_editor.load_raw": "the problem editor: the raw file, asked for by name",
    "welcome_page.welcome_page": "builds the first-run page on the GUI thread (its demo store is a write)",
}


def _engine_functions() -> dict[str, Callable[..., Any]]:
    found: dict[str, Callable[..., Any]] = {}
    # every module of the window, in the pane folders too (named by the module's own name)
    for info in pkgutil.walk_packages(desktop_mem.ui.__path__, prefix="desktop_mem.ui."):
        module = importlib.import_module(info.name)
        for name, function in inspect.getmembers(module, inspect.isfunction):
            params = list(inspect.signature(function).parameters.values())
            takes_engine = bool(params) and "MemoryEngine" in str(params[0].annotation)
            # private helpers run inside the public functions called here
            if function.__module__ == module.__name__ and takes_engine and not name.startswith("_"):
                found[f"{info.name.rsplit('.', 1)[-1]}.{name}"] = function
    return found


def test_no_read_the_window_makes_shows_a_held_back_hand_edit(qtbot: Any, engine: MemoryEngine) -> None:
    bridge = EngineBridge(engine)
    seen: list[str] = []
    for signal in (bridge.store_changed, bridge.secret_held_back, bridge.outcome_ready):
        signal.connect(lambda value, seen=seen: seen.append(repr(value)))
    engine.open_index()
    tea = engine.add("User likes green tea from Japan")
    engine.add("User likes strong coffee")
    with engine._parts.writer.transaction(Operation.SUMMARY, "Summary", "trip") as tx:
        summary = tx.write_summary("trip", "The user plans a trip to Porto.", 0)
    turn = engine.add("Book the Porto hotel", conversation_id="trip", role="user")
    held = (tea, summary, turn)
    for memory in held:
        _hand_edit(engine, memory.path, f"{memory.text} key {KEY}")
    engine.apply_external_changes([m.path for m in held])
    qtbot.waitUntil(lambda: sum("SecretHeldBack" in s for s in seen) == 3, timeout=5000)
    raw = engine._parts.raw
    assert all(KEY in raw.get(m.id).text for m in held), "the raw view holds it: the check can fail"

    events = [e for c in engine.history() for e in c.events if e.memory_id in {m.id for m in held}]
    values: dict[str, list[Any]] = {
        "conversation_id": ["trip", "global"],
        "memory_id": [m.id for m in held],
        "event": events,
        "offset": [0, 1],  # the browser's next page of a listing
        "query": [BrowserQuery(text, conv, role, None, None, None, deleted)
                  for text, conv, role, deleted in itertools.product(
                      ("", "green tea key", "Porto hotel"), (None, "trip"), (None, "user", "summary"),
                      (False, True))],
    }
    functions = _engine_functions()
    calls = 0
    for name in sorted(set(functions) - set(NOT_READS)):
        function = functions[name]
        params = [p.name for p in list(inspect.signature(function).parameters.values())[1:]
                  if p.default is inspect.Parameter.empty]
        assert all(p in values for p in params), f"ui.{name} takes {params}: give values or classify it"
        for combo in itertools.product(*(values[p] for p in params)):
            try:
                shown = repr(function(engine, *combo))
            except EngineError as exc:
                shown = str(exc)
            assert KEY not in shown, f"ui.{name}{combo} shows a held-back hand edit's secret"
            calls += 1
    assert calls > 40 and events, "the reads ran over the held-back memories' events"
    assert all(KEY not in s for s in seen), "the bridge's signals carry no secret"
    bridge.close()
