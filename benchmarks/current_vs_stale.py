"""Current beats stale, with a real model: "Where do I live?" after Ghent -> Leuven (issue #11).

The conversation of the issue is written once through the real engine, with the scripted server
playing the small model's write-path answers (facts "name is Mara" and "lives in Ghent", then an
UPDATE to Leuven) and its replies, so every run starts from the same store. Then the real model
at ``--llm-url`` is asked "Where do I live?" ``--asks`` times, each time on a fresh copy of that
store; the answer counts as right when it names Leuven and not Ghent alone. Run it with another
checkout first on PYTHONPATH to compare code versions on the same store (``--store`` keeps it).

    python benchmarks/current_vs_stale.py --llm-url http://127.0.0.1:8765/v1 [--asks 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))  # tests/ (PYTHONPATH wins)

from desktop_mem.engine.config import load_config  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat  # noqa: E402
from tests.scripted_llm import ScriptedLLM  # noqa: E402

CONV = "mara"
TURNS = (
    ("Hi! I'm Mara, I live in Ghent", "Hi Mara! It's great to meet you. I'm glad you're in Ghent."),
    ("List ten facts about Belgium", "1. Belgium is in Western Europe. 2. Its capital is Brussels. "
     "3. It has three regions: Flanders, Wallonia and Brussels. 4. It is famous for chocolate."),
    ("Actually I moved to Leuven", "Oh nice, Leuven is a lovely university city!"),
)


def _config(store: Path, url: str, model: str) -> Any:
    return load_config(flags={"store.path": str(store), "watcher.enabled": False, "llm.base_url": url,
                              "llm.model": model, "llm.api_key": "local", "llm.timeout": 900})


def prepare(store: Path) -> None:
    """The issue's three turns, written by the engine; the scripted server answers for the model."""
    server = ScriptedLLM(models=["scripted"]).start()
    try:
        server.script(FACTS, '["The user\'s name is Mara", "The user lives in Ghent"]', times=1)
        server.script(FACTS, '["The user lives in Leuven"]')
        server.script(RECONCILE, lambda body: json.dumps([{
            "event": "UPDATE", "text": "The user lives in Leuven",
            "id": re.search(r'"id": "(\d+)", "text": "The user lives in Ghent"',
                            body["messages"][-1]["content"]).group(1)}]))  # type: ignore[union-attr]
        # A summary that names no city: the answer has to come from the injected memories.
        server.script(SUMMARY, "Mara introduced herself and asked for facts about Belgium.")
        for (_user, reply) in TURNS:
            server.script(is_chat, reply, times=1)
        engine = MemoryEngine.open(_config(store, server.base_url, "scripted"))
        try:
            engine.open_index()
            for user, _reply in TURNS:
                engine.chat(CONV, user)
                engine.wait_idle(60)
        finally:
            engine.close()
    finally:
        server.stop()


def ask(store: Path, url: str, model: str) -> dict[str, Any]:
    engine = MemoryEngine.open(_config(store, url, model))
    try:
        engine.open_index()
        started = time.perf_counter()
        reply = engine.chat(CONV, "Where do I live?")
        engine.wait_idle(900)
        text = reply.text.strip()
        stale = re.search(r"\bin ghent\b(?!.*leuven)", text, re.I)
        right = bool(re.search(r"leuven", text, re.I)) and not stale
        return {"reply": text[:300], "right": right, "seconds": round(time.perf_counter() - started, 1),
                "injected": [r.memory.text[:80] for r in reply.used.memories]}
    finally:
        engine.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llm-url", required=True)
    parser.add_argument("--model", default="local")
    parser.add_argument("--asks", type=int, default=3)
    parser.add_argument("--store", type=Path, help="prepared store to reuse (made here if missing)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="current-vs-stale-") as tmp:
        base = args.store or Path(tmp) / "prepared"
        if not base.exists():
            prepare(base)
        answers = []
        for i in range(args.asks):
            copy = Path(tmp) / f"ask{i}"
            shutil.copytree(base, copy)
            answers.append(ask(copy, args.llm_url, args.model))
            print(f"ask {i + 1}: {answers[-1]}", file=sys.stderr, flush=True)
    report = {"asks": len(answers), "right": sum(a["right"] for a in answers), "answers": answers}
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else
          f"{report['right']}/{report['asks']} answers name Leuven")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
