"""Every fact knows when it was true: valid_from (said, or a date the user gave) and valid_to
(replaced or forgotten), in the file, in every JSON shape, and derived for an older store."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.history import validity_migration
from desktop_mem.engine.models import ValidationError
from desktop_mem.engine.store import validity
from desktop_mem.engine.store.manifest import MANIFEST_NAME, memory_to_json


def _file(engine: MemoryEngine, rel: str) -> str:
    return (engine.root / rel).read_text("utf-8")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout


def test_a_new_fact_is_valid_from_when_it_was_said(engine: MemoryEngine) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    fact = engine.add("The user lives in Ghent")
    assert fact.valid_from is not None and fact.valid_to is None
    assert before <= validity.start(fact.valid_from) <= datetime.now(UTC)
    assert re.search(r"^valid_from: \d{4}-\d\d-\d\dT", _file(engine, fact.path), re.M)


@pytest.mark.parametrize(("text", "expected"), [
    ("The user has lived in Leuven since March 2024", "2024-03"),
    ("The user works at Acme since 2019", "2019"),
    ("The user moved to Leuven on 15 March 2024", "2024-03-15"),
    ("The user is vegetarian since 2021-05-03", "2021-05-03"),
])
def test_a_date_the_user_gave_is_the_start(engine: MemoryEngine, text: str, expected: str) -> None:
    fact = engine.add(text)
    assert fact.valid_from == expected
    assert engine._parts.store.read(fact.path).valid_from == expected  # read back from the file


def test_replacing_or_forgetting_ends_a_fact_and_restoring_revives_it(engine: MemoryEngine) -> None:
    ghent = engine.add("The user lives in Ghent")
    tomb, leuven = engine.replace(ghent.id, "The user lives in Leuven")
    assert tomb.valid_to == leuven.valid_from  # true until the new one began
    assert "valid_to:" in _file(engine, tomb.path)
    forgotten = engine.delete(leuven.id)
    assert forgotten.valid_to is not None and validity.start(forgotten.valid_to) == forgotten.deleted_at
    back = engine.restore(leuven.id)
    assert back.valid_to is None and "valid_to" not in _file(engine, back.path)


def test_a_replacement_with_a_given_date_ends_the_old_fact_then(engine: MemoryEngine) -> None:
    ghent = engine.edit(engine.add("The user lives in Ghent").id, meta={"valid_from": "2019"})
    tomb, leuven = engine.replace(ghent.id, "The user has lived in Leuven since March 2024")
    assert leuven.valid_from == "2024-03"
    assert tomb.valid_from == "2019" and tomb.valid_to == "2024-03"


def test_hand_edits_set_validity_and_bad_values_lose_nothing(engine: MemoryEngine) -> None:
    fact = engine.add("The user works at Acme")
    edited = engine.edit(fact.id, meta={"valid_from": "2020-06", "valid_to": "2024-01-31"})
    assert (edited.valid_from, edited.valid_to) == ("2020-06", "2024-01-31")
    before = _file(engine, fact.path)
    with pytest.raises(ValidationError, match="valid_from 'last spring' is not a date"):
        engine.edit(fact.id, meta={"valid_from": "last spring"})
    with pytest.raises(ValidationError, match="valid_to 2019 is before valid_from 2020-06"):
        engine.edit(fact.id, meta={"valid_to": 2019})
    assert _file(engine, fact.path) == before  # nothing half-written


def test_an_outside_edit_with_a_bad_value_becomes_a_problem_with_the_reason(engine: MemoryEngine) -> None:
    fact = engine.add("The user plays the cello")
    path = engine.root / fact.path
    broken = path.read_text("utf-8").replace("valid_from:", "valid_from: 2024-13 #", 1)
    path.write_text(broken, "utf-8")
    engine.apply_external_changes([fact.path])
    problems = {p.path: p.reason for p in engine.problems()}
    assert "valid_from" in problems[fact.path] and "2024-13" in problems[fact.path]
    assert path.read_text("utf-8") == broken  # the user's text is left as they wrote it


def test_every_json_shape_carries_validity(engine: MemoryEngine, make_config: Callable[..., Any],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from desktop_mem.api import mcp_tools, rest
    from desktop_mem.cli.main import main

    ghent = engine.add("The user lives in Ghent")
    tomb, _new = engine.replace(ghent.id, "The user lives in Leuven")
    for shape in (rest.memory_json(tomb), mcp_tools.memory_json(tomb)):
        assert shape["valid_from"] == tomb.valid_from and shape["valid_to"] == tomb.valid_to
    engine.close()
    assert main(["--store", str(engine.root), "show", tomb.id, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["valid_to"] == tomb.valid_to and shown["valid_from"] == tomb.valid_from


def _strip_validity(root: Path) -> None:
    for path in (root / "entries").rglob("*.md"):
        text = path.read_text("utf-8")
        path.write_text(re.sub(r"^valid_(from|to): .*\n", "", text, flags=re.M), "utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "an older store, before validity")
    (root / ".git" / validity_migration.MARKER).unlink()


def test_an_older_store_gets_validity_in_one_commit_once(make_config: Callable[..., Any]) -> None:
    config = make_config()
    with MemoryEngine(config) as eng:
        ghent = eng.add("The user lives in Ghent")
        tomb, leuven = eng.replace(ghent.id, "The user has lived in Leuven since March 2024")
        cello = eng.add("The user plays the cello")
        gone = eng.delete(cello.id)
        root = eng.root
    _strip_validity(root)
    # a tombstone moved by hand (no deleted_at): the commit that moved it says when
    moved = root / gone.path
    moved.write_text(re.sub(r"^deleted_at: .*\n", "", moved.read_text("utf-8"), flags=re.M), "utf-8")
    _git(root, "commit", "-qam", "hand edit")
    commits = int(_git(root, "rev-list", "--count", "HEAD"))

    with MemoryEngine(config) as eng:
        assert int(_git(root, "rev-list", "--count", "HEAD")) == commits + 1
        assert _git(root, "log", "-1", "--format=%s").startswith(validity_migration.SUBJECT)
        old = eng._parts.raw.get(tomb.id)
        assert old.valid_from is not None and validity.start(old.valid_from) == old.created_at
        assert old.valid_to is not None and validity.start(old.valid_to) == old.deleted_at
        assert eng._parts.raw.get(leuven.id).valid_from == "2024-03"
        hand = eng._parts.raw.get(gone.id)
        move_time = datetime.fromisoformat(_git(root, "log", "-1", "--format=%cI", "--",
                                                gone.path.replace("/deleted/", "/")).strip() or
                                           _git(root, "log", "-1", "--format=%cI").strip())
        assert hand.valid_to is not None and hand.deleted_at is None
        assert abs((validity.start(hand.valid_to) - move_time).total_seconds()) < 5
        assert not _git(root, "status", "--porcelain", "entries")
    with MemoryEngine(config):  # idempotent: nothing left to record
        assert int(_git(root, "rev-list", "--count", "HEAD")) == commits + 1


def test_a_new_store_is_never_migrated(make_config: Callable[..., Any]) -> None:
    with MemoryEngine(make_config()) as eng:
        eng.add("The user lives in Ghent")
        commits = int(_git(eng.root, "rev-list", "--count", "HEAD"))
        assert not validity_migration.needs_migration(eng._parts)
    with MemoryEngine(make_config()) as eng:
        assert int(_git(eng.root, "rev-list", "--count", "HEAD")) == commits


def test_a_cached_listing_from_before_validity_is_read_again(make_config: Callable[..., Any]) -> None:
    config = make_config()
    with MemoryEngine(config) as eng:
        fact = eng.add("The user lives in Ghent")
        manifest = eng.root / MANIFEST_NAME
    cached = memory_to_json(fact)  # as an older version cached it: no validity fields
    cached.pop("valid_from", None)
    cached.pop("valid_to", None)
    with sqlite3.connect(manifest) as db:
        db.execute("UPDATE files SET memory = ? WHERE path = ?", (json.dumps(cached, default=str), fact.path))
    db.close()
    with MemoryEngine(config) as eng:
        assert eng.get(fact.id).valid_from == fact.valid_from


@pytest.mark.parametrize("bad", ["yesterday", "2024-02-30", "24-03-01", ""])
def test_an_as_of_date_that_is_not_one_is_refused_clearly(bad: str) -> None:
    with pytest.raises(ValidationError, match="as-of date"):
        validity.parse_as_of(bad)


def test_an_as_of_day_means_the_end_of_that_day() -> None:
    assert validity.parse_as_of("2024-03-15") == datetime(2024, 3, 15, 23, 59, 59, tzinfo=UTC)
    assert validity.parse_as_of("2024-03-15T08:00:00Z") == datetime(2024, 3, 15, 8, tzinfo=UTC)


def test_a_fact_that_states_its_whole_span_gets_both_ends(engine: MemoryEngine) -> None:
    old_job = engine.add("The user worked at Acme from 2018 until 2020")
    assert (old_job.valid_from, old_job.valid_to) == ("2018", "2020")
    assert _texts_as_of(engine, "2019-06-01") == ["The user worked at Acme from 2018 until 2020"]
    plan = engine.add("The user will stay in Leuven until 2030")  # a plan, not an end
    assert plan.valid_to is None


def _texts_as_of(engine: MemoryEngine, day: str) -> list[str]:
    return [m.text for m in engine.list_as_of(validity.parse_as_of(day), role="memory")]
