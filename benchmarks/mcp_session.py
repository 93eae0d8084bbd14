"""Per-call latency of a `desktop-mem mcp` stdio session, as an MCP client sees it.

    .venv/bin/python benchmarks/mcp_session.py [--memories 1000] [--tree PATH]

Builds a store with N facts (the real engine, real git, real index), then starts `desktop-mem
mcp` on it with the official SDK client and times list_memories, get_memory, search_memory and
add_memories (median and p90 of 20 / 20 / 20 / 10 calls). Nobody else holds the store, so
writes and searches run in the session itself. `--tree` runs another checkout's code (e.g. one
from `git archive <rev>`) to compare before / after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]


def build_store(store: Path, n: int) -> None:
    sys.path.insert(0, str(ROOT))
    from desktop_mem.engine.config import load_config
    from desktop_mem.engine.facade import MemoryEngine

    topics = ["tea", "coffee", "Ghent", "Leuven", "cycling", "chess", "Python", "Rust", "jazz", "hiking"]
    config = load_config(env={}, flags={"store.path": str(store), "llm.base_url": ""})
    with MemoryEngine.open(config) as engine:
        with engine._parts.writer.transaction(engine_op("add"), "seed") as tx:
            for i in range(n):
                tx.add(f"The user mentioned {topics[i % 10]} on day {i} of the project",
                       conversation_id="global", role="memory", kind="fact", source="manual")
        engine.open_index()


def engine_op(name: str):  # noqa: ANN201 - the enum, imported late like the engine
    from desktop_mem.engine.models import Operation

    return Operation(name)


async def session(store: Path, tree: Path) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("DESKTOP_MEM_TOKEN", None)
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-m", "desktop_mem.cli", "--store", str(store), "mcp"])
    times: dict[str, list[float]] = {"list_memories": [], "get_memory": [], "search_memory": [],
                                     "add_memories": []}
    async with Client(params, mode="legacy") as c:
        first = json.loads((await c.call_tool("list_memories", {"limit": 1})).content[0].text)
        memory_id = first["memories"][0]["id"]
        await c.call_tool("search_memory", {"query": "warm up"})
        calls = [("list_memories", {"limit": 50})] * 20 + [("get_memory", {"id": memory_id})] * 20 + \
                [("search_memory", {"query": "what does the user drink?"})] * 20 + \
                [("add_memories", {"text": f"The user likes number {i}"}) for i in range(10)]
        for name, arguments in calls:
            start = time.perf_counter()
            result = await c.call_tool(name, arguments)
            times[name].append((time.perf_counter() - start) * 1000)
            assert not result.is_error, result.content
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--tree", type=Path, default=ROOT)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        build_store(store, args.memories)
        times = anyio.run(session, store, args.tree.resolve())
    print(f"{args.memories} memories, code from {args.tree}")
    for name, values in times.items():
        values.sort()
        p90 = values[int(len(values) * 0.9) - 1]
        median = statistics.median(values)
        print(f"  {name:<14} median {median:7.1f} ms   p90 {p90:7.1f} ms   (n={len(values)})")


if __name__ == "__main__":
    main()
