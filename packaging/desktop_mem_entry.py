"""PyInstaller entry point: the same `desktop-mem` command as the installed script."""

import multiprocessing
import sys

from desktop_mem.cli import main

if __name__ == "__main__":
    # A frozen app re-executes itself for child processes; this keeps them from re-running main().
    multiprocessing.freeze_support()
    sys.exit(main())
