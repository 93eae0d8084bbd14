"""`desktop-mem endpoints`: find the model servers this computer runs, and pick one."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, MutableMapping
from typing import Any

from desktop_mem.cli.output import emit_json, terminal_safe
from desktop_mem.engine.api import FoundEndpoint, discover_endpoints, nothing_found_advice
from desktop_mem.engine.config import Config, default_config_path, save_config

Handler = Callable[[argparse.Namespace, Config], int]


def register(subparsers: Any, handlers: MutableMapping[str, Handler]) -> None:
    p = subparsers.add_parser(
        "endpoints", help="find the model servers on this computer (Ollama, LM Studio, llama.cpp, vLLM, "
        "OPENAI_BASE_URL) and their models; --use N saves one")
    p.add_argument("--use", type=int, metavar="N", help="save endpoint N of the list as llm.base_url")
    p.add_argument("--model", help="with --use: the model to save as llm.model (default: its first)")
    p.add_argument("--timeout", type=float, default=1.0, help="seconds to wait for each (default 1)")
    p.add_argument("--json", action="store_true")
    handlers["endpoints"] = cmd_endpoints


def cmd_endpoints(args: argparse.Namespace, config: Config) -> int:
    found = discover_endpoints(os.environ, str(config["llm.base_url"]), str(config["llm.api_key"]),
                               timeout=args.timeout)
    answering = [e for e in found if e.found]
    if args.json and args.use is None:
        emit_json([{"name": e.name, "base_url": e.base_url, "models": list(e.models), "error": e.error,
                    "origin": e.origin} for e in found])
        return 0 if answering else 1
    if args.use is not None:
        return _use(args, config, answering)
    for n, e in enumerate(answering, 1):
        models = ", ".join(e.models[:8]) + (f" … (+{len(e.models) - 8})" if len(e.models) > 8 else "")
        print(terminal_safe(f"{n}. {e.name} at {e.base_url} ({e.origin}): {models}"))
    for e in found:
        if not e.found:
            print(terminal_safe(f"   {e.name} at {e.base_url}: {e.error}"))
    if not answering:
        if any(e.listening for e in found):
            print("Something is listening (above) but offers no usable model yet.")
        else:
            print(nothing_found_advice())
        return 1
    print(f"Save one with: desktop-mem endpoints --use N [--model NAME]  (now: {config['llm.base_url']}, "
          f"model {config['llm.model']!r})")
    return 0


def _use(args: argparse.Namespace, config: Config, answering: list[FoundEndpoint]) -> int:
    if not 1 <= args.use <= len(answering):
        print(f"desktop-mem: there is no endpoint {args.use}; {len(answering)} answered "
              "(run `desktop-mem endpoints` to see them)", file=sys.stderr)
        return 1
    chosen = answering[args.use - 1]
    model = args.model or chosen.models[0]
    if model not in chosen.models:
        print(f"desktop-mem: {chosen.name} does not offer {model!r}; it offers "
              f"{', '.join(chosen.models[:8])}", file=sys.stderr)
        return 1
    path = config.file or default_config_path()
    save_config(path, {"llm.base_url": chosen.base_url, "llm.model": model})
    print(f"Saved to {path}: llm.base_url = {chosen.base_url}, llm.model = {model}")
    return 0
