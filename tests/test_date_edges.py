"""One odd file is one listed problem (issue #34): a date at the edge of the calendar in one file's
front matter (year 1 or 9999 with an offset: converting it to UTC, or adding a day, overflows)
made every command fail with OverflowError. Such a file can come from a sync remote. Every date a
file gives is validated when it is read: the file is accepted with dates that leave room for
arithmetic, or listed as a problem; the rest of the store works in every command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.store import validity
from desktop_mem.engine.store.markdown_store import MarkdownStore
from tests.llm_roles import FACTS, RECONCILE, SUMMARY
from tests.scripted_llm import ScriptedLLM

KEYS = ("created_at", "updated_at", "deleted_at", "expires_at", "valid_from", "valid_to", "restored_at")
YEARS = (1, 2, 999, 1000, 1001, 1969, 1970, 2026, 9998, 9999)
OFFSETS = ("", "Z", "+00:00", "+05:00", "-05:00", "+14:00", "-12:00", "+23:59", "-23:59")


def _moment(year: int, month: int, day: int, clock: str, offset: str) -> str:
    return f"{year:04d}-{month:02d}-{day:02d}{clock}{offset}"


# The family of edge values, as YAML would hold them: native timestamps, quoted text, dates,
# periods (a year, a month), bare numbers, and values that are not dates at all.
edge_values = st.one_of(
    st.builds(lambda y, m, c, o, quoted: (f"'{v}'" if quoted else v) if (v := _moment(
        y, m, 31 if m == 12 else 1, c, o)) else v,
              st.sampled_from(YEARS), st.sampled_from([1, 12]),
              st.sampled_from(["T00:00:00", "T23:59:59", " 12:00:00", "T23:59:59.999999"]),
              st.sampled_from(OFFSETS), st.booleans()),
    st.sampled_from(["0001-01-01", "9999-12-31", "'0001'", "'9999'", "9999", "1", "0", "10000", "-1",
                     "'0999-12'", "'9999-12'", "'1000'", "'9998-12-31'", "0000-01-01", "'+10000-01-01'",
                     ".inf", "true", "[2024]", "{a: 1}", "''", "~", "'2024-02-30'", "2024-13-01"]),
)


def _odd_file(key: str, value: str, n: int = 0) -> str:
    return (f"---\nid: odd{n}\nrole: memory\nkind: fact\n{key}: {value}\n---\n\n"
            f"The user keeps an odd calendar number {n}\n")


def _assert_room_for_arithmetic(moment: datetime | None) -> None:
    """An accepted date converts to UTC and takes a year either way (what the read path,
    recency, TTL, the timeline and as-of reads do to it)."""
    if moment is None:
        return
    utc = moment.astimezone(UTC)
    assert utc - timedelta(days=366) < utc < utc + timedelta(days=366)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(KEYS), value=edge_values)
@example(key="valid_from", value="'0001-01-01T00:00:00+05:00'")  # OverflowError in every command
@example(key="valid_to", value="'9999-12-31T23:59:59-05:00'")
@example(key="created_at", value="0001-01-01T00:00:00+05:00")
@example(key="expires_at", value="9999-12-31T23:59:59-05:00")
def test_any_edge_date_is_read_with_room_for_arithmetic_or_reported(key: str, value: str) -> None:
    root = Path(tempfile.mkdtemp(prefix="date-edge-"))
    try:
        path = root / "entries" / "global" / "facts" / "odd.md"
        path.parent.mkdir(parents=True)
        path.write_text(_odd_file(key, value), encoding="utf-8")
        listing = MarkdownStore(root).scan()  # never raises
        assert len(listing.memories) + len(listing.problems) == 1
        for problem in listing.problems:
            assert problem.reason and "Traceback" not in problem.reason
        for memory in listing.memories:
            for moment in (memory.created_at, memory.updated_at, memory.deleted_at, memory.expires_at,
                           validity.valid_from(memory), validity.valid_to(memory)):
                _assert_room_for_arithmetic(moment)
            validity.valid_now(memory, datetime.now(UTC))
            validity.live_at(memory, datetime.now(UTC))
            validity.span(memory)
    finally:
        shutil.rmtree(root)


def test_a_file_name_time_at_the_calendars_edge_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "entries" / "global" / "facts" / "00010101T000000Z__edge.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nrole: memory\n---\n\nNo created_at: the name's time is used\n", encoding="utf-8")
    listing = MarkdownStore(tmp_path).scan()
    assert not listing.memories and "outside the years" in listing.problems[0].reason


# Every edge the issue names, each in a file of its own, at once, beside good memories.
FAMILY = [
    ("valid_from", "'0001-01-01T00:00:00+05:00'"), ("valid_to", "'9999-12-31T23:59:59-05:00'"),
    ("valid_from", "0001-01-01T00:00:00+05:00"), ("valid_to", "9999-12-31T23:59:59-05:00"),
    ("created_at", "0001-01-01T00:00:00+14:00"), ("updated_at", "9999-12-31T23:59:59-12:00"),
    ("deleted_at", "0001-01-01T00:00:00+00:30"), ("expires_at", "9999-12-31T23:59:59-05:00"),
    ("restored_at", "'9999-12-31T23:59:59-05:00'"), ("valid_to", "'9999'"), ("valid_from", "'0001-01'"),
    ("valid_to", "9999-12-31"),
]


def _cli(store: Path, llm: ScriptedLLM, *args: str) -> subprocess.CompletedProcess[str]:
    settings_ = [f"llm.base_url={llm.base_url}", "llm.model=test-model", "llm.timeout=10",
                 "watcher.enabled=false"]
    flags = [part for s in settings_ for part in ("--set", s)]
    return subprocess.run([sys.executable, "-m", "desktop_mem.cli", "--store", str(store), *flags, *args],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.timeout(900)
def test_edge_dates_in_many_files_are_listed_problems_and_every_command_works(
    tmp_path: Path, make_config: Any, scripted_llm: ScriptedLLM,
) -> None:
    """A store holding the whole family of edge dates (each in a file of its own, as a sync remote
    could bring them) beside good memories: list, search, chat, history, reindex and doctor (real
    CLI processes) all exit 0 without a traceback and show the good memories; doctor lists each
    odd file as a problem with its reason. Every one of these commands ended in OverflowError."""
    store = tmp_path / "store"
    with MemoryEngine(make_config(store=store)) as engine:
        engine.add("The user's sister lives in Porto")
    facts = store / "entries" / "global" / "facts"
    odd = {f"entries/global/facts/odd{n}.md" for n in range(len(FAMILY))}
    for n, (key, value) in enumerate(FAMILY):
        (facts / f"odd{n}.md").write_text(_odd_file(key, value, n), encoding="utf-8")
    scripted_llm.script(FACTS, '["The user has a cat named Tom"]')
    scripted_llm.script(RECONCILE, '[{"event": "ADD", "text": "The user has a cat named Tom"}]')
    scripted_llm.script(SUMMARY, "The user's sister lives in Porto; the user has a cat.")
    scripted_llm.default_reply = "Your sister lives in Porto."

    runs = {
        "list": _cli(store, scripted_llm, "list"),
        "search": _cli(store, scripted_llm, "search", "where does my sister live"),
        "chat": _cli(store, scripted_llm, "chat", "--message", "Where does my sister live? My cat is Tom."),
        "history": _cli(store, scripted_llm, "history"),
        "reindex": _cli(store, scripted_llm, "reindex"),
        "doctor": _cli(store, scripted_llm, "doctor"),
    }
    for name, run in runs.items():
        said = run.stderr + run.stdout
        assert "Traceback" not in said and "OverflowError" not in said, (name, run.stderr)
        if name != "doctor":  # doctor exits 1 when it has problems to report
            assert run.returncode == 0, (name, run.stderr)
    assert "sister lives in Porto" in runs["list"].stdout and "odd calendar" not in runs["list"].stdout
    assert "sister lives in Porto" in runs["search"].stdout
    assert "Your sister lives in Porto." in runs["chat"].stdout
    assert "reindexed" in runs["reindex"].stdout
    for rel in odd:
        assert rel in runs["doctor"].stdout, runs["doctor"].stdout
    assert runs["doctor"].stdout.count("outside the years 1000 to 9000") == len(FAMILY)
    after = _cli(store, scripted_llm, "list")
    assert "The user has a cat named Tom" in after.stdout  # the chat turn's write path worked
