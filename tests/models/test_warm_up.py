"""Warming an index's lazily made embedder (API workers before /readyz) and the TCP_NODELAY listening socket."""

from __future__ import annotations

import asyncio
import socket

import numpy as np

from culturekb.models.embedding_cache import WARM_UP_TEXT, LazyEmbedder, warm_up


class _Counting:
    id, spec, dim = "counting", "counting", 4

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts, batch_size: int = 64) -> np.ndarray:
        self.texts += list(texts)
        return np.ones((len(texts), 4), dtype=np.float32) / 2


class _Wrapper:  # like the server's micro-batcher or the query cache: holds its embedder as `inner`
    def __init__(self, inner) -> None:
        self.inner = inner
        self.id, self.dim = inner.id, inner.dim

    def encode(self, texts, batch_size: int = 64) -> np.ndarray:
        raise AssertionError("the warm-up must not go through wrappers (caches, counters, batchers)")


def test_warm_up_makes_and_runs_the_model_under_its_wrappers() -> None:
    made = _Counting()
    lazy = LazyEmbedder("counting", "counting", 4, lambda spec: _Wrapper(made))
    assert not lazy.loaded
    assert warm_up(_Wrapper(lazy)) is True
    assert lazy.loaded and made.texts == [WARM_UP_TEXT]


def test_warm_up_loads_a_lazy_local_model_given_as_an_instance() -> None:
    from culturekb.models import MiniLMEmbedder

    class Lazy(_Counting):
        loaded = False  # a model that reads its weights on first use, like MiniLMEmbedder

    model = Lazy()
    assert warm_up(_Wrapper(model)) is True and model.texts == [WARM_UP_TEXT]
    assert "loaded" in dir(MiniLMEmbedder)


def test_warm_up_leaves_instances_and_remote_embedders_alone() -> None:
    given = _Counting()
    assert warm_up(given) is False and given.texts == []  # an instance a caller passed: not made from a spec
    remote = LazyEmbedder("openai-embed:e5", "openai-embed:e5", 4, lambda spec: _Counting())
    assert warm_up(remote) is False and not remote.loaded


def test_workers_socket_gets_tcp_nodelay_on_accepted_connections() -> None:
    from culturekb.api.server import tcp_socket

    async def nodelay(listener: socket.socket) -> int:
        loop = asyncio.get_running_loop()
        got: asyncio.Future[int] = loop.create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport) -> None:  # type: ignore[override]
                got.set_result(transport.get_extra_info("socket").getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

        server = await loop.create_server(Probe, sock=listener)
        _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
        value = await asyncio.wait_for(got, 5)
        writer.close()
        server.close()
        return value

    def listener(fix: bool) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # as uvicorn's Config.bind_socket makes it
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        return tcp_socket(sock) if fix else sock

    assert asyncio.run(nodelay(listener(False))) == 0  # the bug: Nagle on every worker connection
    assert asyncio.run(nodelay(listener(True))) != 0


def test_serve_workers_bind_through_tcp_socket() -> None:
    import types

    from uvicorn.config import Config

    from culturekb.api.server import _run_workers

    protos: list[int] = []

    def run(app: str, **options) -> None:  # what uvicorn.run does with workers > 1: bind the shared socket
        sock = Config(app, **options).bind_socket()
        protos.append(sock.proto)
        sock.close()

    original = Config.bind_socket
    _run_workers(types.SimpleNamespace(run=run), host="127.0.0.1", port=0, workers=2, log_level="warning")
    assert protos == [socket.IPPROTO_TCP]
    assert Config.bind_socket is original  # restored
