"""Dynamic micro-batching of query embeddings for the API, with an in-memory LRU of vectors.

`BatchingEmbedder` wraps the served `Embedder`. `POST /v1/lookup` awaits `encode_async` on the event loop with
the request's non-exact normalised concepts (`Retriever.to_encode`; exact hits never reach it), so no thread waits
for the batch; routes that run in the threadpool (augment) call `encode` through the Retriever, which blocks that
thread, not the event loop. Texts found in the LRU (keyed by embedder id + normalised text) are answered at
once; the rest become one job on a bounded queue. An encoder thread takes the first job, gathers more for at
most `max_wait_ms` or until `max_batch` texts, encodes them all (duplicates once) in **one** `encode` call of the
wrapped embedder, and hands each job its rows. `encoders` such threads serve the queue (one per core the worker
may use, each with one torch thread), so that large requests still use every core while small ones are gathered.
When an encode call fails, each job of its batch is encoded alone, so a bad input fails only its own request.
A full queue raises `ServerBusyError` (HTTP 503 with Retry-After).

The gathering window ends early when no request is on its way: `Arrivals` (fed by the `ArrivalCount` middleware)
counts this worker's /v1 requests that have not yet reached the batcher (still being read, parsed or looked up
exactly). When the queue is empty and that count is 0, no other text can join the batch, so the encoder starts at
once instead of idling out the window (measured on 2 cores with 8 connections per worker: the encoder's core sat
idle about 9% of the time, the window's tail after every batch).

Embedding servers (text-embeddings-inference, Triton's dynamic batcher) do the same: under load a batch forms
while the previous one is being encoded, so the encoder's per-call cost is paid once per batch, not per request.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import MutableMapping, Sequence
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from culturekb.api.limits import is_client_request
from culturekb.errors import ProviderError
from culturekb.models.base import Embedder

__all__ = ["Arrivals", "ArrivalCount", "BatchingEmbedder", "BatchObserver", "EmbeddingLRU", "ServerBusyError",
           "BatchStats"]

log = logging.getLogger(__name__)

_IDLE_EXIT_S = 30.0
"""The worker thread exits after this long without a job (a new one starts with the next job)."""
_POLL_S = 0.0002
"""While gathering, how often the encoder looks again whether a request is still on its way."""


class Arrivals:
    """This worker's /v1 requests that may still bring texts to the batcher (thread-safe count).

    A request comes in (`come`, by `ArrivalCount`) and settles once (`settle`): when its job is on the queue, when
    its texts were all in the LRU, or when it ends without encoding (exact hits only, an error)."""

    def __init__(self) -> None:
        self._n = 0
        self._lock = threading.Lock()

    def pending(self) -> int:
        """Requests come in and not settled yet."""
        return self._n

    def come(self) -> list[bool]:
        """A request comes in; its cell (pass it to `settle`)."""
        with self._lock:
            self._n += 1
        return [True]

    def settle(self, cell: list[bool] | None) -> None:
        """The request of `cell` brings nothing more (a second settle of the same cell does nothing)."""
        if cell is None or not cell[0]:
            return
        with self._lock:
            if cell[0]:
                cell[0] = False
                self._n -= 1


_ARRIVING: ContextVar[list[bool] | None] = ContextVar("culturekb_arriving", default=None)
"""The current request's `Arrivals` cell (set by `ArrivalCount`; the route's coroutine and its threadpool calls
inherit it)."""


class ArrivalCount:
    """ASGI middleware: each /v1 request (admin routes aside) counts in `arrivals` until it settles."""

    def __init__(self, app: Any, arrivals: Arrivals) -> None:
        self.app = app
        self.arrivals = arrivals

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if not is_client_request(scope):
            await self.app(scope, receive, send)
            return
        cell = self.arrivals.come()
        token = _ARRIVING.set(cell)
        try:
            await self.app(scope, receive, send)
        finally:
            _ARRIVING.reset(token)
            self.arrivals.settle(cell)


class ServerBusyError(ProviderError):
    """The embedding queue is full: the server is overloaded (HTTP 503 with Retry-After)."""


def cache_key(embedder_id: str, text: str) -> tuple[str, str]:
    """The LRU key of `text`: the embedder id and the text in NFC with its whitespace collapsed."""
    return embedder_id, " ".join(unicodedata.normalize("NFC", text).split())


class EmbeddingLRU:
    """A thread-safe least-recently-used map from `cache_key` to one float32 vector; `size` 0 keeps nothing."""

    def __init__(self, size: int) -> None:
        self.size = max(0, int(size))
        self._data: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: tuple[str, str]) -> np.ndarray | None:
        """The vector of `key` (marked as recently used), or None."""
        with self._lock:
            vec = self._data.get(key)
            if vec is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return vec

    def put(self, key: tuple[str, str], vector: np.ndarray) -> None:
        """Store `vector` (read-only) under `key`, dropping the least recently used entries beyond `size`."""
        if self.size == 0:
            return
        vector = np.array(vector, dtype=np.float32, copy=True)
        vector.flags.writeable = False
        with self._lock:
            self._data[key] = vector
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)


class BatchObserver(Protocol):
    """What a `BatchingEmbedder` reports as it goes (the API's metrics implement it)."""

    def batch(self, texts: int) -> None:
        """One encode call of the wrapped embedder with `texts` texts."""
        ...

    def cache(self, hits: int, misses: int) -> None:
        """One `encode` call: `hits` texts answered by the LRU, `misses` sent to the encoder."""
        ...

    def rejected(self) -> None:
        """One request refused because the queue was full."""
        ...


@dataclass
class BatchStats:
    """What the batcher did so far: encode calls of the wrapped embedder, texts and jobs they served."""

    encode_calls: int = 0
    texts: int = 0
    jobs: int = 0
    largest_batch: int = 0
    rejected: int = 0
    fallbacks: int = 0
    batch_sizes: list[int] = field(default_factory=list, repr=False)


@dataclass(eq=False)
class _Job:
    texts: list[str]
    future: Future[np.ndarray] = field(default_factory=Future)


class BatchingEmbedder:
    """An `Embedder` that gathers concurrent `encode` calls into one call of `inner` (see the module doc).

    `batching=False` calls `inner` directly in the caller's thread (the LRU still applies), which is how the
    server behaved before micro-batching (benchmarks/bench_api.py compares both). `max_batch`: most texts per
    gathered call (one job larger than that runs alone); `max_wait_ms`: how long the first job of a batch waits
    for others; `max_queue`: most jobs waiting (ServerBusyError beyond); `cache_size`: LRU entries (0: none);
    `observer`: told of each encode call, LRU use and refusal (the server's Prometheus metrics); `encoders`:
    threads that encode batches at the same time; `arrivals`: the worker's requests on their way (the gathering
    window ends early when none is; None: it always runs out).
    """

    def __init__(
        self,
        inner: Embedder,
        *,
        batching: bool = True,
        max_batch: int = 128,
        max_wait_ms: float = 2.0,
        max_queue: int = 256,
        cache_size: int = 10_000,
        observer: BatchObserver | None = None,
        encoders: int = 1,
        arrivals: Arrivals | None = None,
    ) -> None:
        if max_batch < 1 or max_queue < 1 or max_wait_ms < 0 or encoders < 1:
            raise ValueError("max_batch, max_queue and encoders must be >= 1 and max_wait_ms >= 0")
        self.encoders = encoders
        self.inner = inner
        # the Embedder protocol: the wrapped model's identity, and the spec `make_embedder` rebuilds it from
        self.id: str = str(inner.id)
        self.dim: int = int(inner.dim)
        spec = getattr(inner, "spec", None)
        self.spec: str | None = spec if isinstance(spec, str) else None
        self.batching = batching
        self.max_batch = max_batch
        self.max_wait_s = max_wait_ms / 1000.0
        self.max_queue = max_queue
        self.cache = EmbeddingLRU(cache_size)
        self.stats = BatchStats()
        self.observer = observer
        self.arrivals = arrivals
        self._queue: queue.Queue[_Job] = queue.Queue(maxsize=max_queue)
        self._lock = threading.Lock()
        self._alive = 0  # encoder threads running (guarded by _lock)


    def reset(self) -> None:
        """Forget what was encoded so far: statistics and the LRU (after the server's own warm-up request)."""
        self.stats = BatchStats()
        self.cache = EmbeddingLRU(self.cache.size)

    def __getattr__(self, name: str) -> Any:
        # anything else an embedder offers (device, batch_size ...) is the wrapped one's
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Rows for `texts` (unit norm, float32): from the LRU, else from one gathered call of the wrapped model."""
        texts = list(texts)
        out, missing = self._from_cache(texts)
        if missing:
            todo = [texts[rows[0]] for rows in missing.values()]
            self._fill(out, missing, self._put(todo).future.result() if self.batching
                       else self._encode_inner(todo, batch_size))
        return out

    async def encode_async(self, texts: Sequence[str]) -> np.ndarray:
        """`encode` for a coroutine on the event loop: the request waits for its batch without holding a thread
        (its job's future is awaited; the encoder thread hands the rows over through the loop). Without batching,
        the call runs in the threadpool."""
        if not self.batching:
            from starlette.concurrency import run_in_threadpool

            return await run_in_threadpool(self.encode, list(texts))
        texts = list(texts)
        out, missing = self._from_cache(texts)
        if missing:
            vectors = await asyncio.wrap_future(self._put([texts[rows[0]] for rows in missing.values()]).future)
            self._fill(out, missing, vectors)
        return out

    def _from_cache(self, texts: list[str]) -> tuple[np.ndarray, dict[tuple[str, str], list[int]]]:
        """(rows with the LRU's vectors filled in, {key: rows} of the texts it lacks); a request with nothing to
        encode settles its arrival."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        missing: dict[tuple[str, str], list[int]] = {}
        for i, key in enumerate(cache_key(self.id, t) for t in texts):
            vec = self.cache.get(key) if key not in missing else None
            if vec is None:
                missing.setdefault(key, []).append(i)
            else:
                out[i] = vec
        if self.observer is not None and texts:
            self.observer.cache(hits=len(texts) - sum(map(len, missing.values())), misses=len(missing))
        if not missing and self.arrivals is not None:
            self.arrivals.settle(_ARRIVING.get())  # all from the LRU: this request brings nothing to a batch
        return out, missing

    def _fill(self, out: np.ndarray, missing: dict[tuple[str, str], list[int]], vectors: np.ndarray) -> None:
        for (key, rows), vec in zip(missing.items(), vectors, strict=True):
            out[rows] = vec
            self.cache.put(key, vec)

    def _encode_inner(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        # one model batch per gathered call, at most max_batch texts (an index build through here is chunked)
        size = batch_size if batch_size is not None else min(len(texts), self.max_batch)
        vectors = np.asarray(self.inner.encode(texts, batch_size=max(1, size)), dtype=np.float32)
        if vectors.shape != (len(texts), self.dim):
            raise ProviderError(f"embedder {self.id} returned shape {vectors.shape} for {len(texts)} texts; "
                                f"expected ({len(texts)}, {self.dim})")
        return vectors

    # -- the batcher ------------------------------------------------------------------------------------------
    def _put(self, texts: list[str]) -> _Job:
        """Queue one job for the encoder threads (starting them as needed); its future gets the rows."""
        job = _Job(texts)
        with self._lock:  # put and thread start under one lock: the idle worker exits only on an empty queue
            try:
                self._queue.put_nowait(job)
            except queue.Full:
                self.stats.rejected += 1
                if self.observer is not None:
                    self.observer.rejected()
                raise ServerBusyError(
                    f"the server is overloaded: {self.max_queue} embedding jobs are already waiting; retry in a "
                    "moment, or raise CULTUREKB_API_BATCH_QUEUE / add workers (`culturekb serve --workers N`)"
                ) from None
            while self._alive < self.encoders:
                threading.Thread(target=self._worker, name="culturekb-embed-batcher", daemon=True).start()
                self._alive += 1
        if self.arrivals is not None:
            self.arrivals.settle(_ARRIVING.get())  # after the put: it is never neither on its way nor queued
        return job

    def _worker(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=_IDLE_EXIT_S)
            except queue.Empty:
                with self._lock:
                    if self._queue.empty():
                        self._alive -= 1
                        return
                continue
            batch = [first]
            n = len(first.texts)
            deadline = time.monotonic() + self.max_wait_s
            while n < self.max_batch:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or (self.arrivals is not None and self.arrivals.pending() == 0):
                        break  # the window ran out, or no request is on its way: encode now
                    try:
                        job = self._queue.get(timeout=remaining if self.arrivals is None else
                                              min(remaining, _POLL_S))
                    except queue.Empty:
                        continue
                batch.append(job)
                n += len(job.texts)
            self._run(batch)

    def _run(self, batch: list[_Job]) -> None:
        texts = list(dict.fromkeys(t for job in batch for t in job.texts))
        stats = self.stats
        stats.encode_calls += 1
        stats.texts += len(texts)
        stats.jobs += len(batch)
        stats.largest_batch = max(stats.largest_batch, len(texts))
        if len(stats.batch_sizes) < 10_000:
            stats.batch_sizes.append(len(texts))
        if self.observer is not None:
            self.observer.batch(len(texts))
        try:
            vectors = self._encode_inner(texts)
        except Exception as exc:  # noqa: BLE001 - routed to the requests, never kills the worker
            if len(batch) == 1:
                batch[0].future.set_exception(exc)
                return
            log.warning("a batched encode call of %d texts failed (%s); encoding its %d requests one by one",
                        len(texts), exc, len(batch))
            stats.fallbacks += 1
            for job in batch:
                stats.encode_calls += 1
                try:
                    job.future.set_result(self._encode_inner(job.texts))
                except Exception as one:  # noqa: BLE001 - this request's own error
                    job.future.set_exception(one)
            return
        row = {t: i for i, t in enumerate(texts)}
        for job in batch:
            job.future.set_result(vectors[[row[t] for t in job.texts]])
