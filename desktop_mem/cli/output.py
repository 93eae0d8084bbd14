"""What every `desktop-mem` command prints with: terminal-safe text, one JSON document, the
usage error. Shared by cli/main.py and the commands that register themselves beside it, so none
of them imports main."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import fields, is_dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from desktop_mem.engine.models import EngineError, Memory
from desktop_mem.engine.schema import memory_json

# C0 controls but newline and tab, DEL and C1 controls: escape sequences a terminal would obey.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class EngineError_(EngineError):  # noqa: N801 - a CLI-only usage error
    """A malformed command line."""


def terminal_safe(text: str) -> str:
    """`text` with terminal control characters shown as \\xNN (memory text may hold ANSI escapes)."""
    return _CONTROL_CHARS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def to_jsonable(value: Any) -> Any:
    """Dataclasses, datetimes and enums as plain JSON values."""
    if isinstance(value, Memory):
        return memory_json(value)  # the shape REST and MCP give too
    if is_dataclass(value) and not isinstance(value, type):
        # field by field, not dataclasses.asdict: that deep-copies every value first, and a bulk
        # commit's events are a lazy sequence holding the git reader (it cannot be copied)
        return {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Mapping):
        return {str(to_jsonable(k)): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [to_jsonable(v) for v in value]
    return value


def emit_json(value: Any) -> None:
    """Print one JSON document."""
    print(json.dumps(to_jsonable(value), ensure_ascii=False, indent=2, default=str))
