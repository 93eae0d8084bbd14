"""How a real model answers "forget ..." with the app's forget note in its two places (issue #25's
walks; chat/context.py `_told_to_forget`). Needs an OpenAI-compatible server (the local 1.5B
model: ../shared/tools/local-llm.sh); never run in CI.

    .venv/bin/python benchmarks/forget_reply.py --base-url http://127.0.0.1:8765/v1 [--samples 3]

Three forget requests after one turn that taught a job, a city and a cat, each sampled `--samples`
times per variant: "before" = the note after the base prompt only (as before 2026-11-28),
"now" = the note at the end of the system prompt and after the request (what the app sends).
Counts the replies that refuse ("I can't", "I'm sorry", ...) and those that repeat what was asked
to be forgotten (Lisbon, Pixel, pharmacist). One JSON line.
"""

from __future__ import annotations

import argparse
import json
import re

import openai

from desktop_mem.engine.chat import prompts
from desktop_mem.engine.chat.context import FORGET_NOTE, build_system_prompt

MEMORIES = ["The user is a pharmacist", "The user has a cat named Pixel", "The user lives in Lisbon"]
HISTORY = [{"role": "user",
            "content": "Hi! I'm a pharmacist, I live in Lisbon and I have a cat named Pixel."},
           {"role": "assistant", "content": "It's great to hear about your cat! How does he/she do?"}]
ASKS = {"Please forget where I live.": "lisbon", "Forget that I have a cat.": "pixel",
        "please forget my job": "pharmacist"}
REFUSAL = re.compile(r"can(no|')t|unable|not able|don't have the ability|do not have|I'm sorry", re.I)


def messages(variant: str, ask: str) -> list[dict[str, str]]:
    base = "You are a helpful assistant with a long-term memory of the user."
    if variant == "before":
        base = f"{base}\n\n{FORGET_NOTE}"
    system = build_system_prompt(base, injected_memories=MEMORIES, summary=None, cross_session=[],
                                 data_preamble=prompts.MEMORY_DATA_PREAMBLE)
    if variant == "before":
        return [{"role": "system", "content": system}, *HISTORY, {"role": "user", "content": ask}]
    return [{"role": "system", "content": f"{system}\n\n{FORGET_NOTE}"}, *HISTORY,
            {"role": "user", "content": f"{ask}\n\n({FORGET_NOTE})"}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="local")
    parser.add_argument("--api-key", default="local")
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()
    client = openai.OpenAI(base_url=args.base_url, api_key=args.api_key)
    result: dict[str, dict[str, int]] = {}
    for variant in ("before", "now"):
        counts = {"replies": 0, "refused": 0, "repeated": 0}
        for ask, word in ASKS.items():
            for _ in range(args.samples):
                sent = messages(variant, ask)
                answer = client.chat.completions.create(model=args.model, messages=sent,  # type: ignore[arg-type]
                                                        max_tokens=60)
                reply = answer.choices[0].message.content or ""
                counts["replies"] += 1
                counts["refused"] += bool(REFUSAL.search(reply))
                counts["repeated"] += word in reply.casefold()
        result[variant] = counts
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
