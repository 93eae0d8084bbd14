"""Issue #22, writers forward to a long-lived holder: while `serve` (or the app) holds the store,
`desktop-mem add / edit / delete / restore` are done by that process, with the output and exit
code of a direct write, over its private endpoint (a 0700 Unix socket, or the verified TCP
fallback where there are none, forced here with DESKTOP_MEM_ENDPOINT_TCP=1). Before, they failed
at once naming the holder. Real `serve` and CLI processes, real HTTP, real git.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.api.holder_endpoint import Endpoint
from desktop_mem.api.loopback import FORCE_TCP_ENV, private_socket, remove_private_socket
from desktop_mem.cli.forward import RemoteWriter
from desktop_mem.engine.models import EngineError
from tests.mcp_clients import ROOT, ServeProcess, cli_env, git

LINE = re.compile(r"[0-9a-f]{8}  \d{4}-\d\d-\d\d \d\d:\d\d  (\S+)\s+memory\s+(.*)")


def _cli(store: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


def _subjects(store: Path) -> list[str]:
    return git(store, "log", "--format=%s").strip().splitlines()


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_cli_writes_while_serve_holds_the_store_are_forwarded_like_direct_writes(
    tmp_path: Path, transport: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    if transport == "tcp":
        monkeypatch.setenv(FORCE_TCP_ENV, "1")  # serve and the CLI: no Unix sockets
    env = cli_env()
    direct_store = tmp_path / "direct"
    direct = _cli(direct_store, env, "add", "--json", "--conversation", "music", "The user plays the cello")
    assert direct.returncode == 0, direct.stderr
    store = tmp_path / "store"
    serve = ServeProcess(store).wait_ready()
    try:
        added = _cli(store, env, "add", "--kind", "preference", "The user prefers oat milk")
        assert added.returncode == 0, added.stderr
        assert LINE.fullmatch(added.stdout.strip()).groups() == ("global", "The user prefers oat milk")

        as_json = _cli(store, env, "add", "--json", "--conversation", "music", "The user plays the cello")
        assert as_json.returncode == 0, as_json.stderr
        forwarded, local = json.loads(as_json.stdout), json.loads(direct.stdout)
        assert forwarded.keys() == local.keys()
        same = ("text", "conversation_id", "role", "kind", "source", "client", "deleted", "expires_at")
        assert {k: forwarded[k] for k in same} == {k: local[k] for k in same}
        memory_id = forwarded["id"]

        edited = _cli(store, env, "edit", memory_id, "--text", "The user plays the viola")
        assert edited.returncode == 0, edited.stderr
        assert LINE.fullmatch(edited.stdout.strip()).groups() == ("music", "The user plays the viola")
        deleted = _cli(store, env, "delete", memory_id[:8])
        assert deleted.returncode == 0 and deleted.stdout.strip().endswith("[deleted]"), deleted.stderr
        restored = _cli(store, env, "restore", memory_id[:8])
        assert restored.returncode == 0 and not restored.stdout.strip().endswith("[deleted]")

        # refusals: the same message and exit code as a direct write, nothing stored
        secret = "my password for the bank is hunter2xyz!"
        for where, result in (("serve", _cli(store, env, "add", secret)),
                              ("direct", _cli(direct_store, env, "add", secret))):
            assert result.returncode == 1, (where, result.stderr)
            [line] = result.stderr.strip().splitlines()
            assert line.startswith("desktop-mem: the text looks like it contains a secret: password"), line
            assert "hunter2xyz" not in line and "--redact-secret" in line
        for target, the_id in ((store, memory_id), (direct_store, local["id"])):
            assert _cli(target, env, "delete", the_id[:8]).returncode == 0
        again, direct_again = (_cli(store, env, "delete", memory_id[:8]),
                               _cli(direct_store, env, "delete", local["id"][:8]))
        assert again.returncode == direct_again.returncode == 1
        assert again.stderr.replace(memory_id, "ID") == direct_again.stderr.replace(local["id"], "ID")
        assert "already deleted" in again.stderr
        assert _cli(store, env, "restore", memory_id).returncode == 0
        unknown = _cli(store, env, "delete", "nosuchid")
        assert unknown.returncode == 1 and unknown.stderr.strip() == _cli(
            direct_store, env, "delete", "nosuchid").stderr.strip()

        assert serve.proc.poll() is None  # serve kept the store the whole time
        subjects = _subjects(store)  # one commit per write, none for a refusal
        assert [x.split()[0] for x in subjects] == [
            "Restore", "Delete", "Restore", "Delete", "Edit", "Add", "Add"], subjects
        redacted = _cli(store, env, "add", "--redact-secret", secret)
        assert redacted.returncode == 0 and "[redacted:" in redacted.stdout
    finally:
        serve.stop()
    assert "hunter2xyz" not in git(store, "log", "--all", "-p")


def test_a_cli_write_still_names_a_holder_it_cannot_forward_to(tmp_path: Path) -> None:
    """`reindex`, `import` and other bulk writes are not forwarded: one line naming the holder."""
    store = tmp_path / "store"
    serve = ServeProcess(store).wait_ready()
    try:
        result = _cli(store, cli_env(), "reindex")
        assert result.returncode == 1 and "Traceback" not in result.stderr
        [line] = result.stderr.strip().splitlines()
        assert "is open for writing by" in line and f"pid {serve.proc.pid}" in line
    finally:
        serve.stop()


# `search` and `show` in a process that reports afterwards whether it loaded the index's parts.
REPORTING_CLI = """
import runpy, sys
sys.argv = ["desktop-mem", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("desktop_mem.cli", run_name="__main__")
except SystemExit as done:
    code = done.code
print("LOADED", sorted(m for m in ("chromadb", "onnxruntime") if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""


def _reporting_cli(store: Path, env: dict[str, str], *args: str
                   ) -> tuple[subprocess.CompletedProcess[str], str]:
    done = subprocess.run([sys.executable, "-c", REPORTING_CLI, "--store", str(store), *args],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)
    loaded = [line for line in done.stderr.splitlines() if line.startswith("LOADED")]
    return done, loaded[-1] if loaded else ""


@pytest.mark.parametrize("transport", ["unix", "tcp"])
def test_cli_search_and_show_while_serve_holds_the_store_are_answered_by_it(
    tmp_path: Path, transport: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At 100,000 memories a second process took 4-6 s and ~500 MB to load the index again (#25)."""
    if transport == "tcp":
        monkeypatch.setenv(FORCE_TCP_ENV, "1")
    env = cli_env()
    store = tmp_path / "store"
    serve = ServeProcess(store).wait_ready()
    try:
        for text in ("The user plays the cello in a quartet", "The user's sister lives in Porto",
                     "The user drinks oat milk"):
            assert _cli(store, env, "add", text).returncode == 0
        found, loaded = _reporting_cli(store, env, "search", "--json", "which instrument does the user play")
        assert found.returncode == 0, found.stderr
        assert loaded == "LOADED []"  # serve searched: this process loaded no index, no model
        hits = json.loads(found.stdout)
        assert hits[0]["memory"]["text"] == "The user plays the cello in a quartet"
        assert hits[0]["scores"]["rerank"] is not None and hits[0]["scores"]["mmr_rank"] == 1

        as_text, _ = _reporting_cli(store, env, "search", "sister")
        assert as_text.returncode == 0
        assert "The user's sister lives in Porto" in as_text.stdout.splitlines()[0]
        shown, loaded = _reporting_cli(store, env, "show", hits[0]["memory"]["id"][:8])
        assert shown.returncode == 0 and loaded == "LOADED []", shown.stderr
        missing, _ = _reporting_cli(store, env, "show", "nosuchid")
    finally:
        serve.stop()
    # the same answers as a search and a show of the store itself, once nothing holds it
    direct = json.loads(_cli(store, env, "search", "--json", "which instrument does the user play").stdout)
    assert [h["memory"]["id"] for h in direct] == [h["memory"]["id"] for h in hits]
    def reranks(found: list[dict[str, Any]]) -> list[float]:
        return [round(h["scores"]["rerank"], 6) for h in found]

    assert reranks(direct) == reranks(hits)
    assert _cli(store, env, "show", hits[0]["memory"]["id"][:8]).stdout == shown.stdout
    unknown = _cli(store, env, "show", "nosuchid")
    assert missing.returncode == unknown.returncode == 1
    assert missing.stderr.splitlines()[0] == unknown.stderr.strip()


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix domain sockets only")
def test_a_holder_answering_something_that_is_no_memory_gives_an_error_not_a_traceback() -> None:
    """A forwarded write whose answer has the shape of a memory but a role no memory has (a newer or
    broken holder) ends in the engine error any bad answer gives, naming the holder."""
    sock, endpoint = private_socket()
    body = json.dumps({"id": "0123abcd", "role": "overlord", "text": "x"}).encode()

    def answer_once() -> None:
        conn, _ = sock.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    holder = threading.Thread(target=answer_once, daemon=True)
    holder.start()
    try:
        with pytest.raises(EngineError) as refused:
            RemoteWriter(Endpoint(endpoint)).add("The user plays the cello", conversation_id="global",
                                                 kind="fact", secrets=None)
        assert endpoint in str(refused.value)
    finally:
        holder.join(30)
        sock.close()
        remove_private_socket(endpoint)
