"""Facts about the user are the user's (issue 21): filed in the user scope, read in every chat;
an existing store is migrated in one commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from desktop_mem.engine.chat import scope_migration
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import GLOBAL_CONVERSATION


def _legacy_store(make_config: Callable[..., Any]) -> tuple[Any, dict[str, str]]:
    """A store as the write path filed it before issue 21: every fact under its conversation."""
    config = make_config()
    with MemoryEngine(config) as eng:
        ids = {
            "job": eng.add("The user works as a nurse", conversation_id="intro", source="llm").id,
            "daughter": eng.add("The user's daughter is 7 years old", conversation_id="intro",
                                source="pattern").id,
            "trip": eng.add("The user is planning a trip to Rome next week", conversation_id="intro",
                            source="llm").id,
            "hand": eng.add("The user likes the blue theme", conversation_id="intro", source="manual").id,
        }
        eng.open_index()  # the index knows them under "intro"
    scope_migration.marker(config.store_path).unlink()  # made before the migration existed
    return config, ids


def test_an_old_store_moves_the_users_facts_to_the_user_scope_in_one_commit(
    make_config: Callable[..., Any],
) -> None:
    config, ids = _legacy_store(make_config)
    with MemoryEngine(config) as eng:
        head = eng.history(limit=1)[0]
        assert head.subject.startswith(scope_migration.SUBJECT) and "2 facts" in head.subject
        for key in ("job", "daughter"):
            moved = eng.get(ids[key])  # the same id: memory_id keeps working
            assert moved.conversation_id == GLOBAL_CONVERSATION
            assert moved.path.startswith("entries/global/facts/")
            assert moved.extra["from_conversation"] == "intro"
            assert not (eng.root / "entries/intro/facts" / moved.path.rsplit("/", 1)[1]).exists()
        assert eng.get(ids["trip"]).conversation_id == "intro"  # this chat's task stays
        assert eng.get(ids["hand"]).conversation_id == "intro"  # put there by hand: stays
        assert not eng._parts.git.dirty_paths(".gitignore"), "the moves are committed, nothing left over"
        commits = len(eng.history(limit=50))
    with MemoryEngine(config) as eng:  # idempotent: nothing to do, no commit
        assert len(eng.history(limit=50)) == commits


def test_a_migrated_fact_is_found_from_another_conversation(make_config: Callable[..., Any]) -> None:
    config, ids = _legacy_store(make_config)
    with MemoryEngine(config) as eng:
        eng.open_index()
        found = [r.memory.id for r in eng.search("what is my job", conversation_id="weekend-plans")]
        assert ids["job"] in found
        assert ids["trip"] not in found  # another chat's task is not read here
