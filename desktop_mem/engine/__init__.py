"""The memory engine: pure Python, no Qt. Use it through `MemoryEngine` in api.py
(`MemoryEngine.open(config)`); compose.py builds and wires its parts."""
