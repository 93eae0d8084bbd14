"""Tidy-up: look at memory as a whole and propose a clean-up the user reviews like a pull request.

Each turn is checked as it happens; nothing else ever looks at months of memory at once. This
does, among the live facts:

- **duplicates**: the same meaning in other words. Vectors find the pairs; the model confirms and
  writes the merged text, which must hold no name or number the originals do not (else an
  original's text is kept as it is). What is kept must hold every name and number of every
  fact merged into it, else nothing is proposed: a merge never loses one.
- **stale**: past `expires_at`, or contradicted by a newer live fact about the same thing (the
  model says which pairs contradict; the newer one wins, the older is retired with `replaced_by`),
  or made untrue by what the user said later (tidy_later.py: "Noor turned 6 last week!" after
  "Noor is 5"): updated to what holds now, or retired; or told of a day, week, month or year that
  has passed ("The user is tired today.": the time words read by dateparser, no model).
- **junk**: a model-made fact grounded in none of the turns it came from (no name or number of it
  in them), or one the model reads as no lasting fact at all (a question, a request, the
  assistant's own words), when nothing the user said speaks for it (tidy_junk.py: a fact drawn
  from the user's own message needs a second check to agree); or small talk told as true ("The
  user had a bad day."): no name or number, from messages the model reads as passing remarks; or
  another person's news written as the user's ("The user got a new job" from "Tomas got a new
  job"), proposed as that person's fact (no model).
- **gaps**: a sentence of a conversation's summary that no live fact holds and no forgotten fact
  explains.

Nothing is applied here. Each finding becomes a review proposal (review.py) with its reason and
source turns; accepting one is one commit, undone on the Timeline like any other. A rejected
finding is remembered (`review/tidy/rejected.json`) and not proposed again. Decisions rest on
vectors, names and numbers and the model's reading, never on word lists: any language works.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from desktop_mem.engine.chat import review
from desktop_mem.engine.chat.fact_types import ChatModel
from desktop_mem.engine.chat.tidy_findings import (
    LIKELY_DUPLICATE,
    MAX_FILE_BYTES,
    Finding,
    LLMError,
    Progress,
    Stepper,
    TidySource,
    clusters,
    expired,
    gaps,
    live_facts,
    over_limit,
    pairs,
    passed,
    similar_pairs,
)
from desktop_mem.engine.chat.tidy_junk import headings, junk_by_model, others_news, passing, ungrounded
from desktop_mem.engine.chat.tidy_later import said_later
from desktop_mem.engine.models import Decision, Operation, utc_now
from desktop_mem.engine.store.markdown_store import atomic_write

__all__ = ["Finding", "Health", "TidyReport", "health", "last_run", "propose"]


TIDY_KEY = review.TIDY_KEY  # in a proposal's `extra`: what tidy-up found
STATE_FOLDER = f"{review.FOLDER}/tidy"
LAST_RUN = f"{STATE_FOLDER}/last-run.json"


@dataclass(frozen=True)
class Health:
    """Counts of what tidy-up would likely find, without the model (cheap: vectors and dates)."""

    facts: int
    likely_duplicates: int | None  # None: the index is not open yet (counting would open it)
    likely_junk: int
    stale: int
    waiting: int  # tidy-up proposals waiting for review
    last_run: str | None

    def lines(self) -> list[str]:
        last = self.last_run[:16].replace("T", " ") if self.last_run else "never"
        dups = "? (index not open yet)" if self.likely_duplicates is None else self.likely_duplicates
        return [f"{self.facts} live facts: {dups} likely duplicates, "
                f"{self.likely_junk} likely junk, {self.stale} stale",
                f"tidy-up: last run {last}; {self.waiting} proposals wait for review"]


@dataclass
class TidyReport:
    """What a run found and proposed."""

    findings: list[Finding] = field(default_factory=list)
    proposals: list[review.Proposal] = field(default_factory=list)
    skipped_rejected: int = 0
    skipped_pending: int = 0
    commit: str | None = None
    model_error: str | None = None

    def counts(self) -> dict[str, int]:
        out = {"duplicate": 0, "junk": 0, "stale": 0, "gap": 0}
        for f in self.findings:
            out[f.kind] += 1
        return out


# -- the run ----------------------------------------------------------------------------------


def propose(source: TidySource, model: ChatModel | None, *, progress: Progress | None = None,
            cancelled: Callable[[], bool] = lambda: False) -> TidyReport:
    """Find what to tidy and write it as review proposals: one commit, nothing else changed."""
    report = TidyReport()
    step = Stepper(progress, cancelled)
    facts = live_facts(source)
    step("reading facts", 0, 1)
    findings: list[Finding] = [*expired(facts), *over_limit(source, facts)]
    claimed = {m.id for f in findings for m in f.targets}
    findings += passed([m for m in facts if m.id not in claimed])
    claimed = {m.id for f in findings for m in f.targets}
    findings += headings([m for m in facts if m.id not in claimed])
    claimed = {m.id for f in findings for m in f.targets}
    findings += ungrounded(source, [m for m in facts if m.id not in claimed])
    claimed = {m.id for f in findings for m in f.targets}
    findings += others_news(source, [m for m in facts if m.id not in claimed])
    claimed = {m.id for f in findings for m in f.targets}
    # junk first: a junk fact is dropped, not merged with its like (nor taken as the newer fact)
    if model is not None:
        try:
            findings += junk_by_model(source, model, [m for m in facts if m.id not in claimed], step)
            claimed = {m.id for f in findings for m in f.targets}
            findings += passing(source, model, [m for m in facts if m.id not in claimed], step)
            claimed = {m.id for f in findings for m in f.targets}
            rest = [m for m in facts if m.id not in claimed]
            findings += pairs(source, model, rest, step) if len(rest) > 1 else []
            claimed = {m.id for f in findings for m in f.targets}
            findings += said_later(source, model, [m for m in facts if m.id not in claimed], step)
            findings += gaps(source, model, facts, step)
        except LLMError as exc:
            report.model_error = str(exc)
    step("writing proposals", 0, 1)
    rejected = review.rejected_signatures(source.root)
    pending_sigs = {str(p.extra.get(TIDY_KEY, {}).get("signature", ""))
                    for p in review.pending(source.root)[0]}
    for f in findings:
        if f.signature in rejected:
            report.skipped_rejected += 1
        elif f.signature in pending_sigs:
            report.skipped_pending += 1
        else:
            report.findings.append(f)
    report.proposals, report.commit = _write_proposals(source, report.findings)
    return report


# -- proposals --------------------------------------------------------------------------------

def _proposal(f: Finding) -> review.Proposal:
    meta: dict[str, Any] = {"kind": f.kind, "reason": f.reason, "signature": f.signature,
                            "sources": list(f.sources), "summary": f.describe()}
    common = {"id": review.new_id(), "conversation_id": f.conversation_id,
              "created_at": utc_now().isoformat(), "source": "tidy"}
    if f.kind == "gap":
        return review.Proposal(event=Decision.ADD, text=f.text or "", extra={TIDY_KEY: meta}, **common)
    if f.kind == "duplicate":
        kept, *others = f.targets
        meta["retire"] = [{"id": m.id, "text": m.text} for m in others]
        if f.text and f.text != kept.text:
            return review.Proposal(event=Decision.UPDATE, text=f.text, target_id=kept.id,
                                   target_text=kept.text, kind=kept.kind or "fact",
                                   extra={TIDY_KEY: meta}, **common)
        first, *rest = others
        meta["retire"] = [{"id": m.id, "text": m.text} for m in rest]
        meta["replaced_by"] = kept.id
        return review.Proposal(event=Decision.DELETE, text=first.text, target_id=first.id,
                               target_text=first.text, extra={TIDY_KEY: meta}, **common)
    target = f.targets[0]
    if f.kind in ("stale", "junk") and f.text:
        # what holds now, said by the user later, or another person's news set right: the fact updated
        return review.Proposal(event=Decision.UPDATE, text=f.text, target_id=target.id,
                               target_text=target.text, kind=target.kind or "fact",
                               extra={TIDY_KEY: meta}, **common)
    if f.replaced_by is not None:
        meta["replaced_by"] = f.replaced_by.id
    return review.Proposal(event=Decision.DELETE, text=target.text, target_id=target.id,
                           target_text=target.text, extra={TIDY_KEY: meta}, **common)


def _write_proposals(source: TidySource, findings: Sequence[Finding]
                     ) -> tuple[list[review.Proposal], str | None]:
    proposals = [_proposal(f) for f in findings]
    counts = TidyReport(findings=list(findings)).counts()
    what = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "nothing to tidy"
    with source.writer.transaction(Operation.REVIEW, f"Tidy-up: {len(proposals)} proposals ({what})",
                                   trailers={"Review": "tidy-up"}, publish=False) as tx:
        for p in proposals:
            review.write(source.root, p)
        _write_json(source.root, LAST_RUN, {"at": utc_now().isoformat(), "proposed": len(proposals),
                                            "found": counts})
        tx.touch([*(p.path for p in proposals), LAST_RUN])
        change = tx.publish()
    return proposals, change.commit


def _write_json(root: Path, rel: str, data: Any) -> None:
    atomic_write(root / rel, json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8"))


def _read_json(root: Path, rel: str) -> Any:
    path = root / rel
    try:
        if path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def last_run(root: Path) -> str | None:
    data = _read_json(root, LAST_RUN)
    at = data.get("at") if isinstance(data, dict) else None
    return at if isinstance(at, str) else None


def health(source: TidySource) -> Health:
    """What tidy-up would likely find, from vectors, dates and source turns (no model)."""
    facts = live_facts(source)
    stale = expired(facts)
    duplicates: int | None = None
    if source.index_open():  # a health line never opens (or embeds into) the index itself
        close = similar_pairs(source, facts, LIKELY_DUPLICATE)
        duplicates = max(len({m.id for _s, a, b in close for m in (a, b)}) - clusters(close), 0)
    headed = headings(facts)
    named = {m.id for f in headed for m in f.targets}
    junk = [*headed, *ungrounded(source, [m for m in facts if m.id not in named])]
    named |= {m.id for f in junk for m in f.targets}
    junk += others_news(source, [m for m in facts if m.id not in named])
    waiting = sum(1 for p in review.pending(source.root)[0] if TIDY_KEY in p.extra)
    return Health(facts=len(facts), likely_duplicates=duplicates,
                  likely_junk=len(junk), stale=len(stale), waiting=waiting, last_run=last_run(source.root))
