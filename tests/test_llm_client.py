"""LLMClient over real HTTP against the scripted server: replies, streaming and error mapping."""

from __future__ import annotations

import logging
import socket

import pytest

from desktop_mem.engine.chat.llm_client import LLMClient, LLMEndpoint
from desktop_mem.engine.chat.llm_errors import LLMError
from tests.scripted_llm import Fault, ScriptedLLM

HI = [{"role": "user", "content": "hi"}]


def _client(
    server: ScriptedLLM, *, key: str = "sk-secret-123", model: str = "test-model", timeout: float = 10.0
) -> LLMClient:
    return LLMClient(LLMEndpoint(server.base_url, key, model, timeout))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _error(call: object) -> LLMError:
    with pytest.raises(LLMError) as info:
        call()  # type: ignore[operator]
    return info.value


# -- normal operation ------------------------------------------------------------------------


def test_complete_returns_reply_and_sends_parameters(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default_reply = "Hello Alice"
    assert _client(scripted_llm).complete(HI, temperature=0.2, max_tokens=50) == "Hello Alice"
    body = scripted_llm.chat_requests[0].body
    assert body is not None
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("test-model", 0.2, 50)
    assert body["messages"] == HI
    assert "response_format" not in body


def test_stream_yields_deltas_that_make_the_reply(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default_reply = "It will rain tomorrow."
    deltas = list(_client(scripted_llm).stream(HI))
    assert "".join(deltas) == "It will rain tomorrow."
    assert len(deltas) == 4


def test_empty_api_key_sends_a_placeholder(scripted_llm: ScriptedLLM) -> None:
    assert _client(scripted_llm, key="").complete(HI) == "OK"
    assert scripted_llm.chat_requests[0].headers["authorization"] == "Bearer not-needed"


def test_json_mode_asks_for_json_object(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default_reply = '{"a": 1}'
    assert _client(scripted_llm).complete(HI, json_mode=True) == '{"a": 1}'
    body = scripted_llm.chat_requests[0].body
    assert body is not None and body["response_format"] == {"type": "json_object"}


SCHEMA = {"name": "facts", "schema": {"type": "object", "properties": {"facts": {"type": "array"}}}}


def _format(body: dict[str, object] | None) -> object:
    return (body or {}).get("response_format")


def _sent_formats(scripted_llm: ScriptedLLM) -> list[object]:
    """The response formats of this test's own requests (HI). In one full CI run, a request
    without a format from elsewhere reached this test's server (likely a write path an earlier
    test left running, whose server's port the new one reused)."""
    return [_format(r.body) for r in scripted_llm.chat_requests if (r.body or {}).get("messages") == HI]


def test_json_schema_is_sent_as_structured_output_and_remembered(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.default_reply = '{"facts": []}'
    client = _client(scripted_llm)
    assert client.schema_support() is None
    assert client.complete(HI, json_schema=SCHEMA) == '{"facts": []}'
    assert client.complete(HI, json_schema=SCHEMA) == '{"facts": []}'
    sent = _sent_formats(scripted_llm)
    spec = {"name": "facts", "schema": SCHEMA["schema"], "strict": True}
    assert sent == [{"type": "json_schema", "json_schema": spec}] * 2
    assert client.schema_support() == "json_schema"


@pytest.mark.parametrize(
    ("refusal", "kind"),
    [
        # llama-cpp-python's server: only json_object (with a "schema"), json_schema is an HTTP 500.
        (Fault.status(500, "validation error: response_format.type should be 'text' or 'json_object'"),
         "json_object"),
        (Fault.status(400, "response_format json_schema is not supported"), "json_object"),
    ],
)
def test_json_schema_falls_back_to_json_object_with_schema_once_per_endpoint(
    scripted_llm: ScriptedLLM, refusal: Fault, kind: str
) -> None:
    scripted_llm.script(lambda b: (_format(b) or {}).get("type") == "json_schema", refusal)  # type: ignore[union-attr]
    scripted_llm.default_reply = '{"facts": ["x"]}'
    client = _client(scripted_llm)
    for _ in range(2):
        assert client.complete(HI, json_schema=SCHEMA) == '{"facts": ["x"]}'
    sent = _sent_formats(scripted_llm)
    assert [f["type"] for f in sent] == ["json_schema", kind, kind]  # type: ignore[index]
    assert sent[1] == {"type": "json_object", "schema": SCHEMA["schema"]}
    assert client.schema_support() == kind


def test_json_schema_falls_back_to_the_prompt_alone(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(lambda b: "response_format" in b, Fault.status(422, "unknown field response_format"))
    scripted_llm.default_reply = '["fact"]'
    client = _client(scripted_llm)
    for _ in range(2):
        assert client.complete(HI, json_schema=SCHEMA) == '["fact"]'
    sent = _sent_formats(scripted_llm)
    assert [f and f["type"] for f in sent] == ["json_schema", "json_object", None, None]  # type: ignore[index]
    assert client.schema_support() == "none"


def test_a_real_server_failure_with_a_schema_is_reported_not_retried(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(500, "CUDA out of memory"))
    err = _error(lambda: _client(scripted_llm).complete(HI, json_schema=SCHEMA))
    assert err.kind == "server_error" and len(scripted_llm.chat_requests) == 1


def test_json_mode_falls_back_when_server_rejects_response_format(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(
        lambda body: "response_format" in body, Fault.status(400, "response_format unsupported")
    )
    scripted_llm.default_reply = '["fact"]'
    assert _client(scripted_llm).complete(HI, json_mode=True) == '["fact"]'
    sent = [r.body for r in scripted_llm.chat_requests]
    assert len(sent) == 2
    assert sent[0] is not None and "response_format" in sent[0]
    assert sent[1] is not None and "response_format" not in sent[1]


def test_list_models_and_check(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.models = ["b-model", "test-model", "a-model"]
    client = _client(scripted_llm)
    assert client.list_models() == ["a-model", "b-model", "test-model"]
    status = client.check()
    assert "test-model" in status and scripted_llm.base_url in status


def test_check_reports_missing_model_with_alternatives(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.models = ["qwen2.5:1.5b"]
    err = _error(_client(scripted_llm, model="llama3").check)
    assert err.kind == "model_missing"
    assert "llama3" in err.message and "qwen2.5:1.5b" in err.message and "Settings" in err.message


def test_endpoint_repr_and_errors_never_show_the_key(
    scripted_llm: ScriptedLLM, caplog: pytest.LogCaptureFixture
) -> None:
    key = "sk-very-secret-key"
    endpoint = LLMEndpoint(scripted_llm.base_url, key, "test-model")
    assert key not in repr(endpoint) and key not in str(endpoint)
    client = LLMClient(endpoint)
    assert key not in repr(client)
    scripted_llm.script(None, Fault.status(401, f"Incorrect API key provided: {key}"))
    with caplog.at_level(logging.DEBUG):
        err = _error(lambda: client.complete(HI))
    assert err.kind == "auth"
    assert key not in err.message and key not in repr(err)
    assert key not in caplog.text


# -- error mapping ---------------------------------------------------------------------------


def test_unreachable_port() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    client = LLMClient(LLMEndpoint(url, "", "test-model", timeout=5))
    err = _error(lambda: client.complete(HI))
    assert err.kind == "unreachable"
    assert err.message == (
        f"Cannot reach the LLM at {url} (connection refused). "
        "Check Settings > Endpoint or start your local server."
    )
    assert _error(client.check).kind == "unreachable"
    assert _error(lambda: list(client.stream(HI))).kind == "unreachable"


def test_not_a_url() -> None:
    err = _error(lambda: LLMClient(LLMEndpoint("localhost:11434", "", "m")).complete(HI))
    assert err.kind == "unreachable" and "not an http(s) URL" in err.message


def test_wrong_key_is_auth(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.require_key = "sk-right"
    err = _error(lambda: _client(scripted_llm, key="sk-wrong").complete(HI))
    assert err.kind == "auth"
    assert "401" in err.message and "API key" in err.message and "Settings > Endpoint" in err.message
    assert _error(_client(scripted_llm, key="sk-wrong").check).kind == "auth"


def test_forbidden_is_auth(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(403, "no access to this model"))
    err = _error(lambda: _client(scripted_llm).complete(HI))
    assert err.kind == "auth" and "no access to this model" in err.message


def test_unknown_model_is_model_missing(scripted_llm: ScriptedLLM) -> None:
    err = _error(lambda: _client(scripted_llm, model="nope").complete(HI))
    assert err.kind == "model_missing"
    assert "'nope'" in err.message and "404" in err.message and "Settings > Model" in err.message


def test_timeout(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.delay(5))
    err = _error(lambda: _client(scripted_llm, timeout=0.3).complete(HI))
    assert err.kind == "timeout"
    assert "0.3 s" in err.message and "timeout" in err.message


def test_rate_limited(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(429, "slow down"))
    err = _error(lambda: _client(scripted_llm).complete(HI))
    assert err.kind == "rate_limited" and "slow down" in err.message and "try again" in err.message


@pytest.mark.parametrize("code", [500, 502, 503])
def test_server_error(scripted_llm: ScriptedLLM, code: int) -> None:
    scripted_llm.script(None, Fault.status(code, "CUDA out of memory"))
    err = _error(lambda: _client(scripted_llm).complete(HI))
    assert err.kind == "server_error"
    assert f"HTTP {code}" in err.message and "CUDA out of memory" in err.message


def test_other_status_is_server_error_with_detail(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(422, "messages: field required"))
    err = _error(lambda: _client(scripted_llm).complete(HI))
    assert err.kind == "server_error" and "422" in err.message and "field required" in err.message


def test_long_server_detail_is_shortened_to_one_line(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(500, "line one\nline two " + "x" * 2000))
    err = _error(lambda: _client(scripted_llm).complete(HI))
    assert "\n" not in err.message and len(err.message) < 400


def test_malformed_json_is_bad_response(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.malformed_json())
    err = _error(lambda: _client(scripted_llm).complete(HI))
    assert err.kind == "bad_response" and "malformed" in err.message


def test_completion_without_choices_is_bad_response(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(200, {"object": "chat.completion", "choices": []}))
    err = _error(lambda: _client(scripted_llm).complete(HI))
    assert err.kind == "bad_response" and "without any choices" in err.message


def test_connection_dropped_mid_body_is_bad_response(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.cut_stream(1))
    err = _error(lambda: _client(scripted_llm).complete(HI))
    assert err.kind == "bad_response" and "closed the connection" in err.message


# -- streaming failures ----------------------------------------------------------------------


def _drain(client: LLMClient) -> tuple[str, LLMError | None]:
    got: list[str] = []
    try:
        for delta in client.stream(HI):
            got.append(delta)
    except LLMError as err:
        return "".join(got), err
    return "".join(got), None


def test_cut_stream_keeps_partial_text(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.cut_stream(3, text="The answer is forty two"))
    partial, err = _drain(_client(scripted_llm))
    assert partial == "The answer is"
    assert err is not None and err.kind == "cut_stream"
    assert "partial text was kept" in err.message


def test_stream_without_finish_reason_is_cut(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.cut_stream(2, text="half a reply", abrupt=False))
    partial, err = _drain(_client(scripted_llm))
    assert partial == "half a"
    assert err is not None and err.kind == "cut_stream" and "without a finish signal" in err.message


def test_malformed_event_mid_stream_is_cut_after_partial(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.malformed_json())
    partial, err = _drain(_client(scripted_llm))
    assert partial == "Hel"
    assert err is not None and err.kind == "cut_stream"


def test_stream_failing_before_any_text_keeps_its_own_kind(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(500, "boom"))
    partial, err = _drain(_client(scripted_llm))
    assert partial == ""
    assert err is not None and err.kind == "server_error"


def test_stream_timeout_before_first_chunk(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.delay(5))
    partial, err = _drain(_client(scripted_llm, timeout=0.3))
    assert partial == "" and err is not None and err.kind == "timeout"


def test_retries_recover_from_a_transient_error(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(503, "warming up"), times=1)
    scripted_llm.default_reply = "ready"
    client = LLMClient(LLMEndpoint(scripted_llm.base_url, "", "test-model", 10.0), max_retries=1)
    assert client.complete(HI) == "ready"
    assert len(scripted_llm.chat_requests) == 2


def test_max_tokens_becomes_max_completion_tokens_when_refused(scripted_llm: ScriptedLLM) -> None:
    refusal = "Unsupported parameter: 'max_tokens' is not supported with this model."
    scripted_llm.script(lambda body: "max_tokens" in body, Fault.status(400, refusal))
    scripted_llm.script(
        lambda body: "temperature" in body, Fault.status(400, "Unsupported value: 'temperature'")
    )
    assert _client(scripted_llm).complete(HI, temperature=0.0, max_tokens=5, json_mode=True) == "OK"
    last = scripted_llm.chat_requests[-1].body
    assert last is not None and last["max_completion_tokens"] == 5
    assert not {"max_tokens", "temperature", "response_format"} & set(last)


def test_bad_request_that_cannot_be_relaxed_is_reported(scripted_llm: ScriptedLLM) -> None:
    scripted_llm.script(None, Fault.status(400, "This model's maximum context length is 2048 tokens"))
    err = _error(lambda: _client(scripted_llm).complete(HI, max_tokens=5, json_mode=True))
    assert err.kind == "server_error" and "HTTP 400" in err.message and "context length" in err.message
    assert len(scripted_llm.chat_requests) == 2  # once with json mode, once without


def test_a_request_is_counted_open_until_the_server_answers(scripted_llm: ScriptedLLM) -> None:
    import threading
    import time

    from desktop_mem.engine.chat.llm_client import open_requests

    scripted_llm.script(lambda body: True, Fault.delay(1.5, then="late"))
    client = _client(scripted_llm)
    answers: list[str] = []
    worker = threading.Thread(target=lambda: answers.append(client.complete(HI)))
    worker.start()
    deadline = time.monotonic() + 5
    while open_requests(scripted_llm.base_url) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert open_requests(scripted_llm.base_url + "/") == 1  # a waiting reply can say so
    worker.join(10)
    assert answers == ["late"] and open_requests(scripted_llm.base_url) == 0
