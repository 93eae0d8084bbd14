"""The C heap's free pages given back to the system: after a big pass (an index sync over the whole
store, a model load, an ONNX run over a new shape) the memory it freed stays in the process
otherwise, counted in its RSS for the rest of the session (issue #25).

Its own module: the index sync, the ONNX sessions and the cross-encoder all call it, and it
lived in index_sync.py, which made onnx_session.py import the index sync (a circle of imports
through embedder.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable


def release_free_heap() -> None:
    """Give the C heap's free pages back to the system (glibc's malloc_trim). Memory a big pass
    freed stays in the process otherwise, counted in its RSS for the rest of the session; with
    another C library (macOS, Windows, musl) nothing happens."""
    _malloc_trim()(0)


@functools.cache
def _malloc_trim() -> Callable[[int], object]:
    import ctypes
    import ctypes.util

    try:
        trim: Callable[[int], object] = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return lambda _pad: 0
    return trim
