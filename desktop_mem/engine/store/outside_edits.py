"""Edits made outside the app (the watcher, a sync, start-up): re-read, screen for likely
secrets under the `security.secrets` policy, then one commit of exactly those files.

The engine's own writes come back here too; they are recognised by their content hash (already
in the catalog) and ignored. Files that fail to parse become problems, are left untouched, kept
out of the index and out of the commit. Under "ask" a hand edit with a likely secret is held back
(left as the user wrote it, uncommitted, out of the index, announced) until the user answers.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from desktop_mem.engine.models import Memory, Operation, Problem, SecretsPolicy, StoreChange
from desktop_mem.engine.store import layout, secrets_scan
from desktop_mem.engine.store.catalog import Catalog
from desktop_mem.engine.store.held_back import HeldBackFiles, safe_preview
from desktop_mem.engine.store.manifest import Manifest
from desktop_mem.engine.store.publisher import Publisher
from desktop_mem.engine.store.transaction import StoreWriter, Transaction

log = logging.getLogger(__name__)


class OutsideEdits:
    """Follows the files when something other than this engine changed them."""

    def __init__(
        self,
        root: Path,
        catalog: Catalog,
        manifest: Manifest,
        writer: StoreWriter,
        held: HeldBackFiles,
        publisher: Publisher,
        *,
        secrets_policy: Callable[[], str],
        versioned: Callable[[], bool],
        read_only: bool,
    ) -> None:
        self._root = root
        self._catalog = catalog
        self._manifest = manifest
        self._writer = writer
        self._held = held
        self._publisher = publisher
        self._policy = secrets_policy
        self._versioned = versioned
        self._read_only = read_only

    def refresh(self, temp_files: list[str] | None = None) -> None:
        """Re-read the store (start-up, or after a burst of outside changes).

        Files whose size and mtime match memory_index.json are not parsed again. Temp files of
        interrupted writes seen on the way are added to `temp_files`, if given.
        """
        self._catalog.load(temp_files)
        if not self._read_only:
            self._manifest.flush()  # only when files were parsed or went away
        elif self._versioned():
            # A reader cannot commit nor redact, but must not give out what its writer holds back:
            # it decides which files those are as the writer does, from git and kept_secrets.json.
            self.held_back()

    def known_paths(self) -> set[str]:
        """Every file the catalog knows, parsed or not (the watcher's starting point)."""
        known = {m.path for m in self._catalog.select(include_deleted=True)}
        return known | {p.path for p in self._catalog.problems()}

    def apply(self, paths: Iterable[str]) -> StoreChange | None:
        """Files changed outside the app: re-read, index, one commit of exactly those files."""
        # a link (to a file or a folder) is taken too, to be reported as a problem, never read
        rels = sorted({p for p in paths if layout.is_memory_file(p) or (self._root / p).is_symlink()})
        if not rels:
            return None
        if self._read_only:
            return self._follow(rels, None)
        with self._writer.transaction(Operation.EXTERNAL_EDIT, publish=False) as tx:
            return self._follow(rels, tx)

    def _follow(self, rels: list[str], tx: Transaction | None) -> StoreChange | None:
        catalog = self._catalog
        before = {rel: catalog.at_path(rel) for rel in rels}
        results = catalog.reload(rels)
        changed = [r for r in results if isinstance(r, Memory) and _differs(before.get(r.path), r)]
        if tx is not None:  # hand edits pass the secret check before anything is committed
            changed = self._screen_secrets(changed, tx)
        removed = [m for rel, m in before.items() if m is not None and catalog.at_path(rel) is None]
        problems = tuple(r.path for r in results if isinstance(r, Problem))
        if not changed and not removed:
            if not problems:
                return None
            change = StoreChange(Operation.PROBLEM, (), None, None, problems)
            self._publisher.emit(change)
            return change
        ids = tuple(dict.fromkeys(m.id for m in [*changed, *removed]))
        convs = {m.conversation_id for m in [*changed, *removed]}
        conversation = convs.pop() if len(convs) == 1 else None
        if tx is None:  # a reader: nothing to commit, the index and subscribers follow
            change = StoreChange(Operation.EXTERNAL_EDIT, ids, conversation, None,
                                 tuple(m.path for m in changed) + problems)
            self._publisher.enqueue(changed, [m.id for m in removed if catalog.lookup(m.id) is None], change)
            self._publisher.drain()
            return change
        first = (changed or removed)[0]
        more = f" (+{len(ids) - 1} more)" if len(ids) > 1 else ""
        tx.subject = f"Edit outside the app: {safe_preview(first.text)}{more}"
        tx.conversation = conversation
        tx.adopt(*changed)
        tx.adopt_removal(*removed)
        return tx.publish()

    def _screen_secrets(self, memories: list[Memory], tx: Transaction) -> list[Memory]:
        """The memories to commit: under `security.secrets` = redact a likely secret is redacted in
        the file first; under ask the file is held back (left as the user wrote it, uncommitted,
        out of the index, announced to `subscribe_held_back`) until they choose, unless they kept
        that same secret before; under keep it is committed as it is."""
        policy = str(self._policy())
        if policy == SecretsPolicy.KEEP:
            return memories
        kept: list[Memory] = []
        for memory in memories:
            named = secrets_scan.in_names(memory)
            if named:  # a key in its file name or front matter: redacting the text cannot help (#22)
                log.warning("%s is not committed: its file name or front matter holds a likely "
                            "secret (%s); rename the file or edit its front matter",
                            secrets_scan.redact(memory.path), secrets_scan.describe(named))
                continue
            findings = secrets_scan.scan(memory.text)
            if not findings:
                kept.append(memory)
            elif policy == SecretsPolicy.REDACT:
                kept.append(tx.rewrite(memory, {}, secrets_scan.redact(memory.text, findings)))
            elif unasked := self._held.unasked(memory):
                self._held.hold(memory, unasked)
                self._publisher.index_update([], [memory.id])  # its older text leaves the index too
            else:
                kept.append(memory)
        return kept

    def held_back(self, dirty: Sequence[str] | None = None) -> set[str]:
        """Uncommitted memory files (`dirty`, else as git tells) with a likely secret, after the
        policy ran on them (on a read-only engine: as the writer would run it, in memory only)."""
        suspects = self._held.suspects(dirty)
        policy = str(self._policy())
        if policy == SecretsPolicy.ASK:
            return self._held.hold_unasked(suspects)
        self._held.keep_only(())
        if not suspects or policy == SecretsPolicy.KEEP:
            return set()
        if self._read_only:  # the writer redacts these files as soon as it sees them: show them so
            for memory in suspects:
                self._catalog.show_as(replace(memory, text=secrets_scan.redact(memory.text)))
            return set()
        subject = "Redact likely secrets in hand-edited memories"
        with self._writer.transaction(Operation.EXTERNAL_EDIT, subject) as tx:
            for memory in suspects:
                tx.rewrite(memory, {}, secrets_scan.redact(memory.text))
        return set()


def remove_temp_files(paths: Iterable[str]) -> None:
    """Remove what a killed writer can leave: our own temp files (found by the catalog's walk).

    Safe at start-up because we hold the store lock and write nothing yet: no other desktop-mem
    is writing here. Temp files are never the truth (the rename that would publish them did not
    happen).
    """
    for tmp in paths:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _differs(before: Memory | None, after: Memory) -> bool:
    return before is None or before.content_hash != after.content_hash
