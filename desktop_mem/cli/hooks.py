"""`desktop-mem hooks install|uninstall claude-code|codex` and the background `hooks deliver`.

install writes the agent's own hook configuration with `mcp setup`'s care (cli/mcp_setup.py: the
file merged, never replaced; a timestamped backup; the diff shown; a file that does not parse is
refused and left alone):

- Claude Code: `~/.claude/settings.json` (or a project's `.claude/settings.json` with --config),
  `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": ...}]}]}}`; the
  event (with the `prompt`) comes on stdin.
- Codex: `$CODEX_HOME/config.toml` (default ~/.codex/config.toml), the top-level `notify`
  program, run after each turn with the `agent-turn-complete` event (`input-messages`) as its
  last argument. Codex runs one notify program: another one already there is not replaced.

The hook itself (desktop_mem/hook_capture.py) spools the user's messages and starts `hooks
deliver`, which sends them to the write path (api/agent_capture.py): forwarded to the app or
`serve` when one holds the store, else on the store directly. A delivery that fails is kept in
the spool's `failed/` folder with the reason (`hooks status` lists them) and never reaches the
agent.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shlex
import sys
import time
import tomllib
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

from desktop_mem.cli.mcp_setup import SetupError, SetupPlan, _toml_value, show_and_write
from desktop_mem.engine.config import Config

AGENTS = ("claude-code", "codex")
MARKER = "desktop_mem.hook_capture"  # how our entry is found again in the agent's config
HOOK_TIMEOUT_S = 10
LOCK_WAIT_S = 30.0  # a store briefly held by a CLI command: the delivery waits this long, then keeps it
_NOTIFY = re.compile(r"^\s*notify\s*=")
_HEADER = re.compile(r"^\s*\[")


def register(subparsers: Any, handlers: MutableMapping[str, Any]) -> None:
    p = subparsers.add_parser("hooks", help="remember what you tell a coding agent (Claude Code, Codex): "
                              "install its hook, or remove it")
    sub = p.add_subparsers(dest="hooks_action", metavar="{install,uninstall,status}", required=True)
    for action in ("install", "uninstall"):
        q = sub.add_parser(action, help=f"{action} desktop-mem's hook in the agent's config (merged, with a "
                           "backup; prints the diff)")
        q.add_argument("agent", choices=AGENTS)
        q.add_argument("--config", dest="agent_config", type=Path, metavar="FILE",
                       help="the agent's config file (default: its user settings)")
        q.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
        if action == "install":
            q.add_argument("--project", metavar="P", help="file task facts under project P (default: the "
                           "project of the folder the agent works in)")
    sub.add_parser("status", help="messages waiting to be stored, and deliveries that failed")
    q = sub.add_parser("deliver", help=argparse.SUPPRESS)  # started by the hook, in the background
    q.add_argument("--spool", type=Path, required=True)
    handlers["hooks"] = cmd_hooks


# ----------------------------------------------------------------------------- where, what

def agent_config_path(agent: str, env: MutableMapping[str, str] | None = None,
                      home: Path | None = None) -> Path:
    env = os.environ if env is None else env
    home = home or Path.home()
    if agent == "claude-code":
        return home / ".claude" / "settings.json"
    return (Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex") / "config.toml"


def spool_dir(store: Path) -> Path:
    """Where the hook leaves messages for this store: this user's state folder, never the store."""
    import platformdirs

    key = hashlib.sha256(str(store.expanduser().resolve()).encode()).hexdigest()[:16]
    return Path(platformdirs.user_state_dir("desktop-mem")) / "hook-spool" / key


def hook_argv(agent: str, store: Path, project: str | None, config_file: Path | None) -> list[str]:
    """The hook's command: this Python, the stdlib-only capture module, absolute paths."""
    args = [str(Path(sys.executable).absolute()), "-m", MARKER, "--agent", agent,
            "--store", str(store.expanduser().absolute()), "--spool", str(spool_dir(store))]
    if project:
        args += ["--project", project]
    if config_file is not None and config_file.expanduser().is_file():  # else the default settings
        args += ["--config", str(config_file.expanduser().absolute())]
    return args


# ---------------------------------------------------------------------------------- plans

def _load_json(path: Path, before: str | None) -> dict[str, Any]:
    if before is None or not before.strip():
        return {}
    try:
        data = json.loads(before)
    except json.JSONDecodeError as exc:
        raise SetupError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
                         "nothing was changed") from exc
    if not isinstance(data, dict):
        raise SetupError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was changed")
    return data


def _claude_settings(path: Path, before: str | None, argv: list[str] | None) -> str:
    """The settings with our UserPromptSubmit hook (argv) or without it (None); others kept."""
    data = _load_json(path, before)
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SetupError(f"{path}: 'hooks' is a {type(hooks).__name__}, not an object; nothing was changed")
    groups = hooks.get("UserPromptSubmit", [])
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise SetupError(f"{path}: hooks.UserPromptSubmit is not a list of objects; nothing was changed")
    kept = []
    for group in groups:
        inner = group.get("hooks", [])
        if not isinstance(inner, list):
            raise SetupError(f"{path}: a UserPromptSubmit entry's 'hooks' is not a list; nothing was changed")
        mine = [h for h in inner if isinstance(h, dict) and MARKER in str(h.get("command", ""))]
        if not mine:
            kept.append(group)
        elif len(mine) < len(inner):
            kept.append({**group, "hooks": [h for h in inner if h not in mine]})
    if argv is not None:
        kept.append({"hooks": [{"type": "command", "command": shlex.join(argv), "timeout": HOOK_TIMEOUT_S}]})
    new_hooks = {**hooks, "UserPromptSubmit": kept} if kept else {
        k: v for k, v in hooks.items() if k != "UserPromptSubmit"}
    new = {**data, "hooks": new_hooks} if new_hooks else {k: v for k, v in data.items() if k != "hooks"}
    if argv is None and new == data:
        return before or ""
    indent = re.search(r"\n( +)\S", before or "")  # keep the file's own indent
    return json.dumps(new, indent=len(indent.group(1)) if indent else 2, ensure_ascii=False) + "\n"


def _codex_config(path: Path, before: str | None, argv: list[str] | None) -> str:
    """config.toml with our top-level `notify` (argv) or without it (None); every other line kept."""
    text = before or ""
    try:
        old = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SetupError(f"{path} is not valid TOML ({exc}); nothing was changed") from exc
    current = old.get("notify")
    if current is not None and not (isinstance(current, list) and MARKER in map(str, current)):
        if argv is None:
            return text  # someone else's notify program: not ours to remove
        raise SetupError(f"{path} already runs another notify program ({current!r}); Codex runs only one. "
                         f"Remove it, or chain desktop-mem from it:\nnotify = {_toml_value(argv)}")
    lines = text.splitlines(keepends=True)
    first_table = next((i for i, line in enumerate(lines) if _HEADER.match(line)), len(lines))
    at = next((i for i in range(first_table) if _NOTIFY.match(lines[i])), None)
    if at is not None:
        if lines[at].count("[") != lines[at].count("]"):
            raise SetupError(f"{path}: notify spans several lines; change it by hand")
        del lines[at]
    if argv is not None:
        line = f"notify = {_toml_value(argv)}\n"
        lines.insert(at if at is not None else first_table, line)
        if at is None and first_table < len(lines) - 1:
            lines.insert(first_table + 1, "\n")
    new_text = "".join(lines)
    expected = {k: v for k, v in old.items() if k != "notify"}
    if argv is not None:
        expected["notify"] = argv
    if tomllib.loads(new_text) != expected:  # pragma: no cover - never write a wrong merge
        raise SetupError(f"could not change {path} without touching other settings; nothing was changed")
    return new_text


def plan(agent: str, argv: list[str] | None, path: Path) -> SetupPlan:
    """The agent's config with our hook added (argv) or removed (None)."""
    path = Path(os.path.realpath(path))  # a dotfiles symlink: its target is written (mcp_setup.plan)
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise SetupError(f"cannot read {path}: {exc}") from exc
    if argv is None and before is None:  # nothing to remove from a file that is not there
        return SetupPlan(agent, path, None, None, "")  # type: ignore[arg-type]  # unchanged
    change = _claude_settings if agent == "claude-code" else _codex_config
    after = change(path, before, argv)
    # only our own line shows its value in the diff; the rest of the file may hold tokens
    return SetupPlan(agent, path, before, after, shlex.join(argv) if argv else "", _own_line(after),
                     _own_line(before or ""))


def _own_line(text: str) -> tuple[int, int]:
    """Where our hook's line is in `text` (offsets), or (0, 0)."""
    at = text.find(MARKER)
    if at < 0:
        return (0, 0)
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return (start, len(text) if end < 0 else end)


# ---------------------------------------------------------------------------------- commands

def cmd_hooks(args: argparse.Namespace, config: Config) -> int:
    action = args.hooks_action
    if action == "deliver":
        return deliver(config, args.spool)
    if action == "status":
        return status(config)
    store = config.store_path
    path = args.agent_config or agent_config_path(args.agent)
    if action == "install" and args.project:
        from desktop_mem.engine.api import project_scope

        project_scope(args.project)  # a bad name is an error now, not at every prompt
    argv = hook_argv(args.agent, store, getattr(args, "project", None), config.file) if action == "install" \
        else None
    title = {"claude-code": "Claude Code", "codex": "Codex"}[args.agent]
    try:
        setup = plan(args.agent, argv, path)
        written, backup = show_and_write(setup, dry_run=args.dry_run, out=sys.stdout, unchanged=str(path))
        if not written:
            return 0
    except (SetupError, OSError) as exc:
        print(f"desktop-mem: {exc}", file=sys.stderr)
        return 1
    kept = f" (the old file is kept as {backup})" if backup else ""
    done = ("will remember what you tell it" if action == "install"
            else "no longer sends anything to desktop-mem")
    print(f"{title} {done}: {path} changed{kept}. Restart {title} to apply it.")
    return 0


def status(config: Config) -> int:
    folder = spool_dir(config.store_path)
    waiting = sorted(folder.glob("*.json")) if folder.is_dir() else []
    failed = sorted((folder / "failed").glob("*.json")) if (folder / "failed").is_dir() else []
    print(f"spool: {folder}\n{len(waiting)} waiting, {len(failed)} failed")
    for path in failed[-10:]:
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(path.read_text(encoding="utf-8"))
            print(f"  {path.name}: {record.get('error', '?')}")
    return 1 if failed else 0


@contextlib.contextmanager
def _one_deliverer(folder: Path) -> Iterator[bool]:
    """True for the one delivery process of this spool (others leave the records to it)."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        import fcntl
    except ImportError:  # Windows: no lock; a record is taken by renaming it first
        yield True
        return
    with open(folder / ".deliver.lock", "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


def deliver(config: Config, folder: Path) -> int:
    """Send every spooled record to the write path, oldest first, until none is left.

    A hook that finds this delivery running spools its record and starts none (hook_capture.py):
    so after letting go of the lock the folder is looked at again, and what a hook spooled
    meanwhile is delivered too."""
    while True:
        with _one_deliverer(folder) as mine:
            if not mine:
                return 0
            while records := sorted(folder.glob("*.json")):
                for path in records:
                    if not _deliver_one(config, folder, path):
                        return 1  # the store is busy: the records wait for the next prompt's delivery
        if not any(folder.glob("*.json")):
            return 0


def _deliver_one(config: Config, folder: Path, path: Path) -> bool:
    """One record: stored (file removed), or failed for good (moved to failed/ with the reason);
    False when the store is held by something that takes no forwarded writes (kept for later)."""
    from desktop_mem.engine.models import StoreLockedError

    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        _send(config, record)
    except StoreLockedError:
        return False
    except Exception as exc:  # noqa: BLE001 - kept with its reason, for `hooks status` and the user
        failed = folder / "failed"
        failed.mkdir(exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError, ValueError):
            record = json.loads(path.read_text(encoding="utf-8"))
            record["error"] = f"{type(exc).__name__}: {exc}"
            (failed / path.name).write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
        path.unlink(missing_ok=True)
        return True
    path.unlink(missing_ok=True)
    return True


def _project_of(record: dict[str, Any]) -> str:
    from desktop_mem.engine.api import project_of_folder, project_scope

    if record.get("project"):
        return str(project_scope(str(record["project"])))
    cwd = record.get("cwd")
    if isinstance(cwd, str) and cwd and Path(cwd).is_absolute():
        return str(project_of_folder(cwd))
    return str(project_scope(str(record.get("agent") or "agent")))


def _send(config: Config, record: dict[str, Any]) -> None:
    """To the app or `serve` holding the store, else on the store itself (waiting a little for a
    brief holder such as a CLI command)."""
    from desktop_mem.api.agent_capture import remember
    from desktop_mem.cli.forward import remote_capture
    from desktop_mem.engine.api import MemoryEngine
    from desktop_mem.engine.models import StoreLockedError

    messages = [m for m in record.get("messages", []) if isinstance(m, str)]
    agent, project = str(record.get("agent")), _project_of(record)
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            with MemoryEngine(config) as engine:
                remember(engine, messages, project=project, agent=agent)
                engine.wait_idle(60)
            return
        except StoreLockedError:
            remote = remote_capture(config.store_path.expanduser().resolve())
            if remote is not None:
                remote.remember(messages, project=project, agent=agent)
                return
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
