"""The one retry loop (`Retrier`), shared by the OpenAI-compatible chat client and embedder.

Transient failures (timeouts, connection errors, HTTP 408/409/429 and 5xx) are retried with exponential
backoff and jitter, honouring a server's `Retry-After` header; any other HTTP error, and a URL no transport can
request (no http:// scheme ...), fails at once.

`Retrier.call` (sync) and `Retrier.acall` (async) run a request until it succeeds, a failure is not transient,
or the retries are spent; then they raise `ProviderError` with `describe_failure`'s message. A `CultureKBError`
the request raises itself (a local model's bad input, say) is final and passes through unchanged.
`classify` understands the `openai` SDK's exceptions, aiohttp's (the chat client's direct transport) and
`HTTPStatusError`, which a transport that does not raise on HTTP errors by itself raises for a non-2xx answer;
`classify_status` is the one rule for status codes.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from itertools import count
from typing import Any, TypeVar

from culturekb.errors import CultureKBError, ModelOutputError, ProviderError

__all__ = ["RetryPolicy", "Retrier", "Failure", "HTTPStatusError", "BadAnswerError", "classify", "classify_status",
           "describe_failure", "retry_cause", "RETRY_CAUSES", "counts_since"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_MAX_RETRY_AFTER_S = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to wait between attempts."""

    max_retries: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0

    def delay(self, attempt: int, rng: random.Random, retry_after_s: float | None = None) -> float:
        """Seconds to wait before retry number `attempt + 1` (attempt counts from 0)."""
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), _MAX_RETRY_AFTER_S)
        base = min(self.backoff_s * (2**attempt), self.max_backoff_s)
        # "Equal jitter": half fixed, half random, so concurrent callers spread out but still wait.
        return base / 2 + rng.uniform(0.0, base / 2)


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified."""

    kind: str
    """'timeout', 'connection', 'status', 'malformed' (a 2xx answer that is not what the API sends) or 'other'."""
    retryable: bool
    status: int | None = None
    retry_after_s: float | None = None
    detail: str = ""


class HTTPStatusError(Exception):
    """A non-2xx answer: its status, body text and headers (any mapping with a case-insensitive `get`)."""

    def __init__(self, status: int, body: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body
        self.headers: Mapping[str, str] = headers if headers is not None else {}


class BadAnswerError(Exception):
    """A 2xx answer whose body is not what the API sends (an HTML page from a proxy, truncated JSON ...): retried
    like a server error, since the next attempt usually reaches the model; a lasting one is a ModelOutputError."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


RETRY_CAUSES = ("timeout", "429", "5xx", "connection", "malformed", "other")
"""The causes a retry is counted under (`retry_cause`)."""


def retry_cause(failure: Failure) -> str:
    """The cause a failed attempt is counted under: timeout, 429, 5xx, connection, malformed (a 2xx answer that
    is not a chat completion: an HTML page, broken JSON) or other (408, 409 ...)."""
    if failure.kind in ("timeout", "connection", "malformed"):
        return failure.kind
    if failure.status == 429:
        return "429"
    if failure.status is not None and failure.status >= 500:
        return "5xx"
    return "other"


def counts_since(now: dict[str, Any], before: dict[str, Any]) -> dict[str, Any]:
    """Fault counters (`OpenAICompatClient.fault_counts`, or sums of them) less what they were at `before`: the
    counts of one build or run. Numbers and per-cause maps are subtracted; other values are left out."""
    out: dict[str, Any] = {}
    for key, value in now.items():
        old = before.get(key)
        if isinstance(value, dict):
            out[key] = {c: n - (old or {}).get(c, 0) for c, n in value.items()}
        elif isinstance(value, int):
            out[key] = value - (old if isinstance(old, int) else 0)
    return out


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def classify_status(status: int, body: str, headers: Any = None) -> Failure:
    """The failure an HTTP error answer stands for: 408/409/429 and 5xx are retried, other statuses are not."""
    retryable = status in _RETRYABLE_STATUS or status >= 500
    return Failure("status", retryable, status, _retry_after(headers), detail=f"HTTP {status}: {body[:300]}")


def _os_error_cause(exc: BaseException) -> OSError | None:
    """The first non-timeout OSError (refused, unreachable, reset ...) in the exception's cause chain."""
    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 10:
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError):
            return cause
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return None


# A request URL no transport can send (no http:// scheme, bad host ...), as httpx, httpx2 and aiohttp name it.
_BAD_URL_ERRORS = frozenset({"UnsupportedProtocol", "InvalidURL", "InvalidUrlClientError", "NonHttpUrlClientError"})


def _bad_url_cause(exc: BaseException) -> BaseException | None:
    """The malformed-URL error in the exception's cause chain, if any: retrying it cannot help."""
    seen = 0
    cause: BaseException | None = exc
    while cause is not None and seen < 10:
        if type(cause).__name__ in _BAD_URL_ERRORS:
            return cause
        cause = cause.__cause__ or cause.__context__
        seen += 1
    return None


def _transport_failure(exc: BaseException, timed_out: bool) -> Failure:
    bad_url = _bad_url_cause(exc)
    if bad_url is not None:
        return Failure("connection", False, detail=f"the URL cannot be requested ({bad_url})")
    refused = _os_error_cause(exc)
    if refused is not None:  # some transports report a refused connection as a connect timeout
        return Failure("connection", True, detail=f"connection failed ({refused})")
    if timed_out:
        return Failure("timeout", True, detail="request timed out")
    return Failure("connection", True, detail=f"connection failed ({exc.__cause__ or exc})")


def _classify_aiohttp(exc: BaseException) -> Failure | None:
    try:
        import aiohttp
    except ImportError:  # then no aiohttp exception can have been raised
        return None
    if isinstance(exc, aiohttp.ClientResponseError):  # too many redirects, a broken status line ...
        status = exc.status if exc.status >= 400 else None
        detail = f"bad HTTP answer ({type(exc).__name__}: {exc.message or exc})"
        retryable = status is not None and status >= 500
        return Failure("status" if status else "other", retryable, status, _retry_after(exc.headers), detail=detail)
    if isinstance(exc, aiohttp.ClientError):  # disconnected, reset, truncated body, a malformed URL ...
        return _transport_failure(exc, isinstance(exc, TimeoutError))
    return None


def classify(exc: BaseException) -> Failure | None:
    """Classify a failed request; None when `exc` is not a transport/API error (a bug, not a flaky server).

    Understands the `openai` SDK's exceptions, aiohttp's, `HTTPStatusError` and bare timeouts.
    """
    if isinstance(exc, HTTPStatusError):
        return classify_status(exc.status, exc.body, exc.headers)
    if isinstance(exc, BadAnswerError):
        return Failure("malformed", True, detail=exc.detail)
    import openai

    if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is a subclass
        return _transport_failure(exc, isinstance(exc, openai.APITimeoutError))
    if isinstance(exc, openai.APIStatusError):
        body = exc.response.text if exc.response is not None else ""
        headers = exc.response.headers if exc.response is not None else None
        return classify_status(int(exc.status_code), body, headers)
    failure = _classify_aiohttp(exc)
    if failure is not None:
        return failure
    if isinstance(exc, TimeoutError):  # asyncio.TimeoutError is TimeoutError from Python 3.11
        return _transport_failure(exc, True)
    return None


def describe_failure(failure: Failure, model: str, base_url: str, *, api_key_env: str, timeout_s: float) -> str:
    """An error message naming the model, the URL, what went wrong and the fix."""
    where = f"model '{model}' at {base_url}"
    status = failure.status
    if failure.kind == "timeout":
        fix = f"raise timeout_s (now {timeout_s:g}s), lower max_concurrency, or check that the server is not overloaded"
    elif failure.kind == "connection":
        fix = "check that the server is running and that base_url is right (it usually ends with /v1)"
    elif status in (401, 403):
        fix = f"set a valid API key in the environment variable {api_key_env}"
    elif status == 404:
        fix = f"check the model name and base_url; GET {base_url.rstrip('/')}/models lists the models the server serves"
    elif failure.kind == "malformed":
        fix = ("check that base_url points at an OpenAI-compatible /v1 endpoint (not a web page or a proxy's login "
               "page), or retry later")
    elif status == 429:
        fix = "lower max_concurrency or raise max_retries/backoff_s; the server is rate limiting"
    elif status is not None and status >= 500:
        fix = "the server failed; check its logs, or retry later"
    elif status is not None:
        fix = "the server rejected the request; check the messages and parameters (temperature, max_tokens, ...)"
    else:
        fix = "see the cause below"
    return f"{where}: {failure.detail}. Fix: {fix}"


E = TypeVar("E", bound=BaseException)


def _with_attempts(error: E, attempts: int) -> E:
    """`error` with `attempts` (requests the server saw for the call) attached, for the callers' accounting."""
    error.attempts = attempts  # type: ignore[attr-defined]
    return error


class Retrier:
    """Runs one request with the retry policy: transient failures wait (`RetryPolicy.delay`) and try again.

    `what` names the callee in messages (``model``, ``embedding model``); `label` is the caller's id in logs;
    `unexpected_fix` is the advice for an exception `classify` does not know. `on_attempt` and `on_retry` are
    called before every attempt and before every retry (for the callers' counters); `on_failure` with each failed
    attempt's `Failure` (retried or not: the cause counts). The error raised at the end carries `attempts`, the
    number of requests the server saw for this call; a lasting malformed answer raises ModelOutputError.
    """

    def __init__(self, policy: RetryPolicy, *, what: str, model: str, base_url: str, api_key_env: str,
                 timeout_s: float, label: str, unexpected_fix: str = "",
                 on_attempt: Callable[[], None] | None = None, on_retry: Callable[[], None] | None = None,
                 on_failure: Callable[[Failure], None] | None = None) -> None:
        self.policy = policy
        self.what, self.model, self.base_url = what, model, base_url
        self.api_key_env, self.timeout_s, self.label = api_key_env, timeout_s, label
        self.unexpected_fix = unexpected_fix
        self.on_attempt, self.on_retry, self.on_failure = on_attempt, on_retry, on_failure
        self._rng = random.Random()  # jitter only; it never changes an answer

    def _begin(self) -> None:
        if self.on_attempt is not None:
            self.on_attempt()

    def _delay_after(self, exc: Exception, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (from 0); raises ProviderError when the failure
        is not transient or the retries are spent."""
        if isinstance(exc, CultureKBError):  # the callee's own error already says what went wrong: final
            raise _with_attempts(exc, attempt + 1)
        failure = classify(exc)
        if failure is None:
            fix = f". Fix: {self.unexpected_fix}" if self.unexpected_fix else ""
            raise _with_attempts(ProviderError(f"{self.what} '{self.model}' at {self.base_url}: unexpected "
                                               f"{type(exc).__name__}: {exc}{fix}"), attempt + 1) from exc
        if self.on_failure is not None:
            self.on_failure(failure)
        message = describe_failure(failure, self.model, self.base_url, api_key_env=self.api_key_env,
                                   timeout_s=self.timeout_s)
        error = ModelOutputError if failure.kind == "malformed" else ProviderError
        if not failure.retryable:
            raise _with_attempts(error(f"{message} (in 1 attempt)" if attempt == 0 else
                                       f"{message} (after {attempt + 1} attempts)"), attempt + 1) from exc
        if attempt >= self.policy.max_retries:
            raise _with_attempts(error(f"{message} (gave up after {attempt + 1} attempts)"), attempt + 1) from exc
        delay = self.policy.delay(attempt, self._rng, failure.retry_after_s)
        logger.info("%s: %s; retry %d/%d in %.2fs", self.label, failure.detail, attempt + 1, self.policy.max_retries,
                    delay)
        if self.on_retry is not None:
            self.on_retry()
        return delay

    def call(self, request: Callable[[], T]) -> T:
        """`request()` until it succeeds; a lasting failure raises ProviderError."""
        for attempt in count():
            self._begin()
            try:
                return request()
            except Exception as exc:
                time.sleep(self._delay_after(exc, attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    async def acall(self, request: Callable[[], Awaitable[T]]) -> T:
        """Async `call`: awaits `request()` and sleeps without blocking the loop."""
        for attempt in count():
            self._begin()
            try:
                return await request()
            except Exception as exc:
                delay = self._delay_after(exc, attempt)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover
