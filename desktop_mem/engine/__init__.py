"""The memory engine: pure Python, no Qt. Use it through `MemoryEngine` in facade.py."""
