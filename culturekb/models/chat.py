"""The provider for any OpenAI-compatible chat server (OpenAI, vLLM, SGLang, Ollama, LiteLLM ...), and
`OpenAICompatClient`, the one model wrapper (`models.model.Model`) around it.

The provider sends one request and parses the answer; the wrapper adds bounded concurrency, retries (exponential
backoff with jitter on timeouts, connection errors, 429 and 5xx; other 4xx fail at once), the response cache (an
interrupted run resumes without paying for the same call twice), the counters and the synchronous methods.

Transports (`http_backend`): "direct" POSTs the JSON body with a plain aiohttp session, no SDK in between;
"aiohttp" and "httpx" go through the `openai` SDK's AsyncOpenAI on that HTTP library. All three send the same
request and share the retry loop, the failure classification (`_retry.classify`) and the answer parsing, so
they behave the same; "direct" spends several times less CPU per call (about 0.35 ms against 1.3-1.8 ms for
the SDK on aiohttp and 2.2-2.8 ms on httpx, on a 2-core machine), which is what caps throughput against fast
local servers. "auto" takes "direct" when aiohttp is installed. One difference: `timeout_s` bounds a whole
attempt on "direct" (aiohttp's total timeout), and each phase (connect, read ...) on the SDK's transports.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import logging
import os
import threading
import time
import weakref
from datetime import date
from typing import TYPE_CHECKING, Any

from culturekb.errors import ConfigError
from culturekb.models._retry import BadAnswerError, HTTPStatusError
from culturekb.models.base import Message, ModelResponse
from culturekb.models.cache import ResponseCache
from culturekb.models.model import BACKOFF_ENV, Model, env_seconds

if TYPE_CHECKING:
    import aiohttp

__all__ = ["OpenAICompatClient", "OpenAICompatProvider", "DEFAULT_OPENAI_BASE_URL", "TIMEOUT_ENV", "BACKOFF_ENV"]

logger = logging.getLogger(__name__)

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

_HTTP_BACKENDS = ("auto", "direct", "aiohttp", "httpx")


def _http_limits(max_concurrency: int) -> Any:
    """Connection limits for the HTTP client under `openai` (httpx or httpx2, depending on its version)."""
    import openai

    base = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    http = importlib.import_module(base.__module__.split(".")[0])
    return http.Limits(max_connections=max_concurrency + 4, max_keepalive_connections=max_concurrency + 4)


def _aiohttp_available() -> bool:
    return importlib.util.find_spec("aiohttp") is not None


def _resolve_backend(backend: str) -> str:
    """The transport `http_backend` stands for: "auto" is "direct" when aiohttp is installed, else "httpx"."""
    if backend == "auto":
        return "direct" if _aiohttp_available() else "httpx"
    if backend == "direct" and not _aiohttp_available():
        raise ConfigError(
            "OpenAICompatClient: http_backend='direct' needs aiohttp; install it with: pip install aiohttp, "
            "or use http_backend='httpx'"
        )
    return backend


def _http_client(backend: str, max_concurrency: int, timeout_s: float) -> Any:
    """The HTTP client under AsyncOpenAI: the SDK's aiohttp transport ("aiohttp") or its default httpx one."""
    import openai

    limits = _http_limits(max_concurrency)
    if backend == "aiohttp":
        try:
            return openai.DefaultAioHttpClient(limits=limits, timeout=timeout_s)
        except RuntimeError as exc:  # aiohttp or the SDK's aiohttp bridge is missing
            raise ConfigError(
                f"http_backend='aiohttp' needs aiohttp and openai's aiohttp support ({exc}); "
                "install them with: pip install 'openai[aiohttp]', or use http_backend='direct' or 'httpx'"
            ) from exc
    return openai.DefaultAsyncHttpxClient(limits=limits, timeout=timeout_s)


def _json_default(obj: Any) -> Any:
    """What the SDK's encoder adds to the stdlib's: dates and pydantic models (e.g. in response_format)."""
    if isinstance(obj, date):  # datetime too
        return obj.isoformat()
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump):
        return model_dump(exclude_unset=True, mode="json", by_alias=True)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


# The SDK's encoding (compact, UTF-8, no NaN), built once: the C encoder with no per-call keyword parsing.
_encode_json = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_json_default
).encode


class _SDKTransport:
    """POST through the `openai` SDK's AsyncOpenAI (on httpx or the SDK's aiohttp bridge)."""

    def __init__(self, backend: str, base_url: str, api_key: str, max_concurrency: int, timeout_s: float) -> None:
        import openai

        self.client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,  # retries are ours: backoff with jitter, and a clear error at the end
            http_client=_http_client(backend, max_concurrency, timeout_s),
        )

    async def post(self, body: dict[str, Any]) -> str:
        # The SDK's own `post` (its documented route for any endpoint), returning the raw text: the typed
        # `chat.completions.create` spends more CPU re-walking the messages and building pydantic objects than
        # the HTTP exchange itself. HTTP errors come back as openai.APIStatusError.
        return await self.client.post("/chat/completions", body=body, cast_to=str)

    async def close(self) -> None:
        await self.client.close()


class _DirectTransport:
    """POST the JSON body to {base_url}/chat/completions with one aiohttp session; no SDK in between.

    The body is encoded as the SDK encodes it (compact UTF-8 JSON; dates and pydantic models allowed) and sent
    with the same bearer key and JSON content type; one pool of `max_concurrency + 4` connections, a total timeout
    of `timeout_s` per attempt. A non-2xx answer raises `HTTPStatusError` (body and headers kept, so Retry-After
    is honoured); transport failures raise aiohttp's exceptions; `_retry.classify` understands both.
    """

    def __init__(self, base_url: str, api_key: str, max_concurrency: int, timeout_s: float) -> None:
        import aiohttp
        import yarl

        url = f"{base_url}/chat/completions"
        try:  # parsed once, not per call; a malformed URL is reported (as InvalidURL) by the first request
            self.url: Any = yarl.URL(url)
        except ValueError:
            self.url = url
        self.session: aiohttp.ClientSession = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=max_concurrency + 4),
            timeout=aiohttp.ClientTimeout(total=timeout_s),
            headers={
                "Authorization": f"Bearer {api_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )

    async def post(self, body: dict[str, Any]) -> str:
        async with self.session.post(self.url, data=_encode_json(body).encode()) as response:
            # decoded here, as the SDK does: json.loads on str is about twice as fast as on bytes
            text = (await response.read()).decode("utf-8", "replace")
            if not 200 <= response.status < 300:
                raise HTTPStatusError(response.status, text, response.headers)
            return text

    async def close(self) -> None:
        await self.session.close()
        await asyncio.sleep(0)  # let the closed sockets' transports finish before the loop stops


_Transport = _SDKTransport | _DirectTransport


def _request_body(model: str, messages: list[Message], params: dict[str, Any]) -> dict[str, Any]:
    """The JSON body of a chat completion; `extra_body` entries (server-specific, e.g. vLLM's top_k) merge in."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    body.update((k, v) for k, v in params.items() if k != "extra_body")
    body.update(params.get("extra_body") or {})
    return body


TIMEOUT_ENV = "CULTUREKB_MODEL_TIMEOUT_S"
"""Environment variable with the seconds one attempt may take when `timeout_s` is not given (default 60)."""


class OpenAICompatProvider:
    """Chat completions over any OpenAI-compatible server: one request per `complete`, nothing around it.

    The wrapper (`culturekb.models.model.Model`) adds the cache, retries, the concurrency bound and the counters;
    `OpenAICompatClient` is that wrapper with this provider inside. Raises what the transport raises
    (`HTTPStatusError`, the SDK's or aiohttp's errors, `BadAnswerError` for a 2xx answer that is not a chat
    completion), which `_retry.classify` understands. One HTTP client per event loop, with a pool of
    `max_concurrency + 4` connections. `http_backend`: "direct" (plain aiohttp, the leanest), "aiohttp" (the
    `openai` SDK over aiohttp), "httpx" (the SDK over httpx) or "auto" ("direct" when aiohttp is installed, else
    "httpx"); `transport` names the one in use. The API key is read from the environment variable `api_key_env`;
    without one, "EMPTY" is sent, which local servers accept. `timeout_s` defaults to $CULTUREKB_MODEL_TIMEOUT_S,
    else 60 seconds.
    """

    params = None
    """Every call parameter goes to the server (server-specific ones too, e.g. vLLM's top_k)."""
    unexpected_fix = "check that the server speaks the OpenAI chat completions API"

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float | None = None,
        http_backend: str = "auto",
        max_concurrency: int = 8,
    ) -> None:
        if not model:
            raise ConfigError("OpenAICompatClient: model is empty; pass a model name such as 'gpt-4o-mini'")
        if timeout_s is None:
            timeout_s = env_seconds(TIMEOUT_ENV, 60.0)
        if timeout_s <= 0:
            raise ConfigError(f"OpenAICompatClient: timeout_s must be > 0, got {timeout_s}")
        if http_backend not in _HTTP_BACKENDS:
            raise ConfigError(
                f"OpenAICompatClient: http_backend {http_backend!r} is unknown; use one of {', '.join(_HTTP_BACKENDS)}"
            )
        import openai  # noqa: F401 - fail early when the SDK is missing (it is a core dependency)

        self.model = model
        self.id = f"openai:{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL).rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.http_backend = http_backend
        self.transport = _resolve_backend(http_backend)  # what "auto" stands for here
        self.pool_size = max(1, max_concurrency)
        self._lock = threading.Lock()
        self._transports: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Transport] = (
            weakref.WeakKeyDictionary()
        )

    def _api_key(self) -> str:
        return os.environ.get(self.api_key_env) or "EMPTY"

    def _transport(self) -> _Transport:
        loop = asyncio.get_running_loop()
        with self._lock:
            transport = self._transports.get(loop)
            if transport is None:
                if self.transport == "direct":
                    transport = _DirectTransport(self.base_url, self._api_key(), self.pool_size, self.timeout_s)
                else:
                    transport = _SDKTransport(self.transport, self.base_url, self._api_key(), self.pool_size,
                                              self.timeout_s)
                self._transports[loop] = transport
            return transport

    async def complete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """One request; a 2xx page that is no chat completion raises `BadAnswerError` (retried by the wrapper)."""
        body = _request_body(self.model, messages, params)
        started = time.perf_counter()
        raw = await self._transport().post(body)
        return self._parse(raw, time.perf_counter() - started)

    def _parse(self, raw: str, latency: float) -> ModelResponse:
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            text = choice["message"].get("content")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BadAnswerError(
                f"the answer is not a chat completion (no choices[0].message): {raw[:200]!r}"
            ) from exc
        usage: dict[str, int] = {}
        raw_usage = data.get("usage")
        if isinstance(raw_usage, dict):
            usage = {k: v for k, v in raw_usage.items() if isinstance(v, int) and not isinstance(v, bool)}
        if not isinstance(text, str):
            if text is not None:  # some servers send a list of content parts
                text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
            else:
                logger.warning("%s: answer without text content (finish_reason=%s)", self.id,
                               choice.get("finish_reason"))
                text = ""
        return ModelResponse(text=text, model=self.id, cached=False, usage=usage, latency_s=latency)


    async def aclose(self) -> None:
        """Close the HTTP client bound to the running event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            transport = self._transports.pop(loop, None)
        if transport is not None:
            await transport.close()

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(model={self.model!r}, base_url={self.base_url!r})"


class OpenAICompatClient(Model):
    """The one wrapper (`Model`) over an `OpenAICompatProvider`: what ``make_client("openai:MODEL")`` gives, built
    from one set of arguments; implements `ModelClient`.

    `max_concurrency`, `max_retries`, `backoff_s`, `cache` and `cache_scope` go to the wrapper, the rest to the
    provider (see both). A 2xx answer that is not a chat completion (an HTML page, broken JSON) is retried like a
    5xx. `model`, `base_url`, `transport` ... are the provider's.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        timeout_s: float | None = None,
        max_retries: int = 4,
        backoff_s: float | None = None,
        cache: ResponseCache | None = None,
        cache_scope: str = "",
        http_backend: str = "auto",
    ) -> None:
        if max_concurrency < 1:
            raise ConfigError(f"OpenAICompatClient: max_concurrency must be >= 1, got {max_concurrency}")
        provider = OpenAICompatProvider(model, base_url, api_key_env=api_key_env, timeout_s=timeout_s,
                                        http_backend=http_backend, max_concurrency=max_concurrency)
        super().__init__(provider, cache=cache, cache_scope=cache_scope, max_concurrency=max_concurrency,
                         max_retries=max_retries, backoff_s=backoff_s)
        self.provider: OpenAICompatProvider = provider

    @property
    def model(self) -> str:
        """The model name the server is asked for."""
        return self.provider.model

    @property
    def base_url(self) -> str:
        """The server's URL (up to /v1)."""
        return self.provider.base_url

    @property
    def transport(self) -> str:
        """The HTTP transport in use ("direct", "aiohttp" or "httpx")."""
        return self.provider.transport

    @property
    def timeout_s(self) -> float:
        """Seconds one attempt may take."""
        return self.provider.timeout_s

    def __repr__(self) -> str:
        return f"OpenAICompatClient(model={self.model!r}, base_url={self.base_url!r})"
