"""How often one chat turn scans and sorts the whole catalog (reads it as a list).

A chat turn reads the conversation (its turns, its summary, the global facts, other chats'
summaries) for the reply and again for the background write path. Each `Catalog.select` walks
every memory of the store and sorts what matched; this counts them over one turn (reply + write
path) of a store of `--memories` facts, with the scripted OpenAI-compatible server of the tests
as the model (no network, no real LLM), and the wall time of the turn.

    python benchmarks/catalog_scans.py [--memories 500] [--turns 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from desktop_mem.engine.api import MemoryEngine  # noqa: E402
from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.store.catalog import Catalog  # noqa: E402
from tests.llm_roles import FACTS, SUMMARY  # noqa: E402
from tests.scripted_llm import ScriptedLLM  # noqa: E402


def measure(memories: int, turns: int) -> dict[str, Any]:
    """Scans and wall time per chat turn, averaged over `turns` turns."""
    llm = ScriptedLLM().start()
    llm.script(FACTS, "[]")
    llm.script(SUMMARY, "Nothing yet.")
    llm.default_reply = "Noted."
    scans = 0
    real_select = Catalog.select

    def counting_select(self: Catalog, **filters: Any) -> Any:
        nonlocal scans
        scans += 1
        return real_select(self, **filters)

    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(flags={
            "store.path": str(Path(tmp) / "store"), "watcher.enabled": False,
            "llm.base_url": llm.base_url, "llm.model": "test-model", "llm.api_key": "x", "llm.timeout": 5,
        })
        engine = MemoryEngine.open(config)
        try:
            for i in range(memories):
                engine.add(f"Filler fact number {i} about topic {i % 37}", conversation_id=f"c{i % 20}")
            engine.open_index()
            engine.chat("bench", "Hello, this is the first turn.")  # warm up: model, index
            assert engine.wait_idle(60)
            Catalog.select = counting_select  # type: ignore[method-assign]
            start = time.perf_counter()
            for n in range(turns):
                engine.chat("bench", f"I like green tea number {n}.")
                assert engine.wait_idle(60)
            elapsed = time.perf_counter() - start
        finally:
            Catalog.select = real_select  # type: ignore[method-assign]
            engine.close()
            llm.stop()
    return {"memories": memories, "turns": turns, "catalog_scans_per_turn": scans / turns,
            "ms_per_turn": round(elapsed / turns * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.memories, args.turns)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['catalog_scans_per_turn']:.1f} catalog scans per chat turn "
              f"({result['memories']} memories, {result['ms_per_turn']} ms per turn incl. the write path)")


if __name__ == "__main__":
    main()
