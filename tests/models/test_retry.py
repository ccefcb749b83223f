"""The one retry loop (models._retry.Retrier), sync and async, on scripted failures."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from culturekb.errors import ModelOutputError, ProviderError
from culturekb.models._retry import RETRY_CAUSES, BadAnswerError, HTTPStatusError, Retrier, RetryPolicy, retry_cause


def _retrier(max_retries: int = 3, counts: dict[str, int] | None = None) -> Retrier:
    seen = counts if counts is not None else {}

    def bump(name: str) -> Callable[[], None]:
        return lambda: seen.__setitem__(name, seen.get(name, 0) + 1)

    return Retrier(RetryPolicy(max_retries=max_retries, backoff_s=0.001), what="model", model="m",
                   base_url="http://127.0.0.1:9/v1", api_key_env="KEY", timeout_s=1.0, label="test:m",
                   unexpected_fix="check the server", on_attempt=bump("attempts"), on_retry=bump("retries"))


def _failing(times: int, status: int = 503) -> Callable[[], str]:
    state = {"n": 0}

    def request() -> str:
        state["n"] += 1
        if state["n"] <= times:
            raise HTTPStatusError(status, "busy", {"retry-after": "0"})
        return "ok"

    return request


def test_transient_failures_are_retried_then_succeed() -> None:
    counts: dict[str, int] = {}
    assert _retrier(counts=counts).call(_failing(2)) == "ok"
    assert counts == {"attempts": 3, "retries": 2}


def test_async_uses_the_same_rules() -> None:
    counts: dict[str, int] = {}
    sync_request = _failing(1)

    async def request() -> str:
        return sync_request()

    assert asyncio.run(_retrier(counts=counts).acall(request)) == "ok"
    assert counts == {"attempts": 2, "retries": 1}


def test_spent_retries_and_permanent_failures_raise_provider_error() -> None:
    counts: dict[str, int] = {}
    with pytest.raises(ProviderError, match=r"HTTP 503.*gave up after 2 attempts"):
        _retrier(max_retries=1, counts=counts).call(_failing(5))
    assert counts == {"attempts": 2, "retries": 1}
    counts.clear()
    with pytest.raises(ProviderError, match=r"model 'm' at http://127.0.0.1:9/v1: HTTP 400") as info:
        _retrier(counts=counts).call(_failing(5, status=400))
    assert "gave up" not in str(info.value) and counts == {"attempts": 1}


def test_an_unknown_exception_is_not_retried_and_names_the_fix() -> None:
    def broken() -> str:
        raise RuntimeError("boom")

    with pytest.raises(ProviderError, match=r"model 'm' at .*: unexpected RuntimeError: boom. Fix: check the server"):
        _retrier().call(broken)


def test_failures_are_counted_by_cause_and_errors_carry_the_attempts() -> None:
    causes: list[str] = []
    retrier = Retrier(RetryPolicy(max_retries=2, backoff_s=0.001), what="model", model="m",
                      base_url="http://127.0.0.1:9/v1", api_key_env="KEY", timeout_s=1.0, label="test:m",
                      on_failure=lambda f: causes.append(retry_cause(f)))
    script = iter([HTTPStatusError(429, "slow", {"retry-after": "0"}), TimeoutError(), HTTPStatusError(502, "bad")])

    def request() -> str:
        raise next(script)

    with pytest.raises(ProviderError, match="gave up after 3 attempts") as info:
        retrier.call(request)
    assert causes == ["429", "timeout", "5xx"]
    assert info.value.attempts == 3  # type: ignore[attr-defined]


def test_a_page_that_is_no_answer_is_retried_then_a_model_output_error() -> None:
    causes: list[str] = []
    retrier = Retrier(RetryPolicy(max_retries=1, backoff_s=0.001), what="model", model="m",
                      base_url="http://127.0.0.1:9/v1", api_key_env="KEY", timeout_s=1.0, label="test:m",
                      on_failure=lambda f: causes.append(retry_cause(f)))

    def request() -> str:
        raise BadAnswerError("the answer is not a chat completion: '<html>'")

    with pytest.raises(ModelOutputError, match="not a chat completion.*web page.*gave up after 2 attempts"):
        retrier.call(request)
    assert causes == ["malformed", "malformed"]
    assert set(RETRY_CAUSES) >= set(causes)
