"""The hook a coding agent runs on each prompt (`desktop-mem hooks install`): fast, silent, stdlib only.

Claude Code runs it on `UserPromptSubmit` with the event as JSON on stdin; Codex runs it as its
`notify` program with the `agent-turn-complete` event as JSON in the last argument. It keeps the
user's own messages only (Claude Code's `prompt`, Codex's `input-messages`: never tool output,
file contents or the agent's replies), writes them to a spool folder outside the store and
starts `desktop-mem hooks deliver` in the background, which sends them to the write path (the
app or `serve` when one holds the store). It prints nothing (Claude Code would add stdout to the
prompt), always exits 0 and never waits for the delivery: the agent is slowed by the start of
this interpreter and one small file write (measured in benchmarks/hook_latency.py).

It imports nothing of desktop-mem and nothing outside the standard library: importing the
engine would cost the agent a second on every prompt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

MAX_PAYLOAD = 1 << 20  # a prompt bigger than 1 MB is pasted material, not something to remember
MAX_MESSAGE_CHARS = 8000
DELIVERY_DELAY_S = 0.3


def _options(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """`--name value` pairs, and what is left (Codex appends its JSON as the last argument)."""
    opts: dict[str, str] = {}
    rest: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg.startswith("--") and arg[2:] in ("agent", "store", "spool", "project", "config"):
            opts[arg[2:]] = next(it, "")
        else:
            rest.append(arg)
    return opts, rest


def _event(agent: str, rest: list[str]) -> dict[str, Any] | None:
    raw = rest[-1] if agent == "codex" and rest else sys.stdin.read(MAX_PAYLOAD + 1)
    if not raw or len(raw) > MAX_PAYLOAD:
        return None
    value = json.loads(raw)
    return value if isinstance(value, dict) else None


def user_messages(agent: str, event: dict[str, Any]) -> tuple[list[str], str, str]:
    """(the user's messages, session id, working folder) of one hook event; no messages for any
    other event or shape."""
    if agent == "claude-code":
        if event.get("hook_event_name", "UserPromptSubmit") != "UserPromptSubmit":
            return [], "", ""
        said = [event.get("prompt")]
        session, cwd = event.get("session_id"), event.get("cwd")
    elif agent == "codex":
        if event.get("type") != "agent-turn-complete":
            return [], "", ""
        given = event.get("input-messages")
        said = given if isinstance(given, list) else []
        session, cwd = event.get("thread-id") or event.get("turn-id"), event.get("cwd")
    else:
        return [], "", ""
    texts = [s.strip()[:MAX_MESSAGE_CHARS] for s in said if isinstance(s, str) and s.strip()]
    return texts, session if isinstance(session, str) else "", cwd if isinstance(cwd, str) else ""


def spool(folder: Path, record: dict[str, Any]) -> Path:
    """Write one record atomically, readable by this user only."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    tmp = folder / f".{name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(record, handle, ensure_ascii=False)
    final = folder / f"{name}.json"
    os.replace(tmp, final)
    return final


def delivery_running(folder: Path) -> bool:
    """True while a `hooks deliver` of this spool runs: it takes what was spooled before it lets
    go of its lock (cli/hooks.py), so no second one is started (each costs the machine ~1 s)."""
    try:
        import fcntl
    except ImportError:
        return False
    with open(folder / ".deliver.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False


def start_delivery(opts: dict[str, str]) -> None:
    """`desktop-mem hooks deliver` in its own session: it outlives this hook and the agent's wait."""
    args = [sys.executable, "-m", "desktop_mem.cli", "--store", opts["store"]]
    if opts.get("config"):
        args += ["--config", opts["config"]]
    args += ["hooks", "deliver", "--spool", opts["spool"]]
    kwargs: dict[str, Any] = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL,
                              "stderr": subprocess.DEVNULL, "close_fds": True}
    if os.name == "nt":
        kwargs["creationflags"] = 0x00000008 | 0x00000200  # DETACHED_PROCESS | NEW_PROCESS_GROUP
    else:
        kwargs["start_new_session"] = True
        # A second Python loading the engine at once would take the CPU this hook needs to exit
        # (measured: +110 ms on two busy cores); it starts a moment later, at low priority.
        args = ["/bin/sh", "-c", f'sleep {DELIVERY_DELAY_S}; exec nice -n 10 "$0" "$@"', *args]
    subprocess.Popen(args, **kwargs)  # noqa: S603 - our own interpreter and module


def main(argv: list[str] | None = None) -> int:
    opts, rest = _options(sys.argv[1:] if argv is None else argv)
    try:
        agent, folder = opts.get("agent", ""), Path(opts["spool"])
        event = _event(agent, rest)
        if event is None:
            return 0
        texts, session, cwd = user_messages(agent, event)
        if not texts:
            return 0
        spool(folder, {"agent": agent, "session": session, "cwd": cwd, "project": opts.get("project") or "",
                       "messages": texts, "at": time.time()})
        if opts.get("store") and not delivery_running(folder):  # after the spool write: see cli/hooks.py
            start_delivery(opts)
    except Exception as exc:  # never fail the agent: the deliverer reports what it finds
        try:
            folder = Path(opts.get("spool") or ".")
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(folder / "capture-errors.log", "a", encoding="utf-8") as log:
                log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {type(exc).__name__}: {exc}\n")
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
