"""Prometheus metrics: requests, latency, and exact vs semantic hits per culture.

Each app has its own registry (several apps in one process, as in tests, do not collide). Under `serve` with
several workers, PROMETHEUS_MULTIPROC_DIR is set and /metrics adds up the values of all workers.

Every label takes values from a bounded set, so no client can grow /metrics: `method` is one of the standard
HTTP methods or "other", `route` a route template of the app or "<unmatched>", `status` a status code the
server chose, `culture` a culture of the served KB (a request's culture is resolved before it is counted).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from culturekb.api.limits import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ApiMetrics", "MetricsMiddleware", "CONTENT_TYPE_LATEST", "METHODS", "method_label"]

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
"""HTTP methods counted under their own name; any other (a client may send any token) counts as "other"."""


def method_label(method: str) -> str:
    """The `method` label of a request: its method when standard, else "other" (bounded label values)."""
    return method if method in METHODS else "other"


_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class ApiMetrics:
    """One app's Prometheus counters and latency histogram, in a registry of its own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("culturekb_http_requests", "HTTP requests answered",
                                ["method", "route", "status"], registry=self.registry)
        self.latency = Histogram("culturekb_http_request_duration_seconds", "time to answer a request",
                                 ["method", "route"], buckets=_BUCKETS, registry=self.registry)
        self.hits = Counter("culturekb_lookup_hits", "looked-up concepts by outcome: exact, semantic or none",
                            ["culture", "kind"], registry=self.registry)
        self.concepts = Counter("culturekb_lookup_concepts", "concepts looked up (lookup and augment)",
                                ["endpoint"], registry=self.registry)
        self.reloads = Counter("culturekb_reloads", "admin reloads by outcome (ok, failed)", ["outcome"],
                               registry=self.registry)
        self.encode_batch = Histogram("culturekb_encode_batch_texts", "texts per encode call of the micro-batcher",
                                      buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512), registry=self.registry)
        self.embed_cache = Counter("culturekb_query_embedding_cache", "query embeddings by source: lru or encoder",
                                   ["source"], registry=self.registry)
        self.busy = Counter("culturekb_embedding_queue_full", "requests refused with 503: embedding queue full",
                            registry=self.registry)
        self.in_flight_full = Counter("culturekb_http_rejected", "requests refused with 503: too many in flight "
                                      "(max_in_flight)", registry=self.registry)
        self.muted = False
        """True while the server answers its own warm-up request (`culturekb.api.app`): nothing is counted."""

    def count_concepts(self, endpoint: str, n: int) -> None:
        """`n` concepts looked up by `endpoint` (lookup, augment)."""
        if not self.muted:
            self.concepts.labels(endpoint=endpoint).inc(n)

    def count_hits(self, culture: str, kinds: Iterable[str | None]) -> None:
        """Count one lookup's outcomes in `culture`: each kind is 'exact', 'semantic' or None (no match)."""
        if self.muted:
            return
        counts: dict[str, int] = {}
        for kind in kinds:
            key = kind or "none"
            counts[key] = counts.get(key, 0) + 1
        for kind, n in counts.items():
            self.hits.labels(culture=culture, kind=kind).inc(n)

    def batch(self, texts: int) -> None:
        """One encode call of the micro-batcher (`culturekb.api._batching.BatchObserver`)."""
        if self.muted:
            return
        self.encode_batch.observe(texts)

    def cache(self, hits: int, misses: int) -> None:
        """Query embeddings of one request: `hits` from the LRU, `misses` from the encoder."""
        if self.muted:
            return
        if hits:
            self.embed_cache.labels(source="lru").inc(hits)
        if misses:
            self.embed_cache.labels(source="encoder").inc(misses)

    def rejected(self) -> None:
        """One request refused with 503 (embedding queue full)."""
        self.busy.inc()

    def render(self) -> bytes:
        """The metrics in Prometheus text format, summed over all workers when several serve the app."""
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            from prometheus_client import multiprocess

            registry = CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return generate_latest(registry)
        return generate_latest(self.registry)


class MetricsMiddleware:
    """Counts each HTTP request by route template (never the raw path, which carries user text) and status."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, then count and time it under its route template and status."""
        if scope["type"] != "http" or self.metrics.muted:
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status: dict[str, Any] = {"code": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", None) or "<unmatched>"
            method = method_label(str(scope.get("method", "")))
            self.metrics.requests.labels(method=method, route=name, status=str(status["code"])).inc()
            self.metrics.latency.labels(method=method, route=name).observe(time.perf_counter() - start)
