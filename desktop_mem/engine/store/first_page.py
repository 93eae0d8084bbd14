"""The first page of the memory list, kept from the last session: a window shows it while the
catalog loads (100,000 memories take a second or more to load; issue #36).

A writer saves it when it closes: the shared view's default listing (newest first, no filter,
held-back hand edits left out), its first rows and the listing's total, each row with the size and
mtime of its file then, in one small JSON file beside the manifest (a cache: git never tracks it,
deleting it costs that second, never data). The next start uses it only when every file on it is
unchanged and still a plain file: one changed, moved or gone drops the whole page, and the window
waits for the catalog as before. Files added since are not on it; the catalog's listing replaces
it once loaded. The file is hostile input like any other: bounded, every path checked.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from desktop_mem.engine.store import layout
from desktop_mem.engine.store.manifest import Stat, parse_row, row_text
from desktop_mem.engine.store.markdown_store import atomic_write
from desktop_mem.engine.store.reads import MemoryPage

log = logging.getLogger(__name__)

FIRST_PAGE_NAME = "memory_index.json.first_page"  # .gitignore's `memory_index.json.*`
FIRST_PAGE_ROWS = 500  # the Memories pane's page (ui/memory_model.py FETCH_BATCH)
MAX_BYTES = 4_000_000  # long memories make a shorter page, never a large file
_VERSION = 1


def save(root: Path, page: MemoryPage, signature: Callable[[str], Stat | None]) -> None:
    """Keep `page` (a default listing's first rows) for the next start, each row with
    `signature(path)`: its file's (mtime_ns, size) when the memory was parsed (the manifest's), not
    now, so a file written behind the catalog's back is seen as changed. A row without one ends
    the page there. Errors are logged: it is a cache."""
    rows: list[list[Any]] = []
    size = 0
    for memory in page.memories[:FIRST_PAGE_ROWS]:
        stat_then = signature(memory.path)
        if stat_then is None:
            break
        text = row_text(memory)
        size += len(text) + len(memory.path) + 40
        if size > MAX_BYTES:
            break
        rows.append([memory.path, *stat_then, text])
    data = {"version": _VERSION, "total": page.total, "rows": rows}
    try:
        atomic_write(root / FIRST_PAGE_NAME, json.dumps(data, separators=(",", ":")).encode("utf-8"))
    except OSError as exc:
        log.warning("could not keep the memory list's first page for the next start: %s", exc)


def load(root: Path) -> MemoryPage | None:
    """The page kept by the last session, if every file on it is as it was then; else None."""
    path = root / FIRST_PAGE_NAME
    try:
        if path.lstat().st_size > MAX_BYTES + 100_000 or not path.is_file():
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not (isinstance(data, dict) and data.get("version") == _VERSION and isinstance(data.get("rows"), list)
            and isinstance(data.get("total"), int) and not isinstance(data.get("total"), bool)):
        return None
    memories = []
    for row in data["rows"]:
        memory = _unchanged(root, row)
        if memory is None:
            return None
        memories.append(memory)
    total = data["total"]
    if not memories or total < len(memories):
        return None
    return MemoryPage(tuple(memories), total)


def _unchanged(root: Path, row: Any) -> Any:
    """The memory of one row when its file is the same plain file as when it was kept."""
    if not (isinstance(row, list) and len(row) == 4 and isinstance(row[0], str) and isinstance(row[3], str)
            and all(isinstance(v, int) and not isinstance(v, bool) for v in row[1:3])):
        return None
    rel, mtime_ns, size, text = row
    if not layout.is_memory_file(rel) or ".." in rel.split("/") or "\\" in rel or "\0" in rel:
        return None
    try:
        st = os.lstat(root / rel)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or (st.st_mtime_ns, st.st_size) != (mtime_ns, size):
        return None
    memory = parse_row(text)
    return memory if memory is not None and memory.path == rel and not memory.deleted else None
