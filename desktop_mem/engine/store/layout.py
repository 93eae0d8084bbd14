"""Where things live in a store: every path rule in one place.

    <store>/entries/<conversation_id>/facts/<ts>__<uuid>.md
    <store>/entries/<conversation_id>/turns/user/<ts>__<uuid>.md
    <store>/entries/<conversation_id>/turns/assistant/<ts>__<uuid>.md
    <store>/entries/<conversation_id>/summaries/summary.md
    <store>/entries/<conversation_id>/deleted/...        (soft deletes keep their relative place)
    <store>/entries/<conversation_id>/conversation.yaml  (title, saved context strategy)

The `global` conversation is the user scope: facts about the user (front matter
`from_conversation` names the chat they were learned in), read by every conversation - and by
agent-cli, whose read path queries the conversation and `global` too.

All paths here are store-relative POSIX strings; nothing touches the disk.
"""

from __future__ import annotations

from pathlib import PurePosixPath

ENTRIES = "entries"
DELETED = "deleted"
CONVERSATION_FILE = "conversation.yaml"
SUMMARY_FILE = "summaries/summary.md"
ROLE_DIRS = {"memory": "facts", "user": "turns/user", "assistant": "turns/assistant", "summary": "summaries"}


def conversation_root(conversation_id: str) -> str:
    """`entries/<conversation_id>/`."""
    return f"{ENTRIES}/{conversation_id}/"


def summary_path(conversation_id: str) -> str:
    """The conversation's single rolling summary."""
    return f"{ENTRIES}/{conversation_id}/{SUMMARY_FILE}"


def conversation_file(conversation_id: str) -> str:
    """The conversation's title and settings."""
    return f"{ENTRIES}/{conversation_id}/{CONVERSATION_FILE}"


def role_dir(conversation_id: str, role: str) -> str:
    """The folder new files of a role go to."""
    return f"{ENTRIES}/{conversation_id}/{ROLE_DIRS[role]}"


def in_deleted(path: str | None) -> bool:
    """True for a path under a conversation's deleted/ folder (entries/<conversation>/deleted/...),
    or under agent-cli 0.112's entries/deleted/<conversation>/... (the reference proxy's tombstones)."""
    if not path:
        return False
    # str.split for the usual plain path (a timeline page asks this for thousands of files;
    # PurePosixPath cost 15 us each), pathlib to normalise anything else ('//', '.', absolute).
    parts = tuple(str(path).split("/"))
    if "" in parts or "." in parts:
        parts = PurePosixPath(str(path)).parts
    return parts[2:3] == (DELETED,) or (len(parts) > 3 and parts[1] == DELETED)


def is_memory_file(path: str | None) -> bool:
    """True for a store-relative path that can hold a memory (a visible .md under entries/)."""
    if not path or not path.startswith(f"{ENTRIES}/") or not path.endswith(".md"):
        return False
    return not path.rpartition("/")[2].startswith(".")  # the file name (as PurePosixPath.name)


def counterpart(path: str, conversation_id: str) -> str:
    """The live path of a tombstone, or the tombstone path of a live memory (same relative place)."""
    root = conversation_root(conversation_id)
    agent_cli = f"{ENTRIES}/{DELETED}/{conversation_id}/"
    if path.startswith(agent_cli):  # an agent-cli tombstone goes back to the same live place
        return root + path[len(agent_cli):]
    inner = path[len(root):] if path.startswith(root) else PurePosixPath(path).name
    prefix = f"{DELETED}/"
    return root + (inner[len(prefix):] if inner.startswith(prefix) else prefix + inner)


def both_places(path: str, conversation_id: str) -> list[str]:
    """A memory's path now and its live/deleted counterpart (restore and soft delete move files)."""
    return [path, counterpart(path, conversation_id)]
