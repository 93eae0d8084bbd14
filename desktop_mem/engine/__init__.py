"""The memory engine: pure Python, no Qt. Use it through `MemoryEngine` in api.py
(`MemoryEngine.open(config)`); compose.py builds and wires its parts."""

from desktop_mem.engine.unused_extras import skip_unused_extras

# Before anything of the engine imports chromadb (httpx) or openai (see unused_extras).
skip_unused_extras()
