"""Which memory was sent to which model, and when: `sent_log.jsonl` in the store folder.

One JSON line per reply that put memories in front of a model:
`{"at": "2026-11-24T17:00:00+00:00", "endpoint": "127.0.0.1:8765", "model": "local", "ids": [...]}`.

Why a git-ignored file and not a committed one: every version of a committed file stays in git
for ever, so a log committed on every reply could never be bounded (and would make a commit per
reply twice as large, and conflict when two machines sync). The durable per-reply record is
already committed with each turn (`memory_used` in the reply's front matter, chat/turn_memory.py);
this file is the per-machine index of where memories went, including the endpoint, which the
turn record does not name. It is plain text the user owns (read it, delete it: nothing breaks),
kept to the newest MAX_LINES lines.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import urlparse

from desktop_mem.engine.models import utc_now
from desktop_mem.engine.store.markdown_store import atomic_write

log = logging.getLogger(__name__)

LOG_NAME = "sent_log.jsonl"
MAX_LINES = 5000  # the newest lines kept (about 1 MB at 20 ids a line)
KEEP_AFTER_TRIM = 4000
MAX_IDS = 50


@dataclass(frozen=True)
class SentTo:
    """Where one memory went: an endpoint and model, how often, and the last time."""

    endpoint: str
    model: str
    count: int
    last: datetime

    def label(self) -> str:
        """"local @ 127.0.0.1:8765 3×"."""
        where = f"{self.model} @ {self.endpoint}" if self.model else self.endpoint
        return f"{where} {self.count}×"


def endpoint_label(base_url: str) -> str:
    """The host (and port) of an endpoint URL, never its path, query or credentials."""
    try:
        parsed = urlparse(base_url)
    except ValueError:
        return "unknown endpoint"
    host = parsed.hostname or "unknown endpoint"
    return f"{host}:{parsed.port}" if parsed.port else host


class SentLog:
    """Append-only (bounded) record of memories sent to models, in the store folder."""

    def __init__(self, root: Path) -> None:
        self.path = root / LOG_NAME
        self._lock = threading.Lock()

    def record(
        self, memory_ids: Iterable[str], endpoint: str, model: str, at: datetime | None = None
    ) -> None:
        """Note that these memories were sent (a failure to write is logged, never raised)."""
        ids = list(dict.fromkeys(str(i) for i in memory_ids))[:MAX_IDS]
        if not ids:
            return
        line = json.dumps({"at": (at or utc_now()).isoformat(), "endpoint": endpoint[:200],
                           "model": model[:200], "ids": ids}, ensure_ascii=False)
        with self._lock:
            try:
                with open(self.path, "a", encoding="utf-8") as handle:
                    handle.write(line + "\n")
                self._trim()
            except OSError as exc:
                log.warning("could not note where memories were sent: %s", exc)

    def _trim(self) -> None:
        lines = self.path.read_text("utf-8", errors="replace").splitlines()
        if len(lines) > MAX_LINES:
            atomic_write(self.path, ("\n".join(lines[-KEEP_AFTER_TRIM:]) + "\n").encode("utf-8"))

    def sent_to(self, memory_id: str) -> list[SentTo]:
        """Where a memory was sent, most often first (a line that does not parse is skipped)."""
        counts: Counter[tuple[str, str]] = Counter()
        last: dict[tuple[str, str], datetime] = {}
        for entry in self._entries():
            if memory_id not in entry[3]:
                continue
            key = (entry[1], entry[2])
            counts[key] += 1
            last[key] = max(last.get(key, entry[0]), entry[0])
        return [SentTo(endpoint, model, n, last[(endpoint, model)])
                for (endpoint, model), n in counts.most_common()]

    def _entries(self) -> Iterable[tuple[datetime, str, str, list[str]]]:
        try:
            text = self.path.read_text("utf-8", errors="replace")
        except OSError:
            return
        for line in text.splitlines():
            try:
                data = json.loads(line)
                at = datetime.fromisoformat(str(data["at"]))
                ids = [str(i) for i in data["ids"]] if isinstance(data["ids"], list) else []
                yield at, str(data.get("endpoint", "")), str(data.get("model", "")), ids
            except (ValueError, KeyError, TypeError):
                continue


def summary(entries: list[SentTo]) -> str:
    """"sent to: local @ 127.0.0.1:8765 3×, gpt-4o-mini @ api.openai.com 1×" (or "never sent")."""
    return "sent to: " + ", ".join(e.label() for e in entries) if entries else "never sent to a model"
