"""Project scopes: one memory per project, between a conversation and the global scope.

A project's memories live in a scope of their own, a conversation id `project-<name>` (so the
store layout, validation, the index and the timeline need nothing new). Whoever works in the
project reads it beside its own conversation and the global facts: a conversation bound to it
(conversation.yaml `project:`), an MCP client or agent hook that names it, the CLI's `--project`.
The name is the user's, or derived from a folder: the name of its git root (else the folder)
and a short hash of that path, so two checkouts called `app` stay two projects.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from desktop_mem.engine.models import ValidationError
from desktop_mem.engine.store.conversation_ids import MAX_LENGTH, validate_conversation_id

PREFIX = "project-"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def project_scope(name: str) -> str:
    """The scope (conversation id) of the project called `name`; a scope passes unchanged."""
    if not isinstance(name, str) or not name.strip():
        raise ValidationError("A project name is empty: give a name, e.g. --project desktop-mem")
    if name.startswith(PREFIX) and len(name) > len(PREFIX):
        return validate_conversation_id(name)
    slug = _UNSAFE.sub("-", name.strip()).strip(".-_")
    while ".." in slug:
        slug = slug.replace("..", ".")
    if not slug:
        raise ValidationError(f"Project name {name!r} has no letters or digits")
    return validate_conversation_id(PREFIX + slug[: MAX_LENGTH - len(PREFIX)].rstrip(".-_"))


def project_name(scope: str | None) -> str | None:
    """The name of a project scope (None for any other conversation id)."""
    if scope and scope.startswith(PREFIX) and len(scope) > len(PREFIX):
        return scope[len(PREFIX):]
    return None


def project_of_folder(folder: Path | str) -> str:
    """The project scope of a folder: its git root's name (else the folder's) and a hash of
    that path (e.g. `project-desktop-mem-3f9a1c`)."""
    start = Path(folder).expanduser().resolve()
    root = next((p for p in (start, *start.parents) if (p / ".git").exists()), start)
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:6]
    base = _UNSAFE.sub("-", root.name).strip(".-_") or "root"
    return project_scope(f"{base[: MAX_LENGTH - len(PREFIX) - 7]}-{digest}")
