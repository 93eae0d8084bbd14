"""Hand-edited files held back for a likely secret (`security.secrets` = ask), and the answer.

A memory file written outside the app that holds a likely secret is left as the user wrote it:
not committed, kept out of the index and the read path, and announced as a `SecretHeldBack` so
the window (or `desktop-mem secrets`) can ask. The answer, redact or keep, is one write
transaction like any other "Edit outside the app" commit. A secret kept as written is
remembered by fingerprint in `kept_secrets.json` beside the store's other local state (never
committed): the same secret is not asked about again, a new one in the same file is.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from desktop_mem.engine.models import (
    ConflictError,
    EngineError,
    HeldBackChoice,
    Memory,
    Operation,
    SecretHeldBack,
    StoreChange,
    ValidationError,
)
from desktop_mem.engine.store import secrets_scan
from desktop_mem.engine.store.catalog import Catalog
from desktop_mem.engine.store.markdown_store import atomic_write
from desktop_mem.engine.store.secrets_scan import Finding
from desktop_mem.engine.store.transaction import StoreWriter, clip

log = logging.getLogger(__name__)

KEPT_SECRETS_NAME = "kept_secrets.json"
_NOT_HELD = "; `desktop-mem doctor` lists the files that are held back"


class HeldBackError(ValidationError):
    """A held-back hand edit was asked for by a reader outside the app (MCP, the CLI, an export)."""


def _fingerprint(text: str, finding: Finding) -> str:
    value = text[finding.start:finding.end]
    return hashlib.sha256(f"{finding.kind}\0{value}".encode()).hexdigest()


def safe_preview(text: str) -> str:
    """The start of a memory's text with every likely secret redacted (for notices and subjects)."""
    return clip(secrets_scan.redact(text))


class KeptSecrets:
    """Fingerprints (sha256 of kind and value) of secrets the user chose to keep as written."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._known: set[str] | None = None

    def _load(self) -> set[str]:
        if self._known is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                self._known = {str(f) for f in data.get("kept", [])}
            except FileNotFoundError:
                self._known = set()
            except (OSError, ValueError, AttributeError) as exc:
                # Losing this file only means being asked again; never a reason to fail a write.
                log.warning("%s is unreadable (%s); kept secrets will be asked about again", self.path, exc)
                self._known = set()
        return self._known

    def unasked(self, text: str, findings: Iterable[Finding]) -> tuple[Finding, ...]:
        """The findings in `text` the user has not chosen to keep."""
        with self._lock:
            known = self._load()
            return tuple(f for f in findings if _fingerprint(text, f) not in known)

    def remember(self, text: str, findings: Iterable[Finding]) -> None:
        """Record that these secrets in `text` are kept as written."""
        with self._lock:
            known = self._load()
            known.update(_fingerprint(text, f) for f in findings)
            raw = json.dumps({"kept": sorted(known)}, indent=1).encode()
            atomic_write(self.path, raw)
            os.chmod(self.path, 0o600)


class HeldBackFiles:
    """Which hand-edited files are held back now, and resolving them (thread-safe)."""

    def __init__(
        self,
        writer: StoreWriter,
        catalog: Catalog,
        kept: KeptSecrets,
        *,
        dirty_paths: Callable[[], list[str]],
        announce: Callable[[SecretHeldBack], None],
        read_only: bool = False,
    ) -> None:
        self._writer = writer
        self._store = writer.store
        self._catalog = catalog
        self._kept = kept
        self._dirty_paths = dirty_paths
        self._announce = announce
        self._held: dict[str, SecretHeldBack] = {}
        self._ids: frozenset[str] | None = None  # cache of `ids` (asked per search hit)
        self._lock = threading.Lock()
        # A read-only engine (a CLI read, each MCP call) finds the writer's held files again each
        # time it opens: the writer has said so already, the reader only notes it.
        self._log_level = logging.INFO if read_only else logging.WARNING

    def suspects(self, dirty: Iterable[str] | None = None) -> list[Memory]:
        """Uncommitted memory files (hand edits: `dirty`, else per git) with a likely secret, as
        cataloged."""
        paths = self._dirty_paths() if dirty is None else dirty
        return [m for p in paths if (m := self._catalog.at_path(p)) is not None and secrets_scan.scan(m.text)]

    def hold_unasked(self, suspects: Iterable[Memory]) -> set[str]:
        """Hold every suspect with a secret the user has not kept and forget every other held
        file (a fresh look at the whole store); the paths held."""
        held = [self.hold(m, unasked) for m in suspects if (unasked := self.unasked(m))]
        self.keep_only(h.path for h in held)
        return {h.path for h in held}

    def unasked(self, memory: Memory) -> tuple[Finding, ...]:
        """Likely secrets in the memory's text that the user has not chosen to keep."""
        findings = secrets_scan.scan(memory.text)
        return self._kept.unasked(memory.text, findings) if findings else ()

    def hold(self, memory: Memory, findings: tuple[Finding, ...]) -> SecretHeldBack:
        """Record the file as held back and announce it (kinds only: never the secret)."""
        held = SecretHeldBack(memory.path, memory.id, memory.conversation_id,
                              tuple(dict.fromkeys(f.kind for f in findings)), safe_preview(memory.text),
                              memory.content_hash)
        with self._lock:
            known = self._held.get(memory.path)
            self._held[memory.path] = held
            self._ids = None
        if known != held:
            log.log(self._log_level, "%s holds a likely secret (%s); not committed: %s", memory.path,
                        ", ".join(held.kinds), secrets_scan.HELD_BACK_HINT)
            self._announce(held)
        return held

    def released_by(self, change: StoreChange) -> None:
        """Forget the files a published change committed or moved (by path or memory id)."""
        if change.operation == Operation.PROBLEM:
            return
        done = set(change.paths) | set(change.memory_ids)
        with self._lock:
            self._held = {p: h for p, h in self._held.items() if p not in done and h.memory_id not in done}
            self._ids = None

    def _holding(self, memory: Memory) -> SecretHeldBack | None:
        with self._lock:
            held = self._held.get(memory.path)
        return held if held is not None and held.memory_id == memory.id else None

    def hold_reason(self, memory: Memory) -> str | None:
        """Why this memory's file must not be committed as it is now (see StoreWriter.hold_reason)."""
        held = self._holding(memory)
        if held is None:
            return None
        return (f"{memory.path} was edited outside the app and holds a likely {', '.join(held.kinds)} that "
                "is not saved to history yet: choose Redact or Keep as written first (the bar at the top "
                "of the window, or `desktop-mem secrets redact|keep <file>`), or edit the text")

    def refuse_if_held(self, memory: Memory) -> None:
        """HeldBackError if `memory` is held back: its text must not leave the app (MCP, CLI, export)."""
        held = self._holding(memory)
        if held is not None:
            raise HeldBackError(
                f"memory {memory.id} ({memory.path}) is held back: it was edited outside the app and holds "
                f"a likely {', '.join(held.kinds)}, so it is not shown until you answer. Choose Redact or "
                "Keep as written in the desktop-mem window, or run "
                f"`desktop-mem secrets redact {memory.path}` (or `keep`)")

    def keep_only(self, paths: Iterable[str]) -> None:
        """Forget every held file not among `paths` (a fresh look at the whole store)."""
        wanted = set(paths)
        with self._lock:
            self._held = {p: h for p, h in self._held.items() if p in wanted}
            self._ids = None

    @property
    def files(self) -> tuple[SecretHeldBack, ...]:
        """The files held back now, by path."""
        with self._lock:
            return tuple(self._held[p] for p in sorted(self._held))

    @property
    def ids(self) -> frozenset[str]:
        """Ids of the held-back memories: the read path and the index leave them out."""
        ids = self._ids
        if ids is None:
            with self._lock:
                ids = self._ids = frozenset(h.memory_id for h in self._held.values() if h.memory_id)
        return ids

    def relative(self, path: str) -> str:
        """A store-relative path from a store-relative or absolute one; refuses anything outside."""
        root = self._store.root
        if os.path.isabs(path):
            absolute = Path(os.path.abspath(path))
            if not absolute.is_relative_to(root):
                raise ValidationError(f"{path} is not inside the store {root}; give a memory file under "
                                      f"{root / 'entries'}")
            path = absolute.relative_to(root).as_posix()
        self._store.abspath(path)  # refuses '..', links and anything outside entries/
        return path

    def resolve(self, path: str, choice: HeldBackChoice, *, expected_hash: str | None = None) -> StoreChange:
        """Redact the likely secrets in a held-back file, or keep it as written; then commit and
        index it as an "Edit outside the app". `expected_hash` (from the SecretHeldBack the user
        answered) refuses the answer if the file changed since."""
        choice = HeldBackChoice(choice)
        rel = self.relative(path)
        with self._writer.transaction(Operation.EXTERNAL_EDIT, publish=False) as tx:
            # The file as it is now, not as it was announced. Read, not re-cataloged: a refused
            # answer must leave the change for the watcher to see (and ask about again).
            try:
                memory = self._store.read(rel)
            except (OSError, ValueError, EngineError) as exc:
                raise ValidationError(f"{rel} is not held back: there is no readable memory file there now "
                                      f"(moved, deleted or broken){_NOT_HELD}") from exc
            if expected_hash is not None and memory.content_hash != expected_hash:
                raise ConflictError(f"{rel} changed since you were asked about it; nothing was done. "
                                    "Answer again for the file as it is now.")
            findings = secrets_scan.scan(memory.text)
            if not findings:
                raise ValidationError(f"{rel} is not held back: it holds no likely secret now{_NOT_HELD}")
            if rel not in self._dirty_paths():
                raise ValidationError(f"{rel} is not held back: it is committed as it is{_NOT_HELD}")
            self._catalog.reload([rel])
            if choice is HeldBackChoice.REDACT:
                memory = tx.rewrite(memory, {}, secrets_scan.redact(memory.text, findings))
                done = "likely secret redacted"
            else:
                tx.adopt(memory)
                done = "likely secret kept as written"
            tx.subject = f"Edit outside the app ({done}): {safe_preview(memory.text)}"
            tx.conversation = memory.conversation_id
            if choice is HeldBackChoice.KEEP:
                self._kept.remember(memory.text, findings)
            return tx.publish()  # the engine forgets the hold when the change is published
