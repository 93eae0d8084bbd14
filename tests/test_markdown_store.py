"""The Markdown store over a real temporary folder: layout, round-trips, bad files, hostile ids."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from desktop_mem.engine.models import ConflictError, ValidationError
from desktop_mem.engine.store.conversation_ids import validate_conversation_id
from desktop_mem.engine.store.markdown_store import MarkdownStore


@pytest.fixture
def store(tmp_path: Path) -> MarkdownStore:
    return MarkdownStore(tmp_path, max_file_bytes=64 * 1024)


def test_layout_follows_the_design(store: MarkdownStore) -> None:
    fact = store.new_memory("User lives in Berlin", conversation_id="global", kind="fact")
    user = store.new_memory("hi", conversation_id="c1", role="user")
    bot = store.new_memory("hello", conversation_id="c1", role="assistant")
    summary = store.write_summary("c1", "They said hi.", summarized_count=2)
    assert fact.path.startswith("entries/global/facts/") and fact.path.endswith(f"__{fact.id}.md")
    assert user.path.startswith("entries/c1/turns/user/")
    assert bot.path.startswith("entries/c1/turns/assistant/")
    assert summary.path == "entries/c1/summaries/summary.md"
    assert summary.id == "summary-c1" and summary.summarized_count == 2
    text = (store.root / fact.path).read_text()
    assert text.startswith("---\nid: ") and "role: memory" in text and text.endswith("User lives in Berlin\n")
    assert not list(store.root.rglob("*.tmp")), "atomic writes leave no temp files"


def test_unknown_keys_are_kept_byte_for_byte(store: MarkdownStore) -> None:
    m = store.new_memory("User likes tea", conversation_id="global")
    path = store.root / m.path
    custom = 'mood:    "calm"   # set by hand\ntags: [a,  b]\nnote: |\n  two\n  lines\n'
    path.write_text(path.read_text().replace("role: memory\n", "role: memory\n" + custom))
    m = store.read(m.path)
    edited = store.rewrite(m, {"updated_at": m.created_at}, "User likes green tea")
    tomb = store.soft_delete(edited, replaced_by="abc")
    restored = store.restore(tomb)
    final = (store.root / restored.path).read_text()
    assert custom in final
    assert restored.extra["mood"] == "calm" and restored.text == "User likes green tea"


def test_soft_delete_moves_and_stamps_then_restore_clears(store: MarkdownStore) -> None:
    m = store.new_memory("User owns a cat", conversation_id="c1")
    tomb = store.soft_delete(m, replaced_by="new-id")
    assert tomb.path == m.path.replace("entries/c1/", "entries/c1/deleted/")
    assert tomb.deleted and tomb.deleted_at is not None and tomb.replaced_by == "new-id"
    assert not (store.root / m.path).exists()
    back = store.restore(tomb)
    assert back.path == m.path and not back.deleted and back.deleted_at is None and back.replaced_by is None


def test_rewrite_refuses_when_the_file_changed_on_disk(store: MarkdownStore) -> None:
    m = store.new_memory("User drinks coffee", conversation_id="global")
    path = store.root / m.path
    path.write_text(path.read_text().replace("coffee", "espresso"))
    with pytest.raises(ConflictError):
        store.rewrite(m, {}, "User drinks tea", expected_hash=m.content_hash)
    assert "espresso" in path.read_text()


BAD_FILES: dict[str, bytes] = {
    "malformed.md": b"---\nid: [unclosed\nrole: memory\n---\n\nbody\n",
    "latin1.md": "---\nid: x\n---\n\ncaf\xe9\n".encode("latin-1"),
    "binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR",
    "empty.md": b"",
    "huge.md": b"---\nid: big\n---\n\n" + b"x" * (70 * 1024),
    "bomb.md": b"---\na: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n---\n\nbody\n",
    "list.md": b"---\n- just\n- a list\n---\n\nbody\n",
    "intkey.md": b"---\n1: one\n---\n\nbody\n",
    "badrole.md": b"---\nrole: wizard\n---\n\nbody\n",
    "baddate.md": b"---\ncreated_at: yesterday-ish\n---\n\nbody\n",
    "unclosed.md": b"---\nid: x\nrole: memory\n\nno closing line\n",
}


def test_bad_files_are_reported_with_reasons_and_never_touched(store: MarkdownStore) -> None:
    good = store.new_memory("User lives in Berlin", conversation_id="global")
    folder = store.root / "entries/global/facts"
    for name, data in BAD_FILES.items():
        (folder / name).write_bytes(data)
    as_root = os.geteuid() == 0  # root reads files without permission, so skip that case
    unreadable = folder / "noperm.md"
    if not as_root:
        unreadable.write_text("---\nid: n\n---\n\nsecret\n")
        unreadable.chmod(0)
    listing = store.scan()
    if not as_root:
        unreadable.chmod(0o644)
    assert [m.id for m in listing.memories] == [good.id]
    reasons = {Path(p.path).name: p.reason for p in listing.problems}
    assert "not valid YAML" in reasons["malformed.md"]
    assert "not valid UTF-8" in reasons["latin1.md"]
    assert "NUL" in reasons["binary.md"]
    assert "empty" in reasons["empty.md"]
    assert "limit" in reasons["huge.md"]
    assert "anchors or aliases" in reasons["bomb.md"]
    assert "mapping" in reasons["list.md"]
    assert "not text" in reasons["intkey.md"]
    assert "wizard" in reasons["badrole.md"]
    assert "ISO 8601" in reasons["baddate.md"]
    assert "closed" in reasons["unclosed.md"] or "unclosed.md" not in reasons
    if not as_root:
        assert "cannot read" in reasons["noperm.md"]
    for name, data in BAD_FILES.items():
        assert (folder / name).read_bytes() == data, f"{name} was modified"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "..",
        "../x",
        "a/b",
        "a\\b",
        "/etc",
        ".hidden",
        "x" * 65,
        "con",
        "NUL.txt",
        "deleted",
        "sp ace",
        "tab\t",
        "new\nline",
        "é",
        "a..b",
        None,
        42,
    ],
)
def test_hostile_conversation_ids_are_refused_clearly(bad: object) -> None:
    with pytest.raises(ValidationError) as info:
        validate_conversation_id(bad)
    assert "onversation id" in str(info.value)


def test_hostile_ids_never_create_files_outside_the_store(store: MarkdownStore) -> None:
    for bad in ("../../escape", "/tmp/abs", "..", "a/../../b"):
        with pytest.raises(ValidationError):
            store.new_memory("text", conversation_id=bad)
    assert not (store.root.parent / "escape").exists()
    with pytest.raises(ValidationError):
        store.abspath("entries/../../etc/passwd")


@pytest.mark.parametrize("good", ["global", "work-2024", "a.b_c", "X1"])
def test_reasonable_conversation_ids_pass(good: str) -> None:
    assert validate_conversation_id(good) == good
