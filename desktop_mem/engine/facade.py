"""Kept importable for older callers: the engine's public face is engine/api.py."""

from desktop_mem.engine.api import MemoryEngine, clean_client_name, provenance_trailers

__all__ = ["MemoryEngine", "clean_client_name", "provenance_trailers"]
