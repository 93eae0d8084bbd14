"""Take memory out: one conversation or the whole store, as JSON or as a zip of the Markdown tree.

The JSON holds every memory (deleted ones too, flagged) with all of its front matter and text,
plus the conversation titles; `importers.plan_import` reads it back with the same ids, so an
export imported into an empty store gives the same memories. Files are written to a temporary
name and renamed, and an existing file is never replaced unless asked.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any

from desktop_mem.engine.models import Memory, ValidationError, utc_now
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.layout import ENTRIES
from desktop_mem.engine.store.markdown_store import atomic_replace
from desktop_mem.engine.transfer.import_formats import EXPORT_FORMAT
from desktop_mem.engine.transfer.ports import ExportSource

EXPORT_VERSION = 1
_README = """\
desktop-mem export ({scope}), made {when}.

entries/<conversation>/ holds one Markdown file per memory: YAML front matter (id, role, kind,
created_at, ...) and the text. facts/ are facts about you, turns/ the chat messages, summaries/
the rolling summary, deleted/ soft-deleted memories (restorable); conversation.yaml holds the
conversation's title.

Every file is plain text: read it in any editor. To use these memories in desktop-mem again,
copy entries/ into a store folder (desktop-mem picks the files up), or import the JSON export
with `desktop-mem import FILE`.
"""


@dataclass(frozen=True)
class ExportResult:
    """Where the export went and what it holds."""

    path: Path
    memories: int
    deleted: int
    conversations: int
    held_back: tuple[str, ...] = ()  # hand edits left out: a likely secret not answered for yet


def export_data(source: ExportSource, conversation_id: str | None = None) -> dict[str, Any]:
    """The JSON export as a dict: format marker, conversations with titles, every memory."""
    memories = _memories(source, conversation_id)
    convs = sorted({m.conversation_id for m in memories} | ({conversation_id} if conversation_id else set()))
    return {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "exported_at": utc_now().isoformat(),
        "conversation": conversation_id,
        "conversations": [{"id": c, "title": source.conversation_title(c)} for c in convs],
        "memories": [memory_record(m) for m in memories],
    }


def memory_record(m: Memory) -> dict[str, Any]:
    """One memory as JSON: every front matter key, the text, and whether it is deleted."""
    return {
        "id": m.id,
        "role": m.role,
        "conversation_id": m.conversation_id,
        "kind": m.kind,
        "source": m.source,
        "created_at": m.created_at.isoformat(),
        "updated_at": _iso(m.updated_at),
        "expires_at": _iso(m.expires_at),
        "deleted": m.deleted,
        "deleted_at": _iso(m.deleted_at),
        "replaced_by": m.replaced_by,
        "summary_kind": m.summary_kind,
        "summarized_count": m.summarized_count,
        "extra": _plain(m.extra),
        "path": m.path,
        "text": m.text,
    }


def export_json(
    source: ExportSource, output: Path, conversation_id: str | None = None, *, overwrite: bool = False
) -> ExportResult:
    """Write the JSON export to `output`."""
    data = export_data(source, conversation_id)
    raw = json.dumps(data, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    _write_new(Path(output), overwrite, lambda handle: handle.write(raw))
    memories = data["memories"]
    return ExportResult(Path(output), len(memories), sum(1 for m in memories if m["deleted"]),
                        len(data["conversations"]), _held_paths(source, conversation_id))


def export_zip(
    source: ExportSource, output: Path, conversation_id: str | None = None, *, overwrite: bool = False
) -> ExportResult:
    """Write a zip of the Markdown tree (entries/ only, or one conversation's folder) + README.txt."""
    memories = _memories(source, conversation_id)
    held = _held_paths(source, conversation_id)
    files = [f for f in _plain_files(source, conversation_id)
             if f.relative_to(source.root).as_posix() not in held]
    scope = f"conversation {conversation_id}" if conversation_id else "the whole store"

    def write(handle: Any) -> None:
        with zipfile.ZipFile(handle, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("README.txt", _README.format(scope=scope, when=utc_now().isoformat()))
            for path in files:
                archive.write(path, path.relative_to(source.root).as_posix())

    _write_new(Path(output), overwrite, write)
    convs = {m.conversation_id for m in memories} | ({conversation_id} if conversation_id else set())
    return ExportResult(Path(output), len(memories), sum(1 for m in memories if m.deleted), len(convs), held)


def _plain_files(source: ExportSource, conversation_id: str | None) -> list[Path]:
    """Regular files under entries/ (or one conversation); symbolic links are never followed
    nor archived: one could point at any file of the user's."""
    folder = source.store.abspath(f"{ENTRIES}/{conversation_id}") if conversation_id else source.store.entries
    if folder.is_symlink() or not folder.is_dir():
        return []
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):  # followlinks=False
        def plain(name: str, folder: str = dirpath) -> bool:
            return not name.startswith(".") and not os.path.islink(os.path.join(folder, name))

        dirnames[:] = [d for d in dirnames if plain(d)]
        found += [Path(dirpath, name) for name in filenames if plain(name)]
    return sorted(found)


def _memories(source: ExportSource, conversation_id: str | None) -> list[Memory]:
    if conversation_id is not None:
        validate_conversation_id(conversation_id)
        if conversation_id not in source.store.conversations():
            raise ValidationError(
                f"there is no conversation {conversation_id!r}; `desktop-mem list` shows the conversations"
            )
    return source.list_memories(conversation_id=conversation_id, include_deleted=True, include_summaries=True)


def _held_paths(source: ExportSource, conversation_id: str | None) -> tuple[str, ...]:
    """Files left out of an export: hand edits held back for a likely secret (not answered for)."""
    return tuple(h.path for h in source.held_back_files()
                 if conversation_id is None or h.conversation_id == conversation_id)


def _write_new(output: Path, overwrite: bool, write: Any) -> None:
    """Write through a temporary file beside `output`, then rename (never a half-written file)."""
    if output.exists() and not overwrite:
        raise ValidationError(f"{output} already exists; choose another name or remove it first")
    if output.is_dir():
        raise ValidationError(f"{output} is a folder; give a file name for the export")
    atomic_replace(output, write)


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _plain(value: Any) -> Any:
    """Front matter values as JSON values (YAML may hold dates)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
