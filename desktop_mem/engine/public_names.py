"""The front ends' engine names besides MemoryEngine, models, config and schema: where each lives.

engine/api.py hands them out on first use (its module `__getattr__`), so importing the API stays
light (no numpy, chromadb or openai) and ui/, cli/ and api/ never import an engine part directly.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> the engine module (below desktop_mem.engine) that defines it
NAMES: dict[str, str] = {
    **dict.fromkeys(["LLMClient", "LLMEndpoint"], "chat.llm_client"),
    **dict.fromkeys(["TurnMemory", "learned_in", "scope_of"], "chat.turn_memory"),
    "Provenance": "chat.provenance",
    "Proposal": "chat.review",
    **dict.fromkeys(["Lineage", "LineageStep", "lineage"], "history.lineage"),
    **dict.fromkeys(["SOURCE_APP", "SOURCE_OUTSIDE", "commit_source"], "history.timeline"),
    **dict.fromkeys(["TimelineCursor", "TimelinePage", "TimelineQuery", "DiffOp", "FieldChange",
                     "event_bytes", "event_texts", "front_matter_changes", "timeline_page",
                     "word_diff"],
                    "history.timeline_query"),
    **dict.fromkeys(["memory_at", "restore_deleted", "restore_summary_version", "revert_replacement"],
                    "history.timeline_actions"),
    **dict.fromkeys(["ImportResult", "apply_import", "plan_import", "iter_plan_lines"], "transfer.importers"),
    **dict.fromkeys(["export_json", "export_zip"], "transfer.exporters"),
    **dict.fromkeys(["SyncResult", "sync"], "transfer.git_sync"),
    "FrontMatterError": "store.front_matter",
    "create_demo_store": "demo",
}
# whole modules the front ends use by name
MODULES: dict[str, str] = {"turn_memory": "chat.turn_memory", "sent_log": "chat.sent_log",
                           "validity": "store.validity"}


def load(name: str, where: str) -> Any:
    """The engine name or module `name`, imported now; AttributeError (naming `where`) otherwise."""
    if name in MODULES:
        return importlib.import_module(f"desktop_mem.engine.{MODULES[name]}")
    if name in NAMES:
        return getattr(importlib.import_module(f"desktop_mem.engine.{NAMES[name]}"), name)
    raise AttributeError(f"module {where!r} has no attribute {name!r}")


def import_index_modules() -> None:
    """Import chromadb, onnxruntime and the index modules (seconds of imports) ahead of opening
    the index, so saves made meanwhile do not wait for them. Imports only: no state is touched."""
    import desktop_mem.engine.index.index_factory  # noqa: F401
