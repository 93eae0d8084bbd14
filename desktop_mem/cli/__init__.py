"""The command-line front end: argument parsing, terminal chat, progress, transfer commands."""

from desktop_mem.cli.main import main

__all__ = ["main"]
