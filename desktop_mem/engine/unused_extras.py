"""Optional parts of two dependencies that load with them but that this app never uses.

- `httpx` (chromadb's HTTP client) imports its command-line client, `httpx._main`, whenever
  click, rich and pygments are installed (chromadb's own dependencies bring them): ~6 MB and ~80
  modules in every process that opens the index. httpx catches the ImportError and keeps a
  `main` that says the CLI is not installed.
- `openai` imports the aiohttp transport it vendors (`openai._vendor.httpx_aiohttp`) whenever
  aiohttp is installed (chromadb's kubernetes client brings it): ~8.5 MB and ~95 modules. The app
  talks to the LLM with the sync client over httpx2; the SDK catches the ImportError and its
  `DefaultAioHttpClient` then says aiohttp is missing.

Each is marked unimportable (None in `sys.modules`, which Python's import refuses with an
ImportError) before its package is first imported; once a package is imported there is nothing to
save and nothing is changed. Together −12 MB in the window and in `serve` (issue #25;
tests/test_unused_extras.py pins both halves against the locked versions).
"""

from __future__ import annotations

import sys

# (package, the optional module it imports on its own)
UNUSED = (("httpx", "httpx._main"), ("openai", "openai._vendor.httpx_aiohttp"))


def skip_unused_extras() -> list[str]:
    """Mark the unused modules unimportable, each only while its package is not imported yet;
    returns those marked now."""
    marked: list[str] = []
    for package, module in UNUSED:
        if package not in sys.modules and module not in sys.modules:
            sys.modules[module] = None  # type: ignore[assignment]  # import refuses it
            marked.append(module)
    return marked
