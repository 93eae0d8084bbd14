"""LLM faults: every fault of the scripted server at every LLM step of a chat turn.

Steps: fact extraction, reconciliation, rolling summary, the streamed reply. For each (step,
fault) one turn runs in a fresh conversation that already holds a fact and a summary. Checked:
the documented fallback happened, the outcome or reply says what happened (WriteOutcome.notes,
ChatReply.error), and nothing was lost (user turn stored, prior fact and summary intact, git clean).

    .venv/bin/python reliability/llm_faults.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from desktop_mem.engine.chat.chat_types import ChatReply, WriteOutcome  # noqa: E402
from desktop_mem.engine.facade import MemoryEngine  # noqa: E402
from desktop_mem.engine.models import Operation  # noqa: E402
from reliability.common import FACTS, RECONCILE, SUMMARY, is_chat, make_config, table  # noqa: E402
from tests.scripted_llm import Fault, ScriptedLLM  # noqa: E402

MESSAGE = "I live in Berlin and I like green tea."
PRIOR_FACT = "The user has a dog named Rex"
PRIOR_SUMMARY = "The user has a dog."
TIMEOUT = 2.0

Reply = str | Fault
FAULTS: dict[str, Callable[[str], Reply | None]] = {
    "timeout": lambda step: Fault.delay(TIMEOUT * 2.5),
    "HTTP 400": lambda step: Fault.status(400, "bad request"),
    "HTTP 401": lambda step: Fault.status(401, "bad key"),
    "HTTP 404 model": lambda step: Fault.status(404, "model missing"),
    "HTTP 429": lambda step: Fault.status(429, "slow down"),
    "HTTP 500": lambda step: Fault.status(500, "boom"),
    "HTTP 503": lambda step: Fault.status(503, "overloaded"),
    "malformed JSON body": lambda step: Fault.malformed_json(),
    "truncated JSON answer": lambda step: {
        "extract": '["The user lives in Ber', "reconcile": '[{"event": "ADD", "te',
        "summary": "```\nThe user has a d", "reply": None}[step],
    "cut stream (abrupt)": lambda step: Fault.cut_stream(2),
    "cut stream (clean end)": lambda step: Fault.cut_stream(2, abrupt=False),
    "ids not in the list / wrong shape": lambda step: {
        "extract": '{"facts": 5}',
        "reconcile": '[{"event": "DELETE", "id": "42"}, '
                     '{"event": "UPDATE", "id": "99", "text": "The user lives in Berlin"}]',
        "summary": "", "reply": None}[step],
    "enormous answer (3 MB)": lambda step: Fault.huge(3_000_000),
}
STEPS = {"extract": FACTS, "reconcile": RECONCILE, "summary": SUMMARY, "reply": "reply"}


def _script(llm: ScriptedLLM, step: str, fault: Reply) -> None:
    llm.reset()
    match: Any = is_chat if step == "reply" else STEPS[step]
    llm.script(match, fault)
    llm.script(FACTS, '["The user lives in Berlin", "The user likes green tea"]')
    llm.script(RECONCILE, '[{"event": "ADD", "text": "The user lives in Berlin"}, '
                          '{"event": "ADD", "text": "The user likes green tea"}]')
    llm.script(SUMMARY, "The user has a dog and lives in Berlin.")
    llm.default_reply = "Berlin and green tea, noted."


def run_cell(engine: MemoryEngine, llm: ScriptedLLM, step: str, name: str, fault: Reply) -> dict[str, Any]:
    """One turn under one fault; returns what the user saw and what was checked."""
    conv = f"{step}-{abs(hash(name)) % 10**8}"
    prior = engine.add(PRIOR_FACT, conversation_id=conv)
    with engine._parts.writer.transaction(Operation.SUMMARY, "prior summary", conv) as tx:
        tx.write_summary(conv, PRIOR_SUMMARY, 0)
    _script(llm, step, fault)
    outcomes: list[WriteOutcome] = []
    unsubscribe = engine.subscribe_outcomes(outcomes.append)
    started = time.monotonic()
    raised = None
    reply: ChatReply | None = None
    try:
        reply = engine.chat(conv, MESSAGE)
    except Exception as exc:  # a fault must never surface as an exception
        raised = f"{type(exc).__name__}: {exc}"
    engine.wait_idle(120)
    unsubscribe()
    seconds = time.monotonic() - started
    notes = " ".join(outcomes[0].notes) if outcomes else ""
    items = engine.list_memories(conversation_id=conv, include_deleted=True, include_summaries=True)
    live = [m for m in items if not m.deleted]
    facts = [m for m in live if m.role == "memory"]
    summary = engine.summary(conv)
    lost = []
    if not any(m.role == "user" and m.text == MESSAGE for m in live):
        lost.append("user turn")
    if engine.lookup(prior.id) is None or engine.lookup(prior.id).text != PRIOR_FACT:  # type: ignore[union-attr]
        lost.append("prior fact")
    if summary is None or not summary.text:
        lost.append("summary")
    if engine._parts.git.dirty_paths():
        lost.append("uncommitted files")
    if reply is not None and reply.text and not any(
            m.role == "assistant" and (m.text == reply.text
                                       or (m.extra.get("truncated") and reply.text.startswith(m.text)))
            for m in live):
        lost.append("streamed reply text")  # over store.max_file_bytes it is stored cut, marked truncated
    fallback, said = _expectation(step, reply, notes, facts, summary.text if summary else None)
    return {"fallback": fallback, "said": said, "lost": lost, "raised": raised, "seconds": seconds,
            "error": reply.error if reply else None, "notes": notes}


def _expectation(step: str, reply: ChatReply | None, notes: str, facts: list[Any],
                 summary: str | None) -> tuple[str, str]:
    """Which documented fallback is visible, and what the user was told."""
    texts = {m.text for m in facts}
    berlin = "The user lives in Berlin" in texts
    if step == "reply":
        if reply is None:
            return "exception", ""
        return ("reply ok" if reply.ok else f"error shown ({reply.error_kind})"), (reply.error or "")[:80]
    if step == "extract":
        if "pattern rules" in notes:
            sources = {m.source for m in facts if m.text != PRIOR_FACT}
            return f"pattern rules ({'/'.join(sorted(s or '?' for s in sources))})", _note(notes, "Fact")
        return ("LLM facts" if berlin else "no facts"), _note(notes, "Fact")
    if step == "reconcile":
        if "reconciliation failed" in notes:
            return ("facts added as-is" if berlin else "facts LOST"), _note(notes, "Memory reconciliation")
        return ("bad ids dropped, facts kept" if berlin else "facts LOST"), _note(notes, "Memory")
    kept = summary == PRIOR_SUMMARY
    return ("old summary kept" if kept else "summary updated"), _note(notes, "Summary")


def _note(notes: str, start: str) -> str:
    i = notes.find(start)
    return notes[i: i + 80] if i >= 0 else notes[:80]


def main(argv: list[str] | None = None) -> int:
    """Run the matrix; print it; exit 1 if anything was lost or raised."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    llm = ScriptedLLM().start()
    workdir = Path(tempfile.mkdtemp(prefix="llm-faults-"))
    store = workdir / "store"
    config = make_config(store, llm.base_url, **{"llm.timeout": TIMEOUT, "memory.max_entries": 500,
                                                 "memory.summary_threshold": 40})
    rows: list[list[Any]] = []
    bad = 0
    cells = 0
    with MemoryEngine.open(config) as engine:
        engine.open_index()
        for name, make in FAULTS.items():
            for step in STEPS:
                fault = make(step)
                if fault is None:
                    continue
                cells += 1
                r = run_cell(engine, llm, step, name, fault)
                broken = bool(r["lost"] or r["raised"] or "LOST" in r["fallback"])
                bad += broken
                rows.append([name, step, r["fallback"], (r["said"] or "-").replace("|", "/"),
                             ", ".join(r["lost"]) or "nothing", r["raised"] or "-", f"{r['seconds']:.1f}"])
                print(f"{name:32} {step:10} {r['fallback']:34} lost={r['lost']} raised={r['raised']}",
                      flush=True)
    llm.stop()
    print()
    print(table(["fault", "step", "fallback seen", "what the user is told", "lost", "exception", "s"], rows))
    print(f"\n{cells} fault x step cells, {bad} with a loss or an exception")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
