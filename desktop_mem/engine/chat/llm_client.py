"""OpenAI-compatible chat adapter: completion, streaming, model listing and error mapping.

The only module that talks to the ``openai`` package for chat. Every failure leaves here as an
``LLMError`` whose ``kind`` the callers branch on and whose one-line ``message`` a user can act on.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, NoReturn

import openai

from desktop_mem.engine.chat.llm_endpoint import LLMEndpoint
from desktop_mem.engine.chat.llm_errors import LLMError
from desktop_mem.engine.models import Message

log = logging.getLogger(__name__)

# Local servers (Ollama, llama.cpp, LM Studio) accept any key but the client refuses an empty one.
_PLACEHOLDER_KEY = "not-needed"
_DETAIL_CHARS = 160

# How an endpoint (base URL, model) takes a JSON schema, learned from the first call that asks
# for one and kept for the process, so a server that refuses it is asked once, not every turn:
# "json_schema" (OpenAI, Ollama, LM Studio, llama.cpp's server), "json_object" with a "schema"
# (llama-cpp-python's server, which refuses the former with HTTP 500) or "none" (the prompt alone
# asks for JSON, as before).
SchemaMode = Literal["json_schema", "json_object", "none"]
_SCHEMA_MODES: tuple[SchemaMode, ...] = ("json_schema", "json_object", "none")
_SCHEMA_SUPPORT: dict[tuple[str, str], SchemaMode] = {}
_SCHEMA_LOCK = threading.Lock()
_REFUSALS = (openai.BadRequestError, openai.UnprocessableEntityError, openai.InternalServerError)


# Requests of this process open at a model server, by base URL: a chat reply waiting for its first
# words says how many others this app has at the server (a local server answers one at a time).
_OPEN: dict[str, int] = {}
_OPEN_LOCK = threading.Lock()


def open_requests(base_url: str) -> int:
    """How many chat requests this process has open at ``base_url`` now."""
    with _OPEN_LOCK:
        return _OPEN.get(base_url.rstrip("/"), 0)


def _count_open(base_url: str, step: int) -> None:
    key = base_url.rstrip("/")
    with _OPEN_LOCK:
        _OPEN[key] = max(_OPEN.get(key, 0) + step, 0)


class LLMClient:
    """Chat with one endpoint; maps every transport/protocol failure to ``LLMError``."""

    def __init__(self, endpoint: LLMEndpoint, max_retries: int = 0) -> None:
        self.endpoint = endpoint
        self._url = endpoint.base_url.rstrip("/")
        self._client: openai.OpenAI | None = None
        if self._url.startswith(("http://", "https://")):
            self._client = openai.OpenAI(
                base_url=self._url,
                api_key=endpoint.api_key or _PLACEHOLDER_KEY,
                timeout=endpoint.timeout,
                max_retries=max_retries,
            )

    def __repr__(self) -> str:
        return f"LLMClient({self.endpoint!r})"

    # -- public calls ---------------------------------------------------------------------

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
        json_schema: Mapping[str, Any] | None = None,
    ) -> str:
        """Return the full reply text of one chat completion.

        ``json_schema`` (``{"name": ..., "schema": {...}}``) asks for structured output where the
        endpoint supports it (detected once per endpoint); elsewhere the prompt alone asks for JSON.
        """
        kwargs = self._chat_kwargs(messages, temperature, max_tokens)
        if json_schema is not None:
            return self._complete_structured(kwargs, json_schema)
        if json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        try:
            response = self._create(kwargs)
        except Exception as err:  # noqa: BLE001 - every failure is mapped to an LLMError
            self._raise_mapped(err)
        return self._content_of(response)

    def odds(self, messages: Sequence[Message], answers: Sequence[str]) -> dict[str, float] | None:
        """The model's odds of each one-token answer ("A", "B", ...) as its reply, read from the
        endpoint's logprobs (normalised over ``answers``), or None where the endpoint gives no
        logprobs or none of the answers is among its likeliest tokens. A failed call raises
        ``LLMError`` as ``complete`` does."""
        kwargs = {**self._chat_kwargs(messages, 0.0, 1), "logprobs": True, "top_logprobs": 10}
        try:
            response = self._create(kwargs)
        except _REFUSALS:
            return None  # a server that takes no logprobs: there are no odds to read
        except Exception as err:  # noqa: BLE001 - every failure is mapped to an LLMError
            self._raise_mapped(err)
        return _answer_odds(response, answers)

    def schema_support(self) -> SchemaMode | None:
        """How this endpoint takes a JSON schema (None: not asked yet)."""
        with _SCHEMA_LOCK:
            return _SCHEMA_SUPPORT.get((self._url, self.endpoint.model))

    def _complete_structured(self, kwargs: dict[str, Any], json_schema: Mapping[str, Any]) -> str:
        """A completion constrained by ``json_schema``, trying the known ways once per endpoint."""
        known = self.schema_support()
        for mode in [known] if known is not None else list(_SCHEMA_MODES):
            if mode == "none":
                break
            attempt = dict(kwargs)
            if mode == "json_schema":
                spec = {"name": json_schema["name"], "schema": json_schema["schema"], "strict": True}
                attempt["response_format"] = {"type": "json_schema", "json_schema": spec}
            else:
                attempt["response_format"] = {"type": "json_object", "schema": json_schema["schema"]}
            try:
                response = self._openai().chat.completions.create(**attempt)
            except _REFUSALS as err:
                if isinstance(err, openai.InternalServerError) and "response_format" not in str(err):
                    self._raise_mapped(err)  # a real server failure, not a refused option
                continue  # this server does not take the schema this way: try the next one
            except Exception as err:  # noqa: BLE001 - every failure is mapped to an LLMError
                self._raise_mapped(err)
            self._learn_schema_mode(known, mode)
            return self._content_of(response)
        self._learn_schema_mode(known, "none")
        return self.complete(kwargs["messages"], temperature=kwargs.get("temperature"),
                             max_tokens=kwargs.get("max_tokens"))

    def _learn_schema_mode(self, known: SchemaMode | None, mode: SchemaMode) -> None:
        if known is None:
            log.info("%s takes JSON schemas as: %s", self._url, mode)
            with _SCHEMA_LOCK:
                _SCHEMA_SUPPORT[(self._url, self.endpoint.model)] = mode

    def stream(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Iterator[str]:
        """Yield content deltas; a stream that breaks raises ``cut_stream`` after its partial text."""
        kwargs = self._chat_kwargs(messages, temperature, max_tokens)
        try:
            chunks = self._create({**kwargs, "stream": True})
        except Exception as err:  # noqa: BLE001
            self._raise_mapped(err)
        finished = False
        received = 0
        try:
            for chunk in chunks:
                for choice in getattr(chunk, "choices", None) or []:
                    delta = getattr(choice, "delta", None)
                    text = getattr(delta, "content", None)
                    if isinstance(text, str) and text:
                        received += len(text)
                        yield text
                    if getattr(choice, "finish_reason", None):
                        finished = True
        except Exception as err:  # noqa: BLE001
            if finished:
                # The answer was complete; only the trailing [DONE] or close went wrong.
                log.debug("stream from %s failed after its finish signal: %s", self._url, _short(err))
                return
            if received == 0:
                self._raise_mapped(err)
            reason = (
                "no data in time" if isinstance(err, openai.APITimeoutError) else _short(_root_cause(err))
            )
            raise LLMError(
                "cut_stream",
                f"The reply from {self._url} broke off after {received} characters ({reason}). "
                "The partial text was kept; send the message again to retry.",
            ) from err
        finally:
            closer = getattr(chunks, "close", None)
            if callable(closer):
                closer()
        if not finished:
            raise LLMError(
                "cut_stream",
                f"The reply from {self._url} ended without a finish signal after {received} "
                "characters. The partial text was kept; send the message again to retry.",
            )

    def list_models(self) -> list[str]:
        """Ids of the models the server offers (``GET /models``)."""
        try:
            page = self._openai().models.list()
            return sorted(str(m.id) for m in page.data if getattr(m, "id", None))
        except Exception as err:  # noqa: BLE001
            self._raise_mapped(err)

    def check(self) -> str:
        """Probe the endpoint and return a short status line; raises ``LLMError`` if unusable."""
        model = self.endpoint.model
        try:
            models = self.list_models()
        except LLMError as err:
            if err.kind != "model_missing":
                raise
            # No /models route (some proxies): a one-token completion proves the model instead.
            self.complete([{"role": "user", "content": "ping"}], max_tokens=1)
            return f"Connected to {self._url}; model '{model}' answered."
        if models and model not in models:
            shown = ", ".join(models[:5]) + (" ..." if len(models) > 5 else "")
            raise LLMError(
                "model_missing",
                f"Model '{model}' is not offered by {self._url} (available: {shown}). "
                "Pick one of these in Settings > Model or install the model on the server.",
            )
        return f"Connected to {self._url}; model '{model}' available ({len(models)} models)."

    # -- helpers ---------------------------------------------------------------------------

    def _openai(self) -> openai.OpenAI:
        if self._client is None:
            raise LLMError(
                "unreachable",
                f"The LLM base URL {self.endpoint.base_url!r} is not an http(s) URL. "
                "Set Settings > Endpoint to e.g. http://127.0.0.1:11434/v1.",
            )
        return self._client

    def _create(self, kwargs: dict[str, Any]) -> Any:
        """Create a completion, relaxing options the server rejects (400/422) one at a time.
        Counted open (open_requests) until it answers; a stream until its first chunk."""
        client = self._openai()
        attempt = dict(kwargs)
        _count_open(self._url, +1)
        try:
            while True:
                try:
                    return client.chat.completions.create(**attempt)
                except (openai.BadRequestError, openai.UnprocessableEntityError) as err:
                    relaxed = _relax(attempt, str(err))
                    if relaxed is None:
                        raise
                    attempt = relaxed
        finally:
            _count_open(self._url, -1)

    def _chat_kwargs(
        self, messages: Sequence[Mapping[str, Any]], temperature: float | None, max_tokens: int | None
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.endpoint.model, "messages": list(messages)}
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        return kwargs

    def _content_of(self, response: object) -> str:
        choices = getattr(response, "choices", None)
        if not choices:
            raise LLMError(
                "bad_response",
                f"The LLM at {self._url} answered without any choices (not an OpenAI-style "
                "chat completion). Check that the base URL points at an OpenAI-compatible /v1.",
            )
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if content is None:
            return ""
        if not isinstance(content, str):
            raise LLMError(
                "bad_response",
                f"The LLM at {self._url} returned non-text content; check the model supports chat.",
            )
        return content

    def _raise_mapped(self, err: Exception) -> NoReturn:
        raise self._mapped(err) from err

    def _mapped(self, err: Exception) -> LLMError:
        """Translate an openai/httpx/json exception into a user-facing ``LLMError``."""
        url, model = self._url, self.endpoint.model
        if isinstance(err, LLMError):
            return err
        if isinstance(err, openai.APITimeoutError):
            return LLMError(
                "timeout",
                f"The LLM at {url} did not answer within {self.endpoint.timeout:g} s. "
                "Raise the timeout in Settings > Endpoint or use a smaller model.",
            )
        if isinstance(err, openai.APIConnectionError):
            cause = _root_cause(err)
            if type(cause).__name__ in {"RemoteProtocolError", "ReadError"}:
                return LLMError(
                    "bad_response",
                    f"The LLM at {url} closed the connection mid-answer ({_short(cause)}). "
                    "Try again; if it repeats, check the server's log.",
                )
            return LLMError(
                "unreachable",
                f"Cannot reach the LLM at {url} ({_short(cause)}). "
                "Check Settings > Endpoint or start your local server.",
            )
        if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError):
            return LLMError(
                "auth",
                f"The LLM at {url} refused the API key (HTTP {err.status_code}: "
                f"{self._detail(err)}). Check the API key in Settings > Endpoint.",
            )
        if isinstance(err, openai.NotFoundError):
            return LLMError(
                "model_missing",
                f"Model '{model}' or its route was not found at {url} (HTTP 404: "
                f"{self._detail(err)}). Pick an installed model in Settings > Model and check "
                "the base URL ends in /v1.",
            )
        if isinstance(err, openai.RateLimitError):
            return LLMError(
                "rate_limited",
                f"The LLM at {url} is rate limiting requests (HTTP 429: {self._detail(err)}). "
                "Wait a moment and try again, or check your plan's quota.",
            )
        if isinstance(err, openai.InternalServerError):
            return LLMError(
                "server_error",
                f"The LLM server at {url} failed (HTTP {err.status_code}: {self._detail(err)}). "
                "Check the server's log; try again or restart it.",
            )
        if isinstance(err, openai.APIResponseValidationError):
            return LLMError(
                "bad_response",
                f"The LLM at {url} sent an answer that is not a valid chat completion. "
                "Check that the base URL points at an OpenAI-compatible /v1.",
            )
        if isinstance(err, openai.APIStatusError):
            return LLMError(
                "server_error",
                f"The LLM at {url} rejected the request (HTTP {err.status_code}: "
                f"{self._detail(err)}). Check the model and endpoint settings.",
            )
        if isinstance(err, openai.APIError):
            # A plain APIError is an error event inside a stream.
            return LLMError(
                "server_error",
                f"The LLM at {url} reported an error: {self._detail(err)}. Try again.",
            )
        if isinstance(err, json.JSONDecodeError | ValueError | TypeError | AttributeError):
            return LLMError(
                "bad_response",
                f"The LLM at {url} sent a malformed answer ({_short(err)}). "
                "Check that the base URL points at an OpenAI-compatible /v1.",
            )
        return LLMError(
            "bad_response",
            f"Unexpected failure talking to the LLM at {url} ({_short(err)}).",
        )

    def _detail(self, err: openai.APIError) -> str:
        """The server's own error text, short, one line, with the key scrubbed out."""
        body = err.body
        text = ""
        if isinstance(body, dict):
            text = str(body.get("message") or body.get("detail") or body.get("error") or "")
        elif isinstance(body, str):
            text = body
        if not text:
            text = err.message
        return _scrub(_one_line(text), self.endpoint.api_key)


def _answer_odds(response: object, answers: Sequence[str]) -> dict[str, float] | None:
    """{answer: probability} of a one-token completion's top logprobs (tokens compared without
    case and spaces), normalised over ``answers``; None when there are none to read."""
    choices = getattr(response, "choices", None) or []
    logprobs = getattr(choices[0], "logprobs", None) if choices else None
    content = getattr(logprobs, "content", None) or []
    if not content:
        return None
    mass = dict.fromkeys(answers, 0.0)
    keys = {a.strip().casefold(): a for a in answers}
    for top in getattr(content[0], "top_logprobs", None) or []:
        token, logprob = getattr(top, "token", ""), getattr(top, "logprob", None)
        answer = keys.get(str(token).strip().casefold())
        if answer is not None and isinstance(logprob, int | float) and math.isfinite(logprob):
            mass[answer] += math.exp(logprob)
    total = sum(mass.values())
    return {a: m / total for a, m in mass.items()} if total > 0 else None


def _relax(kwargs: dict[str, Any], error: str) -> dict[str, Any] | None:
    """The request without the option a server refused, or None if nothing is left to drop."""
    relaxed = dict(kwargs)
    if "response_format" in relaxed:
        # Many local servers reject json_object mode; the prompts ask for JSON anyway.
        log.info("server refused response_format=%s; retrying without it",
                 relaxed["response_format"].get("type"))
        del relaxed["response_format"]
    elif "max_tokens" in relaxed and "max_tokens" in error:
        # Newer OpenAI models only accept max_completion_tokens.
        relaxed["max_completion_tokens"] = relaxed.pop("max_tokens")
    elif "temperature" in relaxed and "temperature" in error:
        del relaxed["temperature"]  # reasoning models accept only their default
    else:
        return None
    return relaxed


def _root_cause(err: BaseException) -> BaseException:
    seen: set[int] = set()
    while err.__cause__ is not None and id(err) not in seen:
        seen.add(id(err))
        err = err.__cause__
    return err


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _DETAIL_CHARS else flat[: _DETAIL_CHARS - 3] + "..."


def _short(err: BaseException) -> str:
    text = str(err) or type(err).__name__
    if "refused" in text.lower():
        return "connection refused"
    return _one_line(text)


def _scrub(text: str, secret: str) -> str:
    if secret and len(secret) >= 4:
        text = text.replace(secret, "***")
    return text
