"""Find the OpenAI-compatible servers a user already runs: Ollama, LM Studio, llama.cpp's server
and vLLM on their usual loopback ports, plus OPENAI_BASE_URL and the configured endpoint.

Each is asked `GET <base>/models` with a short timeout, all at once, so the whole search takes
about one timeout. Only loopback ports are probed on the user's behalf; the API key goes only
to the URL it belongs to (OPENAI_BASE_URL with OPENAI_API_KEY, the configured URL with the
configured key), never to whatever happens to listen on a well-known port. What a server answers
is untrusted: the body is capped, model ids are cleaned and their number bounded.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from desktop_mem.engine import bounded_json

MAX_BODY = 1024 * 1024  # a models list is a few KB; a bigger answer is not one
MAX_MODELS = 200
# A models list is flat and short: anything nested deeper, or holding more values, is refused
# before it is parsed (a deeply nested answer raised RecursionError: a traceback).
MODELS_LIMITS = bounded_json.JSONLimits(max_chars=MAX_BODY, max_depth=16, max_values=50_000)
GRACE = 0.25  # s past the timeout for the last reads to give up and the answers to be gathered
_MODEL_ID = re.compile(r"[^\x00-\x1f\x7f-\x9f]{1,200}")


@dataclass(frozen=True)
class KnownServer:
    """A local server kind: its usual port and how to get it running."""

    name: str
    port: int
    how: str


KNOWN_SERVERS = (
    KnownServer("Ollama", 11434, "install it from https://ollama.com/download, then run "
                "`ollama pull llama3.2` (it serves on port 11434 by itself)"),
    KnownServer("LM Studio", 1234, "install it from https://lmstudio.ai, download a model, and turn on "
                "Developer → Start server (port 1234)"),
    KnownServer("llama.cpp server", 8080, "run `llama-server -m MODEL.gguf --port 8080` "
                "(https://github.com/ggml-org/llama.cpp)"),
    KnownServer("vLLM", 8000, "run `vllm serve MODEL` (https://docs.vllm.ai; needs a GPU for most models)"),
)

# What `owned_by` says about who answered, when a server runs on another's port.
_OWNERS = {"library": "Ollama", "ollama": "Ollama", "llamacpp": "llama.cpp server", "vllm": "vLLM",
           "organization_owner": "LM Studio"}


@dataclass(frozen=True)
class FoundEndpoint:
    """One place probed: its base URL, who it looks like, and the models it offers (or why not)."""

    name: str
    base_url: str
    models: tuple[str, ...] = ()
    error: str = ""
    origin: str = "usual port"  # or "OPENAI_BASE_URL", "settings"
    uses_key: bool = field(default=False, compare=False)
    listening: bool = True  # something answered the connection, whatever it said


    @property
    def found(self) -> bool:
        return not self.error


def candidates(env: Mapping[str, str], configured_url: str = "", configured_key: str = "",
               servers: Sequence[KnownServer] = KNOWN_SERVERS) -> list[tuple[FoundEndpoint, str]]:
    """Where to look, each with the API key it may be sent (usually none); one entry per URL."""
    out: dict[str, tuple[FoundEndpoint, str]] = {}
    env_url = _clean_url(env.get("OPENAI_BASE_URL", ""))
    if env_url:
        key = env.get("OPENAI_API_KEY", "")
        out[env_url] = (FoundEndpoint(_name_for(env_url, servers), env_url, origin="OPENAI_BASE_URL",
                                 uses_key=bool(key)), key)
    configured = _clean_url(configured_url)
    if configured and configured not in out:
        out[configured] = (FoundEndpoint(_name_for(configured, servers), configured, origin="settings",
                                    uses_key=bool(configured_key)), configured_key)
    for server in servers:
        url = f"http://127.0.0.1:{server.port}/v1"
        if url not in out and f"http://localhost:{server.port}/v1" not in out:
            out[url] = (FoundEndpoint(server.name, url), "")
    return list(out.values())


def discover_endpoints(env: Mapping[str, str], configured_url: str = "", configured_key: str = "", *,
             timeout: float = 1.0, servers: Sequence[KnownServer] = KNOWN_SERVERS) -> list[FoundEndpoint]:
    """Probe every candidate at once; the ones that answered first, in the order looked at.
    `timeout` bounds the whole search, not each read: a server that answers a byte at a time is
    given up on when it is over (its thread, a daemon, ends at its next read)."""
    todo = candidates(env, configured_url, configured_key, servers)
    deadline = time.monotonic() + timeout
    results: list[FoundEndpoint | None] = [None] * len(todo)

    def run(i: int, endpoint: FoundEndpoint, key: str) -> None:
        results[i] = probe(endpoint, key, timeout, deadline=deadline)

    threads = [threading.Thread(target=run, args=(i, e, k), daemon=True, name="endpoint-probe")
               for i, (e, k) in enumerate(todo)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline + GRACE - time.monotonic()))
    # a probe still running past the deadline: a server busy with a reply (a local one serves one
    # request at a time, its models list too: 13 s behind a benchmark's request), or one that drips
    found = [result or replace(endpoint, error=f"still answering past {timeout:g} s (busy with a reply, or "
                               "not a model server): try again, or Test connection", listening=True)
             for result, (endpoint, _key) in zip(results, todo, strict=True)]
    return sorted(found, key=lambda e: not e.found)


def probe(endpoint: FoundEndpoint, api_key: str = "", timeout: float = 1.0, *,
          deadline: float | None = None) -> FoundEndpoint:
    """Ask `endpoint` for its models; the endpoint back with models, or with why it failed. The
    answer must be whole by `deadline` (monotonic; default: `timeout` from now), however it trickles."""
    import httpx  # here, not at the top: the engine's API names this module and stays light

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    deadline = time.monotonic() + timeout if deadline is None else deadline
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client, \
                client.stream("GET", endpoint.base_url.rstrip("/") + "/models", headers=headers) as response:
            if response.status_code in (401, 403):
                return replace(endpoint, error="answers, but wants an API key (set it, then Test connection)")
            if response.status_code != 200:
                return replace(endpoint, error=f"answered HTTP {response.status_code} to /models")
            body = b""
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_BODY:
                    return replace(endpoint, error="answered with more than 1 MB: not a models list")
                if time.monotonic() > deadline:
                    return replace(endpoint, error=f"kept answering past {timeout:g} s: not a models list",
                                   listening=True)
    except httpx.ConnectError:
        return replace(endpoint, error="nothing is listening", listening=False)
    except httpx.ConnectTimeout:
        return replace(endpoint, error=f"no answer within {timeout:g} s")
    except httpx.TimeoutException:  # connected, but the models list did not come
        return replace(endpoint, error=f"is listening, but did not answer within {timeout:g} s (busy "
                       "with a reply? try again, or Test connection)", listening=True)
    except httpx.HTTPError as exc:
        return replace(endpoint, error=f"cannot be reached ({type(exc).__name__})")
    return _read_models(endpoint, body)


def _read_models(endpoint: FoundEndpoint, body: bytes) -> FoundEndpoint:
    try:
        data = bounded_json.loads(body, MODELS_LIMITS, "its answer")
    except bounded_json.JSONLimitError as exc:
        return replace(endpoint, error=f"answered, but {exc}: not an OpenAI models list")
    except ValueError:
        return replace(endpoint, error="answered, but not with JSON: not an OpenAI-compatible server")
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return replace(endpoint, error="answered, but not with an OpenAI models list")
    models: list[str] = []
    owners: set[str] = set()
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("id"), str) and _MODEL_ID.fullmatch(item["id"]):
            models.append(item["id"])
            owners.add(str(item.get("owned_by", "")))
        if len(models) >= MAX_MODELS:
            break
    name = next((_OWNERS[o] for o in sorted(owners) if o in _OWNERS), endpoint.name)
    if not models:
        return replace(endpoint, name=name, error="is running, but offers no model yet (download one)")
    return replace(endpoint, name=name, models=tuple(dict.fromkeys(models)))


def _clean_url(url: str) -> str:
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    return url if parts.scheme in ("http", "https") and parts.hostname else ""


def _name_for(url: str, servers: Sequence[KnownServer]) -> str:
    parts = urlsplit(url)
    if parts.hostname in ("127.0.0.1", "localhost", "::1"):
        for server in servers:
            if parts.port == server.port:
                return server.name
        return "local server"
    return parts.hostname or url


def nothing_found_advice(servers: Sequence[KnownServer] = KNOWN_SERVERS) -> str:
    """What to install and how, when no server answered."""
    lines = ["No model server answered on this computer. To chat, run one of these (any works):"]
    lines += [f"  - {s.name}: {s.how}" for s in servers]
    lines.append("  - or a hosted service: set its URL and API key in Settings → Endpoint "
                 "(e.g. https://api.openai.com/v1), or OPENAI_BASE_URL and OPENAI_API_KEY.")
    lines.append("Then search again. Memory, search and the browser work without a model.")
    return "\n".join(lines)
