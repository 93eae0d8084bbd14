"""The rolling summary: one LLM call folds a turn's material into the conversation's summary.

The model's answer is cleaned (chat/summary_cleanup.py) before it is kept: lines copied from the
transcript, sentences still stating a replaced fact, and numbers or names nobody said go. When
the call fails or the answer is unusable the old summary stays, with an ``error`` to show.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from desktop_mem.engine.chat import prompts
from desktop_mem.engine.chat.fact_types import ChatModel, clean
from desktop_mem.engine.chat.llm_errors import LLMError
from desktop_mem.engine.chat.llm_json import strip_reasoning
from desktop_mem.engine.chat.summary_cleanup import (
    drop_invented_names,
    drop_invented_numbers,
    drop_superseded,
    drop_transcript_lines,
)
from desktop_mem.engine.models import Message

MAX_SUMMARY_CHARS = 8000
MAX_MATERIAL_ITEM_CHARS = 2000  # small local models have small context windows


@dataclass(frozen=True)
class SummaryResult:
    """The new summary, or None to keep the old one (with ``error`` saying why, if it failed)."""

    text: str | None
    error: str | None = None


_FENCED = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_HEADING = re.compile(r"^[#*\s]*(?:(?:updated|new|current)\s+)?summary[* \t]*(?::[* \t]*\n?|\n)", re.I)


def update_summary(
    llm: ChatModel,
    previous: str | None,
    new_material: Sequence[str],
    superseded: Sequence[tuple[str, str | None]] = (),
) -> SummaryResult:
    """The running summary updated with ``new_material``; text None means keep the old one.

    ``superseded`` lists (old fact, its replacement or None) that are no longer true: the model
    is told to drop them, and sentences still stating an old fact's names (without its
    replacement's) are removed afterwards, so a summary follows replacements.
    """
    material = [clean(m)[:MAX_MATERIAL_ITEM_CHARS] for m in new_material if m and m.strip()]
    if not material and not superseded:
        return SummaryResult(None)
    items = "\n".join(f"- {old}" + (f" (now: {new})" if new else "") for old, new in superseded)
    user = prompts.SUMMARY_USER_TEMPLATE.format(
        previous=(previous or "").strip()[:MAX_SUMMARY_CHARS] or "(empty)",
        material="\n".join(f"- {m}" for m in material) or "(none)",
        corrections=prompts.SUMMARY_CORRECTIONS_TEMPLATE.format(items=items) if items else "",
    )
    messages: list[Message] = [
        {"role": "system", "content": prompts.SUMMARY_PROMPT},
        {"role": "user", "content": user},
    ]
    try:
        answer = llm.complete(messages, temperature=0.2, max_tokens=700)
    except LLMError as err:
        return SummaryResult(None, f"The summary was not updated: {err.message}")
    text = strip_reasoning(answer)
    fenced = _FENCED.match(text)
    if fenced:
        text = fenced.group(1).strip()
    text = _HEADING.sub("", text, count=1).strip()
    text = drop_superseded(drop_transcript_lines(text, material), superseded)
    sources = [previous or "", *new_material, *(f"{old} {new or ''}" for old, new in superseded)]
    text = drop_invented_numbers(text, sources)
    text = drop_invented_names(text, [s for s in sources if not s.casefold().startswith("assistant:")])
    if not text:
        return SummaryResult(None, "The summary was not updated: the model gave an empty answer.")
    if len(text) > MAX_SUMMARY_CHARS:
        return SummaryResult(
            None,
            f"The summary was not updated: the model's answer is {len(text)} characters, over the "
            f"{MAX_SUMMARY_CHARS} limit. The previous summary was kept.",
        )
    return SummaryResult(text)
