"""Catch likely secrets (API keys, tokens, private keys, passwords) before they are committed.

Memories end up in a git history that is hard to scrub and may be synced, so a key pasted into a
chat or a note must be caught first. Regular expressions for well-known token formats plus
`password=` / `api_key:` style assignments. detect-secrets was considered: its plugins expect a
process-wide settings context and files to scan, and its entropy plugins flag ordinary words
(ids, hashes) in memory text, so a small, tested pattern table fits better here.

Policies (setting `security.secrets`): ``ask`` (user-initiated writes raise SecretDetectedError so
the UI/CLI can ask; the automatic write path redacts), ``redact`` (always redact) and ``keep``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from desktop_mem.engine.models import EngineError

SecretPolicy = Literal["ask", "redact", "keep"]
POLICIES: Final = ("ask", "redact", "keep")
REDACTED_PREFIX: Final = "[redacted:"


@dataclass(frozen=True)
class Finding:
    """One likely secret: its kind, where it sits in the text and a masked excerpt safe to show."""

    kind: str
    start: int
    end: int
    masked: str


class SecretDetectedError(EngineError):
    """A write would store a likely secret; the caller must choose to keep or redact it."""

    def __init__(self, findings: tuple[Finding, ...], where: str = "the memory") -> None:
        self.findings = findings
        listed = ", ".join(f"{f.kind} ({f.masked})" for f in findings)
        super().__init__(
            f"{where} looks like it contains a secret: {listed}. Choose to redact it or keep it "
            "(secrets='redact' or secrets='keep'; CLI: --redact-secret or --keep-secret)."
        )


# (kind, pattern, group holding the secret). Specific formats first: a span found by an earlier
# pattern is not reported again by a later, more generic one.
_PATTERNS: Final[tuple[tuple[str, re.Pattern[str], int], ...]] = (
    ("private_key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"), 0),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9]{2,8}-[A-Za-z0-9_-]{20,}"), 0),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), 0),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"), 0),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), 0),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"), 0),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("password_or_key", re.compile(
        r"(?i)\b(?:password|passwd|pwd|passphrase|secret(?:[_-]?key)?|client[_-]?secret|"
        r"api[_-]?key|access[_-]?key|access[_-]?token|auth[_-]?token|bearer[_-]?token|private[_-]?key)"
        r"[\"']?\s*[:=]\s*[\"']?(?P<value>(?!\[redacted)[^\s\"',;]{6,})"), 1),
)


def scan(text: str) -> tuple[Finding, ...]:
    """Likely secrets in `text`, in order of position (overlaps reported once)."""
    found: list[Finding] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern, group in _PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span(group)
            if end <= start or any(start < e and s < end for s, e in taken):
                continue
            taken.append((start, end))
            found.append(Finding(kind, start, end, mask(text[start:end])))
    return tuple(sorted(found, key=lambda f: f.start))


def mask(secret: str) -> str:
    """Enough of a secret to recognise it, not enough to use it."""
    flat = " ".join(secret.split())
    if len(flat) <= 10:
        return "*" * len(flat)
    return f"{flat[:4]}…{flat[-2:]} ({len(flat)} chars)"


def redact(text: str, findings: tuple[Finding, ...] | None = None) -> str:
    """`text` with every likely secret replaced by ``[redacted:<kind>]``."""
    items = scan(text) if findings is None else findings
    for f in sorted(items, key=lambda f: f.start, reverse=True):
        text = f"{text[: f.start]}{REDACTED_PREFIX}{f.kind}]{text[f.end:]}"
    return text


def apply_policy(text: str, policy: str, where: str = "the memory") -> tuple[str, tuple[Finding, ...]]:
    """Text to store under `policy`, and what was found. ``ask`` raises SecretDetectedError."""
    if policy not in POLICIES:
        raise ValueError(f"secrets policy {policy!r} is not one of {', '.join(POLICIES)}")
    if policy == "keep":
        return text, ()
    findings = scan(text)
    if not findings:
        return text, ()
    if policy == "ask":
        raise SecretDetectedError(findings, where)
    return redact(text, findings), findings


def describe(findings: tuple[Finding, ...]) -> str:
    """Kinds found, e.g. 'openai_key, jwt' (for notes shown to the user)."""
    return ", ".join(dict.fromkeys(f.kind for f in findings))
