"""`python -m desktop_mem.cli`: the same entry point as the `desktop-mem` command."""

import sys

from desktop_mem.cli.main import main

sys.exit(main())
