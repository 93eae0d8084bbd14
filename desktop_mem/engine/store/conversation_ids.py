"""Conversation ids name folders under entries/: they must never name a path outside the store."""

from __future__ import annotations

import re

from desktop_mem.engine.models import ValidationError
from desktop_mem.engine.store.secrets_scan import describe, redact, scan

MAX_LENGTH = 64
_ALLOWED = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # always fullmatch: "$" accepts a final "\n"
# Names that Windows refuses as file names; a store may be synced to such a machine.
_RESERVED = {
    "con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))
}
# Folder names the store itself uses inside a conversation.
_STORE_NAMES = {"deleted", "facts", "turns", "summaries", "entries"}


def validate_conversation_id(value: object) -> str:
    """Return `value` if it is a safe conversation id, else raise ValidationError saying why."""
    if not isinstance(value, str) or not value:
        raise ValidationError("Conversation id is empty: use letters, digits, '.', '_' or '-'.")
    shown = value if len(value) <= 80 else value[:77] + "..."
    if len(value) > MAX_LENGTH:
        raise ValidationError(f"Conversation id {shown!r} is longer than {MAX_LENGTH} characters.")
    if "/" in value or "\\" in value or ".." in value or value.startswith("."):
        raise ValidationError(
            f"Conversation id {shown!r} contains a path separator or '..': ids are plain names, "
            "not paths."
        )
    if not _ALLOWED.fullmatch(value):
        raise ValidationError(
            f"Conversation id {shown!r} has characters other than letters, digits, '.', '_' and '-'."
        )
    stem = value.split(".", 1)[0].lower()
    if stem in _RESERVED or value.lower() in _STORE_NAMES:
        raise ValidationError(f"Conversation id {shown!r} is a reserved name; choose another.")
    findings = scan(value)
    if findings:  # it would name a folder, every commit's trailer and the index's metadata (#22)
        raise ValidationError(f"Conversation id {findings[0].masked!r} looks like a secret "
                              f"({describe(findings)}); choose another id.")
    return value


def slugify_conversation_id(title: str) -> str:
    """Turn a free-form title into a valid conversation id (for 'new conversation' in the UI)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", redact(title).strip()).strip("-._").lower()[:MAX_LENGTH]
    if not slug or slug.split(".", 1)[0] in _RESERVED or slug in _STORE_NAMES:
        slug = f"conv-{slug or 'new'}"[:MAX_LENGTH]
    return slug
