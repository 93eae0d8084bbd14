"""Conversations: their folders, titles and saved settings (conversation.yaml), and deleting one."""

from __future__ import annotations

from typing import Any

from desktop_mem.engine.models import GLOBAL_CONVERSATION, Memory, Operation
from desktop_mem.engine.store.catalog import Catalog
from desktop_mem.engine.store.conversation_ids import slugify_conversation_id, validate_conversation_id
from desktop_mem.engine.store.ports import MemoryView, StoreFiles, Writer
from desktop_mem.engine.store.projects import project_name


class Conversations:
    """The store's conversations; changes go through the writer, one commit each."""

    def __init__(self, store: StoreFiles, catalog: Catalog, writer: Writer, raw: MemoryView) -> None:
        self._store = store
        self._catalog = catalog
        self._writer = writer
        self._raw = raw

    def ids(self) -> list[str]:
        """Conversation ids in the store (global first); fully deleted ones are left out."""
        live = self._catalog.live_conversations()
        found = live | {c for c in self._store.conversations()
                        if c in live or not self._store.conversation_meta(c).get("deleted")}
        return sorted(found, key=lambda c: (c != GLOBAL_CONVERSATION, c))

    def title(self, conversation_id: str) -> str:
        """The conversation's title (its id when none was set)."""
        return str(self._store.conversation_meta(conversation_id).get("title") or conversation_id)

    def strategy(self, conversation_id: str) -> str | None:
        """The context strategy saved for this conversation, if any."""
        value = self._store.conversation_meta(conversation_id).get("strategy")
        return str(value) if value else None

    def _update(self, conversation_id: str, subject: str, **changes: Any) -> None:
        with self._writer.transaction(Operation.CONVERSATION, subject, conversation_id) as tx:
            meta = self._store.conversation_meta(conversation_id)
            meta.update(changes)
            meta = {k: v for k, v in meta.items() if v is not None}
            tx.write_conversation_meta(conversation_id, meta)

    def new(self, title: str) -> str:
        """Create a conversation (a folder with its title) and return its id."""
        base = slugify_conversation_id(title)
        conv, n = base, 2
        existing = set(self.ids())
        while conv in existing:
            conv = f"{base[:60]}-{n}"
            n += 1
        self._update(conv, f"New conversation: {title}", title=title.strip() or conv)
        return conv

    def bind_project(self, conversation_id: str, project: str | None) -> None:
        """Make a conversation part of a project (its scope: store/projects.py), or of none: it
        then reads the project's memories beside its own and the global ones."""
        validate_conversation_id(conversation_id)
        if project is not None:
            validate_conversation_id(project)
        if self._store.conversation_meta(conversation_id).get("project") == project:
            return
        title = self.title(conversation_id)
        subject = (f"“{title}” in project {project_name(project) or project}" if project
                   else f"“{title}” in no project")
        self._update(conversation_id, subject, project=project)

    def project(self, conversation_id: str) -> str | None:
        """The project scope a conversation is bound to, if any."""
        value = self._store.conversation_meta(conversation_id).get("project")
        return value if isinstance(value, str) else None

    def rename(self, conversation_id: str, title: str) -> None:
        """Change a conversation's title (its id, and so its folder, stays)."""
        old, new = self.title(conversation_id), title.strip()
        self._update(conversation_id, f"Rename conversation “{old}” to “{new}”", title=new)

    def delete(self, conversation_id: str) -> list[Memory]:
        """Soft-delete every memory of a conversation in one commit (restorable)."""
        validate_conversation_id(conversation_id)
        with self._writer.transaction(Operation.DELETE, conversation=conversation_id) as tx:
            tombs = [tx.soft_delete(m) for m in self._raw.list_memories(conversation_id=conversation_id)]
            meta = self._store.conversation_meta(conversation_id)
            meta["deleted"] = True
            tx.write_conversation_meta(conversation_id, meta)
            tx.subject = f"Delete conversation “{self.title(conversation_id)}” ({len(tombs)} memories)"
        return tombs
