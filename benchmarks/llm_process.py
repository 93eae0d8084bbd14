"""The scripted OpenAI-compatible server of the tests, run in a process of its own for benchmarks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class ScriptedLLMProcess:
    """The scripted OpenAI-compatible server (tests/scripted_llm.py) in a process of its own, as
    a user's LLM is: in the window's process its imports (pytest among them) added ~13 MB to the
    window's RSS (issue #25, sixth pass)."""

    CODE = ("import sys\nfrom tests.scripted_llm import ScriptedLLM\n"
            "server = ScriptedLLM().start()\nserver.default_reply = sys.argv[1]\n"
            "print(server.base_url, flush=True)\nsys.stdin.read()\nserver.stop()\n")

    def __init__(self, reply: str) -> None:
        self._proc = subprocess.Popen([sys.executable, "-c", self.CODE, reply], cwd=ROOT,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.base_url = self._proc.stdout.readline().strip()
        if not self.base_url:
            raise RuntimeError("the scripted LLM server did not start")

    def stop(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()  # its end of input: it stops the server and exits
        self._proc.wait(10)
