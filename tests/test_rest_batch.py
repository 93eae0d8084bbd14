"""Issue #22, all or nothing over REST: `POST /api/memories/batch` stores every memory in one
commit or none of them, and a refusal names the item and says that nothing was saved, so a
client that retries never makes duplicates. Real `serve` process, real HTTP, real git.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.mcp_clients import ServeProcess, git


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[ServeProcess]:
    proc = ServeProcess(tmp_path / "store", extra_args=("--set", "store.max_file_bytes=4000")).wait_ready()
    yield proc
    proc.stop()


def _commits(store: Path) -> int:
    return int(git(store, "rev-list", "--count", "--all").strip())


def _stored(serve: ServeProcess) -> list[str]:
    page = httpx.get(f"{serve.url}/api/memories", headers=serve.headers, params={"limit": 1000}).json()
    return [m["text"] for m in page["data"]]


def test_a_batch_with_one_bad_item_saves_nothing_and_names_the_item(serve: ServeProcess,
                                                                    tmp_path: Path) -> None:
    store = tmp_path / "store"
    before = _commits(store)
    url = f"{serve.url}/api/memories/batch"
    bad_items = {
        "too big": {"memories": [{"content": "The user likes tea"}, {"content": "x " * 3000},
                                 {"content": "The user lives in Ghent"}]},
        "a secret": {"memories": [{"content": "The user likes tea"},
                                  {"content": "my password for the bank is hunter2xyz!"},
                                  {"content": "The user lives in Ghent"}]},
        "a bad type": {"memories": [{"content": "The user likes tea"}, {"content": "The user lives in Ghent"},
                                    {"content": "The user runs", "type": "rumour"}]},
    }
    for name, body in bad_items.items():
        answer = httpx.post(url, json=body, headers=serve.headers, timeout=60)
        assert answer.status_code == 400, (name, answer.text)
        message = answer.json()["error"]["message"]
        where = "item 3 of 3" if name == "a bad type" else "item 2 of 3"
        assert where in message and "nothing was saved" in message, (name, message)
        if name == "a secret":
            assert answer.json()["error"]["code"] == "secret_detected"
            assert "hunter2xyz" not in answer.text
    assert _stored(serve) == []
    assert _commits(store) == before
    assert "likes tea" not in git(store, "log", "--all", "-p")


def test_a_good_batch_is_one_commit(serve: ServeProcess, tmp_path: Path) -> None:
    store = tmp_path / "store"
    before = _commits(store)
    body = {"conversation_id": "trip", "memories": [{"content": "The user flies to Oslo in May"},
                                                    {"content": "The user prefers window seats",
                                                     "type": "preference"}]}
    answer = httpx.post(f"{serve.url}/api/memories/batch", json=body, headers=serve.headers, timeout=60)
    assert answer.status_code == 201, answer.text
    data = answer.json()["data"]
    assert [(m["text"], m["kind"], m["conversation_id"]) for m in data] == [
        ("The user flies to Oslo in May", "fact", "trip"),
        ("The user prefers window seats", "preference", "trip")]
    assert _commits(store) == before + 1
    assert sorted(_stored(serve)) == ["The user flies to Oslo in May", "The user prefers window seats"]
    again = httpx.post(f"{serve.url}/api/memories/batch", json=body, headers=serve.headers, timeout=60)
    assert again.status_code == 201 and _commits(store) == before + 1  # a retry stores nothing twice
    assert len(_stored(serve)) == 2
