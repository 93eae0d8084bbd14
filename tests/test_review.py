"""Review mode: the model's UPDATE / DELETE decisions wait for the user; accept or reject, one
commit each; proposals survive a restart; a proposal whose fact changed is never applied."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import NotFoundError, ValidationError
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat


def _review_engine(make_config: Callable[..., Any], scripted_llm: Any, mode: str = "changes") -> MemoryEngine:
    engine = MemoryEngine(make_config(**{
        "llm.base_url": scripted_llm.base_url, "llm.model": "test-model", "llm.api_key": "test",
        "llm.timeout": 5, "memory.review": mode}))
    engine.open_index()
    return engine


def _move(engine: MemoryEngine, llm: Any, notes: list[str] | None = None) -> Any:
    ghent = engine.add("The user lives in Ghent")
    if notes is not None:
        engine.subscribe_outcomes(lambda outcome: notes.extend(outcome.notes))
    llm.script(FACTS, '["The user lives in Leuven"]')
    llm.script(RECONCILE, '[{"event": "UPDATE", "id": "0", "text": "The user lives in Leuven"}]')
    llm.script(SUMMARY, "The user moved to Leuven.")
    llm.script(is_chat, "Congratulations!")
    engine.chat("talk", "I moved to Leuven")
    assert engine.wait_idle(30)
    return ghent


def _commits(engine: MemoryEngine) -> int:
    return int(subprocess.run(["git", "-C", str(engine.root), "rev-list", "--count", "HEAD"],
                              capture_output=True, text=True, check=True).stdout)


def _facts(engine: MemoryEngine) -> list[str]:
    return sorted(m.text for m in engine.list_memories(role="memory"))


def test_an_update_waits_for_the_user_and_survives_a_restart(
        make_config: Callable[..., Any], scripted_llm: Any) -> None:
    engine = _review_engine(make_config, scripted_llm)
    try:
        notes: list[str] = []
        _move(engine, scripted_llm, notes)
        assert _facts(engine) == ["The user lives in Ghent"]  # nothing changed yet
        assert "1 memory change waits for your review (review mode is on)." in notes
        [proposal], broken = engine.proposals()
        assert broken == [] and proposal.event == "UPDATE"
        assert proposal.describe() == "Update: The user lives in Ghent → The user lives in Leuven"
        # committed with the turn: nothing is left uncommitted
        status = subprocess.run(["git", "-C", str(engine.root), "status", "--porcelain", "review"],
                                capture_output=True, text=True, check=True).stdout
        assert status == ""
    finally:
        engine.close()
    engine = _review_engine(make_config, scripted_llm)
    try:
        [again], _ = engine.proposals()
        assert again.id == proposal.id
        before = _commits(engine)
        accepted, commit = engine.accept_proposal(proposal.id[:8])
        assert commit is not None and _commits(engine) == before + 1
        assert _facts(engine) == ["The user lives in Leuven"]
        assert engine.proposals() == ([], [])
        tomb = next(m for m in engine.list_memories(role="memory", include_deleted=True) if m.deleted)
        assert tomb.text == "The user lives in Ghent" and tomb.valid_to is not None
    finally:
        engine.close()


def test_reject_drops_the_proposal_and_keeps_memory(make_config: Callable[..., Any],
                                                    scripted_llm: Any) -> None:
    engine = _review_engine(make_config, scripted_llm)
    try:
        _move(engine, scripted_llm)
        [proposal], _ = engine.proposals()
        before = _commits(engine)
        engine.reject_proposal(proposal.id)
        assert _commits(engine) == before + 1 and engine.proposals() == ([], [])
        assert _facts(engine) == ["The user lives in Ghent"]
        with pytest.raises(NotFoundError, match="no pending proposal"):
            engine.accept_proposal(proposal.id)
    finally:
        engine.close()


def test_accepting_with_the_users_own_text(make_config: Callable[..., Any], scripted_llm: Any) -> None:
    engine = _review_engine(make_config, scripted_llm)
    try:
        _move(engine, scripted_llm)
        [proposal], _ = engine.proposals()
        engine.accept_proposal(proposal.id, text="The user lives in Leuven (Kessel-Lo)")
        assert _facts(engine) == ["The user lives in Leuven (Kessel-Lo)"]
    finally:
        engine.close()


def test_a_proposal_whose_fact_changed_is_refused(make_config: Callable[..., Any], scripted_llm: Any) -> None:
    engine = _review_engine(make_config, scripted_llm)
    try:
        ghent = _move(engine, scripted_llm)
        [proposal], _ = engine.proposals()
        engine.edit(ghent.id, text="The user lives in Ghent, near the station")
        with pytest.raises(ValidationError, match="changed since the proposal"):
            engine.accept_proposal(proposal.id)
        assert _facts(engine) == ["The user lives in Ghent, near the station"]
        assert len(engine.proposals()[0]) == 1  # still there, to reject
    finally:
        engine.close()


def test_review_off_applies_as_before(make_config: Callable[..., Any], scripted_llm: Any) -> None:
    engine = _review_engine(make_config, scripted_llm, mode="off")
    try:
        _move(engine, scripted_llm)
        assert _facts(engine) == ["The user lives in Leuven"] and engine.proposals() == ([], [])
    finally:
        engine.close()


def test_a_broken_proposal_file_is_reported_never_applied(make_config: Callable[..., Any],
                                                          scripted_llm: Any) -> None:
    engine = _review_engine(make_config, scripted_llm)
    try:
        folder = engine.root / "review"
        folder.mkdir(exist_ok=True)
        (folder / "p-0123456789ab.json").write_text("{not json", "utf-8")
        (folder / "p-aaaaaaaaaaaa.json").write_text(json.dumps(
            {"id": "p-bbbbbbbbbbbb", "event": "DELETE", "conversation_id": "x", "text": "t"}), "utf-8")
        found, broken = engine.proposals()
        assert found == [] and len(broken) == 2
        assert any("does not match its file name" in b for b in broken)
    finally:
        engine.close()


def test_the_cli_lists_accepts_and_rejects(make_config: Callable[..., Any], scripted_llm: Any) -> None:
    engine = _review_engine(make_config, scripted_llm)
    try:
        _move(engine, scripted_llm)
        [proposal], _ = engine.proposals()
        root = engine.root
    finally:
        engine.close()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(root), "review",
                               *args], capture_output=True, text=True, timeout=120)

    listed = cli()
    assert listed.returncode == 0 and proposal.id in listed.stdout and "Ghent → " in listed.stdout
    as_json = json.loads(cli("--json").stdout)
    assert [p["id"] for p in as_json["proposals"]] == [proposal.id]
    bad = cli("accept", "p-nope")
    assert bad.returncode == 1 and "no pending proposal" in bad.stderr and "Traceback" not in bad.stderr
    done = cli("accept", proposal.id)
    assert done.returncode == 0, done.stderr
    with MemoryEngine(make_config()) as reopened:
        assert _facts(reopened) == ["The user lives in Leuven"]


def test_the_mcp_tool_lists_and_rejects(make_config: Callable[..., Any], scripted_llm: Any) -> None:
    import anyio

    from tests.mcp_clients import call, stdio_session

    engine = _review_engine(make_config, scripted_llm)
    try:
        _move(engine, scripted_llm)
        [proposal], _ = engine.proposals()
        root = engine.root
    finally:
        engine.close()

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with stdio_session(root) as s:
            listed = await call(s, "review_memory_changes")
            rejected = await call(s, "review_memory_changes", action="reject", id=proposal.id)
            missing = await s.call_tool("review_memory_changes", {"action": "accept"})
        return listed, rejected, missing

    listed, rejected, missing = anyio.run(scenario)
    assert [p["summary"] for p in listed["proposals"]] == [proposal.describe()]
    assert rejected["rejected"]["id"] == proposal.id and rejected["commit"]
    assert missing.is_error and "needs the proposal's id" in missing.content[0].text
    with MemoryEngine(make_config()) as reopened:
        assert reopened.proposals() == ([], []) and _facts(reopened) == ["The user lives in Ghent"]


def test_an_ai_tools_reconciled_update_waits_too(make_config: Callable[..., Any], scripted_llm: Any) -> None:
    from desktop_mem.engine.chat.decisions import Planned

    engine = _review_engine(make_config, scripted_llm)
    try:
        ghent = engine.add("The user lives in Ghent")
        before = _commits(engine)
        decisions = [Planned("UPDATE", "The user lives in Leuven", ghent.id),
                     Planned("ADD", "The user likes jazz", None)]
        applied = engine.apply_decisions("global", decisions, source="mcp")
        assert [m.text for m in applied.added] == ["The user likes jazz"] and applied.updated == []
        assert _commits(engine) == before + 1  # the ADD and the proposal: one commit
        [proposal], _ = engine.proposals()
        assert proposal.describe() == "Update: The user lives in Ghent → The user lives in Leuven"
        assert _facts(engine) == ["The user likes jazz", "The user lives in Ghent"]
    finally:
        engine.close()


def test_what_waits_reaches_no_summary_and_the_chat_line_names_it(
        make_config: Callable[..., Any], scripted_llm: Any) -> None:
    engine = MemoryEngine(make_config(**{
        "llm.base_url": scripted_llm.base_url, "llm.model": "test-model", "llm.api_key": "test",
        "llm.timeout": 5, "memory.review": "all", "memory.summary_threshold": 2}))
    engine.open_index()
    try:
        lines: list[str] = []
        engine.subscribe_outcomes(lambda outcome: lines.append(outcome.describe()))
        scripted_llm.script(FACTS, "[]", times=1)
        scripted_llm.script(is_chat, "Hello!", times=1)
        engine.chat("talk", "Hi there")  # a first turn: the second one's summary covers 4 messages
        assert engine.wait_idle(30)
        scripted_llm.script(FACTS, '["The user lives in Utrecht"]')
        scripted_llm.script(RECONCILE, '[{"event": "ADD", "text": "The user lives in Utrecht"}]')
        scripted_llm.script(SUMMARY, "The user lives in Utrecht. The user asked about tea.")
        scripted_llm.script(is_chat, "Nice city!")
        engine.chat("talk", "I live in Utrecht")
        assert engine.wait_idle(30)
        assert _facts(engine) == []  # nothing applied before the user says so
        summary = engine.summary("talk")
        assert summary is not None and "Utrecht" not in summary.text and "tea" in summary.text
        assert lines and "waits for your review (Review pane): Add: The user lives in Utrecht" in lines[-1]
        record = list(engine.turn_memories("talk").values())[-1]
        assert record.waiting == ("Add: The user lives in Utrecht",)
        # an edited accept is committed and described with the accepted text
        [proposal], _ = engine.proposals()
        accepted, commit = engine.accept_proposal(proposal.id, text="The user lives in Utrecht, Lombok")
        assert accepted.text == "The user lives in Utrecht, Lombok"
        subject = subprocess.run(["git", "-C", str(engine.root), "log", "-1", "--format=%s", commit],
                                 capture_output=True, text=True, check=True).stdout
        assert "Utrecht, Lombok" in subject
        assert _facts(engine) == ["The user lives in Utrecht, Lombok"]
    finally:
        engine.close()
