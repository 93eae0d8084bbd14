"""Memory of `desktop-mem serve` on a built store: at start and after chat turns (issue #25).

    .venv/bin/python benchmarks/serve_memory.py --store /tmp/scale/work/store-100000 [--turns 2]

Copies the store (the turns write into it), starts the scripted OpenAI-compatible server and
`desktop-mem serve` as a user would, each in a process of its own, then reads serve's
/proc/<pid>/status:
- at start: after /health answers, a settle of 5 s and 10 listings (GET /api/memories);
- after each chat turn (POST /v1/chat/completions with the `openai` client, streaming; the read
  path embeds the message and reranks with the cross-encoder), once the turn's write path ended.
VmRSS is what serve holds then, VmHWM its peak so far. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.llm_process import ScriptedLLMProcess  # noqa: E402

TOKEN = "bench-token"


def status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of `pid`, in MB."""
    values: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0]) / 1024
    return values


def get(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return bytes(response.read())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds to wait after start and (up to 4) after each turn; the smoke run: 0.5")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="desktop-mem-serve-bench-"))
    store = work / "store"
    shutil.copytree(args.store, store, symlinks=True)
    llm = ScriptedLLMProcess("Noted: " + " ".join(f"word{i}" for i in range(200)))
    port = free_port()
    config = work / "config.yaml"
    config.write_text("", encoding="utf-8")
    settings = {"llm.base_url": llm.base_url, "llm.model": "test-model", "llm.api_key": "test",
                "memory.extract_facts": "false", "memory.enable_summarization": "false"}
    command = [sys.executable, "-m", "desktop_mem.cli", "--store", str(store), "--config", str(config),
               *[a for k, v in settings.items() for a in ("--set", f"{k}={v}")],
               "serve", "--port", str(port), "--token", TOKEN]
    started = time.monotonic()
    serve = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "DESKTOP_MEM_CONFIG": str(config)})
    base = f"http://127.0.0.1:{port}"
    result: dict[str, object] = {"load_average_start": round(os.getloadavg()[0], 2)}
    try:
        while True:
            try:
                get(base + "/health")
                break
            except OSError:
                if serve.poll() is not None or time.monotonic() - started > 300:
                    raise RuntimeError(f"serve did not start: {serve.stderr.read().decode()[-2000:]}"
                                       if serve.stderr else "serve did not start") from None
                time.sleep(0.2)
        result["health_s"] = round(time.monotonic() - started, 2)
        time.sleep(args.settle)
        for _ in range(10):
            get(base + "/api/memories?limit=50")
        at_start = status(serve.pid)
        result["rss_at_start_mb"] = round(at_start["VmRSS"], 1)
        result["peak_at_start_mb"] = round(at_start["VmHWM"], 1)

        import openai

        client = openai.OpenAI(base_url=base + "/v1", api_key=TOKEN)
        for turn in range(1, args.turns + 1):
            begun = time.monotonic()
            stream = client.chat.completions.create(
                model="test-model", stream=True,
                messages=[{"role": "user", "content": f"What do I like about tea and Lisbon? ({turn})"}],
                extra_headers={"X-Conversation-Id": "conv-1"})
            text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
            assert text.startswith("Noted"), text[:80]
            result[f"turn{turn}_s"] = round(time.monotonic() - begun, 2)
            time.sleep(min(4.0, args.settle))  # the turn's write path (embedding, index, commit) runs after
            # the reply
            after = status(serve.pid)
            result[f"rss_after_turn{turn}_mb"] = round(after["VmRSS"], 1)
            result[f"peak_after_turn{turn}_mb"] = round(after["VmHWM"], 1)
    finally:
        serve.terminate()
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()
        llm.stop()
        shutil.rmtree(work, ignore_errors=True)
    result["load_average_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
