"""Pick up edits made outside the app: a watchfiles thread over <store>/entries.

Each debounced burst of file events becomes one `MemoryEngine.apply_external_changes` call
(re-read, re-index, one "external-edit" commit). The engine's own writes come back here too and
are recognised there by their content hash, so they cause no extra commits. Temp files of
atomic writes (".<name>.<hex>.tmp"), hidden files and anything not ending in .md are skipped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

import watchfiles

from desktop_mem.engine.store.layout import ENTRIES

log = logging.getLogger(__name__)
RETRY_SECONDS = 2.0  # after an error of the watcher itself (e.g. entries/ removed), try again


def is_watched(path: str | Path) -> bool:
    """True for a memory file: *.md, no hidden part in its name, not a temp file."""
    name = Path(path).name
    return name.endswith(".md") and not name.startswith(".")


class StoreWatcher:
    """A daemon thread applying outside changes of a store to its engine (start / stop)."""

    def __init__(
        self,
        root: Path,
        apply: Callable[[Iterable[str]], object],
        known_paths: Callable[[], set[str]],
        debounce_ms: int = 300,
    ) -> None:
        """`apply` takes store-relative paths that changed; `known_paths` are the catalog's paths
        (a folder moved away reports only itself: its files are the known ones under it)."""
        self.apply = apply
        self.known_paths = known_paths
        self.debounce_ms = debounce_ms
        self.root = root
        self.entries = root / ENTRIES
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def running(self) -> bool:
        """True while the watching thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start watching (idempotent); returns once the watcher is listening."""
        if self.running:
            return
        self._stop.clear()
        self._ready.clear()
        self._thread = threading.Thread(target=self._run, name="desktop-mem-watcher", daemon=True)
        self._thread.start()
        # watchfiles registers the OS watch when the generator first runs; wait (bounded) so an
        # edit made right after start() is not missed.
        self._ready.wait(timeout=5.0)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching and wait for the thread to end (idempotent)."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _filter(self, change: watchfiles.Change, path: str) -> bool:
        try:
            rel = Path(path).relative_to(self.entries)
        except ValueError:
            return False
        if any(part.startswith(".") for part in rel.parts):
            return False
        # Directories too: files created inside a brand-new folder can precede its OS watch, and
        # a folder moved away reports only itself. _expand turns them into the files they hold.
        return is_watched(path) or not Path(path).suffix

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.entries.mkdir(parents=True, exist_ok=True)
                events = watchfiles.watch(
                    self.entries, watch_filter=self._filter, debounce=self.debounce_ms, step=20,
                    stop_event=self._stop, yield_on_timeout=True, rust_timeout=500, raise_interrupt=False,
                )
                for changes in events:
                    self._ready.set()
                    if changes:
                        self._apply(changes)
            except Exception:  # the watcher must outlive any one bad event or OS hiccup
                log.exception("file watcher failed; retrying in %.0f s", RETRY_SECONDS)
                self._ready.set()
                self._stop.wait(RETRY_SECONDS)

    def _expand(self, changes: set[tuple[watchfiles.Change, str]]) -> set[str]:
        """Store-relative memory paths: files as they are, folders as the memory files in them."""
        rels: set[str] = set()
        for change, path in changes:
            try:
                rel = Path(path).relative_to(self.root).as_posix()
            except ValueError:
                continue
            if is_watched(path) or Path(path).is_symlink():
                rels.add(rel)  # a link (even to a folder) is reported as itself, never entered
                continue
            if change == watchfiles.Change.modified:
                continue  # a folder's own mtime/attributes: its files report their own changes
            folder = Path(path)
            if folder.is_dir():  # created or moved in: every memory file now inside it
                rels.update(p.relative_to(self.root).as_posix() for p in folder.rglob("*.md")
                            if self._filter(watchfiles.Change.added, str(p)))
            else:  # removed or moved away: every memory the catalog had under it
                prefix = rel + "/"
                rels.update(p for p in self.known_paths() if p.startswith(prefix))
        return rels

    def _apply(self, changes: set[tuple[watchfiles.Change, str]]) -> None:
        paths = {path for _, path in changes}
        try:
            rels = self._expand(changes)
            if rels:
                self.apply(sorted(rels))
        except Exception:  # logged, never kills the thread; the next event or restart repairs
            log.exception("could not apply outside changes to %s", ", ".join(sorted(paths)))
