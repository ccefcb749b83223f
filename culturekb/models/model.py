"""One model wrapper (`Model`) over thin providers (`Provider`), after inspect_ai's `Model` / `ModelAPI` split.

A provider only talks to a model: one ``async complete(messages, **params) -> ModelResponse`` (the OpenAI-compatible
server in `models.chat`, a local transformers model in `models.hf_client`, a plug-in, a test double). Everything
around the call is the wrapper's, the same for every provider:

- the response cache (`ResponseCache`; key: model id, messages, parameters as given, `cache_scope`, and the
  provider's `base_url`: another server is never answered from this one's cache);
- retries (`_retry.Retrier`: transient failures, classified by `_retry.classify`, wait and go again; a
  `CultureKBError` the provider raises is final and passes through unchanged);
- the concurrency bound (`max_concurrency` calls in flight per event loop);
- the sync bridge (`complete`, `complete_many` run on a private event loop in a background thread, so they work in
  scripts and where a loop is already running);
- the parameters: a provider may declare the call parameters it takes (`params`); the wrapper drops the
  server-only ones it does not take (`SERVER_PARAMS`, logged once) and rejects any other, so a typo is an error;
- every counter: requests sent (`calls`, retries included), `answers`, `cache_hits`, `retries` and `failures`,
  both also by cause (`fault_counts`); and per scope, what one item's calls got (`Model.tally`, `models.tally`).

A factory may also hand back a full client (its own `acomplete`, `complete`, `complete_many`) instead of a
provider: `as_model` puts it behind the same wrapper (`ClientProvider`), so its calls are counted like any other's,
while it keeps its own cache and retries (the wrapper adds none, so nothing is cached or retried twice).

What a provider may have besides `complete` (all optional): `id` (else the `Model`'s `id=` is needed); `params`
(a set of parameter names, None for any); ``async complete_batch(batch, *, return_exceptions, **params)`` (answers
for several conversations at once, as a local model batches them; then `complete_many` sends the cache misses in
one call, without retries); ``async aclose()`` (connections bound to the running loop) and ``close()``; `model`,
`base_url`, `api_key_env`, `timeout_s` and `unexpected_fix`, named in failure messages.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import os
import threading
import weakref
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

from culturekb.errors import ConfigError, CultureKBError
from culturekb.models._bridge import BackgroundLoop, shutdown_background
from culturekb.models._retry import RETRY_CAUSES, Failure, Retrier, RetryPolicy, retry_cause
from culturekb.models.base import Message, ModelResponse
from culturekb.models.cache import ResponseCache
from culturekb.models.tally import CallTally, active_tally, tally_scope

__all__ = ["Model", "Provider", "ClientProvider", "as_model", "is_provider", "SERVER_PARAMS", "BACKOFF_ENV",
           "env_seconds"]

logger = logging.getLogger(__name__)

SERVER_PARAMS = frozenset(
    {"response_format", "extra_body", "presence_penalty", "frequency_penalty", "logprobs", "top_logprobs", "user",
     "timeout", "stream"}
)
"""Call parameters that only an API server understands: dropped (with one log line each) for a provider whose
`params` does not list them, so one set of parameters serves every backend."""

BACKOFF_ENV = "CULTUREKB_MODEL_BACKOFF_S"
"""Environment variable with the first retry's backoff in seconds when `backoff_s` is not given (default 0.5)."""


def env_seconds(name: str, default: float) -> float:
    """A number of seconds from the environment variable `name`, or `default` when it is unset or empty."""
    value = os.environ.get(name, "").strip()
    if not value:
        return default
    try:
        return float(value)
    except ValueError as exc:
        raise ConfigError(f"{name}={value!r} is not a number of seconds; set it to e.g. 30 or unset it") from exc


@runtime_checkable
class Provider(Protocol):
    """A thin model backend: one async call. See the module docstring for what it may add."""

    async def complete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """One chat completion, one attempt: raise on failure (the wrapper classifies and retries)."""
        ...


def is_provider(obj: object) -> bool:
    """Whether `obj` is a provider to wrap (an async `complete`, no `acomplete`), not a full client already."""
    return inspect.iscoroutinefunction(getattr(obj, "complete", None)) and not hasattr(obj, "acomplete")


class Model:
    """The one model wrapper: cache, retries, concurrency bound, sync bridge and counters around a `Provider`;
    implements `ModelClient`.

    `id` (default: the provider's) goes into cache keys and provenance. `max_concurrency` bounds calls in flight
    per event loop (the synchronous methods share one private loop). `max_retries` and `backoff_s` (default
    $CULTUREKB_MODEL_BACKOFF_S, else 0.5 s) set the retry policy. Counters: `calls` (requests sent to the provider,
    retries included), `answers`, `cache_hits`, `retries` and `failures` (calls that failed after their retries),
    `retries_by_cause` and `failures_by_cause` (`_retry.retry_cause`); `fault_counts` gives them all at once.
    Per item: ``with model.tally() as calls:`` counts the answers the calls in the block got (`models.tally`).
    """

    def __init__(
        self,
        provider: Any,
        *,
        id: str | None = None,  # noqa: A002 - the name every client uses
        cache: ResponseCache | None = None,
        cache_scope: str = "",
        max_concurrency: int = 8,
        max_retries: int = 4,
        backoff_s: float | None = None,
    ) -> None:
        name = id or getattr(provider, "id", None)
        if not name or not isinstance(name, str):
            raise ConfigError(f"Model: the provider {type(provider).__name__} has no `id`; pass Model(..., id=...)")
        if not is_provider(provider):
            raise ConfigError(f"Model: {type(provider).__name__} is not a provider (it needs an `async def complete` "
                              "and no `acomplete`)")
        if max_concurrency < 1:
            raise ConfigError(f"{name}: max_concurrency must be >= 1, got {max_concurrency}")
        if backoff_s is None:
            backoff_s = env_seconds(BACKOFF_ENV, 0.5)
        if max_retries < 0 or backoff_s < 0:
            raise ConfigError(f"{name}: max_retries and backoff_s must be >= 0, got {max_retries} and {backoff_s}")
        self.provider = provider
        self.id: str = name
        self.cache = cache
        self.cache_scope = cache_scope
        base_url = getattr(provider, "base_url", None)
        self.endpoint: str | None = str(base_url).rstrip("/") if base_url else None
        """The server the provider calls (its base URL), part of every cache key; None for a model in process."""
        self.max_concurrency = max_concurrency
        self.retry = RetryPolicy(max_retries=max_retries, backoff_s=backoff_s)
        accepted = getattr(provider, "params", None)
        self.accepted_params: frozenset[str] | None = None if accepted is None else frozenset(accepted)
        self.calls = 0
        self.cache_hits = 0
        self.retries = 0
        self.answers = 0
        self.failures = 0
        self.retries_by_cause: dict[str, int] = dict.fromkeys(RETRY_CAUSES, 0)
        self.failures_by_cause: dict[str, int] = dict.fromkeys(RETRY_CAUSES, 0)
        self._last_failure: dict[int, Failure] = {}
        self._warned: set[str] = set()
        self._counter_lock = threading.Lock()
        self._loop_lock = threading.Lock()
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self._bg: BackgroundLoop | None = None
        self._retrier = Retrier(
            self.retry, what="model", model=_model_name(provider, self.id),
            base_url=str(getattr(provider, "base_url", None) or "(in process)"),
            api_key_env=str(getattr(provider, "api_key_env", "") or ""),
            timeout_s=float(getattr(provider, "timeout_s", 0.0) or 0.0), label=self.id,
            unexpected_fix=str(getattr(provider, "unexpected_fix", "") or ""),
            on_attempt=lambda: self._count("calls"), on_retry=lambda: self._count("retries"),
            on_failure=self._note_failure)

    # -- counters ---------------------------------------------------------------------------------------------

    def _count(self, name: str, n: int = 1) -> None:
        with self._counter_lock:
            setattr(self, name, getattr(self, name) + n)

    def _note_failure(self, failure: Failure) -> None:
        """Count a failed attempt under its cause as a retry; `_request` moves the last one to the failures when
        the call fails in the end."""
        task = asyncio.current_task()
        with self._counter_lock:
            self._last_failure[id(task)] = failure
            self.retries_by_cause[retry_cause(failure)] += 1

    def _fail(self, failure: Failure | None = None) -> None:
        with self._counter_lock:
            self.failures += 1
            cause = "other" if failure is None else retry_cause(failure)
            if failure is not None:  # counted as a retry when it failed; it was the last attempt
                self.retries_by_cause[cause] -= 1
            self.failures_by_cause[cause] += 1

    @contextmanager
    def tally(self, into: CallTally | None = None) -> Iterator[CallTally]:
        """Count the answers this model gives in the block (this thread or task only) into `into`, or into a new
        `CallTally`, which the block gets: sent (a failed call too) and served from the cache apart."""
        with tally_scope(self, into) as tally:
            yield tally

    def fault_counts(self) -> dict[str, Any]:
        """What this model's calls cost and met: requests sent (attempts), answers, cache hits, retries and final
        failures by cause (timeout, 429, 5xx, connection, malformed, other)."""
        with self._counter_lock:
            return {"attempts": self.calls, "answers": self.answers, "cache_hits": self.cache_hits,
                    "retries": self.retries, "retries_by_cause": dict(self.retries_by_cause),
                    "failures": self.failures, "failures_by_cause": dict(self.failures_by_cause)}

    # -- plumbing ---------------------------------------------------------------------------------------------

    def call_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """The parameters the provider gets: server-only ones it does not take dropped, unknown ones an error."""
        if params.get("stream"):
            raise ConfigError(f"{self.id}: stream=True is not supported; drop the 'stream' parameter")
        accepted = self.accepted_params
        if accepted is None:
            return params
        unknown = sorted(set(params) - accepted - SERVER_PARAMS)
        if unknown:
            raise ConfigError(f"{self.id}: unsupported parameters {unknown}; it takes {sorted(accepted)} (and "
                              f"drops the server-only {sorted(SERVER_PARAMS - accepted)})")
        for name in sorted(set(params) - accepted):
            if name not in self._warned:
                self._warned.add(name)
                logger.warning("%s: parameter %r is for API servers only and is ignored", self.id, name)
        return {k: v for k, v in params.items() if k in accepted}

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        with self._loop_lock:
            semaphore = self._semaphores.get(loop)
            if semaphore is None:
                semaphore = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
            return semaphore

    def _background(self) -> BackgroundLoop:
        with self._loop_lock:
            if self._bg is None:
                self._bg = BackgroundLoop(name=f"culturekb-{self.id}")
                weakref.finalize(self, shutdown_background, self._bg, getattr(self.provider, "aclose", None))
            return self._bg

    def _cached(self, messages: list[Message], params: dict[str, Any]) -> tuple[str | None, ModelResponse | None]:
        """(cache key, cached answer or None); (None, None) without a cache."""
        if self.cache is None:
            return None, None
        key = self.cache.key_for(self.id, messages, params, self.cache_scope, self.endpoint)
        entry = self.cache.get(key)
        if entry is None:
            return key, None
        self._count("cache_hits")
        return key, ModelResponse(text=entry.text, model=self.id, cached=True, usage=entry.meta.get("usage", {}),
                                  attempts=0)

    def _store(self, key: str | None, response: ModelResponse) -> None:
        if key is not None and self.cache is not None:
            self.cache.put(key, response.text, {"usage": response.usage, "latency_s": response.latency_s})

    async def _request(self, messages: list[Message], params: dict[str, Any]) -> ModelResponse:
        attempts = 0

        async def attempt() -> ModelResponse:
            nonlocal attempts
            attempts += 1
            answer: ModelResponse = await self.provider.complete(messages, **params)
            return answer

        key = id(asyncio.current_task())
        try:
            response = await self._retrier.acall(attempt)
        except CultureKBError:
            with self._counter_lock:
                failure = self._last_failure.pop(key, None)
            self._fail(failure)
            raise
        with self._counter_lock:
            self._last_failure.pop(key, None)
            if response.cached:  # a wrapped full client answered from its own cache: nothing was sent
                self.calls -= 1
                self.cache_hits += 1
            else:
                self.answers += 1
        return dataclasses.replace(response, attempts=0) if response.cached else dataclasses.replace(
            response, cached=False, attempts=attempts)

    # -- ModelClient ------------------------------------------------------------------------------------------

    async def acomplete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """One chat completion on the caller's loop; served from the cache when this exact request was answered
        before. On your own event loop, `await model.aclose()` before the loop ends, to close its connections."""
        return await self._answer(messages, params, active_tally(self))

    def complete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """Synchronous `acomplete`."""
        return self._background().run(self._answer(messages, params, active_tally(self)))

    async def _answer(self, messages: list[Message], params: dict[str, Any], tally: CallTally | None
                      ) -> ModelResponse:
        """`acomplete`, its answer (or failure) added to `tally`: the caller's scope, read where the call began."""
        try:
            sent = self.call_params(params)
            key, hit = self._cached(messages, params)
            if hit is None:
                async with self._semaphore():
                    hit = await self._request(messages, sent)
                self._store(key, hit)
        except Exception:
            if tally is not None:
                tally.add(cached=False)
            raise
        if tally is not None:
            tally.add(cached=hit.cached)
        return hit

    def complete_many(
        self, batch: Sequence[list[Message]], *, return_exceptions: bool = False, **params: Any
    ) -> list[Any]:
        """All completions of `batch` concurrently (at most `max_concurrency` in flight), in input order.

        The first failure cancels the rest and is raised; answers already received stay in the cache. With
        `return_exceptions=True` a failed item's slot holds its `CultureKBError` and the others go on.
        """
        if not batch:
            return []
        return self._background().run(self._many(batch, params, return_exceptions, active_tally(self)))

    async def acomplete_many(
        self, batch: Sequence[list[Message]], *, return_exceptions: bool = False, **params: Any
    ) -> list[Any]:
        """Async `complete_many` on the caller's event loop."""
        return await self._many(batch, params, return_exceptions, active_tally(self))

    async def _many(self, batch: Sequence[list[Message]], params: dict[str, Any], return_exceptions: bool,
                    tally: CallTally | None) -> list[Any]:
        if not batch:
            return []
        if callable(getattr(self.provider, "complete_batch", None)):
            return await self._batched(batch, params, return_exceptions, tally)
        return await self._gather(batch, params, return_exceptions, tally)

    async def _gather(self, batch: Sequence[list[Message]], params: dict[str, Any], return_exceptions: bool,
                      tally: CallTally | None) -> list[Any]:
        """`max_concurrency` workers pull requests in order, so a batch of any size costs few tasks."""
        self.call_params(params)  # a bad parameter fails the batch before anything is sent
        results: list[Any] = [None] * len(batch)
        indices = iter(range(len(batch)))

        async def worker() -> None:
            for i in indices:  # one iterator shared by all workers; next() never interleaves on one loop
                if return_exceptions:
                    try:
                        results[i] = await self._answer(batch[i], params, tally)
                    except CultureKBError as exc:
                        results[i] = exc
                else:
                    results[i] = await self._answer(batch[i], params, tally)

        workers = [asyncio.ensure_future(worker()) for _ in range(min(self.max_concurrency, len(batch)))]
        try:
            await asyncio.gather(*workers)
        except BaseException:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        return results

    async def _batched(self, batch: Sequence[list[Message]], params: dict[str, Any], return_exceptions: bool,
                       tally: CallTally | None) -> list[Any]:
        """Cache hits first, then every miss in one `provider.complete_batch` call (one attempt each)."""
        sent = self.call_params(params)
        results: list[Any] = [None] * len(batch)
        keys: list[str | None] = [None] * len(batch)
        for i, messages in enumerate(batch):
            keys[i], results[i] = self._cached(messages, params)
        todo = [i for i, r in enumerate(results) if r is None]
        if tally is not None:
            tally.add(cached=True, n=len(batch) - len(todo))
        if not todo:
            return results
        async with self._semaphore():
            self._count("calls", len(todo))
            try:
                outcomes = await self.provider.complete_batch([batch[i] for i in todo],
                                                              return_exceptions=return_exceptions, **sent)
            except CultureKBError:
                self._fail()
                if tally is not None:
                    tally.add(cached=False, n=len(todo))
                raise
        for i, outcome in zip(todo, outcomes, strict=True):
            own_cache = isinstance(outcome, ModelResponse) and outcome.cached  # a wrapped full client's cache
            if tally is not None:
                tally.add(cached=own_cache)
            if own_cache:
                self._count("calls", -1)
                self._count("cache_hits")
                results[i] = dataclasses.replace(outcome, attempts=0)
            elif isinstance(outcome, ModelResponse):
                self._count("answers")
                results[i] = dataclasses.replace(outcome, cached=False, attempts=1)
                self._store(keys[i], results[i])
            else:
                self._fail()
                results[i] = outcome
        return results

    # -- lifecycle --------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close what the provider holds on the running event loop (its HTTP connections)."""
        aclose = getattr(self.provider, "aclose", None)
        if aclose is not None:
            await aclose()

    def close(self) -> None:
        """Close the private event loop (and the provider's connections on it), then the provider (idempotent).

        Synchronous calls still running in other threads are cancelled (they raise CancelledError); a later call
        starts a fresh private loop.
        """
        with self._loop_lock:
            bg, self._bg = self._bg, None
        if bg is not None:
            shutdown_background(bg, getattr(self.provider, "aclose", None))
        close = getattr(self.provider, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.provider!r})"


class ClientProvider:
    """A full client (one with its own `acomplete`, `complete_many`, cache and retries, as a plug-in's factory may
    return) seen as a provider, so that the one wrapper counts its calls (`as_model`).

    One call goes to the client's `acomplete`; a batch to its own `complete_many` (in a worker thread, so that the
    client batches or bounds it as it does). An answer the client served from its own cache (``cached=True``) is
    counted as a cache hit.
    """

    params = None
    """Every call parameter goes to the client, which decides."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.id: str = client.id

    async def complete(self, messages: list[Message], **params: Any) -> ModelResponse:
        """One completion from the client."""
        answer: ModelResponse = await self.client.acomplete(messages, **params)
        return answer

    async def complete_batch(self, batch: Sequence[list[Message]], *, return_exceptions: bool = False,
                             **params: Any) -> list[Any]:
        """The client's own `complete_many` of `batch`."""
        answers: list[Any] = await asyncio.to_thread(self.client.complete_many, list(batch),
                                                     return_exceptions=return_exceptions, **params)
        return answers

    async def aclose(self) -> None:
        """The client's `aclose`, when it has one (connections bound to the running loop)."""
        aclose = getattr(self.client, "aclose", None)
        if aclose is not None:
            await aclose()

    def close(self) -> None:
        """The client's `close`, when it has one."""
        close = getattr(self.client, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.client!r})"


def as_model(client: Any, **wrapper: Any) -> Model:
    """`client` behind the one wrapper: itself when it is a `Model`; a provider wrapped with the `wrapper` options
    (`Model`'s keywords); a full client through `ClientProvider`, with no cache and no retries of the wrapper's (it
    has its own), bounded to `wrapper`'s ``max_concurrency`` calls in flight when given."""
    if isinstance(client, Model):
        return client
    if is_provider(client):
        return Model(client, **wrapper)
    if not inspect.iscoroutinefunction(getattr(client, "acomplete", None)) or not getattr(client, "id", None):
        raise ConfigError(f"{type(client).__name__} is neither a model provider (an `async def complete`) nor a "
                          "model client (an `id` and an `async def acomplete`); see culturekb.models.model")
    bound = {"max_concurrency": wrapper["max_concurrency"]} if wrapper.get("max_concurrency") else {}
    return Model(ClientProvider(client), max_retries=0, **bound)


def _model_name(provider: Any, default: str) -> str:
    """The model name failure messages give: the provider's `model` when it is a name (not a loaded model)."""
    name = getattr(provider, "model", None)
    return name if isinstance(name, str) and name else default


def accepted_options(factory: Any) -> Collection[str] | None:
    """The keyword options `factory` takes by name; None when it takes any (``**kw``)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return None
    names = []
    for p in signature.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            names.append(p.name)
    return names
