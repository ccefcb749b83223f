from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from culturekb.errors import ConfigError, ModelOutputError, ProviderError
from culturekb.models import ModelClient, OpenAICompatClient, ResponseCache, make_client
from culturekb.testing import ScriptedReply

USER = [{"role": "user", "content": "Which emotion does a red lantern evoke?"}]
ERROR_429 = (429, '{"error": {"message": "rate limited", "type": "rate_limit"}}')
ERROR_500 = (500, '{"error": {"message": "boom", "type": "server_error"}}')
ERROR_400 = (400, '{"error": {"message": "bad parameter temperature", "type": "invalid_request_error"}}')


@pytest.fixture(params=["auto", "httpx"])
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
    client = make(server.base_url)
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


def test_retries_429_then_succeeds(openai_server, make):
    server = openai_server([ERROR_429, ERROR_429, "fine"])
    client = make(server.base_url)
    assert client.complete(USER).text == "fine"
    assert server.calls == 3
    assert client.calls == 3 and client.retries == 2


def test_retry_after_header_is_honoured(openai_server, make):
    server = openai_server([ScriptedReply(status=429, headers={"Retry-After": "0"}), "ok"])
    client = make(server.base_url, backoff_s=30.0)  # without Retry-After this would wait ~15 s
    started = time.perf_counter()
    assert client.complete(USER).text == "ok"
    assert time.perf_counter() - started < 5


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
    assert server.calls == 3


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
    with pytest.raises(ModelOutputError, match="not a chat completion"):
        client.complete(USER)


def test_stream_is_rejected(openai_server, make):
    client = make(openai_server().base_url)
    with pytest.raises(ConfigError, match="stream"):
        client.complete(USER, stream=True)


def test_complete_many_respects_the_concurrency_bound_and_keeps_order(openai_server, make):
    server = openai_server(lambda body: body["messages"][0]["content"], latency_s=0.1)
    client = make(server.base_url, max_concurrency=4)
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(16)]
    started = time.perf_counter()
    answers = client.complete_many(batch)
    elapsed = time.perf_counter() - started
    assert [a.text for a in answers] == [f"q{i}" for i in range(16)]
    assert server.max_in_flight == 4
    assert 0.35 < elapsed < 2.0  # 4 waves of 0.1 s, not 16 serial calls (1.6 s) nor one wave


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
    assert client._api_key() == "EMPTY"
    monkeypatch.setenv("CULTUREKB_TEST_KEY", "sk-test")
    assert client._api_key() == "sk-test"


@pytest.mark.parametrize(
    "kwargs",
    [{"max_concurrency": 0}, {"timeout_s": 0}, {"max_retries": -1}, {"http_backend": "curl"}],
)
def test_invalid_settings_are_config_errors(kwargs):
    with pytest.raises(ConfigError):
        OpenAICompatClient("m", base_url="http://127.0.0.1:1/v1", **kwargs)


def test_make_client_builds_openai_clients_and_lists_valid_forms(openai_server):
    server = openai_server(["via factory"])
    client = make_client("openai:test-model", base_url=server.base_url, max_concurrency=2)
    try:
        assert isinstance(client, OpenAICompatClient)
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


def test_close_cancels_calls_running_in_other_threads(openai_server):
    import concurrent.futures
    import threading

    server = openai_server(latency_s=30)
    client = OpenAICompatClient("m", base_url=server.base_url)
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
