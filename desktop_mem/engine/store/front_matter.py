"""Markdown + YAML front matter: parse safely, rewrite keeping unknown keys byte-for-byte.

python-frontmatter frames the document (detects and splits the `---` block); the YAML inside is
read with PyYAML's safe loader. A rewrite replaces only the text of the keys it changes, so keys
the app does not know keep their exact bytes, quoting, order and comments.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime
from enum import StrEnum
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

MAX_FRONT_MATTER_CHARS = 64 * 1024
# Nesting deeper than this is refused: no memory needs it, and a value nested ~1000 deep made
# the JSON manifest (and anything else recursive) die with RecursionError on every write.
MAX_DEPTH = 32

# Known keys, in the order new files write them.
KNOWN_KEYS = (
    "id",
    "role",
    "conversation_id",
    "kind",
    "source",
    "created_at",
    "updated_at",
    "expires_at",
    "deleted_at",
    "replaced_by",
    "valid_from",
    "valid_to",
    "summary_kind",
    "summarized_count",
)

_HANDLER = YAMLHandler()
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_SAFE_LOADER = SAFE_LOADER


class FrontMatterError(ValueError):
    """The text is not a readable memory document; the message says why."""


@dataclass(frozen=True)
class Document:
    """A parsed file: its front matter as read, the raw YAML text, and the body."""

    meta: Mapping[str, Any]
    yaml_text: str
    body: str


def decode(raw: bytes) -> str:
    """Decode file bytes as UTF-8 text, refusing binary data with a clear reason."""
    if not raw.strip():
        raise FrontMatterError("the file is empty")
    if b"\x00" in raw:
        raise FrontMatterError("the file contains NUL bytes (binary data, not Markdown)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrontMatterError(
            f"the file is not valid UTF-8 (byte {exc.start}); save it as UTF-8"
        ) from None
    return text.removeprefix("\ufeff")


def parse(text: str) -> Document:
    """Split and safely load the front matter. A file without front matter is all body."""
    if not _HANDLER.detect(text):
        return Document(meta={}, yaml_text="", body=_clean_body(text))
    try:
        yaml_text, content = _HANDLER.split(text)
    except ValueError:
        raise FrontMatterError("the front matter block is not closed with a '---' line") from None
    if len(yaml_text) > MAX_FRONT_MATTER_CHARS:
        raise FrontMatterError(f"the front matter is larger than {MAX_FRONT_MATTER_CHARS} characters")
    _refuse_aliases(yaml_text)
    try:
        meta = yaml.load(yaml_text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"the front matter is not valid YAML: {_one_line(exc)}") from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        # PyYAML's constructors raise plain errors for values it matched but cannot build,
        # e.g. the timestamp 0000-0-0T0:00:00 (year 0): still a bad file, not a crash.
        raise FrontMatterError(f"the front matter has a value YAML cannot read: {_one_line(exc)}") from None
    if meta is None:
        meta = {}
    check_depth(meta)
    if not isinstance(meta, dict):
        raise FrontMatterError("the front matter is not a mapping of keys to values")
    bad_keys = [k for k in meta if not isinstance(k, str)]
    if bad_keys:
        raise FrontMatterError(f"the front matter has a key that is not text: {bad_keys[0]!r}")
    return Document(meta=meta, yaml_text=yaml_text, body=_clean_body(content))


def check_depth(value: Any, limit: int = MAX_DEPTH) -> None:
    """Refuse (FrontMatterError) lists/mappings nested deeper than `limit`; iterative, so the
    check itself cannot overflow the stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = list(item.keys()) + list(item.values())
        elif isinstance(item, list | tuple | set):
            children = item
        else:
            continue
        if depth > limit:
            raise FrontMatterError(f"the front matter nests lists or mappings deeper than {limit} levels")
        stack.extend((child, depth + 1) for child in children)


def render(updates: Mapping[str, Any], body: str, original_yaml: str = "") -> str:
    """Render a document, applying `updates` (None deletes a key) on top of `original_yaml`.

    Only the text of the keys named in `updates` changes: every other key keeps its exact bytes
    (quoting, spacing, comments), located through the positions PyYAML's composer reports.
    """
    yaml_text = _apply_updates(original_yaml, updates)
    if yaml_text and not yaml_text.endswith("\n"):
        yaml_text += "\n"
    return f"---\n{yaml_text}---\n\n{body.strip()}\n"


def _apply_updates(original: str, updates: Mapping[str, Any]) -> str:
    text = original.lstrip("\n")
    node = yaml.compose(text, Loader=_SAFE_LOADER) if text.strip() else None
    if isinstance(node, yaml.MappingNode) and node.flow_style is True:
        # A flow mapping ({a: 1}) cannot be edited key by key: rewrite it as a block mapping
        # with the same keys and values (the values are kept; only their layout changes).
        loaded = yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506 - a safe loader
        text = "".join(_dump_pair(str(k), v) for k, v in (loaded or {}).items())
        node = yaml.compose(text, Loader=_SAFE_LOADER) if text.strip() else None
    if isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null":
        text, node = "", None  # `null` / `~` reads as no keys at all: start an empty mapping
    if node is not None and not isinstance(node, yaml.MappingNode):
        raise FrontMatterError("the front matter is not a block mapping of keys to values")
    pairs = node.value if node is not None else []
    spans: dict[str, tuple[int, int, int]] = {}
    for i, (key_node, value_node) in enumerate(pairs):
        next_start = pairs[i + 1][0].start_mark.index if i + 1 < len(pairs) else len(text)
        spans[str(key_node.value)] = (key_node.start_mark.index, value_node.end_mark.index, next_start)
    edits: list[tuple[int, int, str]] = []
    appended: list[str] = []
    for key in _ordered(updates):
        value = updates[key]
        if key in spans:
            start, value_end, next_start = spans[key]
            if value is None:
                edits.append((start, next_start, ""))
            else:
                segment = text[start:value_end]
                line = _dump_pair(key, value)
                edits.append((start, value_end, line if segment.endswith("\n") else line.rstrip("\n")))
        elif value is not None:
            appended.append(_dump_pair(key, value))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    if appended and text and not text.endswith("\n"):
        text += "\n"
    return text + "".join(appended)


def _ordered(updates: Mapping[str, Any]) -> list[str]:
    known = [k for k in KNOWN_KEYS if k in updates]
    return known + [k for k in updates if k not in KNOWN_KEYS]


def _dump_pair(key: str, value: Any) -> str:
    if isinstance(value, datetime):
        return f"{key}: {value.isoformat()}\n"
    if isinstance(value, date):
        return f"{key}: {value.isoformat()}\n"
    if isinstance(value, StrEnum):  # Role.USER is written as `user`, as a plain string always was
        value = value.value
    if _plain(key) and (type(value) is int or _plain(value)):
        return f"{key}: {value}\n"  # what safe_dump writes, ~40x faster (a bulk import writes 100k files)
    if _plain(key) and type(value) is str and _PLAIN_CHARS.fullmatch(value):
        return f"{key}: '{value}'\n"  # a date, number or `yes` as text: safe_dump single-quotes it
    dumped: str = yaml.safe_dump({key: value}, allow_unicode=True, default_flow_style=False, width=4096)
    return dumped


# A string PyYAML writes as it is (plain, unquoted): word characters only, and read back as a
# string (not `yes`, `null`, `12`, `1.5` or a date, which the resolver types and safe_dump quotes).
_PLAIN_CHARS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,200}")
_RESOLVER = yaml.resolver.Resolver()


def _plain(value: Any) -> bool:
    return (type(value) is str and _PLAIN_CHARS.fullmatch(value) is not None
            and _RESOLVER.resolve(yaml.ScalarNode, value, (True, False)) == "tag:yaml.org,2002:str")


def _clean_body(content: str) -> str:
    return content.strip()


def _refuse_aliases(yaml_text: str) -> None:
    """Reject anchors/aliases: they allow 'billion laughs' bombs and no memory needs them."""
    if "*" not in yaml_text and "&" not in yaml_text:
        return
    try:
        for event in yaml.parse(yaml_text, Loader=_SAFE_LOADER):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise FrontMatterError("the front matter uses YAML anchors or aliases (& or *)")
    except yaml.YAMLError as exc:
        raise FrontMatterError(f"the front matter is not valid YAML: {_one_line(exc)}") from None


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:200]
