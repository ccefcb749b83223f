"""A real, local, scripted OpenAI-compatible HTTP server for tests, benchmarks and dry runs.

It is a FastAPI app served by uvicorn on 127.0.0.1 (or `host`), on a free port (or `port`), in a background
thread, and speaks enough of the OpenAI API for culturekb's clients: `POST /v1/chat/completions`
(non-streaming), `POST /v1/embeddings` and `GET /v1/models`. Requests are served concurrently on one asyncio
loop, so `latency_s` sleeps overlap and many requests run in parallel. `culturekb mock-server` runs it from the
command line (`load_script` reads its JSONL of answers).

Measured against the hand-written HTTP/1.1 parser it replaced, side by side on a loaded 2-core machine (so no
hand-written HTTP code is kept): the seven test files that use the server most (172 tests), run three times
each way, took 25.7 s of CPU (median; 21.7-27.2) against 26.3 s (23.7-26.5), 0.98x; in one process with an
httpx client, 32 threads reached 434 requests/s against 470 (0.92x) and one thread 288/s against 388 (0.74x), a
start and stop 209 ms against 175 (with a first request). `benchmarks/bench_model_calls.py` (640 calls, 32 in
flight, 50 ms latency; load average 10 on 2 cores), alternated: 477 and 484 calls/s against 525 and 527 with the
server in its own process (0.91x; 0.75 of the ideal rate against 0.82), 446 against 494 (median of 4) with it in
the benchmark's process (0.90x). uvicorn parses HTTP with h11 here; with httptools installed (uvicorn's
"standard" parser, picked automatically) the own-process figure was 489 against 500 (0.98x), but it is not
declared: it would also change the parser of `culturekb serve`.

(Why one module over 500 lines: it is one test double, the whole scripted server; its parts only make sense
together and nothing in the package imports it but the demo job.)

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
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response

__all__ = [
    "ScriptedOpenAIServer",
    "ScriptedReply",
    "Reply",
    "ReplyFn",
    "Responder",
    "DEFAULT_REPLY",
    "hash_embedding",
    "load_script",
]

_NO_HEADERS: Mapping[str, str] = {}

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


def load_script(path: str | Path) -> list[ScriptedReply]:
    """Read scripted answers from a JSONL file, one per line: a JSON string (the assistant's text) or an object
    with the fields of `ScriptedReply` (``{"status": 429, "content": "busy", "headers": {"Retry-After": "1"}}``).

    Raises ValueError naming the file and line for anything else; an empty file gives an empty list.
    """
    replies: list[ScriptedReply] = []
    fields = {"content", "status", "body", "delay_s", "headers"}
    lines = Path(path).read_text(encoding="utf-8").split("\n")  # not splitlines(): U+2028 may sit in a string
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON ({exc.msg}); write one JSON string or object per line") from exc
        if isinstance(value, str):
            replies.append(ScriptedReply(content=value))
        elif isinstance(value, dict) and value and set(value) <= fields:
            try:
                replies.append(ScriptedReply(**value))
            except TypeError as exc:  # pragma: no cover - the field check above catches unknown names
                raise ValueError(f"{path}:{n}: {exc}") from exc
        else:
            raise ValueError(
                f"{path}:{n}: a scripted answer is a JSON string or an object with some of {sorted(fields)}; to "
                "answer with a JSON object, write it as a string (\"{\\\"label\\\": \\\"awe\\\"}\") or as its "
                "\"content\" field"
            )
    return replies


class ScriptedOpenAIServer:
    """An OpenAI-compatible server (FastAPI on uvicorn) with scripted chat answers; a context manager.

    uvicorn runs on an asyncio event loop in a daemon thread: `latency_s` and `ScriptedReply.delay_s` are
    non-blocking sleeps, so any number of requests wait in parallel, and callable responders run in a pool of
    `responder_threads` threads, so blocking ones overlap too.

    Thread-safe counters: `calls` (POST requests received), `chat_calls`, `embedding_calls`, `in_flight` and
    `max_in_flight` (the most requests being handled at the same time). `requests` holds the JSON bodies
    received, `request_headers` their HTTP headers (names lower-cased), `errors` any exception a responder
    raised (that request got HTTP 500). `embed_responder(body)` may script an embeddings answer (e.g.
    ``(429, "...")``); returning None gives the hash-seeded vectors. `host` and `port` (0: a free port) say
    where to listen; `request_log`, a JSONL file that gets one line per POST request (time, path, headers, body).
    """

    def __init__(
        self,
        responder: Responder | None = None,
        latency_s: float = 0.0,
        embed_dim: int = 32,
        embed_responder: Callable[[dict[str, Any]], Reply | None] | None = None,
        responder_threads: int = 64,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        request_log: str | Path | None = None,
    ) -> None:
        self.responder = responder
        self.embed_responder = embed_responder
        self.latency_s = float(latency_s)
        self.embed_dim = int(embed_dim)
        self.responder_threads = int(responder_threads)
        self.host = host
        self.requested_port = int(port)
        self.request_log = Path(request_log) if request_log is not None else None
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
        self._server: uvicorn.Server | None = None
        self._stopping: asyncio.Event | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._log_file: IO[str] | None = None
        self._port: int | None = None
        self._startup_error: BaseException | None = None

    # -- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> ScriptedOpenAIServer:
        """Bind the port (a free one unless `port` was given) and serve in a daemon thread (idempotent)."""
        if self._loop is not None:
            return self
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets that say they are TCP; with proto 0 every
        # response waited ~40 ms for a delayed ACK (19 instead of 900 sequential requests/s)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.requested_port))
        except OSError:
            sock.close()
            raise
        if self.request_log is not None:
            self.request_log.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = self.request_log.open("a", encoding="utf-8")
        config = uvicorn.Config(
            self._make_app(), log_config=None, log_level="warning", access_log=False, lifespan="off", ws="none",
            backlog=1024, timeout_keep_alive=600, server_header=False, date_header=False,
        )
        self._server = uvicorn.Server(config)
        self._port = int(sock.getsockname()[1])
        ready = threading.Event()
        self._startup_error = None
        self._pool = ThreadPoolExecutor(max_workers=self.responder_threads, thread_name_prefix="scripted-responder")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run, args=(sock, ready), name="scripted-openai-server", daemon=True
        )
        self._thread.start()
        if not ready.wait(timeout=10.0) or self._startup_error is not None:
            error = self._startup_error
            self.stop()
            raise RuntimeError(f"scripted OpenAI server failed to start: {error!r}") from error
        logger.debug("scripted OpenAI server listening on %s", self.base_url)
        return self

    def _run(self, sock: socket.socket, ready: threading.Event) -> None:
        loop, server = self._loop, self._server
        assert loop is not None and server is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve(server, sock, ready))
        except BaseException as exc:  # reported to start(), which raises it in the caller's thread
            self._startup_error = exc
            ready.set()
        finally:
            sock.close()

    async def _serve(self, server: uvicorn.Server, sock: socket.socket, ready: threading.Event) -> None:
        """uvicorn's startup, then wait for stop(); the shutdown is ours: uvicorn's polls every 0.1 s and waits
        for requests in flight, while a test double must stop at once (a test may leave a 30 s request behind)."""
        self._stopping = asyncio.Event()
        server.config.load()
        server.lifespan = server.config.lifespan_class(server.config)
        await server.startup(sockets=[sock])
        ready.set()
        await self._stopping.wait()
        for listener in server.servers:
            listener.close()
        for connection in list(server.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()  # drop open connections, idle or not
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
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
        stopping = self._stopping
        if thread is not None and thread.is_alive() and stopping is not None:
            loop.call_soon_threadsafe(stopping.set)
            thread.join(timeout=5.0)
            if thread.is_alive():
                logger.warning("scripted OpenAI server: connections did not close within 5 s")
        if not loop.is_running():
            loop.close()
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        self._server = None
        self._stopping = None

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
        host = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(self.host, self.host)
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"
        return f"http://{host}:{self.port}/v1"

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

    # -- HTTP (FastAPI routes, on the server's event loop) ----------------------------------------------------

    def _make_app(self) -> FastAPI:
        app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, redirect_slashes=False)

        def respond(result: tuple[int, str, Mapping[str, str]]) -> Response:
            status, body, headers = result
            return Response(body, status_code=status, headers=dict(headers), media_type="application/json")

        async def models() -> Response:
            models = [{"id": "scripted", "object": "model", "created": 0, "owned_by": "culturekb"}]
            return respond((200, json.dumps({"object": "list", "data": models}), _NO_HEADERS))

        async def chat(request: Request) -> Response:
            return respond(await self._dispatch(request, is_chat=True))

        async def embeddings(request: Request) -> Response:
            return respond(await self._dispatch(request, is_chat=False))

        async def no_route(request: Request, path: str) -> Response:
            return respond((404, _error_body(f"no route {request.method} /{path}"), _NO_HEADERS))

        for route in ("/v1/models", "/v1/models/"):
            app.add_api_route(route, models, methods=["GET"])
        for route in ("/v1/chat/completions", "/v1/chat/completions/"):
            app.add_api_route(route, chat, methods=["POST"])
        for route in ("/v1/embeddings", "/v1/embeddings/"):
            app.add_api_route(route, embeddings, methods=["POST"])
        app.add_api_route("/{path:path}", no_route, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"])
        return app

    async def _dispatch(self, request: Request, is_chat: bool) -> tuple[int, str, Mapping[str, str]]:
        raw = await request.body()
        headers = dict(request.headers.items())  # names come lower-cased
        try:
            body = json.loads(raw or b"{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return 400, _error_body(f"request body is not JSON: {exc}"), _NO_HEADERS
        if not isinstance(body, dict):
            return 400, _error_body("request body must be a JSON object"), _NO_HEADERS
        self._enter(body, headers, is_chat, request.url.path)
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

    def _enter(self, body: dict[str, Any], headers: dict[str, str], is_chat: bool, path: str) -> None:
        with self._lock:
            if self._log_file is not None:
                entry = {"time": time.time(), "path": path, "headers": headers, "body": body}
                self._log_file.write(json.dumps(entry, ensure_ascii=False) + "\n")
                self._log_file.flush()
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
        return 500, _error_body(f"scripted responder failed: {exc!r}", "server_error"), _NO_HEADERS

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
            return 400, _error_body("'input' must be a string or a list of strings"), _NO_HEADERS
        if not inputs:
            return 400, _error_body("'input' must not be empty"), _NO_HEADERS
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
        return 200, json.dumps(payload), _NO_HEADERS

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "not started"
        return f"ScriptedOpenAIServer({where}, calls={self.calls})"
