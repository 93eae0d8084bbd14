"""The app's git is the app's own: every git command on a store runs with this environment.

Whatever the user's global or system git configuration says (hooks in `core.hooksPath`,
`core.autocrlf` with `core.safecrlf`, commit signing, a pager, `color.ui=always`,
`diff.noprefix`, global ignore or attribute files, an `init.templateDir` with hooks), it never
changes what the app commits or how it reads its history: the global and system files are not
read, and the settings the store depends on are fixed at the command-line level, which outranks
the repository's own config too. What the user's config legitimately brings is carried over on
purpose: their name and email (into a new store's repository config) and, for a sync, their
credential helpers.
"""

from __future__ import annotations

import functools
import os
import subprocess

APP_AUTHOR = ("desktop-mem", "desktop-mem@localhost")

# Fixed for every command: the store is LF Markdown written by the app, committed as written.
_FIXED: dict[str, str] = {
    "core.autocrlf": "false",
    "core.safecrlf": "false",
    "core.eol": "lf",
    "core.fsmonitor": "false",
    "core.untrackedCache": "false",
    "core.quotePath": "true",  # the app parses git's quoting of odd names (its default)
    "core.pager": "cat",
    "core.editor": ":",
    "core.askPass": "",
    "commit.gpgSign": "false",
    "tag.gpgSign": "false",
    "log.showSignature": "false",
    "color.ui": "false",
    "diff.external": "",
    "diff.noprefix": "false",
    "diff.mnemonicPrefix": "false",
    "gc.auto": "0",  # never a surprise repack in the middle of a chat turn's commit
    "maintenance.auto": "false",
    "protocol.ext.allow": "never",  # transports that run a command or read a descriptor
    "protocol.fd.allow": "never",
    "user.useConfigOnly": "false",
}


@functools.lru_cache(maxsize=1)
def user_identity() -> tuple[str, str]:
    """The user's own name and email from their real git config (read once), else the app's:
    written into a new store's repository config, so its commits are authored as before."""
    def get(key: str) -> str:
        try:
            done = subprocess.run(["git", "config", "--get", key], capture_output=True, text=True,
                                  timeout=5, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    name, email = get("user.name"), get("user.email")
    return (name, email) if name and email else APP_AUTHOR


def isolated_env() -> dict[str, str]:
    """The environment every git command on a store runs with. No file of the app's: hooks
    point at the null device (no hook is ever found there) and `git init` is given no template."""
    fixed = {**_FIXED, "core.hooksPath": os.devnull}
    env = {
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "GIT_EDITOR": ":",
        "GIT_CONFIG_COUNT": str(len(fixed)),
    }
    for i, (key, value) in enumerate(fixed.items()):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


@functools.lru_cache(maxsize=1)
def _credential_helpers() -> tuple[str, ...]:
    """The user's credential helpers (their real config), for a sync with an https remote."""
    try:
        done = subprocess.run(["git", "config", "--get-all", "credential.helper"], capture_output=True,
                              text=True, timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(line for line in done.stdout.splitlines() if line.strip()) if done.returncode == 0 else ()


def with_credential_helpers(env: dict[str, str]) -> dict[str, str]:
    """`env` (an isolated_env) plus the user's credential helpers at the command-line level."""
    helpers = _credential_helpers()
    if not helpers or "GIT_CONFIG_COUNT" not in env:
        return env
    out = dict(env)
    n = int(out["GIT_CONFIG_COUNT"])
    for helper in helpers:
        out[f"GIT_CONFIG_KEY_{n}"], out[f"GIT_CONFIG_VALUE_{n}"] = "credential.helper", helper
        n += 1
    out["GIT_CONFIG_COUNT"] = str(n)
    return out
