"""What the memory editor's form holds and what saving it would change, as plain functions over
the typed values and the loaded memory (no widgets): its errors, its changed front-matter keys,
and the title and facts line above it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from desktop_mem.engine.api import VALID_FROM, VALID_TO, normalize_validity, validity_span, validity_start
from desktop_mem.engine.models import KINDS, Memory, Role, ValidationError
from desktop_mem.ui.memories.memory_model import when


@dataclass(frozen=True)
class FormValues:
    """What the form holds, in engine terms."""

    text: str
    kind: str | None
    source: str | None
    expires_at: datetime | None
    valid_from: str = ""  # as typed: "2024-03", "2024-03-15", an ISO date-time, or empty
    valid_to: str = ""


def form_errors(values: FormValues, memory: Memory | None, is_fact: bool) -> list[str]:
    """Reasons the form cannot be saved (empty when it can)."""
    errors = []
    if not values.text.strip():
        errors.append("The memory needs some text.")
    if is_fact and values.kind not in KINDS:
        errors.append(f"Kind must be one of {', '.join(KINDS)}.")
    created = memory.created_at if memory else datetime.now(UTC)
    if values.expires_at is not None and values.expires_at <= created:
        errors.append("Expiry must be later than the creation time "
                      f"({when(created)}); untick Expires for no expiry.")
    if memory is not None and memory.role == Role.MEMORY:
        try:
            since = normalize_validity(values.valid_from, VALID_FROM)
            until = normalize_validity(values.valid_to, VALID_TO)
            if since and until and validity_start(until) < validity_start(since):
                errors.append("“True until” is before “True from”.")
        except ValidationError as exc:
            errors.append(f"{exc}.")
    return errors


def form_changes(values: FormValues, memory: Memory, is_fact: bool) -> tuple[str | None, dict[str, Any]]:
    """(new text or None, changed front matter keys) against the loaded memory."""
    text = values.text if values.text.strip() != memory.text.strip() else None
    meta: dict[str, Any] = {}
    if is_fact and values.kind != memory.kind:
        meta["kind"] = values.kind
    if values.source != memory.source:
        meta["source"] = values.source
    elif text is not None and memory.source != "manual":
        meta["source"] = "manual"  # the words are the user's now, whoever wrote them first
    if values.expires_at != memory.expires_at:
        meta["expires_at"] = values.expires_at
    if memory.role == Role.MEMORY:
        for key, typed, held in ((VALID_FROM, values.valid_from, memory.valid_from),
                                 (VALID_TO, values.valid_to, memory.valid_to)):
            try:
                value = normalize_validity(typed, key)
            except ValidationError:
                value = typed  # form_errors reports it; it still counts as an edit
            if value != held:
                meta[key] = value or None
    return text, meta


def editor_title(memory: Memory | None, new_conversation: str | None, titles: dict[str, str]) -> str:
    """What is open, naming its conversation by title (its id when it has none)."""
    if new_conversation is not None:
        return f"New fact in “{titles.get(new_conversation, new_conversation)}”"
    if memory is None:
        return "Pick a memory to read or edit it"
    noun = {"memory": memory.kind or "fact", "user": "user turn", "assistant": "assistant turn"}
    state = " (deleted)" if memory.deleted else ""
    conversation = titles.get(memory.conversation_id, memory.conversation_id)
    return f"{noun.get(memory.role, memory.role).capitalize()} in “{conversation}”{state}"


def memory_info(memory: Memory | None) -> str:
    """The line under the title: when it was made, changed, deleted or replaced, and its file."""
    if memory is None:
        return ""
    parts = [f"created {when(memory.created_at)}"]
    if memory.updated_at:
        parts.append(f"updated {when(memory.updated_at)}")
    if memory.deleted_at:
        parts.append(f"deleted {when(memory.deleted_at)}")
    if memory.replaced_by:
        parts.append(f"replaced by {memory.replaced_by[:8]}")
    if memory.role == Role.MEMORY and (memory.valid_from or memory.valid_to):
        parts.append(validity_span(memory))
    parts.append(memory.path)
    return " · ".join(parts)
