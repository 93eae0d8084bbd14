"""What the chat pane says about a reply that did not complete: truthful, counted, actionable.

Plain functions over ChatReply (no Qt), so each message can be tested by itself. The engine's
LLMError messages say what went wrong; these add what was kept of the reply, and decide whether
Settings can help (only for configuration problems: a wrong URL, key or model).
"""

from __future__ import annotations

import re

from desktop_mem.engine.api import ChatReply

# Error kinds a change in Settings can fix. A timeout, a busy or failing server or a reply cut
# short are not configuration problems: Retry is the answer, not Settings.
CONFIG_KINDS = frozenset({"unreachable", "auth", "model_missing"})

# The engine's own sentence about kept text; replaced by one that counts what was really kept.
_KEPT_SENTENCE = re.compile(r"\s*The partial text was kept[^.]*\.")


def is_config_problem(reply: ChatReply) -> bool:
    """True when the failure is one Settings can fix."""
    return reply.error_kind in CONFIG_KINDS


def kept_text(chars: int) -> str:
    """What happened to the part of the reply that arrived."""
    if chars == 0:
        return "No text of the reply arrived, so none was stored."
    return (f"The {chars:,} characters that arrived are kept below and stored, marked as "
            "interrupted; they are not used to learn facts.")


def failure_text(reply: ChatReply) -> str:
    """The line under a failed reply: why, and exactly what was kept."""
    reason = _KEPT_SENTENCE.sub("", reply.error or "The reply failed.").strip()
    return f"{reason} {kept_text(len(reply.text))}"


def stopped_text(chars: int) -> str:
    """The line under a reply the user stopped."""
    if chars == 0:
        return "Stopped before any text arrived; nothing of the reply was stored."
    return (f"Stopped. The {chars:,} characters so far are kept and stored, marked as interrupted; "
            "they are not used to learn facts.")


SLOW_FIRST_WORDS_S = 30  # a reply with no words after this long says what may hold it up


def waiting_text(model: str, seconds: int, updates: list[str], other_requests: int) -> str:
    """What a new reply waits for, before its first words, and for how long: the memory updates
    of earlier replies (`updates`, one line each), else this app's other requests open at the
    model server, and after a while what else it may be."""
    parts = [f"Waiting for {model}… {seconds} s", *updates]
    if other_requests and not updates:
        plural = other_requests > 1
        parts.append(f"{other_requests} other request{'s' if plural else ''} of this app "
                     f"{'are' if plural else 'is'} open at the model server.")
    if seconds >= SLOW_FIRST_WORDS_S:
        parts.append("No words yet: the server may be busy with other programs' requests or still "
                     "loading the model. Stop (Esc) keeps your message.")
    return "\n".join(parts)
