"""`engine.transfer`: imports, exports and sync, as a front end reaches them.

Built by engine/compose.py over the two views this part works on (ports.py): the git store it
imports into and syncs (TransferSource) and the shared reads it exports (ExportSource). The
modules behind it load on first use, so opening the engine does not import them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from desktop_mem.engine.transfer.ports import ExportSource, TransferSource

if TYPE_CHECKING:
    from desktop_mem.engine.transfer.exporters import ExportResult
    from desktop_mem.engine.transfer.git_sync import SyncResult
    from desktop_mem.engine.transfer.importers import ImportPlan, ImportResult

Progress = Callable[[int, int], None]


class Transfer:
    """Import a file (plan, then apply), export the store, sync it with its git remote."""

    def __init__(self, source: TransferSource, exported: ExportSource) -> None:
        self._source = source
        self._exported = exported

    def plan_import(self, path: Path, fmt: str | None = None, *, extract: bool = False,
                    secrets: str | None = None) -> ImportPlan:
        """Read and check `path`; say what importing it would add (nothing is written)."""
        from desktop_mem.engine.transfer.importers import plan_import

        return plan_import(self._source, path, fmt, extract=extract, secrets=secrets)

    def apply_import(self, plan: ImportPlan, progress: Progress | None = None, *,
                     batch_size: int | None = None) -> ImportResult:
        """Write the plan's entries, one commit per batch (transfer/importers.py)."""
        from desktop_mem.engine.transfer.importers import IMPORT_BATCH, apply_import

        batch = IMPORT_BATCH if batch_size is None else batch_size
        return apply_import(self._source, plan, progress, batch_size=batch)

    @staticmethod
    def plan_lines(plan: ImportPlan) -> Iterator[str]:
        """The dry run's report: counts, a preview and every skipped entry with its reason."""
        from desktop_mem.engine.transfer.importers import iter_plan_lines

        return iter_plan_lines(plan)

    def export_json(self, output: Path, conversation_id: str | None = None, *,
                    overwrite: bool = False) -> ExportResult:
        """Write the JSON export (held-back hand edits left out)."""
        from desktop_mem.engine.transfer.exporters import export_json

        return export_json(self._exported, output, conversation_id, overwrite=overwrite)

    def export_zip(self, output: Path, conversation_id: str | None = None, *,
                   overwrite: bool = False) -> ExportResult:
        """Write a zip of the Markdown files (held-back hand edits left out)."""
        from desktop_mem.engine.transfer.exporters import export_zip

        return export_zip(self._exported, output, conversation_id, overwrite=overwrite)

    def sync(self) -> SyncResult:
        """Commit, fetch, merge (conflicts kept side by side), push (transfer/git_sync.py)."""
        from desktop_mem.engine.transfer.git_sync import sync

        return sync(self._source)
