"""A terminal progress bar for embedding, shared by the commands that may (re)build the index."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def embedding_progress() -> Iterator[Callable[[int, int], None]]:
    """A Progress callback drawing a tqdm bar on stderr (on a terminal only; silent in pipes).

    Opening the index re-embeds every memory after the embedding model changed, which takes
    minutes for a large store: the bar says why the command is busy.
    """
    from tqdm import tqdm

    bar = tqdm(total=0, unit="memories", desc="embedding", disable=None)

    def progress(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield progress
    finally:
        bar.close()
