"""Request limits: body size (413), batch size, string length and k (422), requests in flight (503 with
Retry-After), each answer saying what to change.

The configured limits are also written into the served OpenAPI document, so clients and fuzzers see them.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from culturekb.api.settings import ApiSettings

__all__ = [
    "BodySizeLimit",
    "InFlightLimit",
    "InvalidRequestError",
    "check_strings",
    "is_client_request",
    "validation_error_handler",
    "limits_in_openapi",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_client_request(scope: Scope) -> bool:
    """An HTTP request to the /v1 routes other than the admin ones (what a client's lookups and augments are)."""
    path = str(scope.get("path", ""))
    return scope["type"] == "http" and path.startswith("/v1/") and not path.startswith("/v1/admin/")


class BodySizeLimit:
    """ASGI middleware: a body over `max_bytes` gets 413 before any of it is parsed (chunked bodies included)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def _message(self, size: str) -> str:
        return (f"request body is {size} bytes; the limit is {self.max_bytes} bytes. Send fewer or shorter "
                "concepts (split the batch over several requests), or raise CULTUREKB_API_MAX_BODY_BYTES")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 413 as soon as its body (declared or read so far) exceeds `max_bytes`."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        if length is not None:
            try:
                n = int(length)
            except ValueError:
                await _send_json(send, 400, {"detail": "the Content-Length header is not a number"})
                return
            if n > self.max_bytes:
                await _drain(receive)
                await _send_json(send, 413, {"detail": self._message(str(n))})
                return
            await self.app(scope, receive, send)
            return
        if scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        # no Content-Length (chunked): read up to the limit, then replay what was read
        chunks: list[bytes] = []
        total = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            body = message.get("body", b"")
            total += len(body)
            if total > self.max_bytes:
                await _drain(receive, more=message.get("more_body", False))
                await _send_json(send, 413, {"detail": self._message(f"more than {self.max_bytes}")})
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}]), send)


class InFlightLimit:
    """ASGI middleware: at most `max_in_flight` requests to the /v1 routes are served at once by this worker; one
    more gets 503 with `Retry-After: 1` at once, before its body is read.

    Without it, hundreds of concurrent clients all queue inside the server (for threadpool slots, the GIL and
    the encoder), so every request waits behind every other: throughput falls below that of one client and p99
    climbs to seconds. With it, the requests admitted run at full speed and the rest learn at once to come back
    (the same answer as a full embedding queue, `culturekb.api._batching`). Health checks (/livez, /readyz),
    /metrics, the docs and the admin routes are never refused.
    """

    def __init__(self, app: ASGIApp, max_in_flight: int, on_reject: Callable[[], None] | None = None) -> None:
        self.app = app
        self.max_in_flight = max_in_flight
        self.on_reject = on_reject
        self.in_flight = 0  # one event loop per worker: no lock needed between the check and the increment

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request, or refuse it with 503 when `max_in_flight` /v1 requests are already being served."""
        if not is_client_request(scope):
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.max_in_flight:
            if self.on_reject is not None:
                self.on_reject()
            body = json.dumps({"detail": f"the server is busy: {self.max_in_flight} requests are already in flight "
                                         "on this worker; retry after the Retry-After delay, or raise "
                                         "CULTUREKB_API_MAX_IN_FLIGHT / add workers (`culturekb serve --workers N`)"
                               }).encode()
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode()), (b"retry-after", b"1")]})
            await send({"type": "http.response.body", "body": body})
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


def _replay(messages: list[Message]) -> Receive:
    queue = list(messages)

    async def receive() -> Message:
        if queue:
            return queue.pop(0)
        return {"type": "http.disconnect"}

    return receive


_DRAIN_CAP = 16 * 1024 * 1024


async def _drain(receive: Receive, more: bool = True) -> None:
    """Read (and drop) the rest of a refused body, up to 16 MiB, so that the client sees the 413 rather than a
    reset connection; the connection is closed after the answer either way."""
    read = 0
    while more and read < _DRAIN_CAP:
        message = await receive()
        if message["type"] != "http.request":
            return
        read += len(message.get("body", b""))
        more = message.get("more_body", False)


async def _send_json(send: Send, status: int, payload: dict[str, Any]) -> None:
    body = json.dumps(payload).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


class InvalidRequestError(Exception):
    """A request that passed schema validation but cannot be served as sent (over a configured limit, a KB that
    fails to load on reload ...): answered with 422 and the same body as a validation error."""

    def __init__(self, loc: Sequence[str | int], msg: str, type_: str = "limit_exceeded") -> None:
        super().__init__(msg)
        self.errors = [{"loc": list(loc), "msg": msg, "type": type_}]


def check_strings(settings: ApiSettings, concepts: Sequence[str] | None, loc: str = "concepts") -> None:
    """Batch size and per-concept length of a request's concept list against the configured limits."""
    if concepts is None:
        return
    if len(concepts) > settings.max_batch:
        raise InvalidRequestError(["body", loc], f"{len(concepts)} concepts in one request; the limit is "
                                  f"{settings.max_batch}. Split the batch into requests of at most "
                                  f"{settings.max_batch} concepts")
    for i, c in enumerate(concepts):
        if len(c) > settings.max_concept_chars:
            raise InvalidRequestError(["body", loc, i], f"concept {i} has {len(c)} characters; the limit is "
                             f"{settings.max_concept_chars}. Send short concept phrases such as 'full moon'")


def _hint(err: dict[str, Any]) -> str:
    loc = [str(x) for x in err.get("loc", ())]
    where = ".".join(loc) or "request"
    kind = err.get("type", "")
    msg = err.get("msg", "")
    if kind == "json_invalid":
        return (f"the request body is not valid JSON ({err.get('ctx', {}).get('error', msg)}); send a JSON object "
                "such as {\"concepts\": [\"full moon\"], \"culture\": \"en\"} with Content-Type: application/json")
    if kind == "missing":
        return f"{where} is required"
    if kind == "extra_forbidden":
        return f"{where} is not a field of this request; remove it (see the request schema in /docs)"
    if kind == "string_unicode":
        return (f"{where}: not valid Unicode text (it holds a lone surrogate such as \\ud800); send valid Unicode "
                "text (UTF-8): a surrogate code point is only valid as half of a pair inside UTF-16")
    if kind in ("too_long", "string_too_long"):
        return f"{where}: {msg}; shorten it or split the request"
    if kind in ("model_attributes_type", "dict_type") and loc == ["body"]:
        return "the request body must be a JSON object (see the examples in /docs)"
    return f"{where}: {msg}"


async def validation_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """422 with one readable sentence per invalid field, plus the machine-readable list."""
    raw = exc.errors() if isinstance(exc, RequestValidationError) else getattr(exc, "errors", [])
    errors = [{"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
              for e in raw]
    detail = "; ".join(_hint(e) for e in list(raw)[:5]) or "invalid request"
    if len(raw) > 5:
        detail += f"; and {len(raw) - 5} more problems"
    return JSONResponse({"detail": detail, "errors": errors}, status_code=422)


def limits_in_openapi(schema: dict[str, Any], settings: ApiSettings) -> dict[str, Any]:
    """Write the configured limits into the request schemas of an OpenAPI document (in place)."""
    comps = schema.get("components", {}).get("schemas", {})
    for name in ("LookupRequest", "AugmentRequest"):
        props = comps.get(name, {}).get("properties", {})
        concepts = props.get("concepts")
        if concepts is not None:
            target = next((s for s in concepts.get("anyOf", [concepts]) if s.get("type") == "array"), concepts)
            target["maxItems"] = settings.max_batch
            target.setdefault("items", {})["maxLength"] = settings.max_concept_chars
        if "k" in props:
            props["k"]["maximum"] = settings.max_k
        if "prompt" in props:
            for s in props["prompt"].get("anyOf", [props["prompt"]]):
                if s.get("type") == "string":
                    s["maxLength"] = settings.max_prompt_chars
    return schema
