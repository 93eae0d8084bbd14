"""Bad input fuzzing (hypothesis): front matter, file names, conversation ids, bodies, HTTP bodies.

The promises: a listing never crashes; a bad file is reported with a reason and never modified;
no input writes outside the store; the HTTP API answers any JSON with JSON, never a 500.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from desktop_mem.api.rest import create_app
from desktop_mem.engine.config import load_config
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EngineError, Memory, ValidationError
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.markdown_store import MarkdownStore
from tests.scripted_llm import ScriptedLLM

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40)
yaml_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=10) | st.integers() | st.booleans() | st.none(), inner, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(["id", "role", "conversation_id", "kind", "source", "created_at", "updated_at",
                        "expires_at", "deleted_at", "replaced_by", "summarized_count", "summary_kind"]) \
    | st.text(max_size=12)
front_matters = st.one_of(
    st.dictionaries(keys, yaml_values, max_size=6).map(lambda d: yaml.safe_dump(d, allow_unicode=True)),
    st.dictionaries(st.integers() | st.booleans() | st.none(), yaml_values, max_size=3).map(yaml.safe_dump),
    yaml_values.map(yaml.safe_dump),
    st.text(max_size=300),  # anything at all, YAML or not
    st.sampled_from([
        'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n'
        "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n",
        "id: !!python/object/apply:os.system ['echo pwned']\n",
        "? [a, b]\n: complex key\n",
        "id: " + "x" * 70_000 + "\n",
        "created_at: 2024-13-45T99:99:99\n",
        "summarized_count: -3\n",
        "role: summary\nsummarized_count: true\n",
        "{id: flow, role: memory}\n",
        "- a list\n- not a mapping\n",
        "kind: [fact]\n",
    ]),
)
bodies = st.text(max_size=200) | st.sampled_from(["", "   ", "\n---\n", "---", "\u202e\u200b"])


def _fresh_store() -> tuple[Path, MarkdownStore]:
    root = Path(tempfile.mkdtemp(prefix="fuzz-store-"))
    return root, MarkdownStore(root, max_file_bytes=2 * 1024 * 1024)


def _assert_listing_reports_and_keeps(store: MarkdownStore, files: dict[Path, bytes]) -> None:
    listing = store.scan()  # must not raise
    assert len(listing.memories) + len(listing.problems) == len(files)
    for problem in listing.problems:
        assert problem.reason and problem.path.startswith("entries/")
    for path, raw in files.items():
        assert path.read_bytes() == raw, f"{path} was modified by a listing"


@FUZZ
@given(meta=front_matters, body=bodies)
@example(meta="created_at: 0000-0-0T0:00:00\n", body="x")  # year 0: PyYAML raised ValueError
@example(meta="{}\n", body="0")  # a flow mapping could be read but not rewritten
@example(meta="{id: flow, note: [1, 2]}\n", body="kept")
@example(meta="Null\n...\n", body="0")  # a null document could be read but not rewritten
def test_any_front_matter_is_read_or_reported_never_crashes_or_changes(meta: str, body: str) -> None:
    root, store = _fresh_store()
    try:
        path = root / "entries" / "c" / "facts" / "20250101T000000Z__x.md"
        path.parent.mkdir(parents=True)
        raw = f"---\n{meta}---\n\n{body}\n".encode("utf-8", "surrogatepass")
        path.write_bytes(raw)
        _assert_listing_reports_and_keeps(store, {path: raw})
        memory = next(iter(store.scan().memories), None)
        if memory is not None:  # a readable file can be rewritten and keeps unknown keys' bytes
            rewritten = store.rewrite(memory, {"updated_at": None, "source": "fuzz"})
            assert rewritten.id == memory.id and rewritten.text == memory.text
    finally:
        shutil.rmtree(root)


@FUZZ
@given(raw=st.binary(max_size=400) | st.sampled_from([b"\x00\x00", b"---\nid: a\n---\n\n\xff\xfe",
                                                      b"\xef\xbb\xbf",
                                                      b"---\nid: a\n---\n\nok\x00", b"\x80abc"]))
def test_binary_and_invalid_utf8_bodies_are_reported_untouched(raw: bytes) -> None:
    root, store = _fresh_store()
    try:
        path = root / "entries" / "c" / "facts" / "20250101T000000Z__b.md"
        path.parent.mkdir(parents=True)
        path.write_bytes(raw)
        _assert_listing_reports_and_keeps(store, {path: raw})
    finally:
        shutil.rmtree(root)


@FUZZ
@given(name=st.text(min_size=1, max_size=60))
def test_any_file_name_is_listed_or_reported(name: str) -> None:
    root, store = _fresh_store()
    try:
        folder = root / "entries" / "conv" / "facts"
        folder.mkdir(parents=True)
        clean = name.replace("/", "_").replace("\x00", "_")
        try:
            path = folder / f"{clean}.md"
            path.write_bytes(b"---\nrole: memory\n---\n\nThe user likes tea\n")
        except (OSError, UnicodeEncodeError):
            return  # the file system itself refuses this name
        files = {p: p.read_bytes() for p in root.rglob("*.md")}
        listing = store.scan()
        visible = [p for p in files if not p.name.startswith(".")]
        assert len(listing.memories) + len(listing.problems) == len(visible)
        assert all(p.read_bytes() == raw for p, raw in files.items())
    finally:
        shutil.rmtree(root)


@FUZZ
@given(meta=front_matters)
@example(meta="title: 0000-0-0T0:00:00\n")  # year 0: PyYAML raised ValueError out of the listing
def test_any_conversation_yaml_never_breaks_the_conversation_list(meta: str) -> None:
    outer = Path(tempfile.mkdtemp(prefix="fuzz-meta-"))
    try:
        config = load_config(flags={"store.path": str(outer / "store"), "watcher.enabled": False,
                                    "store.git_versioning": False})
        folder = outer / "store" / "entries" / "trip"
        folder.mkdir(parents=True)
        (folder / "conversation.yaml").write_text(meta, encoding="utf-8", errors="surrogatepass")
        with MemoryEngine(config) as eng:
            assert "trip" in eng.conversations() or eng._parts.store.conversation_meta("trip").get("deleted")
            assert isinstance(eng.conversation_title("trip"), str)
    finally:
        shutil.rmtree(outer)


def test_a_10_mb_file_and_a_10_mb_text_are_refused_clearly(engine: MemoryEngine) -> None:
    path = engine.root / "entries" / "global" / "facts" / "20250101T000000Z__huge.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = b"---\nrole: memory\n---\n\n" + b"word " * (2 * 1024 * 1024)
    path.write_bytes(raw)
    engine.refresh()
    [problem] = engine.problems()
    assert "over the" in problem.reason and "store.max_file_bytes" in problem.reason
    assert path.read_bytes() == raw
    with pytest.raises(ValidationError, match="byte limit"):
        engine.add("word " * (2 * 1024 * 1024))
    with pytest.raises(ValidationError, match="NUL"):
        engine.add("nul \x00 inside")
    assert engine.list_memories() == []


conversation_ids = st.text(max_size=80) | st.sampled_from([
    "..", ".", "../x", "a/b", "a\\b", "/etc", "C:\\x", "con", "CON", "nul", "com1", "lpt9.txt", "aux",
    "entries", "deleted", ".git", "-rf", "~", "a" * 300, "ü", "日本語", "a\x00b", " ", "a\nb", "%2e%2e",
])


@FUZZ
@given(conv=conversation_ids)
def test_conversation_ids_never_name_a_path_outside_the_store(conv: str) -> None:
    try:
        valid = validate_conversation_id(conv)
    except ValidationError as exc:
        assert str(exc)
        return
    root = Path("/store/entries")
    target = Path(os.path.normpath(root / valid))
    assert target.parent == root and target.name == valid and "/" not in valid and "\\" not in valid


@FEW
@given(conv=conversation_ids)
def test_adding_to_any_conversation_id_stays_inside_the_store(conv: str) -> None:
    outer = Path(tempfile.mkdtemp(prefix="fuzz-conv-"))
    try:
        config = load_config(flags={"store.path": str(outer / "store"), "watcher.enabled": False,
                                    "store.git_versioning": False})
        with MemoryEngine(config) as eng:
            try:
                memory = eng.add("The user likes tea", conversation_id=conv)
            except EngineError:
                memory = None
            if memory is not None:
                assert (outer / "store" / memory.path).resolve().is_relative_to(outer / "store" / "entries")
        assert sorted(p.name for p in outer.iterdir()) == ["store"]
    finally:
        shutil.rmtree(outer)


# --------------------------------------------------------------------------- HTTP


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=15,
)
field_names = st.sampled_from(["model", "messages", "stream", "memory_id", "conversation_id", "strategy",
                               "content", "type", "expires_at", "secrets", "role", "temperature"])
messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "x"])
                                           | json_values, "content": json_values}), max_size=3)
request_bodies = st.one_of(
    json_values,
    st.dictionaries(field_names, json_values, max_size=6),
    st.fixed_dictionaries({"model": st.just("test-model"), "messages": messages},
                          optional={"stream": st.booleans(), "memory_id": conversation_ids,
                                    "strategy": json_values}),
    st.fixed_dictionaries({"content": json_values | st.text(max_size=50)},
                          optional={"type": json_values, "conversation_id": conversation_ids,
                                    "expires_at": json_values, "secrets": json_values}),
)


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[TestClient, MemoryEngine, Path]]:
    outer = Path(tempfile.mkdtemp(prefix="fuzz-api-"))
    llm = ScriptedLLM().start()
    llm.script("You extract facts about the user", "[]")
    llm.default_reply = "OK"
    config = load_config(flags={"store.path": str(outer / "store"), "watcher.enabled": False,
                                "llm.base_url": llm.base_url, "llm.model": "test-model",
                                "llm.timeout": 5, "llm.api_key": "k"})
    engine = MemoryEngine(config)
    engine.open_index()
    with TestClient(create_app(engine, None), base_url="http://127.0.0.1",
                    raise_server_exceptions=False) as client:
        yield client, engine, outer
    engine.wait_idle(60)
    engine.close()
    llm.stop()
    shutil.rmtree(outer)


ROUTES = [("POST", "/v1/chat/completions"), ("POST", "/api/memories"), ("GET", "/api/memories"),
          ("DELETE", "/api/memories/{x}"), ("GET", "/api/chat/sessions/{x}"), ("GET", "/api/memories/{x}")]


@FUZZ
@given(body=request_bodies, route=st.sampled_from(ROUTES), x=st.text(max_size=40), raw=st.booleans())
def test_any_request_body_gets_json_and_never_a_500(
    api: tuple[TestClient, MemoryEngine, Path], body: Any, route: tuple[str, str], x: str, raw: bool
) -> None:
    client, engine, outer = api
    method, template = route
    url = template.replace("{x}", _quote(x or "x"))
    if method == "GET" and template == "/api/memories" and isinstance(body, dict):
        response = client.get(url, params={str(k): str(v) for k, v in body.items()})
    else:
        text = json.dumps(body)
        content = (text if not raw else text[: max(len(text) // 2, 1)]).encode()  # raw: cut JSON
        response = client.request(method, url, content=content, headers={"Content-Type": "application/json"})
    assert response.status_code != 500 and response.status_code < 500 or response.status_code in (502, 504), (
        response.status_code, response.text[:300])
    if response.headers.get("content-type", "").startswith("application/json"):
        payload = response.json()
        if response.status_code >= 400:
            assert payload["error"]["message"]
    else:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
    assert sorted(p.name for p in outer.iterdir()) == ["store"], "something was written outside the store"
    assert not engine.problems(), "the API wrote a file the store cannot read"


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def test_json_bodies_of_every_shape_left_the_store_consistent(
    api: tuple[TestClient, MemoryEngine, Path]
) -> None:
    client, engine, _outer = api
    assert engine.wait_idle(60)
    assert engine._parts.git.dirty_paths() == []
    engine._parts.git.fsck()
    listed = client.get("/api/memories", params={"limit": 1000}).json()
    assert all(isinstance(m, dict) and m["id"] for m in listed["data"])
    assert all(isinstance(m, Memory) for m in engine.list_memories(include_deleted=True))


# ----------------------------------------------------------------- links, depth, git messages

LINK_PLACES = ["entries/c", "entries/c/facts", "entries/c/facts/20250101T000000Z__l.md", "entries/c/deleted",
               "entries/c/deleted/facts", "entries/c/summaries", "entries/c/summaries/summary.md",
               "entries/c/conversation.yaml", "entries/c/turns/user", "entries/global"]
LINK_TARGETS = st.sampled_from(["folder", "file", "dangling", "store-file"])
OPERATIONS = st.lists(st.sampled_from(["add", "delete", "restore", "title", "summary", "export", "refresh",
                                       "external"]), min_size=1, max_size=5)


@FEW
@given(place=st.sampled_from(LINK_PLACES), target=LINK_TARGETS, operations=OPERATIONS)
def test_a_link_anywhere_in_the_store_is_never_followed(
    place: str, target: str, operations: list[str]
) -> None:
    from desktop_mem.engine.transfer.exporters import export_zip

    outer = Path(tempfile.mkdtemp(prefix="fuzz-link-"))
    try:
        outside = outer / "outside"
        (outside / "facts").mkdir(parents=True)
        marker = outside / "facts" / "20250101T000000Z__o.md"
        marker.write_text("---\nrole: memory\n---\n\nOUTSIDE-MARKER\n", encoding="utf-8")
        before = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
        config = load_config(flags={"store.path": str(outer / "store"), "watcher.enabled": False})
        with MemoryEngine(config) as eng:
            fact = eng.add("The user likes tea", conversation_id="c")
            link = eng.root / place
            if link.exists():
                shutil.rmtree(link) if link.is_dir() else link.unlink()
            link.parent.mkdir(parents=True, exist_ok=True)
            destination = {"folder": outside, "file": marker, "dangling": outer / "nowhere",
                           "store-file": eng.root / fact.path}[target]
            link.symlink_to(destination)
            for operation in operations:
                with contextlib.suppress(EngineError):
                    _operate(eng, operation, fact.id, outer, export_zip)
            assert all("OUTSIDE-MARKER" not in m.text for m in eng.list_memories(include_deleted=True))
            assert link.is_symlink(), "the link was replaced or moved"
            report = eng.doctor()
            assert not report.ok
        after = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
        assert after == before, "something was written outside the store through a link"
        if (outer / "out.zip").exists():
            import zipfile

            with zipfile.ZipFile(outer / "out.zip") as archive:
                assert all(b"OUTSIDE-MARKER" not in archive.read(n) for n in archive.namelist())
    finally:
        shutil.rmtree(outer)


def _operate(eng: MemoryEngine, operation: str, fact_id: str, outer: Path, export_zip: Any) -> None:
    if operation == "add":
        eng.add("The user likes coffee", conversation_id="c")
    elif operation == "delete":
        eng.delete(fact_id)
    elif operation == "restore":
        eng.restore(fact_id)
    elif operation == "title":
        eng._parts.store.write_conversation_meta("c", {"title": "Linked"})
    elif operation == "summary":
        eng._parts.store.write_summary("c", "A summary.", 1)
    elif operation == "export":
        (outer / "out.zip").unlink(missing_ok=True)
        export_zip(eng._parts, outer / "out.zip")
    elif operation == "refresh":
        eng.refresh()
    else:
        eng.apply_external_changes([m.path for m in eng.list_memories(include_deleted=True)]
                                   + ["entries/c/facts/20250101T000000Z__l.md", "entries/c"])


@FUZZ
@given(depth=st.integers(min_value=1, max_value=3000), shape=st.sampled_from(["[", "{a: "]))
@example(depth=1000, shape="[")  # the adversarial pass: RecursionError in every write command
@example(depth=20000, shape="[")
def test_any_nesting_depth_is_read_or_reported_and_the_manifest_saves(depth: int, shape: str) -> None:
    from desktop_mem.engine.store.manifest import Manifest

    root, store = _fresh_store()
    try:
        closing = "]" if shape == "[" else "}"
        path = root / "entries" / "c" / "facts" / "20250101T000000Z__d.md"
        path.parent.mkdir(parents=True)
        raw = f"---\nx: {shape * depth}1{closing * depth}\nrole: memory\n---\n\nnested\n".encode()
        path.write_bytes(raw)
        _assert_listing_reports_and_keeps(store, {path: raw})
        listing = store.scan()
        if listing.problems:
            # Reported as a problem with a reason, whichever layer refused it (our depth check or
            # PyYAML's own nesting limit since 6.0.4): the behaviour is ours, the wording is not.
            assert [p.path for p in listing.problems] == ["entries/c/facts/20250101T000000Z__d.md"]
            assert listing.problems[0].reason.strip()
        manifest = Manifest(root / "memory_index.json")
        for memory in listing.memories:
            manifest.remember_file(memory, path.stat())
        manifest.save()  # must not raise RecursionError
    finally:
        shutil.rmtree(root)


commit_messages = st.text(min_size=1, max_size=120).filter(lambda t: "\x00" not in t) | st.sampled_from([
    "\x1e", "\x1f", "\x1e\x1f\x1e", ":000000 100644 0000 1111 A\x00", "\n\n\n", "Desktop-Mem-Operation: add",
    "a\x1fb\x1fc\x1fd\x1fe\x1ff", "\x1e" + "0" * 40 + "\x1f",
])


@FEW
@given(messages=st.lists(commit_messages, min_size=1, max_size=4))
def test_history_reads_any_commit_message(messages: list[str]) -> None:
    import subprocess

    from desktop_mem.engine.history.git_history import GitHistory

    root = Path(tempfile.mkdtemp(prefix="fuzz-git-"))
    try:
        history = GitHistory(root)
        history.init()
        for i, message in enumerate(messages):
            (root / f"f{i}.txt").write_text(str(i), encoding="utf-8")
            subprocess.run(["git", "-C", str(root), "add", "--", f"f{i}.txt"], check=True)
            subprocess.run(["git", "-C", str(root), "-c", "user.name=x", "-c", "user.email=x@x", "commit",
                            "-q", "--allow-empty-message", "--cleanup=verbatim", "-F", "-"],
                           input=message.replace("\x00", "").encode("utf-8", "surrogateescape"), check=True)
        commits = history.log(limit=50)
        assert len(commits) == len(messages)
        expected = [f"f{i}.txt" for i in reversed(range(len(messages)))]
        assert [c.changes[0].new_path for c in commits] == expected
        history.close()
    finally:
        shutil.rmtree(root)


# --------------------------------------------------------------------------- import entries

import_values = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20) \
    | st.sampled_from(["\ud800", "\x00", "2024-13-45", "2024-01-01T00:00:00Z", "summary", "global", "../x",
                       "x" * 300])
import_entries = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"text": st.text(max_size=40) | import_values},
        optional={"id": import_values,
                  "role": st.sampled_from(["memory", "user", "assistant", "summary", "x"]) | import_values,
                  "kind": import_values, "conversation_id": conversation_ids | import_values,
                  "created_at": import_values, "updated_at": import_values, "deleted_at": import_values,
                  "deleted": st.booleans(), "replaced_by": import_values, "summarized_count": import_values,
                  "extra": st.dictionaries(st.sampled_from(["id", "role", "conversation_id", "replaced_by",
                                                            "mood", "deleted_at", "x"]) | st.text(max_size=8),
                                           json_values | import_values, max_size=4) | json_values}),
)


@FEW
@given(items=st.lists(import_entries, max_size=6), ours=st.booleans())
def test_any_import_entries_are_planned_then_written_whole_or_refused(items: list[Any], ours: bool) -> None:
    from desktop_mem.engine.transfer.importers import apply_import, plan_import

    outer = Path(tempfile.mkdtemp(prefix="fuzz-import-"))
    try:
        data: Any = {"format": "desktop-mem-export", "version": 1, "memories": items} if ours else items
        source = outer / "import.json"
        source.write_text(json.dumps(data), encoding="utf-8")
        config = load_config(flags={"store.path": str(outer / "store"), "watcher.enabled": False,
                                    "security.secrets": "redact"})
        with MemoryEngine(config) as eng:
            eng.add("The user likes tea", conversation_id="global")
            head = eng._parts.git.head()
            try:
                plan = plan_import(eng._parts, source)
            except EngineError as exc:  # the file as a whole: one clear reason, nothing written
                assert str(exc) and eng._parts.git.head() == head
                return
            apply_import(eng._parts, plan)
            eng.refresh()
            assert eng.problems() == [], "an import wrote a file the store cannot read"
            assert eng._parts.git.dirty_paths() == []
            ids = [m.id for m in eng.list_memories(include_deleted=True)]
            assert len(ids) == len(set(ids)), "an import wrote a second file with an existing id"
            assert plan_import(eng._parts, source).entries == (), "re-importing would add something"
        assert sorted(p.name for p in outer.iterdir()) == ["import.json", "store"]
    finally:
        shutil.rmtree(outer)
