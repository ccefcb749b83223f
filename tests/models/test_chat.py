from __future__ import annotations

import asyncio
import importlib
import socket
import time
from typing import Any

import pytest

from culturekb.errors import ConfigError, ModelOutputError, ProviderError
from culturekb.models import (
    Model,
    ModelClient,
    OpenAICompatClient,
    OpenAICompatProvider,
    ResponseCache,
    complete_json,
    make_client,
)
from culturekb.models import chat as chat_module
from culturekb.models._retry import Failure, HTTPStatusError, classify, describe_failure
from culturekb.testing import ScriptedReply

USER = [{"role": "user", "content": "Which emotion does a red lantern evoke?"}]
ERROR_429 = (429, '{"error": {"message": "rate limited", "type": "rate_limit"}}')
ERROR_500 = (500, '{"error": {"message": "boom", "type": "server_error"}}')
ERROR_400 = (400, '{"error": {"message": "bad parameter temperature", "type": "invalid_request_error"}}')


BACKENDS = ["direct", "aiohttp", "httpx"]
"""Plain aiohttp, the openai SDK over aiohttp, the SDK over httpx: every behaviour is proven on each."""


@pytest.fixture(params=BACKENDS)
def make(request):
    """Build clients with fast retries, on each HTTP backend, and close them after the test."""
    clients: list[OpenAICompatClient] = []

    def build(base_url: str, **kw: Any) -> OpenAICompatClient:
        kw.setdefault("http_backend", request.param)
        kw.setdefault("backoff_s", 0.01)
        kw.setdefault("timeout_s", 5.0)
        client = OpenAICompatClient("test-model", base_url=base_url, **kw)
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


def test_success_returns_text_usage_and_provenance(openai_server, make):
    server = openai_server(['{"label": "awe"}'])
    client: OpenAICompatClient = make(server.base_url)
    assert isinstance(client, ModelClient)
    response = client.complete(USER, temperature=0.0, max_tokens=20, top_k=5)
    assert response.text == '{"label": "awe"}'
    assert response.model == client.id == "openai:test-model"
    assert response.cached is False
    assert response.usage["total_tokens"] > 0
    assert response.latency_s > 0
    body = server.requests[0]
    assert body["model"] == "test-model"
    assert body["messages"] == USER
    assert body["temperature"] == 0.0 and body["max_tokens"] == 20
    assert body["top_k"] == 5  # server-specific parameters travel in the body
    assert client.calls == server.calls == 1
    headers = server.request_headers[0]
    assert headers["authorization"] == "Bearer EMPTY"  # no key in the environment: what local servers accept
    assert headers["content-type"].startswith("application/json")


def test_non_ascii_messages_and_the_key_from_the_environment_arrive(openai_server, make, monkeypatch):
    monkeypatch.setenv("CULTUREKB_TEST_KEY", "sk-test")
    server = openai_server(lambda body: body["messages"][0]["content"])
    client = make(server.base_url, api_key_env="CULTUREKB_TEST_KEY")
    text = "灯笼让人想起什么？ — فانوس"
    assert client.complete([{"role": "user", "content": text}], extra_body={"top_k": 3}).text == text
    assert server.request_headers[0]["authorization"] == "Bearer sk-test"
    assert server.requests[0]["top_k"] == 3


def test_retries_429_then_succeeds(openai_server, make):
    server = openai_server([ERROR_429, ERROR_429, "fine"])
    client = make(server.base_url)
    assert client.complete(USER).text == "fine"
    assert server.calls == 3
    assert client.calls == 3 and client.retries == 2


def test_retry_after_header_is_honoured(openai_server, make, monkeypatch):
    from culturekb.models._retry import Retrier

    delays: list[float] = []
    chosen = Retrier._delay_after

    def spy(self: Any, exc: Exception, attempt: int) -> float:
        delays.append(chosen(self, exc, attempt))
        return delays[-1]

    monkeypatch.setattr(Retrier, "_delay_after", spy)
    server = openai_server([ScriptedReply(status=429, headers={"Retry-After": "0"}), "ok"])
    client = make(server.base_url, backoff_s=30.0)  # without Retry-After the backoff would wait ~15 s
    assert client.complete(USER).text == "ok"
    assert delays == [0.0]  # the server's Retry-After, not the backoff (no wall clock: issue 24 item 10)


def test_retries_500_then_succeeds(openai_server, make):
    server = openai_server([ERROR_500, "recovered"])
    client = make(server.base_url)
    assert client.complete(USER).text == "recovered"
    assert server.calls == 2


def test_timeout_is_retried(openai_server, make):
    server = openai_server([ScriptedReply(content="too late", delay_s=2.0), "in time"])
    client = make(server.base_url, timeout_s=0.3)
    assert client.complete(USER).text == "in time"
    assert server.calls == 2 and client.retries == 1
    server = openai_server(ScriptedReply(content="always late", delay_s=2.0))
    client = make(server.base_url, timeout_s=0.2, max_retries=1)
    with pytest.raises(ProviderError, match="timed out.*gave up after 2 attempts") as info:
        client.complete(USER)
    assert "raise timeout_s (now 0.2s)" in str(info.value)


def test_400_fails_at_once_with_a_clear_message(openai_server, make):
    server = openai_server([ERROR_400, "never reached"])
    client = make(server.base_url, max_retries=4)
    with pytest.raises(ProviderError) as info:
        client.complete(USER)
    message = str(info.value)
    assert server.calls == 1
    assert "test-model" in message and server.base_url in message
    assert "400" in message and "bad parameter temperature" in message
    assert "Fix:" in message


def test_exhausted_retries_raise_provider_error(openai_server, make):
    server = openai_server(ERROR_429)
    client = make(server.base_url, max_retries=2)
    with pytest.raises(ProviderError, match="gave up after 3 attempts") as info:
        client.complete(USER)
    assert "max_concurrency" in str(info.value)  # the fix for rate limiting
    assert server.calls == client.calls == 3 and client.retries == 2


def test_unreachable_server_names_the_url(make):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = make(f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(ProviderError, match=f"127.0.0.1:{port}.*server is running"):
        client.complete(USER)
    assert client.calls == 2


def test_garbage_body_is_a_model_output_error(openai_server, make):
    server = openai_server((200, "<html>proxy error</html>"))
    client = make(server.base_url)
    with pytest.raises(ModelOutputError, match="not a chat completion.*proxy error.*gave up after 5 attempts"):
        client.complete(USER)
    # a 200 page that is no chat completion (a proxy's error page) is retried like a 5xx, then a bad answer
    assert server.calls == client.calls == 5
    assert client.fault_counts()["failures_by_cause"]["malformed"] == 1
    assert client.fault_counts()["retries_by_cause"]["malformed"] == 4


def test_non_json_error_bodies_follow_their_status(openai_server, make):
    """A 5xx proxy page is retried; a 4xx one fails at once and shows the page."""
    server = openai_server([(502, "<html>bad gateway</html>"), (503, ""), "through"])
    client = make(server.base_url)
    assert client.complete(USER).text == "through"
    assert server.calls == 3 and client.retries == 2
    server = openai_server([(403, "<html>forbidden by proxy</html>"), "never"])
    client = make(server.base_url, api_key_env="CULTUREKB_TEST_KEY")
    with pytest.raises(ProviderError, match="403.*forbidden by proxy.*CULTUREKB_TEST_KEY"):
        client.complete(USER)
    assert server.calls == 1


def test_answer_without_content_is_empty_text(openai_server, make):
    body = '{"choices": [{"message": {"role": "assistant", "content": null}, "finish_reason": "length"}]}'
    server = openai_server((200, body))
    response = make(server.base_url).complete(USER)
    assert response.text == "" and response.usage == {}


def test_malformed_json_answer_is_asked_again(openai_server, make):
    server = openai_server(["Sure! {label: awe", '{"label": "awe"}'])
    client = make(server.base_url)

    def needs_label(obj: Any) -> str:
        return obj["label"]

    assert complete_json(client, USER, needs_label, temperature=0) == "awe"
    assert server.calls == client.calls == 2
    second = server.requests[1]["messages"]
    assert second[1] == {"role": "assistant", "content": "Sure! {label: awe"}  # the model sees its bad answer


def test_stream_is_rejected(openai_server, make):
    client = make(openai_server().base_url)
    with pytest.raises(ConfigError, match="stream"):
        client.complete(USER, stream=True)


def test_complete_many_respects_the_concurrency_bound_and_keeps_order(openai_server, make):
    server = openai_server(lambda body: body["messages"][0]["content"], latency_s=0.1)
    client = make(server.base_url, max_concurrency=4)
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(16)]
    answers = client.complete_many(batch)
    assert [a.text for a in answers] == [f"q{i}" for i in range(16)]
    assert server.max_in_flight == 4  # 4 at a time: neither serial (1) nor all at once (16); no wall clock


def test_complete_many_return_exceptions_keeps_going(openai_server, make):
    def answer(body: dict[str, Any]) -> Any:
        content = body["messages"][0]["content"]
        return ERROR_400 if content == "q3" else f"a{content[1:]}"

    server = openai_server(answer)
    client = make(server.base_url, max_concurrency=4)
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]
    results = client.complete_many(batch, return_exceptions=True)
    assert isinstance(results[3], ProviderError) and "400" in str(results[3])
    assert [r.text for i, r in enumerate(results) if i != 3] == [f"a{i}" for i in range(10) if i != 3]
    assert server.calls == client.calls == 10 and client.retries == 0


def test_complete_many_failure_cancels_the_rest(openai_server, make):
    def answer(body: dict[str, Any]) -> Any:
        return ERROR_400 if body["messages"][0]["content"] == "q0" else "ok"

    server = openai_server(answer, latency_s=0.05)
    client = make(server.base_url, max_concurrency=2)
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(20)]
    with pytest.raises(ProviderError, match="400"):
        client.complete_many(batch)
    time.sleep(0.2)
    assert server.calls < 20


def test_sync_calls_work_inside_a_running_event_loop(openai_server, make):
    server = openai_server(["inside"])
    client = make(server.base_url)

    async def main() -> list[str]:
        one = client.complete(USER).text  # blocking call from a coroutine: runs on the client's own loop
        many = client.complete_many([USER, USER])
        return [one, *(r.text for r in many)]

    assert asyncio.run(main()) == ["inside"] * 3


def test_acomplete_on_the_callers_loop(openai_server, make):
    server = openai_server(lambda body: body["messages"][0]["content"], latency_s=0.05)
    client = make(server.base_url, max_concurrency=3)

    async def main() -> list[str]:
        answers = await client.acomplete_many([[{"role": "user", "content": f"a{i}"}] for i in range(6)])
        single = await client.acomplete(USER)
        await client.aclose()
        return [a.text for a in answers] + [single.text]

    assert asyncio.run(main()) == [f"a{i}" for i in range(6)] + [USER[0]["content"]]
    assert server.max_in_flight == 3


def test_cache_hit_makes_no_server_call(openai_server, make, tmp_path):
    server = openai_server(["first answer", "second answer"])
    cache = ResponseCache(tmp_path / "responses.sqlite")
    client = make(server.base_url, cache=cache, cache_scope="kb-v1")
    first = client.complete(USER, temperature=0)
    again = client.complete(USER, temperature=0)
    assert first.text == again.text == "first answer"
    assert again.cached is True and first.cached is False
    assert again.usage == first.usage
    assert server.calls == 1 and client.calls == 1 and client.cache_hits == 1
    # different parameters or scope are different requests
    assert client.complete(USER, temperature=1).text == "second answer"
    other_scope = make(server.base_url, cache=cache, cache_scope="kb-v2")
    assert other_scope.complete(USER, temperature=0).cached is False
    assert server.calls == 3


def test_cache_persists_across_instances(openai_server, make, tmp_path):
    path = tmp_path / "cache.sqlite"
    server = openai_server(lambda body: "answer to " + body["messages"][0]["content"])
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(5)]
    with ResponseCache(path) as cache:
        make(server.base_url, cache=cache).complete_many(batch)
    assert server.calls == 5
    with ResponseCache(path) as cache:
        client = make(server.base_url, cache=cache)
        answers = client.complete_many(batch)
    assert [a.text for a in answers] == [f"answer to q{i}" for i in range(5)]
    assert all(a.cached for a in answers)
    assert server.calls == 5 and client.calls == 0 and client.cache_hits == 5


def test_api_key_is_read_from_the_environment(openai_server, make, monkeypatch):
    monkeypatch.delenv("CULTUREKB_TEST_KEY", raising=False)
    client = make(openai_server().base_url, api_key_env="CULTUREKB_TEST_KEY")
    assert client.provider._api_key() == "EMPTY"
    monkeypatch.setenv("CULTUREKB_TEST_KEY", "sk-test")
    assert client.provider._api_key() == "sk-test"


@pytest.mark.parametrize(
    "kwargs",
    [{"max_concurrency": 0}, {"timeout_s": 0}, {"max_retries": -1}, {"http_backend": "curl"}],
)
def test_invalid_settings_are_config_errors(kwargs):
    with pytest.raises(ConfigError):
        OpenAICompatClient("m", base_url="http://127.0.0.1:1/v1", **kwargs)


def test_auto_backend_is_direct_when_aiohttp_is_installed(monkeypatch):
    assert OpenAICompatClient("m", base_url="http://127.0.0.1:1/v1").transport == "direct"
    for backend in BACKENDS:
        assert OpenAICompatClient("m", base_url="http://127.0.0.1:1/v1", http_backend=backend).transport == backend
    monkeypatch.setattr(chat_module, "_aiohttp_available", lambda: False)
    assert OpenAICompatClient("m", base_url="http://127.0.0.1:1/v1").transport == "httpx"
    with pytest.raises(ConfigError, match="pip install aiohttp"):
        OpenAICompatClient("m", base_url="http://127.0.0.1:1/v1", http_backend="direct")


def test_malformed_base_url_fails_at_once(make):
    client = make("127.0.0.1:8000/v1", max_retries=3, backoff_s=5.0)  # no scheme: never reachable
    with pytest.raises(ProviderError, match="127.0.0.1:8000/v1.*cannot be requested.*base_url"):
        client.complete(USER)
    assert client.calls == 1 and client.retries == 0


def test_close_releases_connections_and_the_client_can_be_used_again(openai_server, make, recwarn):
    import gc

    server = openai_server(["one", "two"])
    client = make(server.base_url)
    assert client.complete(USER).text == "one"
    client.close()
    client.close()  # idempotent
    assert client.complete(USER).text == "two"  # a fresh private loop and connection pool
    client.close()
    gc.collect()
    leaks = [w for w in recwarn.list if issubclass(w.category, ResourceWarning) or "Unclosed" in str(w.message)]
    assert not leaks, [str(w.message) for w in leaks]


def _sdk_http() -> Any:
    """The HTTP library the installed `openai` SDK is built on (httpx, or httpx2 in newer releases)."""
    import openai

    base = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    return importlib.import_module(base.__module__.split(".")[0])


def _classified(exc: BaseException) -> Failure:
    """`classify(exc)`, which must recognise the exception as a transport or HTTP failure."""
    failure = classify(exc)
    assert failure is not None, f"{exc!r} was not classified"
    return failure


def test_classify_understands_every_transport():
    import aiohttp
    import openai

    http = _sdk_http()  # the SDK's exceptions carry its own library's request and response objects
    request = http.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    sdk_429 = openai.RateLimitError(
        "rate limited",
        response=http.Response(429, headers={"retry-after": "2"}, content=b"rate limited", request=request),
        body=None,
    )
    direct_429 = HTTPStatusError(429, "rate limited", {"retry-after": "2"})
    assert classify(sdk_429) == classify(direct_429)
    assert _classified(direct_429).retryable and _classified(direct_429).retry_after_s == 2.0
    assert not _classified(HTTPStatusError(404, "no such model")).retryable
    assert _classified(HTTPStatusError(503, "")).retryable
    timeout = _classified(aiohttp.ServerTimeoutError("read timed out"))
    assert timeout.kind == "timeout" and timeout.retryable
    assert _classified(TimeoutError()).kind == "timeout"
    for exc in (aiohttp.ServerDisconnectedError(), aiohttp.ClientPayloadError("truncated"),
                aiohttp.ClientOSError(104, "reset")):
        failure = _classified(exc)
        assert failure.kind == "connection" and failure.retryable
    assert _classified(openai.APIConnectionError(request=request)).kind == "connection"
    assert not _classified(aiohttp.InvalidURL("nope")).retryable
    assert classify(ValueError("a bug")) is None
    message = describe_failure(_classified(HTTPStatusError(401, "bad key")), "m", "http://h/v1",
                               api_key_env="MY_KEY", timeout_s=1.0)
    assert "model 'm' at http://h/v1" in message and "HTTP 401: bad key" in message and "MY_KEY" in message


def test_make_client_builds_openai_clients_and_lists_valid_forms(openai_server):
    server = openai_server(["via factory"])
    client = make_client("openai:test-model", base_url=server.base_url, max_concurrency=2)
    assert isinstance(client, Model) and isinstance(client.provider, OpenAICompatProvider)
    assert client.provider.base_url == server.base_url.rstrip("/")
    try:
        assert client.id == "openai:test-model" and client.max_concurrency == 2
        assert client.complete(USER).text == "via factory"
    finally:
        client.close()
    with pytest.raises(ConfigError, match="openai:MODEL"):
        make_client("gpt-4o-mini")
    with pytest.raises(ConfigError, match="openai:MODEL"):
        make_client("openai:")


def test_sync_calls_from_many_threads_share_the_bound(openai_server, make):
    import threading

    server = openai_server(lambda body: body["messages"][0]["content"], latency_s=0.05)
    client = make(server.base_url, max_concurrency=3)
    answers: dict[int, str] = {}

    def call(i: int) -> None:
        answers[i] = client.complete([{"role": "user", "content": f"t{i}"}]).text

    threads = [threading.Thread(target=call, args=(i,)) for i in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {i: f"t{i}" for i in range(9)}
    assert server.max_in_flight == 3


@pytest.mark.parametrize("backend", BACKENDS)
def test_close_cancels_calls_running_in_other_threads(openai_server, backend):
    import concurrent.futures
    import threading

    server = openai_server(latency_s=30)
    client = OpenAICompatClient("m", base_url=server.base_url, http_backend=backend)
    outcome: list[str] = []

    def call() -> None:
        try:
            client.complete(USER)
            outcome.append("answered")
        except concurrent.futures.CancelledError:
            outcome.append("cancelled")

    thread = threading.Thread(target=call)
    thread.start()
    deadline = time.time() + 5
    while server.in_flight == 0 and time.time() < deadline:
        time.sleep(0.01)
    client.close()
    thread.join(timeout=5)
    assert outcome == ["cancelled"]


def test_plugin_clients_come_in_through_entry_points(monkeypatch):
    from importlib.metadata import EntryPoint

    from culturekb import registry

    plugin = EntryPoint("fake", "culturekb.models.factory:_openai_client", "culturekb.model_clients")

    def fake_entry_points(group: str, name: str | None = None) -> list[EntryPoint]:
        return [plugin] if group == plugin.group and name in (None, plugin.name) else []

    monkeypatch.setattr(registry, "entry_points", fake_entry_points)
    with registry.CLIENTS.isolated():
        with pytest.raises(ConfigError, match="fake:"):  # unloaded plugins are listed among the valid forms
            make_client("nope:x")
        client = make_client("fake:plugin-model", base_url="http://127.0.0.1:1/v1")
        assert isinstance(client, Model) and client.id == "openai:plugin-model"
        assert isinstance(client.provider, OpenAICompatProvider)
        assert "fake" in registry.CLIENTS
