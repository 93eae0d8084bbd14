"""`desktop-mem serve` over real HTTP: the official openai client and httpx against a real uvicorn,
backed by the real engine and the scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import openai
import pytest
import uvicorn

from desktop_mem.api.rest import create_app
from desktop_mem.engine.facade import MemoryEngine
from desktop_mem.engine.models import EventType
from tests.llm_roles import FACTS, RECONCILE, SUMMARY, is_chat
from tests.scripted_llm import Fault, ScriptedLLM


@dataclass
class Served:
    engine: MemoryEngine
    url: str
    llm: ScriptedLLM

    def client(self, **kwargs: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=kwargs.pop("api_key", "unused"), **kwargs)

    def user_turns(self, conv: str) -> list[str]:
        return [m.text for m in self.engine.list_memories(conversation_id=conv, role="user")]


def start_server(app: Any) -> tuple[uvicorn.Server, threading.Thread, str]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        threading.Event().wait(0.02)
    return server, thread, f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def make_served(
    make_config: Callable[..., Any], scripted_llm: ScriptedLLM
) -> Iterator[Callable[..., Served]]:
    running: list[tuple[uvicorn.Server, threading.Thread, MemoryEngine]] = []

    def factory(token: str | None = None, **overrides: Any) -> Served:
        settings = {
            "llm.base_url": scripted_llm.base_url,
            "llm.model": "test-model",
            "llm.api_key": "test",
            "llm.timeout": 2,
            **overrides,
        }
        engine = MemoryEngine(make_config(**settings))
        engine.open_index()
        server, thread, url = start_server(create_app(engine, token))
        running.append((server, thread, engine))
        return Served(engine, url, scripted_llm)

    yield factory
    for server, thread, engine in running:
        server.should_exit = True
        thread.join(30)
        engine.wait_idle(30)
        engine.close()


@pytest.fixture
def served(make_served: Callable[..., Served]) -> Served:
    return make_served()


def test_openai_client_fact_is_stored_injected_and_updated(served: Served) -> None:
    llm, engine = served.llm, served.engine
    llm.script(FACTS, '["The user lives in Berlin"]', times=1)
    llm.script(FACTS, '["The user lives in Munich"]')
    llm.script(RECONCILE, '[{"event": "UPDATE", "id": "0", "text": "The user lives in Munich"}]')
    llm.script(SUMMARY, "The user lives somewhere in Germany.")
    llm.script(lambda b: is_chat(b) and "Where do I live" in b["messages"][-1]["content"], "In Berlin.")
    llm.script(is_chat, "Nice!")
    client = served.client()

    told = client.chat.completions.create(
        model="test-model",
        extra_body={"memory_id": "trip"},
        messages=[{"role": "user", "content": "I live in Berlin."}],
    )
    assert told.choices[0].message.content == "Nice!" and told.choices[0].finish_reason == "stop"
    assert told.object == "chat.completion" and told.usage is not None and told.usage.completion_tokens > 0
    assert engine.wait_idle(30)
    [fact] = engine.list_memories(role="memory")
    assert fact.text == "The user lives in Berlin"
    assert (engine.root / fact.path).read_text(encoding="utf-8").endswith("The user lives in Berlin\n")
    added = engine.history(limit=1)[0]
    assert any(e.type == EventType.ADD and e.memory_id == fact.id for e in added.events)

    stream = client.chat.completions.create(
        model="test-model",
        stream=True,
        extra_headers={"X-Memory-Id": "trip"},
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "I live in Berlin."},
            {"role": "assistant", "content": "Nice!"},
            {"role": "user", "content": "Where do I live?"},
        ],
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "In Berlin."
    assert chunks[-1].choices[0].finish_reason == "stop"
    injected = (chunks[0].model_extra or {})["x_memory"]["memories"]
    assert "The user lives in Berlin" in [m["text"] for m in injected]
    sent = [r.body for r in served.llm.chat_requests if is_chat(r.body or {})][-1]
    assert sent is not None and "The user lives in Berlin" in sent["messages"][0]["content"]
    assert [m["content"] for m in sent["messages"][1:]] == ["I live in Berlin.", "Nice!", "Where do I live?"]
    assert engine.wait_idle(30)

    client.chat.completions.create(
        model="test-model",
        extra_body={"conversation_id": "trip"},
        messages=[{"role": "user", "content": "Actually I moved to Munich."}],
    )
    assert engine.wait_idle(30)
    tomb = engine.get(fact.id)
    assert tomb.deleted and tomb.replaced_by is not None
    assert engine.get(tomb.replaced_by).text == "The user lives in Munich"
    assert f"replaced_by: {tomb.replaced_by}" in (engine.root / tomb.path).read_text(encoding="utf-8")
    assert any(e.type == EventType.UPDATE for e in engine.history(limit=1)[0].events)
    assert served.user_turns("trip") == [
        "I live in Berlin.",
        "Where do I live?",
        "Actually I moved to Munich.",
    ]


FAULTS = [
    (Fault.status(500, "boom"), openai.InternalServerError, "HTTP 500"),
    (Fault.status(401, "bad key"), openai.AuthenticationError, "refused the API key"),
    (Fault.delay(5), openai.InternalServerError, "did not answer within 2 s"),
    (Fault.malformed_json(), openai.APIStatusError, "test"),
    (Fault.cut_stream(2), openai.APIStatusError, "broke off"),
]


@pytest.mark.parametrize(
    ("fault", "error", "text"), FAULTS, ids=["500", "401", "timeout", "malformed", "cut"]
)
def test_upstream_faults_give_clear_errors_and_lose_no_turn(
    served: Served, fault: Fault, error: type[Exception], text: str
) -> None:
    served.llm.script(is_chat, fault)
    served.llm.script(FACTS, '["The user has a cat"]')
    client = served.client()  # default retries: the server must say "do not retry" (the turn is stored)
    with pytest.raises(error) as raised:
        client.chat.completions.create(
            model="test-model",
            extra_body={"memory_id": "pets"},
            messages=[{"role": "user", "content": "I have a cat."}],
        )
    status = getattr(raised.value, "status_code", None)
    assert status in (401, 502, 504) and "127.0.0.1" in str(raised.value)
    if text != "test":
        assert text in str(raised.value)
    with pytest.raises(openai.APIError) as in_stream:
        list(
            client.chat.completions.create(
                model="test-model",
                stream=True,
                extra_body={"memory_id": "pets"},
                messages=[{"role": "user", "content": "I have a dog."}],
            )
        )
    assert "127.0.0.1" in str(in_stream.value)
    assert served.engine.wait_idle(30)
    assert served.user_turns("pets") == ["I have a cat.", "I have a dog."]
    facts = [m.text for m in served.engine.list_memories(role="memory")]
    assert "The user has a cat" in facts


def test_raw_sse_stream_ends_with_done(served: Served) -> None:
    served.llm.script(is_chat, "one two three")
    body = {"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "count"}]}
    with httpx.stream("POST", f"{served.url}/v1/chat/completions", json=body, timeout=30) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    events = [json.loads(line[6:]) for line in lines[:-1]]
    assert {e["object"] for e in events} == {"chat.completion.chunk"}
    assert "".join(e["choices"][0]["delta"].get("content", "") for e in events) == "one two three"
    assert served.user_turns("default") == ["count"]


def test_sessions_show_summary_and_summarized_count(make_served: Callable[..., Served]) -> None:
    served = make_served(**{"memory.summary_threshold": 2, "memory.summary_keep_last": 2})
    served.llm.script(SUMMARY, "The user talked about tea and coffee.")
    served.llm.script(FACTS, "[]")
    client = served.client()
    for text in ("I like tea.", "I like coffee."):
        client.chat.completions.create(
            model="test-model",
            messages=[{"role": "user", "content": text}],
            extra_headers={"X-Conversation-Id": "drinks"},
        )
        assert served.engine.wait_idle(30)
    listed = httpx.get(f"{served.url}/api/chat/sessions").json()["sessions"]
    [drinks] = [s for s in listed if s["id"] == "drinks"]
    assert drinks["summary"] == "The user talked about tea and coffee."
    # The write path folds every message not covered yet (the newest are still sent verbatim).
    assert drinks["summarizedCount"] == 4 and drinks["messageCount"] == 4 and drinks["updatedAt"]
    detail = httpx.get(f"{served.url}/api/chat/sessions/drinks").json()
    assert [m["content"] for m in detail["messages"]][::2] == ["I like tea.", "I like coffee."]
    assert detail["summarizedCount"] == 4
    missing = httpx.get(f"{served.url}/api/chat/sessions/nothing-here")
    assert missing.status_code == 404 and "no conversation" in missing.json()["error"]["message"]


def test_memory_rest_api(served: Served) -> None:
    api = f"{served.url}/api/memories"
    for i in range(5):
        assert (
            httpx.post(api, json={"content": f"fact number {i}", "conversation_id": "work"}).status_code
            == 201
        )
    pref = httpx.post(api, json={"content": "User prefers dark mode", "type": "preference"}).json()
    assert pref["type"] == "preference" and pref["conversation_id"] == "global"

    everything = [m["content"] for m in httpx.get(api, params={"type": "fact"}).json()["data"]]
    assert sorted(everything) == [f"fact number {i}" for i in range(5)]
    facts = httpx.get(api, params={"type": "fact", "limit": 2, "offset": 1}).json()
    assert facts["total"] == 5 and facts["has_more"] and facts["offset"] == 1
    assert [m["content"] for m in facts["data"]] == everything[1:3]
    last = httpx.get(api, params={"type": "fact", "limit": 2, "offset": 4}).json()
    assert [m["content"] for m in last["data"]] == everything[4:] and not last["has_more"]
    found = httpx.get(api, params={"search": "DARK"}).json()
    assert [m["id"] for m in found["data"]] == [pref["id"]]
    assert httpx.get(api, params={"conversation": "work"}).json()["total"] == 5
    assert httpx.get(f"{api}/{pref['id']}").json()["content"] == "User prefers dark mode"
    assert httpx.get(f"{served.url}/healthz").json()["memories"] == 6

    gone = httpx.delete(f"{api}/{pref['id']}").json()
    assert gone["deleted"] and "/deleted/" in gone["path"] and (served.engine.root / gone["path"]).exists()
    assert httpx.get(f"{served.url}/healthz").json()["memories"] == 5  # the count follows the store
    assert httpx.get(api, params={"search": "dark"}).json()["total"] == 0
    assert httpx.get(api, params={"search": "dark", "deleted": "true"}).json()["total"] == 1
    again = httpx.delete(f"{api}/{pref['id']}")
    assert again.status_code == 409 and "already deleted" in again.json()["error"]["message"]
    assert httpx.delete(f"{api}/no-such-memory").status_code == 404

    for bad, words in (
        ({"content": "x", "type": "opinion"}, "not one of"),
        ({"content": " "}, "empty"),
        ({"content": "x", "expires_at": "2001-01-01T00:00:00Z"}, "in the past"),
        ({"content": "x", "conversation_id": "../etc"}, "path separator"),
        ({}, "content"),
    ):
        response = httpx.post(api, json=bad)
        assert response.status_code == 400 and words in response.json()["error"]["message"], bad
    assert httpx.get(api, params={"type": "opinion"}).status_code == 400
    assert httpx.get(api, params={"limit": 0}).status_code == 400


def test_rest_api_never_gives_out_a_held_back_hand_edit(served: Served) -> None:
    from tests.test_hand_edit_secrets import KEY, _hand_edit

    api = f"{served.url}/api/memories"
    tea = served.engine.add("User likes tea")
    coffee = served.engine.add("User likes coffee")
    _hand_edit(served.engine, tea.path, f"Tea shop key {KEY}")
    served.engine.apply_external_changes([tea.path])
    listed = httpx.get(api)
    assert [m["id"] for m in listed.json()["data"]] == [coffee.id] and KEY not in listed.text
    refused = httpx.get(f"{api}/{tea.id}")
    assert refused.status_code == 400 and KEY not in refused.text
    assert tea.path in refused.json()["error"]["message"] and "desktop-mem secrets" in refused.text


def test_rest_sessions_show_a_held_back_turn_and_summary_redacted(served: Served) -> None:
    from desktop_mem.engine.models import Operation
    from tests.test_hand_edit_secrets import KEY, _hand_edit

    engine = served.engine
    conv = engine.new_conversation("Trip")
    with engine._parts.writer.transaction(Operation.SUMMARY, "Summary", conv) as tx:
        summary = tx.write_summary(conv, "The user plans a trip.", 0)
    turn = engine.add("Book the Porto hotel", conversation_id=conv, role="user")
    _hand_edit(engine, turn.path, f"Book the Porto hotel with key {KEY}")
    _hand_edit(engine, summary.path, f"The user plans a trip; portal key {KEY}")
    engine.apply_external_changes([turn.path, summary.path])
    assert engine.held_back_ids() == {turn.id, summary.id}
    shown = httpx.get(f"{served.url}/api/chat/sessions/{conv}")
    listed = httpx.get(f"{served.url}/api/chat/sessions")
    assert KEY not in shown.text and KEY not in listed.text
    body = shown.json()
    assert body["messages"][0]["content"] == "Book the Porto hotel with key [redacted:openai_key]"
    assert body["summary"] == "The user plans a trip; portal key [redacted:openai_key]"


def test_bearer_token_is_required_when_set(make_served: Callable[..., Served]) -> None:
    served = make_served(token="s3cret-token")
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
        response = httpx.get(f"{served.url}/api/memories", headers=headers)
        assert response.status_code == 401 and "bearer token" in response.json()["error"]["message"]
    assert (
        httpx.get(f"{served.url}/healthz", headers={"Authorization": "Bearer s3cret-token"}).status_code
        == 200
    )
    with pytest.raises(openai.AuthenticationError):
        served.client().models.list()
    assert [m.id for m in served.client(api_key="s3cret-token").models.list()] == ["test-model"]


def test_non_loopback_host_without_token_is_refused(tmp_path: Any) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "desktop_mem.cli",
            "--store",
            str(tmp_path / "s"),
            "serve",
            "--no-token",  # the opt-out is for loopback only (issue #22)
            "--host",
            "0.0.0.0",
            "--port",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ.copy(),
    )
    assert proc.returncode == 1 and "without a token" in proc.stderr and "--token" in proc.stderr
    assert not (tmp_path / "s").exists()


def test_hostile_requests_are_refused_without_touching_the_store(served: Served) -> None:
    url = f"{served.url}/v1/chat/completions"
    message = [{"role": "user", "content": "hi"}]
    for body, headers, words in (
        ({"memory_id": "../../etc"}, {}, "path separator"),
        ({}, {"X-Memory-Id": "con"}, "reserved"),
        ({"conversation_id": "a" * 100}, {}, "longer than"),
    ):
        response = httpx.post(url, json={"model": "m", "messages": message, **body}, headers=headers)
        assert response.status_code == 400 and words in response.json()["error"]["message"]
    last_not_user = httpx.post(url, json={"messages": [{"role": "assistant", "content": "x"}]})
    assert last_not_user.status_code == 400 and "last message must be a user" in last_not_user.text
    no_messages = httpx.post(url, json={"model": "m"})
    assert no_messages.status_code == 400 and "messages" in no_messages.json()["error"]["message"]
    big = {"model": "m", "messages": [{"role": "user", "content": "x" * 1_200_000}]}
    too_big = httpx.post(url, json=big)
    assert too_big.status_code == 413 and "larger than" in too_big.json()["error"]["message"]
    chunked = httpx.post(
        url,
        content=iter([b"{" + b" " * 600_000, b" " * 600_000 + b"}"]),
        headers={"Content-Type": "application/json"},
    )
    assert chunked.status_code == 413
    rebinding = httpx.get(f"{served.url}/api/memories", headers={"Host": "evil.example:8100"})
    assert rebinding.status_code == 403
    cross_origin = httpx.post(url, json={"messages": message}, headers={"Origin": "https://evil.example"})
    assert cross_origin.status_code == 403
    assert served.engine.list_memories(role="user") == []
    assert not (served.engine.root.parent / "etc").exists()
    assert httpx.get(f"{served.url}/nowhere").json()["error"]["message"] == "no route GET /nowhere"


def test_models_are_passed_through_and_upstream_errors_mapped(served: Served) -> None:
    served.llm.models = ["test-model", "other-model"]
    assert [m.id for m in served.client().models.list()] == ["other-model", "test-model"]
    served.llm.require_key = "a-different-key"
    response = httpx.get(f"{served.url}/v1/models")
    assert response.status_code == 401 and "refused the API key" in response.json()["error"]["message"]


def test_client_disconnect_stops_the_reply(served: Served) -> None:
    served.llm.script(is_chat, Fault.delay(1.5, then="a reply nobody reads"))
    served.llm.script(FACTS, "[]")
    finished = threading.Event()
    served.engine.subscribe_outcomes(lambda outcome: finished.set())
    body = {"model": "test-model", "stream": True, "messages": [{"role": "user", "content": "hello?"}]}
    with httpx.stream("POST", f"{served.url}/v1/chat/completions", json=body, timeout=30) as response:
        first = next(response.iter_lines())
        assert "x_memory" in first  # the read path ran; the model has not answered yet
    assert finished.wait(30) and served.engine.wait_idle(30)
    assert served.user_turns("default") == ["hello?"]
    # The reply was cancelled when the client left, so no assistant turn was stored.
    assert served.engine.list_memories(conversation_id="default", role="assistant") == []


def test_sigterm_finishes_the_queued_write_path_and_releases_the_store(
    tmp_path: Any, make_config: Callable[..., Any], scripted_llm: ScriptedLLM
) -> None:
    """`kill` (SIGTERM) on `serve` while a turn's facts are still being extracted: the process
    exits only after the write path stored them, and leaves no lock behind. (uvicorn raises the
    signal again after its graceful stop; with the default action the process died at once.)"""
    import signal as signals

    from desktop_mem.engine.store.store_lock import read_holder
    from tests.mcp_clients import ServeProcess
    from tests.scripted_llm import Fault

    scripted_llm.script(FACTS, Fault.delay(2.0, then='["The user lives in Leuven"]'))
    scripted_llm.script(RECONCILE, '[{"event": "ADD", "text": "The user lives in Leuven"}]')
    scripted_llm.script(SUMMARY, "The user lives in Leuven.")
    scripted_llm.script(is_chat, "Nice!")
    store = tmp_path / "store"
    serve = ServeProcess(store, extra_args=(
        "--set", f"llm.base_url={scripted_llm.base_url}", "--set", "llm.api_key=test",
        "--set", "llm.model=test-model", "--set", "watcher.enabled=false")).wait_ready()
    try:
        client = openai.OpenAI(base_url=f"{serve.url}/v1", api_key=serve.token)  # generated by serve
        reply = client.chat.completions.create(model="test-model", extra_body={"memory_id": "home"},
                                               messages=[{"role": "user", "content": "I moved to Leuven."}])
        assert reply.choices[0].message.content == "Nice!"
        serve.proc.send_signal(signals.SIGTERM)  # the extraction is still waiting on the LLM
        assert serve.proc.wait(60) == 128 + signals.SIGTERM
    finally:
        serve.stop()
    assert read_holder(store) == {}
    with MemoryEngine(make_config(**{"store.path": str(store)})) as engine:
        assert not engine.read_only  # the lock was released
        facts = [m.text for m in engine.list_memories(role="memory")]
    assert facts == ["The user lives in Leuven"]


def test_a_temporary_request_reads_memory_and_stores_nothing(served: Served) -> None:
    engine = served.engine
    engine.add("The user lives in Berlin", conversation_id="trip")
    commits = [c.sha for c in engine.history(limit=20)]
    served.llm.script(is_chat, "In Berlin.")
    client = served.client()
    by_field = client.chat.completions.create(
        model="test-model", extra_body={"memory_id": "trip", "temporary": True},
        messages=[{"role": "user", "content": "Where do I live? I have a cat named Tom."}])
    by_header = client.chat.completions.create(
        model="test-model", stream=True, extra_headers={"X-Memory-Id": "trip", "X-Memory-Temporary": "true"},
        messages=[{"role": "user", "content": "Where do I live?"}])
    assert by_field.choices[0].message.content == "In Berlin."
    assert "".join(c.choices[0].delta.content or "" for c in by_header if c.choices) == "In Berlin."
    assert engine.wait_idle(30)
    sent = [r.body for r in served.llm.chat_requests if is_chat(r.body or {})]
    assert len(sent) == 2 and all("The user lives in Berlin" in b["messages"][0]["content"] for b in sent)
    assert served.user_turns("trip") == [] and [m.text for m in engine.list_memories(role="memory")] == [
        "The user lives in Berlin"]
    assert [c.sha for c in engine.history(limit=20)] == commits
    assert not any(FACTS in r.system_text for r in served.llm.requests)
    refused = httpx.post(f"{served.url}/v1/chat/completions", headers={"X-Memory-Temporary": "maybe"},
                         json={"messages": [{"role": "user", "content": "hi"}]}, timeout=30)
    assert refused.status_code == 400 and "X-Memory-Temporary" in refused.text
    assert served.user_turns("default") == []
