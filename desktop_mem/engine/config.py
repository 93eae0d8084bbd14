"""Every setting declared once: name, type, default, description, environment variable.

Values are layered: defaults < YAML config file < environment variables < command-line flags.
The settings dialog, `desktop-mem config` and docs/configuration.md are generated from SETTINGS.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal, TypeVar, cast, get_args, overload

import platformdirs
import yaml

from desktop_mem.engine.models import ContextTrigger, SecretsPolicy, StrategyName, ValidationError

APP_NAME = "desktop-mem"
T = TypeVar("T")


@dataclass(frozen=True)
class Setting:
    """One declared setting. `name` is dotted: the YAML file nests on the dots."""

    name: str
    type: type
    default: Any
    description: str
    env: str | None = None
    choices: tuple[str, ...] = ()
    secret: bool = False
    minimum: float | None = None
    maximum: float | None = None

    @property
    def group(self) -> str:
        """The part before the first dot (the settings dialog's tab)."""
        return self.name.split(".", 1)[0]


def default_store_path() -> Path:
    """The platform data directory (e.g. ~/.local/share/desktop-mem/store)."""
    return Path(platformdirs.user_data_dir(APP_NAME)) / "store"


def default_config_path() -> Path:
    """The platform config file (e.g. ~/.config/desktop-mem/config.yaml)."""
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.yaml"


S = Setting
SETTINGS: tuple[Setting, ...] = (
    S("store.path", str, "", "Folder of the Markdown memory store (default: the platform data dir).",
      env="DESKTOP_MEM_STORE"),
    S("store.max_file_bytes", int, 2 * 1024 * 1024, "Files larger than this are reported, not read.",
      minimum=1024),
    S("store.git_versioning", bool, True, "Record every change as a git commit in the store."),
    S("llm.base_url", str, "http://127.0.0.1:11434/v1",
      "OpenAI-compatible endpoint (OpenAI, Ollama, LM Studio, llama.cpp, vLLM).", env="OPENAI_BASE_URL"),
    S("llm.api_key", str, "", "API key for the endpoint (kept outside the store).", env="OPENAI_API_KEY",
      secret=True),
    S("llm.model", str, "llama3.2", "Chat model name.", env="OPENAI_MODEL"),
    S("llm.summary_model", str, "", "Model for summaries and memory extraction (default: llm.model).",
      env="OPENAI_SUMMARY_MODEL"),
    S("llm.summary_base_url", str, "", "Endpoint for summaries (default: llm.base_url).",
      env="OPENAI_SUMMARY_URL"),
    S("llm.timeout", float, 300.0,
      "Seconds to wait for the LLM before giving up (local CPU models are slow).", minimum=1, maximum=3600),
    S("llm.system_prompt", str, "You are a helpful assistant with a long-term memory of the user.",
      "Base system prompt of every chat."),
    S("embedding.provider", str, "onnx", "Where embeddings come from.", choices=("onnx", "openai")),
    S("embedding.model", str, "text-embedding-3-small", "Embedding model when the provider is openai."),
    S("embedding.local_model", str, "e5-small-v2", "Local embedding model when the provider is onnx "
      "(changing it re-embeds every memory).", choices=("e5-small-v2", "all-MiniLM-L6-v2")),
    S("embedding.threads", int, 1, "CPU threads for the local embedder (keep low beside a local LLM).",
      minimum=1, maximum=64),
    S("embedding.query_threads", int, 2, "CPU threads for embedding a search query (one short text "
      "while you wait: 2 threads take about a third off, see docs/benchmarks.md).", minimum=1, maximum=64),
    S("embedding.batch_size", int, 32, "Texts embedded per batch.", minimum=1, maximum=1024),
    S("chroma.url", str, "", "Chroma server URL (empty: embedded index inside the store)."),
    S("chroma.ef_search", int, 200, "HNSW ef_search of the vector index.", minimum=10, maximum=2000),
    S("retrieval.top_k", int, 5, "Memories injected per turn.", minimum=1, maximum=100),
    S("retrieval.mmr_lambda", float, 0.7, "Diversity weighting (1.0 = pure relevance).",
      minimum=0, maximum=1),
    S("retrieval.recency_weight", float, 0.2, "Weight of recency in the final score.", minimum=0, maximum=1),
    S("retrieval.score_threshold", float, 0.0, "Minimum cross-encoder relevance kept (0: prune nothing; "
      "the shipped model scores conversational turns that hold the answer near 0).",
      minimum=0, maximum=1),
    S("retrieval.rerank", bool, True, "Rerank the best candidates with a cross-encoder (more accurate; "
      "costs tens of ms per search on a laptop CPU, see docs/benchmarks.md)."),
    S("retrieval.reranker_path", str, "", "Folder with your own cross-encoder model.onnx + tokenizer.json "
      "(empty: the shipped ms-marco-MiniLM-L-12-v2)."),
    S("retrieval.rerank_pool", int, 20, "How many of the best fused candidates the cross-encoder scores "
      "(its cost grows with this).", minimum=1, maximum=200),
    S("retrieval.rerank_budget_ms", int, 500, "Most time one rerank may take: the best candidates are scored "
      "first, until the next few would end after it; the rest keep their fused order (0: no limit).",
      minimum=0, maximum=60000),
    S("retrieval.reranker_threads", int, 2, "CPU threads for the reranker: this many candidates are scored "
      "at once, each on one thread (see docs/benchmarks.md).", minimum=1, maximum=64),
    S("retrieval.rerank_idle_release_s", int, 300, "Seconds without a rerank after which the cross-encoder "
      "is unloaded (~37 MB of memory back; the next rerank loads it again in ~0.25 s; 0: keep it "
      "once loaded). It is loaded on first use.", minimum=0, maximum=86400),
    S("memory.max_entries", int, 500, "Most facts and turns per conversation: beyond it the oldest "
      "messages leave memory (restorable); facts are never evicted, `desktop-mem tidy` proposes "
      "the oldest instead.",
      minimum=1),
    S("memory.extract_facts", bool, True, "Extract facts from each user message."),
    S("memory.enable_summarization", bool, True, "Keep a rolling summary per conversation."),
    S("memory.review", str, "off", "Review mode: the model's UPDATE and DELETE decisions ('changes'), or "
      "every decision ('all'), wait for you in the review list instead of being applied.",
      choices=("off", "changes", "all")),
    S("memory.tidy_when_idle_minutes", int, 0, "The window runs a tidy-up (proposals only, for Review) "
      "after this many minutes without a change to memory; 0: never.", minimum=0, maximum=1440),
    S("memory.summary_threshold", int, 40, "Messages beyond the summary before it is updated.", minimum=2),
    S("memory.summary_keep_last", int, 12, "Newest messages kept verbatim (not summarised).", minimum=0),
    S("context.strategy", str, "summarizing", "Default in-session context strategy.",
      choices=get_args(StrategyName)),
    S("context.trigger", str, "turns", "What triggers trimming/compacting.",
      choices=get_args(ContextTrigger)),
    S("context.max_turns", int, 20, "Trimming: user turns before trimming.", minimum=1),
    S("context.keep_last_turns", int, 6, "Trimming: user turns kept.", minimum=1),
    S("context.window_messages", int, 30, "Sliding window: messages kept.", minimum=1),
    S("context.compact_trigger_turns", int, 8, "Compacting: user turns before compacting.", minimum=1),
    S("context.compact_keep_turns", int, 3, "Compacting: newest turns left intact.", minimum=0),
    S("context.max_tokens", int, 6000, "Token trigger for trimming/summarizing/compacting.", minimum=100),
    S("context.tokenizer_path", str, "", "tokenizer.json of your chat model for exact token counts "
      "(empty: chars/4 estimate)."),
    S("context.cross_session", bool, True, "Inject global memories and other conversations' summaries."),
    S("watcher.enabled", bool, True, "Pick up edits made outside the app."),
    S("watcher.debounce_ms", int, 300, "Wait this long for a burst of edits to settle.", minimum=10),
    S("server.host", str, "127.0.0.1", "Address `desktop-mem serve` binds to."),
    S("server.port", int, 8100, "Port of `desktop-mem serve`.", minimum=1, maximum=65535),
    S("server.token", str, "", "Bearer token required by `serve` (required when not on loopback).",
      env="DESKTOP_MEM_TOKEN", secret=True),
    S("server.app_endpoint", bool, True, "The desktop app serves MCP (/mcp) and the API on loopback "
      "while it has the store open, so `desktop-mem mcp` processes of AI tools can write through it."),
    S("server.app_port", int, 0, "Port of the app's loopback endpoint (0: any free port; the "
      "`desktop-mem mcp` processes find it in the store's lock note).", minimum=0, maximum=65535),
    S("security.secrets", str, "ask", "A likely secret (API key, token, private key, password) in a "
      "memory: ask before storing it (manual edits; a file edited outside the app waits uncommitted "
      "for Redact / Keep as written in the window or `desktop-mem secrets`; chat turns and extracted "
      "facts are redacted), always redact it, or keep it.", choices=tuple(p.value for p in SecretsPolicy)),
    S("sync.remote_url", str, "", "Git remote the store syncs with (`desktop-mem sync`): a URL or a "
      "folder (empty: no sync).", env="DESKTOP_MEM_SYNC_URL"),
    S("sync.branch", str, "main", "Branch of the sync remote that holds the store."),
)
del S
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}

# Typed access: `config["llm.model"]` is a str to mypy, `config["retrieval.top_k"]` an int, and a
# misspelt name is a type error. Generated from SETTINGS by `typed_names_source()` (mypy needs the
# names spelt out; tests/test_config.py fails until this block is its output). Dynamic names use
# `value()`.
StrSetting = Literal[
    "store.path",
    "llm.base_url",
    "llm.api_key",
    "llm.model",
    "llm.summary_model",
    "llm.summary_base_url",
    "llm.system_prompt",
    "embedding.provider",
    "embedding.model",
    "embedding.local_model",
    "chroma.url",
    "retrieval.reranker_path",
    "memory.review",
    "context.strategy",
    "context.trigger",
    "context.tokenizer_path",
    "server.host",
    "server.token",
    "security.secrets",
    "sync.remote_url",
    "sync.branch",
]
IntSetting = Literal[
    "store.max_file_bytes",
    "embedding.threads",
    "embedding.query_threads",
    "embedding.batch_size",
    "chroma.ef_search",
    "retrieval.top_k",
    "retrieval.rerank_pool",
    "retrieval.rerank_budget_ms",
    "retrieval.reranker_threads",
    "retrieval.rerank_idle_release_s",
    "memory.max_entries",
    "memory.tidy_when_idle_minutes",
    "memory.summary_threshold",
    "memory.summary_keep_last",
    "context.max_turns",
    "context.keep_last_turns",
    "context.window_messages",
    "context.compact_trigger_turns",
    "context.compact_keep_turns",
    "context.max_tokens",
    "watcher.debounce_ms",
    "server.port",
    "server.app_port",
]
FloatSetting = Literal[
    "llm.timeout",
    "retrieval.mmr_lambda",
    "retrieval.recency_weight",
    "retrieval.score_threshold",
]
BoolSetting = Literal[
    "store.git_versioning",
    "retrieval.rerank",
    "memory.extract_facts",
    "memory.enable_summarization",
    "context.cross_session",
    "watcher.enabled",
    "server.app_endpoint",
]


@overload
def default(name: StrSetting) -> str: ...
@overload
def default(name: BoolSetting) -> bool: ...
@overload
def default(name: IntSetting) -> int: ...
@overload
def default(name: FloatSetting) -> float: ...
def default(name: str) -> Any:
    """A setting's declared default, typed like `config[name]`: the defaults of the parts' own
    settings dataclasses (RetrievalSettings, StrategySettings) are taken from here, never copied."""
    return BY_NAME[name].default


class Config:
    """Resolved settings. Read with `config["llm.model"]`; frozen once built."""

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, str], file: Path | None) -> None:
        self._values = dict(values)
        self._sources = dict(sources)
        self.file = file

    @overload
    def __getitem__(self, name: StrSetting) -> str: ...
    @overload
    def __getitem__(self, name: BoolSetting) -> bool: ...
    @overload
    def __getitem__(self, name: IntSetting) -> int: ...
    @overload
    def __getitem__(self, name: FloatSetting) -> float: ...
    def __getitem__(self, name: str) -> Any:
        return self.value(name)

    def value(self, name: str) -> Any:
        """A setting by a name known only at run time (the settings dialog, `config --list`)."""
        if name not in BY_NAME:
            raise KeyError(name)
        return self._values[name]

    def source(self, name: str) -> str:
        """Where a value came from: default, the file, an env var or a flag."""
        return self._sources.get(name, "default")

    def as_dict(self, *, mask_secrets: bool = True) -> dict[str, Any]:
        """All values by name; secrets shown as '***' unless asked."""
        return {
            k: ("***" if BY_NAME[k].secret and v and mask_secrets else v) for k, v in self._values.items()
        }

    def section(self, cls: type[T], *groups: str) -> T:
        """The settings dataclass `cls` filled from these settings: each field named like a setting
        of `groups` (first group first) takes its value; other fields keep their defaults. A typed
        section generated from the one declaration, never a hand-written copy of it."""
        values: dict[str, Any] = {}
        for f in fields(cast(Any, cls)):
            name = next((f"{g}.{f.name}" for g in groups if f"{g}.{f.name}" in BY_NAME), None)
            if name is not None:
                value = self._values[name]
                values[f.name] = float(value) if f.type in (float, "float") else value
        return cls(**values)

    @property
    def store_path(self) -> Path:
        """The store folder, defaulting to the platform data directory."""
        value = self._values["store.path"]
        return Path(value).expanduser() if value else default_store_path()

    def with_overrides(self, overrides: Mapping[str, Any], source: str = "flag") -> Config:
        """A copy with `overrides` applied (validated like everything else)."""
        values = dict(self._values)
        sources = dict(self._sources)
        for name, raw in overrides.items():
            values[name] = coerce(name, raw, source)
            sources[name] = source
        return Config(values, sources, self.file)


def coerce(name: str, raw: Any, where: str) -> Any:
    """Validate and convert one value, raising ValidationError naming the key, value and source."""
    setting = BY_NAME.get(name)
    if setting is None:
        raise ValidationError(f"unknown setting {name!r} in {where}; see `desktop-mem config --list`")
    value: Any
    try:
        if setting.type is bool:
            value = _to_bool(raw)
        elif setting.type is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            value = int(raw)
        elif setting.type is float:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
        else:
            if not isinstance(raw, str | int | float) or isinstance(raw, bool):
                raise ValueError
            value = str(raw)
    except (TypeError, ValueError):
        raise ValidationError(
            f"setting {name} = {raw!r} in {where} is not a valid {setting.type.__name__}"
        ) from None
    if setting.choices and value not in setting.choices:
        raise ValidationError(
            f"setting {name} = {raw!r} in {where} must be one of: {', '.join(setting.choices)}"
        )
    if setting.minimum is not None and value < setting.minimum:
        raise ValidationError(f"setting {name} = {raw!r} in {where} is below the minimum {setting.minimum}")
    if setting.maximum is not None and value > setting.maximum:
        raise ValidationError(f"setting {name} = {raw!r} in {where} is above the maximum {setting.maximum}")
    return value


def _to_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(raw, str) and raw.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)


def load_config(
    file: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
) -> Config:
    """Defaults < YAML file < environment < flags. A missing default file is fine."""
    env = os.environ if env is None else env
    explicit = file is not None or bool(env.get("DESKTOP_MEM_CONFIG"))
    path = file or Path(env.get("DESKTOP_MEM_CONFIG") or default_config_path())
    values = {s.name: s.default for s in SETTINGS}
    sources: dict[str, str] = {}
    if path.exists() or explicit:
        for name, raw in _read_file(path).items():
            values[name] = coerce(name, raw, str(path))
            sources[name] = str(path)
    for setting in SETTINGS:
        if setting.env and env.get(setting.env):
            where = f"environment variable {setting.env}"
            values[setting.name] = coerce(setting.name, env[setting.env], where)
            sources[setting.name] = where
    config = Config(values, sources, path)
    return config.with_overrides(flags or {}) if flags else config


def _read_file(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValidationError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read config file {path}: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValidationError(f"config file {path} is not valid YAML: {' '.join(str(exc).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValidationError(f"config file {path} must be a mapping of settings")
    return _flatten(data, path)


def _flatten(data: Mapping[Any, Any], path: Path, prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and name not in BY_NAME:
            flat.update(_flatten(value, path, f"{name}."))
        else:
            flat[name] = value
    return flat


def save_config(path: Path, changes: Mapping[str, Any]) -> None:
    """Merge `changes` into the YAML file (0600: it may hold the API key)."""
    current = _read_file(path) if path.exists() else {}
    for name, value in changes.items():
        current[name] = coerce(name, value, "the settings being saved")
    nested: dict[str, Any] = {}
    for name, value in sorted(current.items()):
        group, _, key = name.partition(".")
        nested.setdefault(group, {})[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, stat.S_IRUSR | stat.S_IWUSR)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        yaml.safe_dump(nested, handle, sort_keys=True, allow_unicode=True)
    os.replace(tmp, path)
    os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def typed_names_source() -> str:
    """The StrSetting / IntSetting / FloatSetting / BoolSetting lists above, generated from SETTINGS
    (print it to regenerate them); tests/test_config.py fails until the file holds this text."""
    lines: list[str] = []
    for label, kind in (("Str", str), ("Int", int), ("Float", float), ("Bool", bool)):
        lines.append(f"{label}Setting = Literal[")
        lines += [f'    "{s.name}",' for s in SETTINGS if s.type is kind]
        lines.append("]")
    return "\n".join(lines) + "\n"


def settings_markdown() -> str:
    """docs/configuration.md, generated from SETTINGS."""
    lines = ["# Configuration", "", "Generated from `desktop_mem/engine/config.py`.", "",
             "| setting | type | default | env | description |", "|---|---|---|---|---|"]
    for s in SETTINGS:
        default = "(platform data dir)" if s.name == "store.path" else repr(s.default)
        lines.append(f"| `{s.name}` | {s.type.__name__} | {default} | {s.env or ''} | {s.description} |")
    return "\n".join(lines) + "\n"
