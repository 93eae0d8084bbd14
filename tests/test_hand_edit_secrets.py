"""Issue #13 case 4, hand edits: a key saved into a memory file with an outside editor goes
through the same secret check as every other write before anything is committed."""

from __future__ import annotations

import json
import logging
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import (
    ConflictError,
    HeldBackChoice,
    Operation,
    SecretHeldBack,
    StoreChange,
    ValidationError,
)

KEY = "sk-proj-Zq8Xw7Vu6Ts5Rq4Po3Nm2Lk1Ji0HgFeDcBa"


def _history(store: Path) -> bytes:
    return subprocess.run(["git", "-C", str(store), "log", "-p", "--all"], capture_output=True,
                          check=True).stdout


def _hand_edit(engine: MemoryEngine, memory_path: str, text: str) -> Path:
    path = engine.root / memory_path
    raw = path.read_text(encoding="utf-8")
    head, _, _body = raw.partition("\n---\n")
    path.write_text(f"{head}\n---\n\n{text}\n", encoding="utf-8")
    return path


def test_under_ask_a_hand_edit_with_a_key_is_held_back_and_named_by_doctor(
    make_config: Callable[..., Any],
) -> None:
    with MemoryEngine(make_config()) as eng:
        tea = eng.add("User likes tea")
        coffee = eng.add("User likes coffee")
        path = _hand_edit(eng, tea.path, f"The staging key is {KEY}")
        _hand_edit(eng, coffee.path, "User likes strong coffee")
        eng.apply_external_changes([tea.path, coffee.path])
        assert KEY.encode() not in _history(eng.root)
        assert b"strong coffee" in _history(eng.root), "the edit without a secret is committed"
        assert KEY in path.read_text(encoding="utf-8"), "the user's file is left as they wrote it"
        report = eng.doctor()
        notes = "\n".join(report.notes)
        assert tea.path in notes and "secret" in notes and KEY not in notes
        store = eng.root
    with MemoryEngine(make_config(store=store)) as again:  # the start-up commit holds it back too
        assert KEY.encode() not in _history(again.root)
        assert again._parts.git.dirty_paths() == [tea.path]


def test_a_key_saved_while_the_app_was_closed_is_redacted_or_kept_by_policy(
    make_config: Callable[..., Any], tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    with MemoryEngine(make_config(store=store)) as eng:
        tea = eng.add("User likes tea")
    path = store / tea.path
    raw = path.read_text(encoding="utf-8")
    path.write_text(raw.replace("User likes tea", f"The staging key is {KEY}"), encoding="utf-8")
    with MemoryEngine(make_config(store=store, **{"security.secrets": "redact"})) as eng:
        assert KEY.encode() not in _history(store)
        assert "[redacted:openai_key]" in path.read_text(encoding="utf-8")
        assert eng.get(tea.id).text == "The staging key is [redacted:openai_key]"
        assert eng._parts.git.dirty_paths() == []
    path.write_text(raw.replace("User likes tea", f"The staging key is {KEY}"), encoding="utf-8")
    with MemoryEngine(make_config(store=store, **{"security.secrets": "keep"})) as eng:
        assert KEY.encode() in _history(store), "keep: the user's choice is committed as is"
        assert eng._parts.git.dirty_paths() == []


# ---------------------------------------------------------------- the question and its answers

AWS_KEY = "AKIAZ7QW3ERT5YUI9OPL"


def _git(store: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store), *args], capture_output=True, check=True,
                          text=True).stdout


def _messages(store: Path) -> str:
    return _git(store, "log", "--format=%B")


def test_a_held_back_hand_edit_is_announced_with_its_kind_and_redact_commits_it_without_the_key(
    make_config: Callable[..., Any], caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with MemoryEngine(make_config()) as eng:
        heard: list[SecretHeldBack] = []
        changes: list[StoreChange] = []
        eng.subscribe_held_back(heard.append)
        eng.subscribe(changes.append)
        tea = eng.add("User likes tea")
        path = _hand_edit(eng, tea.path, f"The staging key is {KEY} for billing")
        eng.apply_external_changes([tea.path])

        assert [(h.path, h.memory_id, h.kinds) for h in heard] == [(tea.path, tea.id, ("openai_key",))]
        assert heard[0].preview == "The staging key is [redacted:openai_key] for billing"
        assert eng.held_back_files() == tuple(heard)
        assert eng._parts.git.dirty_paths() == [tea.path]

        change = eng.resolve_held_back(tea.path, HeldBackChoice.REDACT, expected_hash=heard[0].content_hash)
        assert change.operation == Operation.EXTERNAL_EDIT and change.memory_ids == (tea.id,)
        committed = _git(eng.root, "show", f"HEAD:{tea.path}")
        assert KEY not in committed and "The staging key is [redacted:openai_key] for billing" in committed
        assert path.read_text(encoding="utf-8") == committed, "the file itself is redacted"
        assert eng.get(tea.id).text == "The staging key is [redacted:openai_key] for billing"
        assert _messages(eng.root).startswith(
            "Edit outside the app (likely secret redacted): The staging key")
        assert eng._parts.git.dirty_paths() == [] and eng.held_back_files() == ()
        assert changes[-1] == change
        store = eng.root
    assert KEY.encode() not in _history(store)
    assert KEY not in caplog.text and KEY not in repr(heard) and KEY not in repr(changes)


def test_keep_commits_the_file_as_written_and_the_same_key_is_not_asked_about_again(
    make_config: Callable[..., Any],
) -> None:
    with MemoryEngine(make_config()) as eng:
        heard: list[SecretHeldBack] = []
        eng.subscribe_held_back(heard.append)
        note = eng.add("Deploy notes")
        _hand_edit(eng, note.path, f"Deploy with aws key {AWS_KEY} from the CI box")
        eng.apply_external_changes([note.path])
        assert heard[-1].kinds == ("aws_access_key",)

        eng.resolve_held_back(str(eng.root / note.path), "keep")  # an absolute path works too
        assert AWS_KEY in _git(eng.root, "show", f"HEAD:{note.path}"), "kept as written"
        assert AWS_KEY not in _messages(eng.root), "never in a commit message"
        assert _messages(eng.root).startswith("Edit outside the app (likely secret kept as written): "
                                              "Deploy with aws key [redacted:aws_access_key]")
        assert (eng.root / "kept_secrets.json").exists() and AWS_KEY not in (
            eng.root / "kept_secrets.json").read_text(encoding="utf-8")
        assert "kept_secrets.json" not in _git(eng.root, "ls-files")

        _hand_edit(eng, note.path, f"Deploy with aws key {AWS_KEY} from the new CI box")
        eng.apply_external_changes([note.path])
        assert len(heard) == 1, "the same key, already kept, is not asked about again"
        assert "from the new CI box" in _git(eng.root, "show", f"HEAD:{note.path}")

        _hand_edit(eng, note.path, f"Deploy with aws key {AWS_KEY} and {KEY}")
        eng.apply_external_changes([note.path])
        assert [h.kinds for h in heard[1:]] == [("openai_key",)], "a new key is asked about"
        assert KEY not in _git(eng.root, "show", f"HEAD:{note.path}")
        store = eng.root
    with MemoryEngine(make_config(store=store)) as again:  # the decision outlives the process
        assert [h.kinds for h in again.held_back_files()] == [("openai_key",)]


def test_files_held_back_while_the_app_was_closed_are_listed_at_start_and_kept_out_of_the_index(
    make_config: Callable[..., Any], tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    with MemoryEngine(make_config(store=store)) as eng:
        eng.open_index()
        note = eng.add("The user keeps bees in the garden")
    path = store / note.path
    path.write_text(path.read_text(encoding="utf-8").replace(
        "The user keeps bees in the garden", f"The beekeeping portal key is {KEY}"), encoding="utf-8")
    with MemoryEngine(make_config(store=store)) as eng:
        held = eng.held_back_files()
        assert [(h.path, h.memory_id, h.kinds) for h in held] == [(note.path, note.id, ("openai_key",))]
        eng.open_index()
        assert note.id not in {r.memory.id for r in eng.search("beekeeping portal key")}, (
            "a held-back file is neither indexed nor injected")
        eng.resolve_held_back(note.path, "redact", expected_hash=held[0].content_hash)
        found = [r.memory for r in eng.search("beekeeping portal key")]
        assert found and found[0].id == note.id and KEY not in found[0].text


def test_resolving_refuses_paths_outside_the_store_stale_paths_and_files_changed_since_the_question(
    make_config: Callable[..., Any], tmp_path: Path,
) -> None:
    with MemoryEngine(make_config()) as eng:
        heard: list[SecretHeldBack] = []
        eng.subscribe_held_back(heard.append)
        tea = eng.add("User likes tea")
        committed = eng.add(f"The old key was {AWS_KEY}", secrets="keep")
        outside = tmp_path / "elsewhere.md"
        outside.write_text(f"key {KEY}", encoding="utf-8")
        with pytest.raises(ValidationError, match="is not inside the store"):
            eng.resolve_held_back(str(outside), "keep")
        with pytest.raises(ValidationError, match="not a path inside the store"):
            eng.resolve_held_back("entries/../../elsewhere.md", "keep")
        with pytest.raises(ValidationError, match="is committed as it is"):
            eng.resolve_held_back(committed.path, "keep")  # answered already: nothing to ask
        with pytest.raises(ValidationError, match="no readable memory file there"):
            eng.resolve_held_back("entries/global/facts/gone.md", "redact")
        with pytest.raises(ValueError):
            eng.resolve_held_back(tea.path, "commit")

        _hand_edit(eng, tea.path, f"The staging key is {KEY}")
        eng.apply_external_changes([tea.path])
        asked = heard[-1]
        _hand_edit(eng, tea.path, f"The staging key is {KEY} and the old one is {AWS_KEY}")
        head = eng._parts.git.head()
        with pytest.raises(ConflictError, match="changed since you were asked"):
            eng.resolve_held_back(tea.path, "keep", expected_hash=asked.content_hash)
        assert eng._parts.git.head() == head and KEY.encode() not in _history(eng.root)
        eng.apply_external_changes([tea.path])  # the watcher still sees the change: asked again
        assert heard[-1].kinds == ("openai_key", "aws_access_key") and heard[-1] != asked

        _hand_edit(eng, tea.path, "User likes green tea")  # the user took the key out meanwhile
        with pytest.raises(ValidationError, match="holds no likely secret now"):
            eng.resolve_held_back(tea.path, "redact")


def test_the_cli_lists_held_back_files_and_redacts_one(tmp_path: Path) -> None:
    from tests.test_cli import run, run_json

    store = tmp_path / "s"
    added = run_json(store, "add", "User likes tea")
    path = store / added["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("User likes tea", f"Tea shop key {KEY}"),
                    encoding="utf-8")
    listed = run(store, "secrets").stdout
    assert listed == f"{added['path']}  openai_key  Tea shop key [redacted:openai_key]\n"
    doctor = run(store, "doctor", ok=False)
    assert "desktop-mem secrets redact" in doctor.stdout and KEY not in doctor.stdout
    refused = run(store, "secrets", "keep", ok=False)
    assert refused.returncode == 1 and "needs a file" in refused.stderr
    done = run(store, "secrets", "redact", str(path))
    assert "redacted and committed" in done.stdout and KEY not in done.stdout
    assert KEY.encode() not in _history(store) and "[redacted:openai_key]" in path.read_text(encoding="utf-8")
    again = run(store, "secrets", "keep", added["path"], ok=False)
    assert again.returncode == 1 and "is not held back" in again.stderr
    assert run(store, "secrets").stdout == "no hand-edited file is held back for a likely secret\n"


def test_a_held_back_file_is_not_committed_by_a_delete_or_update_before_the_user_answers(
    make_config: Callable[..., Any],
) -> None:
    with MemoryEngine(make_config()) as eng:
        tea = eng.add("User likes tea")
        _hand_edit(eng, tea.path, f"Tea shop key {KEY}")
        eng.apply_external_changes([tea.path])
        head = eng._parts.git.head()
        for attempt in (lambda: eng.delete(tea.id), lambda: eng.replace(tea.id, "User likes mint tea"),
                        lambda: eng.edit(tea.id, meta={"kind": "preference"})):
            with pytest.raises(ValidationError, match="choose Redact or Keep as written first"):
                attempt()
        assert eng._parts.git.head() == head and KEY.encode() not in _history(eng.root)
        assert eng._parts.raw.list_memories() == [eng._parts.raw.get(tea.id)], "nothing was added or moved"
        eng.edit(tea.id, text="User likes tea from the corner shop")  # new text: an answer too
        assert eng.held_back_files() == () and eng._parts.git.dirty_paths() == []
        eng.delete(tea.id)
        assert KEY.encode() not in _history(eng.root)


def _chatting(make_config: Callable[..., Any], scripted_llm: Any, **settings: Any) -> Any:
    """A config for the scripted LLM, scripted to extract nothing, summarise and reply."""
    from tests.llm_roles import FACTS, SUMMARY, is_chat

    scripted_llm.reset()
    scripted_llm.script(FACTS, "[]")
    scripted_llm.script(SUMMARY, "Planned a trip to Porto.")
    scripted_llm.script(is_chat, "Sounds good.")
    return make_config(llm__base_url=scripted_llm.base_url, llm__model="test-model", llm__api_key="test",
                       llm__timeout=5, **settings)


def test_a_held_back_memory_never_reaches_the_llm_and_never_breaks_a_chat_turn(
    make_config: Callable[..., Any], scripted_llm: Any,
) -> None:
    with MemoryEngine(_chatting(make_config, scripted_llm, memory__max_entries=2)) as eng:
        eng.open_index()
        portal = eng.add("The billing portal is at billing.example.com")  # global: cross-session too
        trip = eng.add("The trip budget is 900 euros", conversation_id="trip")
        _hand_edit(eng, portal.path, f"The billing portal key is {KEY}")
        _hand_edit(eng, trip.path, f"The trip booking key is {AWS_KEY}")
        eng.apply_external_changes([portal.path, trip.path])
        assert len(eng.held_back_files()) == 2
        outcomes: list[Any] = []
        eng.subscribe_outcomes(outcomes.append)
        reply = eng.chat("trip", "What is my billing portal key and my trip booking key?")
        assert reply.ok and eng.wait_idle(30)
        sent = json.dumps([r.body for r in scripted_llm.requests])
        assert "The billing portal key is" not in sent and "The trip booking key is" not in sent
        assert KEY not in sent and AWS_KEY not in sent
        [outcome] = outcomes
        assert outcome.commit is not None, "the turn is recorded although the oldest memory is held back"
        assert not eng._parts.raw.get(trip.id).deleted, "eviction passes over a held-back memory"
        assert sorted(eng._parts.git.dirty_paths()) == sorted([portal.path, trip.path])
        assert KEY.encode() not in _history(eng.root) and AWS_KEY.encode() not in _history(eng.root)


def test_a_held_back_turn_or_summary_is_sent_redacted_and_the_summary_is_not_rewritten(
    make_config: Callable[..., Any], scripted_llm: Any,
) -> None:
    from tests.llm_roles import SUMMARY

    config = _chatting(make_config, scripted_llm, memory__summary_threshold=2)
    with MemoryEngine(config) as eng:
        assert eng.chat("trip", "Book the Porto hotel").ok and eng.wait_idle(30)
        with eng._parts.writer.transaction(Operation.SUMMARY, "Summary", "trip") as tx:
            summary = tx.write_summary("trip", "The user plans a trip.", 0)
        [user_turn] = [m for m in eng.list_memories(conversation_id="trip", role="user")]
        _hand_edit(eng, user_turn.path, f"Book the Porto hotel with card key {AWS_KEY}")
        _hand_edit(eng, summary.path, f"The user plans a trip; portal key {KEY}")
        eng.apply_external_changes([user_turn.path, summary.path])
        assert len(eng.held_back_files()) == 2
        _chatting(make_config, scripted_llm)  # forget the first turn's requests
        outcomes: list[Any] = []
        eng.subscribe_outcomes(outcomes.append)
        assert eng.chat("trip", "And the flights?").ok and eng.wait_idle(30)
        sent = json.dumps([r.body for r in scripted_llm.requests])
        assert KEY not in sent and AWS_KEY not in sent
        assert "card key [redacted:aws_access_key]" in sent, "the turn stays in the history, redacted"
        assert not any(SUMMARY in json.dumps(r.body) for r in scripted_llm.requests), "no summary rewrite"
        assert KEY in (eng.root / summary.path).read_text(encoding="utf-8"), "the user's file is untouched"
        assert "waits for your Redact / Keep answer" in " ".join(outcomes[0].notes)
        assert KEY.encode() not in _history(eng.root) and AWS_KEY.encode() not in _history(eng.root)
