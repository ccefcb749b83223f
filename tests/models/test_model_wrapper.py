"""The one model wrapper (`Model`) over thin providers: the same cache, retries, parameters and counters for every
provider, and `make_client` wrapping what a registered factory returns."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from culturekb import registry
from culturekb.errors import ConfigError, ProviderError
from culturekb.models import (
    Model,
    ModelClient,
    ModelResponse,
    OpenAICompatClient,
    OpenAICompatProvider,
    ResponseCache,
    is_provider,
    make_client,
    register_client,
)
from culturekb.models._retry import HTTPStatusError

FIRST = [{"role": "user", "content": "Which emotion does a red lantern evoke?"}]
SECOND = [{"role": "user", "content": "And a white chrysanthemum?"}]


class ScriptedProvider:
    """An in-process provider: answers (or raises) from a script, and records the parameters it was given."""

    def __init__(self, replies: list[Any], params: frozenset[str] | None = None) -> None:
        self.id = "scripted:m"
        self.replies = list(replies)
        self.seen: list[dict[str, Any]] = []
        if params is not None:
            self.params = params

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> ModelResponse:
        self.seen.append(params)
        reply = self.replies.pop(0) if self.replies else "ok"
        if isinstance(reply, Exception):
            raise reply
        return ModelResponse(text=reply, model=self.id, usage={"total_tokens": 3})


def _run(model: Model) -> list[Any]:
    """The same calls on any model: a 500 then an answer, the same request again (a cache hit), then a 400."""
    first = model.complete(FIRST, temperature=0.0)
    again = model.complete(FIRST, temperature=0.0)
    with pytest.raises(ProviderError, match="HTTP 400"):
        model.complete(SECOND, temperature=0.0)
    return [first, again]


def test_one_wrapper_counts_two_providers_identically(openai_server, tmp_path) -> None:
    server = openai_server([(500, '{"error": {"message": "boom"}}'), "first answer",
                            (400, '{"error": {"message": "bad parameter"}}')])
    over_http = Model(OpenAICompatProvider("m", base_url=server.base_url, timeout_s=5.0),
                      cache=ResponseCache(tmp_path / "a.sqlite"), backoff_s=0.01)
    in_process = Model(ScriptedProvider([HTTPStatusError(500, "boom"), "first answer",
                                         HTTPStatusError(400, "bad parameter")]),
                       cache=ResponseCache(tmp_path / "b.sqlite"), backoff_s=0.01)
    try:
        answers = {name: _run(model) for name, model in (("http", over_http), ("in-process", in_process))}
    finally:
        over_http.close()
        in_process.close()
    for first, again in answers.values():
        assert first.text == again.text == "first answer"
        assert (first.cached, first.attempts) == (False, 2) and (again.cached, again.attempts) == (True, 0)
    counts = over_http.fault_counts()
    assert counts == in_process.fault_counts()
    assert counts["attempts"] == server.calls == 3
    assert (counts["answers"], counts["cache_hits"], counts["retries"], counts["failures"]) == (1, 1, 1, 1)
    assert counts["retries_by_cause"]["5xx"] == 1 and counts["failures_by_cause"]["other"] == 1


def test_server_only_parameters_are_dropped_for_a_provider_that_does_not_take_them(openai_server) -> None:
    local = ScriptedProvider(["a", "b"], params=frozenset({"temperature", "max_tokens"}))
    model = Model(local)
    try:
        model.complete(FIRST, temperature=0.2, response_format={"type": "json_object"}, extra_body={"top_k": 5})
        assert local.seen == [{"temperature": 0.2}]
        with pytest.raises(ConfigError, match=r"unsupported parameters \['beam_width'\]"):
            model.complete(FIRST, beam_width=4)
        with pytest.raises(ConfigError, match="stream"):
            model.complete(FIRST, stream=True)
        assert len(local.seen) == 1  # a refused call reaches no provider and counts no attempt
        assert model.fault_counts()["attempts"] == 1
    finally:
        model.close()
    server = openai_server(["ok"])  # a server takes every parameter: they travel in the body
    with OpenAICompatClient("m", base_url=server.base_url) as client:
        client.complete(FIRST, response_format={"type": "json_object"})
    assert server.requests[0]["response_format"] == {"type": "json_object"}


class Echo:
    """The smallest provider: one `async complete`, nothing else (no id, no constructor)."""

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> ModelResponse:
        await asyncio.sleep(0.01)
        return ModelResponse(text=messages[-1]["content"].upper(), model="echo")


def test_a_minimal_provider_from_the_registry_gets_the_cache_and_complete_many(tmp_path) -> None:
    assert is_provider(Echo()) and not is_provider(OpenAICompatClient("m", base_url="http://127.0.0.1:1/v1"))
    with registry.CLIENTS.isolated():
        register_client("echo", Echo)
        model = make_client("echo", cache=ResponseCache(tmp_path / "c.sqlite"), max_concurrency=2,
                            timeout_s=5.0)  # a server option: dropped, since Echo takes none
        assert isinstance(model, Model) and isinstance(model, ModelClient) and model.id == "echo"
        batch = [[{"role": "user", "content": f"q{i}"}] for i in range(5)]
        try:
            assert [a.text for a in model.complete_many(batch)] == [f"Q{i}" for i in range(5)]
            again = model.complete_many([batch[1], [{"role": "user", "content": "new"}]])
            assert [a.text for a in again] == ["Q1", "NEW"] and [a.cached for a in again] == [True, False]
            assert asyncio.run(model.acomplete_many(batch[:2]))[0].cached
            counts = model.fault_counts()
            assert (counts["attempts"], counts["answers"], counts["cache_hits"]) == (6, 6, 3)
        finally:
            model.close()
        with pytest.raises(ConfigError, match="takes no value"):
            make_client("echo:x")


def test_a_factory_returning_a_full_client_is_used_as_it_is(openai_server) -> None:
    server = openai_server(["plain"])
    with registry.CLIENTS.isolated():
        register_client("full", lambda argument, base_url=None, **kw: OpenAICompatClient(argument, base_url, **kw))
        client = make_client("full:m", base_url=server.base_url, max_retries=0)
        assert isinstance(client, OpenAICompatClient)
        try:
            assert client.retry.max_retries == 0
            assert client.complete(FIRST).text == "plain"
        finally:
            client.close()


def test_provider_errors_of_the_project_pass_through_unretried() -> None:
    model = Model(ScriptedProvider([ConfigError("the image cannot be read")]), max_retries=3, backoff_s=0.01)
    try:
        with pytest.raises(ConfigError, match="cannot be read"):
            model.complete(FIRST)
        answers = model.complete_many([FIRST, SECOND], return_exceptions=True)
    finally:
        model.close()
    assert [a.text for a in answers] == ["ok", "ok"]
    counts = model.fault_counts()
    assert (counts["attempts"], counts["retries"], counts["failures"]) == (3, 0, 1)
    with pytest.raises(ConfigError, match="no `id`"):
        Model(Echo())
