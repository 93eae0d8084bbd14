"""Progress with an ETA on stderr, shared by the commands that write or (re)build the index.

On a terminal: a tqdm bar (count, rate and the time left). In a pipe or a log: one line every
LINE_SECONDS with the same figures, so a 10-minute import is never silent.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

LINE_SECONDS = 10.0
Progress = Callable[[int, int], None]


def eta_text(done: int, total: int, elapsed: float) -> str:
    """`1,200/10,000 (400/s, about 22 s left)`: the counts, the rate so far and the time left."""
    rate = done / elapsed if elapsed > 0 else 0.0
    if done >= total:
        left = "done"
    elif rate <= 0:
        left = "time left unknown"
    else:
        seconds = (total - done) / rate
        left = f"about {seconds:.0f} s left" if seconds < 120 else f"about {seconds / 60:.0f} min left"
    return f"{done:,}/{total:,} ({rate:,.0f}/s, {left})"


@contextmanager
def eta_progress(desc: str, position: int = 0) -> Iterator[Progress]:
    """A thread-safe Progress callback: a tqdm bar on a terminal (tqdm's own ETA), else a line
    `desc: done/total (rate, about N s left)` every LINE_SECONDS and, if it said any, one at the
    end (a quick run stays silent)."""
    from tqdm import tqdm

    terminal = sys.stderr.isatty()
    bar = tqdm(total=0, unit="memories", desc=desc, position=position, disable=not terminal, leave=True)
    lock = threading.Lock()
    start = time.monotonic()
    counts = [0, 0]  # done, total
    said = [start]

    def progress(done: int, total: int) -> None:
        with lock:
            counts[:] = [done, total]
            if terminal:
                bar.total = total
                bar.n = done
                bar.refresh()
                return
            now = time.monotonic()
            if now - said[0] >= LINE_SECONDS and done < total:
                said[0] = now
                print(f"{desc}: {eta_text(done, total, now - start)}", file=sys.stderr, flush=True)

    try:
        yield progress
    finally:
        bar.close()
        if not terminal and said[0] > start:  # a long run that showed lines: its last one
            print(f"{desc}: {eta_text(counts[0], counts[1], time.monotonic() - start)} in "
                  f"{time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)


@contextmanager
def embedding_progress() -> Iterator[Progress]:
    """Progress for embedding: opening the index re-embeds every memory after the embedding
    model changed, and `reindex` rebuilds it, which takes minutes for a large store."""
    with eta_progress("embedding") as progress:
        yield progress
