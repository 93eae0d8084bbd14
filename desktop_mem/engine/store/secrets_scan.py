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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from desktop_mem.engine.models import EngineError, SecretsPolicy

SecretPolicy = Literal["ask", "redact", "keep"]
POLICIES: Final = tuple(p.value for p in SecretsPolicy)
REDACTED_PREFIX: Final = "[redacted:"
HELD_BACK_HINT: Final = (
    "answer in the window, or run `desktop-mem secrets redact <file>` (or `keep`) to commit it "
    "redacted (or as it is), or edit the file to remove it"
)


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


# Assignment names: a keyword as a whole segment of a name (`DB_PASSWORD`, `AWS_SECRET_ACCESS_KEY`,
# `api key`, `client-secret`), so `\b` failing after `_` no longer hides them, and `passport`
# or `max_tokens` are not names of secrets.
_KEYWORD = (r"(?:password|passwd|pwd|pass|passphrase|passcode|secret|token|api[ _-]?key|apikey|"
            r"access[ _-]?key|account[ _-]?key|private[ _-]?key|secret[ _-]?key|client[ _-]?secret|"
            r"credentials?|auth[ _-]?token)")
_NAME = rf"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*{_KEYWORD}(?:[_.-][A-Za-z0-9]+)*(?![A-Za-z0-9])"
# A token body, possibly split by a space or a line break (every whitespace character, zero-width
# and odd spaces included, is mapped to a space before scanning; "\r\n" becomes two); its length
# and look are checked after the match.
_BODY = r"[A-Za-z0-9_-]{4,}(?: {1,2}[A-Za-z0-9_-]{4,}){0,3}"
# Prose: "my password is ...", "the password for the bank is ...", "mein Passwort ist ...",
# "mon mot de passe est ...", "mi contraseña es ...", "mijn wachtwoord is ...", "la mia password
# è ...", "minha senha é ...", "the AWS secret for prod is ..." (issue #22).
_PROSE_NOUN = (r"(?:password|passwort|kennwort|passphrase|passcode|pass ?word|mot de passe|mdp|"
               r"contraseña|contrasena|clave|wachtwoord|senha|parola d'ordine|lösenord|losenord|"
               r"adgangskode|passord|hasło|haslo|heslo|jelszó|secret|api[ _-]?key|token|pin code)")
_PROSE_LINK = r"(?:for|of|to|on|at|für|fur|von|zum|zur|pour|de|du|des|para|voor|van|per|do|da|del|för|til)"
_PROSE_VERB = r"(?:is|was|ist|war|lautet|est|était|es|era|é|è|är|er|jest|je|to)"  # ':' '=': password_or_key

# (kind, pattern, group holding the secret, check of the found text). Specific formats first: a
# span found by an earlier pattern is not reported again by a later, more generic one.
_PATTERNS: Final[tuple[tuple[str, re.Pattern[str], int, Callable[[str], bool]], ...]] = (
    ("private_key", re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"), 0, bool),
    ("anthropic_key", re.compile(r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9]{2,8}-" + _BODY), 0,
     lambda t: _prefixed(t, 20)),
    ("openai_key", re.compile(r"(?<![A-Za-z0-9])sk-(?:proj|svcacct|admin)-" + _BODY), 0,
     lambda t: _prefixed(t, 20)),
    ("openai_key", re.compile(r"(?<![A-Za-z0-9])sk-" + _BODY), 0,
     lambda t: _random_looking(t, 20)),
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9])[sr]k_(?:live|test)_" + _BODY), 0,
     lambda t: _prefixed(t, 16)),
    ("twilio_key", re.compile(r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![A-Za-z0-9])"), 0, bool),
    ("github_token", re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_" + _BODY +
                                r"|github_pat_[A-Za-z0-9_]{22,})"), 0, lambda t: _prefixed(t, 30)),
    ("gitlab_token", re.compile(r"(?<![A-Za-z0-9])gl(?:pat|dt|rt|ptt)-" + _BODY), 0,
     lambda t: _prefixed(t, 20)),
    ("huggingface_token", re.compile(r"(?<![A-Za-z0-9])hf_" + _BODY), 0,
     lambda t: _prefixed(t, 30)),
    ("npm_token", re.compile(r"(?<![A-Za-z0-9])npm_" + _BODY), 0,
     lambda t: _prefixed(t, 36)),
    ("sendgrid_key", re.compile(r"(?<![A-Za-z0-9])SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20,}"), 0, bool),
    ("aws_access_key", re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"), 0,
     bool),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"), 0, bool),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}"), 0, bool),
    ("google_api_key", re.compile(r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}"), 0, bool),
    ("telegram_bot_token", re.compile(r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}"), 0, bool),
    ("jwt", re.compile(r"(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0,
     bool),
    ("url_credentials", re.compile(
        r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]{0,100}:(?P<value>[^\s/@]{1,200})@[^\s/@]"), 1,
     lambda t: not _placeholder(t)),
    ("authorization_header", re.compile(
        r"(?i)(?:\bauthorization\s*[:=]\s*[\"']?)?\b(?:bearer|basic|token)\s+(?P<value>[A-Za-z0-9._~+/=-]{16,})"),
     1, lambda t: _random_looking(t, 16, letters_only=False)),
    ("password_or_key", re.compile(
        rf"(?i){_NAME}[\"']?\s*(?:[:=]|=>|:=)\s*[\"']?(?P<value>(?!\[redacted)[^\s\"',;]{{6,}})"), 1,
     lambda t: _plausible_password(t)),
    ("password_in_prose", re.compile(
        rf"(?i)(?<![A-Za-z0-9_]){_PROSE_NOUN}(?![A-Za-z0-9_])"
        rf"(?: +{_PROSE_LINK}(?: +[^\s:=]{{1,30}}){{1,4}}?)? *{_PROSE_VERB} +"
        r"[\"'“‘«]?(?P<value>(?!\[redacted)[^\s\"'”’»,;]{4,})"), 1,
     lambda t: _plausible_password(t.rstrip(".!?)"))),
)

# Unicode dashes and odd spaces, mapped one character to one so positions stay the same: a key
# pasted as "sk‐proj‐…" (U+2010) or with a zero-width space inside is still a key.
_NORMALISE: Final = str.maketrans(
    {**{c: "-" for c in "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d"},
     **{c: " " for c in "\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
                        "\u200a\u200b\u200c\u200d\u2060\u202f\u205f\u3000\ufeff\n\r\t\v\f"
                        "\x85\u2028\u2029"}})
_PLACEHOLDER = re.compile(
    r"(?i)^(?:[<{\[(].*[>}\])]|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%\(?\w*\)?s|[*x.•#-]+|"
    r"(?:your|my|the|some|example|sample|dummy|fake|test)[_-]?\w*|none|null|nil|true|false|"
    r"undefined|required|optional|redacted|hidden|secret|password|changeme_later|todo|tbd)$")


def _placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.match(value.strip("\"'`")))


def _random_looking(text: str, minimum: int, *, letters_only: bool = True) -> bool:
    """A token body: long enough without its spaces, with letters and digits (not prose)."""
    flat = text.replace(" ", "")
    if len(flat) < minimum or _placeholder(flat):
        return False
    if " " in text and not all(any(c.isdigit() for c in part) for part in text.split(" ") if len(part) > 3):
        return False  # "sk-learn is a library ..." is prose, not a key split by a space
    return any(c.isdigit() for c in flat) and any(c.isalpha() for c in flat) if letters_only else (
        any(c.isdigit() for c in flat))


def _prefixed(text: str, minimum: int) -> bool:
    """A key with a distinctive prefix (sk-proj-, ghp_, hf_ ...): long enough is enough, however
    plain its random part; a body split by spaces must still look random part by part."""
    if " " in text:
        return _random_looking(text, minimum)
    return len(text) >= minimum and not _placeholder(text)


def _plausible_password(value: str) -> bool:
    """An assigned value that could be a password/key: not a number, a placeholder or a word."""
    value = value.strip("([{<>}])")  # `api_key=token)`, `token: (generated ...`: a name, a note
    if value.isdigit() or _placeholder(value):
        return False
    has_digit_or_symbol = any(c.isdigit() or (not c.isalnum() and c not in "-_.") for c in value)
    return has_digit_or_symbol or len(value) >= 12


def _checked_end(text: str, start: int, end: int, check: Callable[[str], bool]) -> int | None:
    """The end of the found text that passes `check`, dropping words after a space one at a time
    ("sk-…key - keep it safe" is the key, then prose); None if no prefix passes."""
    while True:
        if check(text[start:end]):
            return end
        cut = text.rfind(" ", start, end)
        if cut <= start:
            return None
        end = cut


def scan(text: str) -> tuple[Finding, ...]:
    """Likely secrets in `text`, in order of position (overlaps reported once)."""
    found: list[Finding] = []
    taken: list[tuple[int, int]] = []
    normal = text.translate(_NORMALISE)
    for kind, pattern, group, check in _PATTERNS:
        for match in pattern.finditer(normal):
            start, end = match.span(group)
            if end <= start or any(start < e and s < end for s, e in taken):
                continue
            checked = _checked_end(normal, start, end, check)
            if checked is None:
                continue
            taken.append((start, checked))
            found.append(Finding(kind, start, checked, mask(text[start:checked])))
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


def redact_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """Front-matter / trailer fields with every likely secret redacted, in keys and in string
    values (nested lists and mappings too): nobody is there to ask about a client's name or a
    title, and these reach file paths, commit messages and the index (issue #22)."""
    def clean(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value) if scan(value) else value
        if isinstance(value, Mapping):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(clean(v) for v in value)
        return value

    return {clean(k): clean(v) for k, v in fields.items()}


def in_names(memory: Any) -> tuple[Finding, ...]:
    """Likely secrets in what names or describes a memory file rather than in its text: its path
    (a file name), its id and its other front-matter keys and values. Redacting the text cannot
    remove these, so such a hand-made file is never committed as it is (issue #22)."""
    fields: list[str] = [str(memory.path), str(memory.id)]
    fields += [str(v) for v in (memory.kind, memory.source, memory.replaced_by) if v]

    def flatten(value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                fields.append(str(k))
                flatten(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                flatten(v)
        elif value is not None:
            fields.append(str(value))

    flatten(memory.extra)
    return tuple(f for text in fields for f in scan(text))


def apply_policy(text: str, policy: str, where: str = "the memory") -> tuple[str, tuple[Finding, ...]]:
    """Text to store under `policy`, and what was found. ``ask`` raises SecretDetectedError."""
    if policy not in POLICIES:
        raise ValueError(f"secrets policy {policy!r} is not one of {', '.join(POLICIES)}")
    if policy == SecretsPolicy.KEEP:
        return text, ()
    findings = scan(text)
    if not findings:
        return text, ()
    if policy == SecretsPolicy.ASK:
        raise SecretDetectedError(findings, where)
    return redact(text, findings), findings


def describe(findings: tuple[Finding, ...]) -> str:
    """Kinds found, e.g. 'openai_key, jwt' (for notes shown to the user)."""
    return ", ".join(dict.fromkeys(f.kind for f in findings))
