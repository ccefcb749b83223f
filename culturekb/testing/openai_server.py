"""A real, local, scripted OpenAI-compatible HTTP server for tests and benchmarks.

It listens on 127.0.0.1 on a free port in a background thread and speaks enough of the OpenAI API for
culturekb's clients: `POST /v1/chat/completions` (non-streaming), `POST /v1/embeddings` and `GET /v1/models`.
Requests are served concurrently on an asyncio loop, so `latency_s` sleeps overlap and many requests run in
parallel.

(Why one module over 500 lines: it is one test double, the whole scripted server; its parts only make sense
together and nothing in the package imports it.)

What the chat endpoint answers is scripted by `responder`:

- ``None``: every request gets `DEFAULT_REPLY` (a fixed JSON answer) as the assistant text;
- a callable ``responder(request_body) -> reply``;
- a list of replies (or callables), consumed one per request in arrival order; the last one repeats.

A reply is one of:

- ``str``: the assistant's text, wrapped in a well-formed chat completion (HTTP 200);
- ``(status, raw_body)``: sent as-is, to script errors (429, 500, 400) or garbage bodies;
- `ScriptedReply`: either of the above plus a per-request delay and extra headers (e.g. ``Retry-After``).

Embeddings are deterministic unit vectors seeded by a hash of each input string (`hash_embedding`), so equal
strings get equal vectors in every run; `embed_responder` can script errors there too.

Example::

    with ScriptedOpenAIServer(['{"label": "awe"}']) as server:
        client = OpenAICompatClient("test-model", base_url=server.base_url)
        assert client.complete([{"role": "user", "content": "hi"}]).text == '{"label": "awe"}'
        assert server.calls == 1

Common scripts (in tests, the `openai_server` fixture of tests/conftest.py builds and stops servers)::

    [(429, "{}"), (500, "{}"), "ok"]                  # two transient errors, then an answer
    [ScriptedReply(content="late", delay_s=2), "ok"]  # a timeout (with timeout_s < 2), then an answer
    lambda body: body["messages"][-1]["content"]      # echo the last message
    ScriptedOpenAIServer(latency_s=0.05)              # a slow model, for concurrency and throughput checks

Inspect what arrived with `server.requests` (JSON bodies), `server.request_headers`, `server.calls` and
`server.max_in_flight`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "ScriptedOpenAIServer",
    "ScriptedReply",
    "Reply",
    "ReplyFn",
    "Responder",
    "DEFAULT_REPLY",
    "hash_embedding",
]

logger = logging.getLogger(__name__)

DEFAULT_REPLY = '{"answer": "ok"}'
"""The assistant text sent when no responder is given."""


@dataclass(frozen=True)
class ScriptedReply:
    """One scripted answer: assistant `content` (HTTP 200), or a raw `body` with any `status`."""

    content: str | None = None
    status: int = 200
    body: str | None = None
    """Raw response body, sent as-is; overrides `content`."""
    delay_s: float = 0.0
    """Extra seconds to sleep before answering (on top of the server's `latency_s`)."""
    headers: Mapping[str, str] = field(default_factory=dict)


Reply = str | tuple[int, str] | ScriptedReply
"""What a responder gives for one request."""
ReplyFn = Callable[[dict[str, Any]], Reply]
"""Called with the request's JSON body, on a worker thread (it may block)."""
Responder = ReplyFn | Reply | Sequence[Reply | ReplyFn]


def hash_embedding(text: str, dim: int) -> np.ndarray:
    """The server's embedding of `text`: a unit float32 vector seeded by the SHA-256 of the string."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return vec / np.linalg.norm(vec)


def _as_reply(value: Any) -> ScriptedReply:
    if isinstance(value, ScriptedReply):
        return value
    if isinstance(value, str):
        return ScriptedReply(content=value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], int):
        return ScriptedReply(status=value[0], body=str(value[1]))
    raise TypeError(
        f"scripted reply must be a str, a (status, body) tuple or a ScriptedReply, got {type(value).__name__}"
    )


def _error_body(message: str, kind: str = "invalid_request_error") -> str:
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": None}})


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            408: "Request Timeout", 422: "Unprocessable Entity", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout"}
_NO_HEADERS: Mapping[str, str] = {}
_MAX_HEADER_BYTES = 1 << 16
_MAX_BODY_BYTES = 1 << 28  # data-URL images make bodies large


def _http_response(status: int, body: str, headers: Mapping[str, str], keep_alive: bool) -> bytes:
    data = body.encode("utf-8")
    extra = "".join(f"{name}: {value}\r\n" for name, value in headers.items()) if headers else ""
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Scripted')}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\nConnection: {'keep-alive' if keep_alive else 'close'}\r\n{extra}\r\n"
    )
    return head.encode("latin-1") + data


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    while True:
        size = int((await reader.readline()).strip().split(b";")[0], 16)
        if size == 0:
            await reader.readline()
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readline()


class ScriptedOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 with scripted chat answers; a context manager.

    It runs an asyncio event loop in a daemon thread: `latency_s` and `ScriptedReply.delay_s` are non-blocking
    sleeps, so any number of requests wait in parallel, and callable responders run in a pool of
    `responder_threads` threads, so blocking ones overlap too. One event loop instead of a thread per
    connection keeps the server's CPU per request small, which matters when it shares a process (and the GIL)
    with the client it serves.

    Thread-safe counters: `calls` (POST requests received), `chat_calls`, `embedding_calls`, `in_flight` and
    `max_in_flight` (the most requests being handled at the same time). `requests` holds the JSON bodies
    received, `request_headers` their HTTP headers (names lower-cased), `errors` any exception a responder
    raised (that request got HTTP 500). `embed_responder(body)` may script an embeddings answer (e.g.
    ``(429, "...")``); returning None gives the hash-seeded vectors.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        latency_s: float = 0.0,
        embed_dim: int = 32,
        embed_responder: Callable[[dict[str, Any]], Reply | None] | None = None,
        responder_threads: int = 64,
    ) -> None:
        self.responder = responder
        self.embed_responder = embed_responder
        self.latency_s = float(latency_s)
        self.embed_dim = int(embed_dim)
        self.responder_threads = int(responder_threads)
        self._lock = threading.Lock()
        self._script_pos = 0
        self._requests: list[dict[str, Any]] = []
        self._request_headers: list[dict[str, str]] = []
        self._errors: list[BaseException] = []
        self._calls = 0
        self._chat_calls = 0
        self._embedding_calls = 0
        self._in_flight = 0
        self._max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._port: int | None = None
        self._startup_error: BaseException | None = None

    # -- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> ScriptedOpenAIServer:
        """Bind a free port and serve in a daemon thread (idempotent); returns self."""
        if self._loop is not None:
            return self
        ready = threading.Event()
        self._startup_error = None
        self._pool = ThreadPoolExecutor(max_workers=self.responder_threads, thread_name_prefix="scripted-responder")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="scripted-openai-server", daemon=True)
        self._thread.start()
        if not ready.wait(timeout=10.0) or self._startup_error is not None:
            error = self._startup_error
            self.stop()
            raise RuntimeError(f"scripted OpenAI server failed to start: {error!r}") from error
        logger.debug("scripted OpenAI server listening on %s", self.base_url)
        return self

    def _run(self, ready: threading.Event) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(
                asyncio.start_server(self._serve_connection, "127.0.0.1", 0, backlog=1024, limit=_MAX_HEADER_BYTES)
            )
            self._port = int(self._server.sockets[0].getsockname()[1])
        except BaseException as exc:  # reported to start(), which raises it in the caller's thread
            self._startup_error = exc
            ready.set()
            return
        ready.set()
        loop.run_forever()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def stop(self) -> None:
        """Stop serving, drop open connections and free the port (idempotent)."""
        loop, thread, pool = self._loop, self._thread, self._pool
        self._loop = self._thread = self._pool = None
        self._port = None
        if loop is None:
            return
        if thread is not None and thread.is_alive() and loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=5.0)
            except (TimeoutError, RuntimeError):
                logger.warning("scripted OpenAI server: connections did not close within 5 s")
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5.0)
        if not loop.is_running():
            loop.close()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        self._server = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what tests read --------------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("ScriptedOpenAIServer is not started; use it as a context manager or call start()")
        return self._port

    @property
    def base_url(self) -> str:
        """The URL to pass as `base_url` to a client, e.g. http://127.0.0.1:PORT/v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the JSON bodies received by POST endpoints, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """The HTTP headers of the requests in `requests` (names lower-cased), in the same order."""
        with self._lock:
            return [dict(h) for h in self._request_headers]

    @property
    def errors(self) -> list[BaseException]:
        with self._lock:
            return list(self._errors)

    @property
    def calls(self) -> int:
        with self._lock:
            return self._calls

    @property
    def chat_calls(self) -> int:
        with self._lock:
            return self._chat_calls

    @property
    def embedding_calls(self) -> int:
        with self._lock:
            return self._embedding_calls

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight

    @property
    def max_in_flight(self) -> int:
        with self._lock:
            return self._max_in_flight

    def reset(self) -> None:
        """Forget received requests, errors and counters; the script restarts from its first reply."""
        with self._lock:
            self._requests.clear()
            self._request_headers.clear()
            self._errors.clear()
            self._script_pos = 0
            self._calls = self._chat_calls = self._embedding_calls = 0
            self._max_in_flight = self._in_flight

    # -- HTTP (runs on the server's event loop) ---------------------------------------------------------------

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve HTTP/1.1 requests on one connection until the client closes it (keep-alive)."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except asyncio.IncompleteReadError:
                    return  # the client closed the connection
                except asyncio.LimitOverrunError:
                    writer.write(_http_response(431, _error_body("request headers too large"), {}, False))
                    return
                request_line, *header_lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
                try:
                    method, target, version = request_line.split(" ", 2)
                    headers = {
                        name.strip().lower(): value.strip()
                        for name, value in (line.split(":", 1) for line in header_lines if line)
                    }
                    if "chunked" in headers.get("transfer-encoding", "").lower():
                        raw = await _read_chunked(reader)
                    else:
                        length = int(headers.get("content-length") or 0)
                        if length > _MAX_BODY_BYTES:
                            raise ValueError(f"body of {length} bytes is too large")
                        raw = await reader.readexactly(length)
                except ValueError as exc:
                    writer.write(_http_response(400, _error_body(f"malformed HTTP request: {exc}"), {}, False))
                    return
                keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                status, body, extra_headers = await self._dispatch(method, target, raw, headers)
                writer.write(_http_response(status, body, extra_headers, keep_alive))
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        except asyncio.CancelledError:
            # stop() cancels open connections; end quietly (asyncio logs an error for cancelled handlers)
            return
        finally:
            if task is not None:
                self._tasks.discard(task)
            writer.close()

    async def _dispatch(
        self, method: str, target: str, raw: bytes, headers: dict[str, str]
    ) -> tuple[int, str, Mapping[str, str]]:
        path = target.split("?", 1)[0].rstrip("/")
        if method == "GET" and path == "/v1/models":
            models = [{"id": "scripted", "object": "model", "created": 0, "owned_by": "culturekb"}]
            return 200, json.dumps({"object": "list", "data": models}), {}
        if method != "POST" or path not in ("/v1/chat/completions", "/v1/embeddings"):
            return 404, _error_body(f"no route {method} {target}"), {}
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            return 400, _error_body(f"request body is not JSON: {exc}"), {}
        if not isinstance(body, dict):
            return 400, _error_body("request body must be a JSON object"), {}
        is_chat = path.endswith("/chat/completions")
        self._enter(body, headers, is_chat)
        try:
            item = self._next_item() if is_chat else self.embed_responder
            if self.latency_s > 0:
                await asyncio.sleep(self.latency_s)
            if is_chat:
                return await self._chat(body, item)
            return await self._embeddings(body, item)
        finally:
            self._leave()

    # -- scripted answers -------------------------------------------------------------------------------------

    def _enter(self, body: dict[str, Any], headers: dict[str, str], is_chat: bool) -> None:
        with self._lock:
            self._requests.append(body)
            self._request_headers.append(headers)
            self._calls += 1
            if is_chat:
                self._chat_calls += 1
            else:
                self._embedding_calls += 1
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _next_item(self) -> Any:
        responder = self.responder
        if responder is None:
            return DEFAULT_REPLY
        if isinstance(responder, list) or (
            isinstance(responder, tuple) and not (len(responder) == 2 and isinstance(responder[0], int))
        ):
            if not responder:
                return DEFAULT_REPLY
            with self._lock:
                pos = min(self._script_pos, len(responder) - 1)
                self._script_pos += 1
            return responder[pos]
        return responder

    async def _resolve(self, item: Any, body: dict[str, Any]) -> ScriptedReply | None:
        """Turn a script item into a reply, running callables in the thread pool; sleeps its delay."""
        if callable(item):
            loop = asyncio.get_running_loop()
            value = await loop.run_in_executor(self._pool, item, body)
        else:
            value = item
        if value is None:
            return None
        reply = _as_reply(value)
        if reply.delay_s > 0:
            await asyncio.sleep(reply.delay_s)
        return reply

    def _responder_failed(self, exc: Exception) -> tuple[int, str, Mapping[str, str]]:
        logger.error("scripted responder failed: %r", exc)
        with self._lock:
            self._errors.append(exc)
        return 500, _error_body(f"scripted responder failed: {exc!r}", "server_error"), {}

    async def _chat(self, body: dict[str, Any], item: Any) -> tuple[int, str, Mapping[str, str]]:
        if isinstance(item, str):  # the common case (plain text, the default reply), with no reply object
            return 200, json.dumps(self._completion(body, item)), _NO_HEADERS
        try:
            reply = await self._resolve(item, body) or ScriptedReply(content=DEFAULT_REPLY)
        except Exception as exc:  # a broken responder is a test bug: record it and answer 500
            return self._responder_failed(exc)
        if reply.body is not None:
            return reply.status, reply.body, reply.headers
        if reply.status != 200:
            return reply.status, _error_body(reply.content or f"scripted HTTP {reply.status}"), reply.headers
        text = reply.content if reply.content is not None else DEFAULT_REPLY
        return 200, json.dumps(self._completion(body, text)), reply.headers

    def _completion(self, body: dict[str, Any], text: str) -> dict[str, Any]:
        prompt_chars = len(json.dumps(body.get("messages", []), ensure_ascii=False))
        prompt_tokens = max(1, prompt_chars // 4)
        completion_tokens = max(1, len(text) // 4)
        n = int(body.get("n") or 1)
        return {
            "id": f"chatcmpl-scripted-{self._calls}",  # an int read: atomic, no lock needed
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "scripted")),
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
                for i in range(n)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    async def _embeddings(self, body: dict[str, Any], item: Any) -> tuple[int, str, Mapping[str, str]]:
        if item is not None:
            try:
                reply = await self._resolve(item, body)
            except Exception as exc:
                return self._responder_failed(exc)
            if reply is not None:
                text = reply.body if reply.body is not None else _error_body(reply.content or "scripted error")
                return reply.status, text, reply.headers
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return 400, _error_body("'input' must be a string or a list of strings"), {}
        if not inputs:
            return 400, _error_body("'input' must not be empty"), {}
        dim = int(body.get("dimensions") or self.embed_dim)
        as_base64 = body.get("encoding_format") == "base64"
        data = []
        for i, text in enumerate(inputs):
            vec = hash_embedding(text, dim)
            emb: Any = base64.b64encode(vec.astype("<f4").tobytes()).decode("ascii") if as_base64 else vec.tolist()
            data.append({"object": "embedding", "index": i, "embedding": emb})
        tokens = sum(max(1, len(t) // 4) for t in inputs)
        payload = {
            "object": "list",
            "data": data,
            "model": str(body.get("model", "scripted")),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return 200, json.dumps(payload), {}

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "not started"
        return f"ScriptedOpenAIServer({where}, calls={self.calls})"
