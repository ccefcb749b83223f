"""`create_app`: the FastAPI application over one KB directory (see `culturekb.api` for the endpoints)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
from collections.abc import AsyncIterator, MutableMapping
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from culturekb._version import __version__
from culturekb.api._batching import ArrivalCount, Arrivals, BatchingEmbedder, ServerBusyError
from culturekb.api._docs import add_offline_docs
from culturekb.api._state import KBHolder, ReloadSync, set_torch_threads
from culturekb.api.auth import ApiKeys
from culturekb.api.limits import (
    BodySizeLimit,
    InFlightLimit,
    InvalidRequestError,
    limits_in_openapi,
    validation_error_handler,
)
from culturekb.api.metrics import ApiMetrics, MetricsMiddleware
from culturekb.api.routes import admin_router, health_router, metrics_router, v1_router
from culturekb.api.settings import ApiSettings, load_api_settings
from culturekb.config import Settings
from culturekb.errors import ConfigError, CultureKBError, DataError, IndexError_, ProviderError
from culturekb.kb.store import KnowledgeBase
from culturekb.models.base import Embedder
from culturekb.models.threads import available_cores

__all__ = ["create_app", "app_from_env"]

log = logging.getLogger(__name__)

_DESCRIPTION = """Retrieval of cultural knowledge tuples (concept, culture, dominant emotion, rationales) and
knowledge blocks for VLM prompts.

**Keys.** When the server has API keys, send one as `Authorization: Bearer KEY` or `X-API-Key: KEY`. Read keys open
the `/v1` routes and `/metrics`; admin keys also open `/v1/admin`. `/livez` and `/readyz` never need a key.
Server details (the KB directory in `/v1/kb`, the worker pid in `/readyz`) are shown to admin keys only (or, on a
server without keys, to clients on the loopback address).

**Overload.** Beyond `max_in_flight` concurrent `/v1` requests per worker, or a full embedding queue, the answer
is 503 with `Retry-After: 1`: back off and retry.

**Errors** are JSON objects `{"detail": "what was wrong and what to change", "errors": [...]}`.
"""


def create_app(
    kb_dir: str | Path | None = None,
    settings: ApiSettings | None = None,
    *,
    embedder: Embedder | str | None = None,
    kb: KnowledgeBase | None = None,
    library_settings: Settings | None = None,
    **overrides: Any,
) -> FastAPI:
    """The API over the KB in `kb_dir`; settings come from `settings`, else the environment, then `overrides`.

    The KB and its index are loaded (read-only, memory-mapped) before this returns, so a broken KB fails here;
    `kb` is that KB when the caller has loaded it already (it is then not read again). `embedder`: an
    Embedder instance to share (tests, notebooks) or a spec; default `settings.embedder`, else the one the
    index records. `library_settings`: backend, tau and the embedder of a missing index (default
    `load_settings()`: environment and config file).
    """
    if settings is None:
        settings = load_api_settings(kb_dir=kb_dir, **overrides)
    else:
        update = {k: v for k, v in {"kb_dir": kb_dir, **overrides}.items() if v is not None}
        settings = ApiSettings.model_validate({**settings.model_dump(), **update}) if update else settings
    if settings.kb_dir is None:
        raise ConfigError("no KB to serve; pass kb_dir (or set CULTUREKB_API_KB_DIR) to a directory built with "
                          "`culturekb build`")
    read, admin = settings.keys()
    if settings.pin_dir is not None:  # before the embedder loads: its threads follow this worker's cores
        from culturekb.api._pinning import pin_worker
        from culturekb.models.threads import PROCESSES_ENV

        pin_worker(settings.pin_dir, int(os.environ.get(PROCESSES_ENV) or 1))
    sync = ReloadSync(settings.sync_file) if settings.sync_file is not None else None
    metrics = ApiMetrics()
    arrivals = Arrivals()  # requests on their way to the micro-batcher (it stops gathering when there are none)
    holder = KBHolder(embedder or settings.embedder, settings.backend, settings.tau, build_index=settings.build_index,
                      sync=sync, settings=library_settings, status=settings.status,
                      wrap=functools.partial(_batching_embedder, settings, metrics, arrivals))
    holder.start(settings.kb_dir, kb=kb)
    set_torch_threads(settings.torch_threads)  # after the start: loading the embedder is what imports torch

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.warm_request:
            await warm_request(app)
        task = asyncio.create_task(_follow_reloads(holder, settings.sync_interval_s)) if sync else None
        try:
            yield
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    app = FastAPI(title="culturekb retrieval API", version=__version__, description=_DESCRIPTION,
                  lifespan=lifespan, docs_url=None, redoc_url=None)  # /docs and /redoc: served offline below
    add_offline_docs(app)
    app.state.settings = settings
    app.state.holder = holder
    app.state.api_keys = ApiKeys(read, admin)
    app.state.metrics = metrics
    for router in (health_router, metrics_router, v1_router, admin_router):
        app.include_router(router)

    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(InvalidRequestError, validation_error_handler)
    app.add_exception_handler(ServerBusyError, _busy_error)
    app.add_exception_handler(CultureKBError, _culturekb_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(InFlightLimit, max_in_flight=settings.max_in_flight, on_reject=metrics.in_flight_full.inc)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(ArrivalCount, arrivals=arrivals)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            app.openapi_schema = limits_in_openapi(schema, settings)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


_UNPARSEABLE = "There was an error parsing the body"


def _unparseable_reason(cause: BaseException | None) -> str:
    """Why a request body could not be read, from the error the JSON parser raised: nested too deeply, a number
    too long, or bytes that are not UTF-8."""
    import sys

    if isinstance(cause, RecursionError):
        return ("the request body is JSON nested too deeply to read (thousands of brackets); send a body whose "
                "arrays and objects nest a few levels, as the schema describes")
    if isinstance(cause, ValueError) and not isinstance(cause, UnicodeDecodeError) and "digits" in str(cause):
        return (f"the request body holds a number too long to read (over {sys.get_int_max_str_digits()} digits); "
                "send numbers as the schema describes (k, tau and the limits are small)")
    return "the request body could not be decoded; send UTF-8 encoded JSON with Content-Type: application/json"


async def _http_error(request: Request, exc: Exception) -> Response:
    """FastAPI's own HTTP errors, with a message that says what to change where FastAPI's does not."""
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400 and exc.detail == _UNPARSEABLE:
        return JSONResponse({"detail": _unparseable_reason(exc.__cause__)}, status_code=400)
    return await http_exception_handler(request, exc)


def _batching_embedder(settings: ApiSettings, metrics: ApiMetrics, arrivals: Arrivals,
                       embedder: Embedder) -> Embedder:
    """The served embedder behind the micro-batcher and LRU of `settings` (`culturekb.api._batching`)."""
    if isinstance(embedder, BatchingEmbedder):
        return embedder
    return BatchingEmbedder(embedder, batching=settings.batching, max_batch=settings.batch_max_size,
                            max_wait_ms=settings.batch_max_wait_ms, max_queue=settings.batch_queue,
                            cache_size=settings.embed_cache_size, observer=metrics,
                            encoders=settings.batch_encoders or available_cores(), arrivals=arrivals)


async def _busy_error(request: Request, exc: Exception) -> JSONResponse:
    """The embedding queue is full: 503 with Retry-After, so that clients back off instead of piling up."""
    return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "1"})


async def _culturekb_error(request: Request, exc: Exception) -> JSONResponse:
    """Errors raised on purpose by the library: bad input -> 422, a broken index or provider -> 503."""
    if isinstance(exc, ConfigError | DataError):
        status = 422
    elif isinstance(exc, IndexError_ | ProviderError):
        status = 503
    else:
        log.error("unexpected culturekb error on %s: %s", request.url.path, exc)
        status = 500
    return JSONResponse({"detail": str(exc)}, status_code=status)


async def _follow_reloads(holder: KBHolder, interval: float) -> None:
    while True:
        await asyncio.sleep(interval)
        try:
            await run_in_threadpool(holder.follow)
        except Exception:  # noqa: BLE001 - a failed follow must never stop the poller
            log.exception("following a reload failed; still serving the current KB")


WARM_UP_PHRASE = "a culturekb warm-up phrase"
"""The semantic concept of the warm-up request (not in any KB, so it takes the embedding path)."""


async def warm_request(app: FastAPI) -> int:
    """Answer one real ``POST /v1/lookup`` inside this worker before it accepts connections; the HTTP status.

    Loading the model (`culturekb.models.embedding_cache.warm_up`) is not all a first request pays: building
    FastAPI's validators and serialisers, starting the thread pool and the micro-batcher's encoder thread,
    imports done on first use, the exact-match table, the first FAISS search. Measured over loopback with 2
    workers (issue 25): the first lookup of each worker took 140-280 ms, later ones 15-30 ms. This request runs
    all of that through the same ASGI stack as a client's (middlewares, key check, route, encoder, store): one
    concept of the served KB and one phrase that is not in it. It is not counted anywhere a client could see:
    /metrics is muted while it runs, and the micro-batcher's statistics and LRU are reset after it. A failure
    is logged and never stops the server.
    """
    holder: KBHolder = app.state.holder
    state = holder.current
    if state is None or len(state.kb) == 0:
        return 0
    first = state.kb.tuples[0]
    body = json.dumps({"concepts": [first.concept, WARM_UP_PHRASE], "culture": first.culture}).encode()
    headers = [(b"host", b"localhost"), (b"content-type", b"application/json"),
               (b"content-length", str(len(body)).encode())]
    keys: ApiKeys = app.state.api_keys
    key = next(iter(sorted(keys.read or keys.admin)), None)
    if key is not None:
        headers.append((b"x-api-key", key.encode()))
    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/v1/lookup", "raw_path": b"/v1/lookup", "root_path": "", "query_string": b"",
        "headers": headers, "client": ("127.0.0.1", 0), "server": ("127.0.0.1", 0), "state": {},
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    status = 0

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])

    metrics: ApiMetrics = app.state.metrics
    metrics.muted = True
    try:
        await app(scope, receive, send)
    except Exception as exc:  # noqa: BLE001 - warming must never stop the server
        log.warning("the warm-up request failed (%s); the first client request pays the first-use costs", exc)
    finally:
        metrics.muted = False
        batcher = holder.current.retriever.embedder if holder.current is not None else None
        if isinstance(batcher, BatchingEmbedder):
            batcher.reset()
    if status != 200:
        log.warning("the warm-up request answered %d; the first client request pays the first-use costs", status)
    return status


def app_from_env() -> FastAPI:
    """The factory each uvicorn worker calls (`uvicorn culturekb.api.app:app_from_env --factory`): settings from
    the environment (CULTUREKB_API_KB_DIR, ...), which `serve` sets for its workers."""
    return create_app(settings=load_api_settings())
