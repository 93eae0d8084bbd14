"""The scripted server against the real ``openai`` client: protocol, scripting and every fault."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.scripted_llm import Fault, ScriptedLLM


def _client(server: ScriptedLLM, key: str = "sk-test", timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key=key, timeout=timeout, max_retries=0)


def _chat(client: openai.OpenAI, text: str, system: str = "You are helpful.", **kw: Any) -> str:
    response = client.chat.completions.create(
        model="test-model",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": text}],
        **kw,
    )
    return response.choices[0].message.content or ""


def test_base_url_is_loopback_v1(scripted_llm: ScriptedLLM) -> None:
    assert scripted_llm.base_url == f"http://127.0.0.1:{scripted_llm.port}/v1"


def test_non_streaming_completion_has_openai_shape(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default_reply = "Hello there"
    response = _client(scripted_llm).chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "hi"}]
    )
    assert response.object == "chat.completion"
    assert response.model == "test-model"
    assert response.choices[0].message.role == "assistant"
    assert response.choices[0].message.content == "Hello there"
    assert response.choices[0].finish_reason == "stop"
    assert response.usage is not None and response.usage.completion_tokens == 2


def test_streaming_sends_chunks_that_join_to_the_reply(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default_reply = "The quick brown fox"
    stream = _client(scripted_llm).chat.completions.create(
        model="test-model",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert "".join(deltas) == "The quick brown fox"
    assert len([d for d in deltas if d]) == 4
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].usage is not None  # include_usage adds a final usage chunk


def test_rules_pick_reply_by_system_prompt_user_text_or_callable(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script("Extract facts", '["The user likes tea"]')
    scripted_llm.script("weather", "It is sunny")
    scripted_llm.script(lambda body: body.get("temperature") == 0.5, "warm")
    scripted_llm.default_reply = "default"
    client = _client(scripted_llm)
    assert _chat(client, "hello", system="Extract facts about the user") == '["The user likes tea"]'
    assert _chat(client, "what is the weather?") == "It is sunny"
    assert _chat(client, "hi", temperature=0.5) == "warm"
    assert _chat(client, "anything else") == "default"


def test_first_matching_rule_wins_and_times_limits_it(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, "first", times=1)
    scripted_llm.script(None, "second")
    scripted_llm.script(None, "never")
    client = _client(scripted_llm)
    assert [_chat(client, "a"), _chat(client, "b"), _chat(client, "c")] == ["first", "second", "second"]


def test_callable_reply_sees_the_request(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, lambda body: body["messages"][-1]["content"].upper())
    assert _chat(_client(scripted_llm), "echo me") == "ECHO ME"


def test_every_request_is_recorded(scripted_llm: ScriptedLLM) -> None:
    client = _client(scripted_llm)
    _chat(client, "remember this", system="SYS", temperature=0.1, max_tokens=7)
    client.models.list()
    chat = scripted_llm.chat_requests
    assert len(chat) == 1 and len(scripted_llm.requests) == 2
    assert chat[0].system_text == "SYS"
    assert chat[0].last_user_text == "remember this"
    assert chat[0].body is not None and chat[0].body["max_tokens"] == 7
    assert chat[0].headers["authorization"] == "Bearer sk-test"
    assert scripted_llm.requests[1].path == "/v1/models"


def test_models_list_and_unknown_model_is_404(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.models = ["a-model", "test-model"]
    client = _client(scripted_llm)
    assert [m.id for m in client.models.list().data] == ["a-model", "test-model"]
    with pytest.raises(openai.NotFoundError, match="does not exist"):
        client.chat.completions.create(model="missing", messages=[{"role": "user", "content": "x"}])


def test_require_key_refuses_wrong_key(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.require_key = "sk-right"
    with pytest.raises(openai.AuthenticationError):
        _chat(_client(scripted_llm, key="sk-wrong"), "hi")
    assert _chat(_client(scripted_llm, key="sk-right"), "hi") == "OK"


def test_embeddings_are_deterministic_unit_vectors(scripted_llm: ScriptedLLM) -> None:
    client = _client(scripted_llm)
    first = client.embeddings.create(model="test-model", input=["cat", "dog"])
    again = client.embeddings.create(model="test-model", input="cat")
    assert len(first.data) == 2 and len(first.data[0].embedding) == scripted_llm.embedding_dim
    assert first.data[0].embedding == again.data[0].embedding
    assert first.data[0].embedding != first.data[1].embedding
    assert sum(v * v for v in first.data[0].embedding) == pytest.approx(1.0)


def test_fault_delay_makes_the_client_time_out(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.delay(5))
    with pytest.raises(openai.APITimeoutError):
        _chat(_client(scripted_llm, timeout=0.3), "hi")


def test_fault_delay_then_answers(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.delay(0.05, then="late"))
    assert _chat(_client(scripted_llm), "hi") == "late"


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_fault_status_raises_the_matching_openai_error(
    scripted_llm: ScriptedLLM, code: int, error: type[Exception]
) -> None:
    scripted_llm.script(None, Fault.status(code, "scripted trouble"))
    with pytest.raises(error, match="scripted trouble"):
        _chat(_client(scripted_llm), "hi")


def test_fault_status_with_dict_body_is_sent_verbatim(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(418, {"detail": "teapot"}))
    with pytest.raises(openai.APIStatusError) as info:
        _chat(_client(scripted_llm), "hi")
    assert info.value.status_code == 418
    assert info.value.body == {"detail": "teapot"}


def test_fault_malformed_json_breaks_parsing(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.malformed_json())
    with pytest.raises(json.JSONDecodeError):
        _chat(_client(scripted_llm), "hi")


def test_fault_malformed_json_in_a_stream_breaks_after_first_chunk(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.malformed_json())
    stream = _client(scripted_llm).chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    got: list[str] = []
    with pytest.raises(json.JSONDecodeError):
        for chunk in stream:
            got.append(chunk.choices[0].delta.content or "")
    assert "".join(got) == "Hel"


def test_fault_cut_stream_drops_the_connection_mid_stream(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.cut_stream(2, text="alpha beta gamma delta"))
    stream = _client(scripted_llm).chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    got: list[str] = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            got.append(chunk.choices[0].delta.content or "")
    assert "".join(got) == "alpha beta"


def test_fault_cut_stream_clean_close_has_no_finish_reason(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.cut_stream(3, text="one two three four", abrupt=False))
    stream = _client(scripted_llm).chat.completions.create(
        model="test-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "one two three"
    assert all(c.choices[0].finish_reason is None for c in chunks)


def test_fault_cut_stream_on_a_plain_request_truncates_the_body(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.cut_stream(1))
    with pytest.raises(openai.APIConnectionError):
        _chat(_client(scripted_llm), "hi")


@pytest.mark.parametrize("stream", [False, True])
def test_fault_huge_sends_n_bytes_of_content(scripted_llm: ScriptedLLM, stream: bool) -> None:
    scripted_llm.script(None, Fault.huge(300_000))
    client = _client(scripted_llm)
    if stream:
        chunks = client.chat.completions.create(
            model="test-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        text = _chat(client, "hi")
    assert len(text) == 300_000


def test_server_keeps_serving_after_a_client_gave_up(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.delay(0.5), times=1)
    with pytest.raises(openai.APITimeoutError):
        _chat(_client(scripted_llm, timeout=0.1), "hi")
    assert _chat(_client(scripted_llm), "hi again") == "OK"


def test_stopped_server_refuses_connections() -> None:
    server = ScriptedLLM().start()
    base_url = server.base_url
    assert _chat(_client(server), "hi") == "OK"
    server.stop()
    fresh = openai.OpenAI(base_url=base_url, api_key="x", timeout=5, max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        _chat(fresh, "hi")
