"""What the manifest records of each indexed memory stays what earlier versions wrote: a digest
that changed would make every memory look changed at the next start, and a store of 100,000
memories would be embedded again (~5 minutes) for nothing (issue #25 made the digest cheaper)."""

from __future__ import annotations

from datetime import UTC, datetime

from desktop_mem.engine.index.index_sync import _digest, index_metadata
from desktop_mem.engine.models import Memory


def test_digests_are_the_ones_earlier_versions_recorded() -> None:
    memory = Memory(
        id="6f1d2c3e-0000-4000-8000-000000000001", role="user", conversation_id="kitchen",
        text="Ich mag Grüntee — 茶 \u2028 \"quoted\"", created_at=datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC),
        path="entries/kitchen/turns/user/20250304T050607Z__6f1d2c3e-0000-4000-8000-000000000001.md")
    # Values written by json.dumps(value, sort_keys=True, default=str) + sha1, before issue #25.
    assert _digest(memory.text) == "7f8eb31bd88e209b"
    assert _digest([index_metadata(memory), "The user said: hello"]) == "ab1789161be1ca0d"
