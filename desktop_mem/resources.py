"""Locate shipped assets (tokenizer.json, icons ...) in a source checkout or an installed copy."""

from __future__ import annotations

from pathlib import Path


def resource_path(relative: str) -> Path:
    """Path of ``resources/<relative>``: the installed ``_resources`` copy if present, else the repo's."""
    installed = Path(__file__).resolve().parent / "_resources" / relative
    if installed.exists():
        return installed
    return Path(__file__).resolve().parent.parent / "resources" / relative
