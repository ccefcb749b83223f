"""Micro-batching of query embeddings in the API: concurrent requests share one encode call, each gets its own
rows, a failing item fails only its request, exact hits never wait for the encoder, the LRU, and the 503 when the
queue is full. Requests go through the ASGI stack (httpx over the app), so routes run in the threadpool as under
uvicorn."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import pytest

from culturekb.api import create_app
from culturekb.api._batching import _ARRIVING, Arrivals, BatchingEmbedder, EmbeddingLRU, cache_key
from culturekb.errors import ProviderError
from culturekb.text.normalise import normalise_concept

SEMANTIC = ["ocean waves", "thunder and lightning", "bamboo forest", "a bright moon at night", "the open sea",
            "heavy rain storm", "white crane bird", "human skeleton"]


class CountingEmbedder:
    """The test embedder, counted: records every encode call; `release` cleared holds calls; 'boom' fails."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.id = inner.id
        self.dim = inner.dim
        self.spec = getattr(inner, "spec", None)
        self.calls: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self.release.set()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        texts = list(texts)
        self.calls.append(texts)
        self.entered.set()
        assert self.release.wait(30)
        if any("boom" in t for t in texts):
            raise ProviderError("the embedding model refused a text containing 'boom'; remove it")
        return np.asarray(self.inner.encode(texts, batch_size=batch_size), dtype=np.float32)


@pytest.fixture()
def counting(default_embedder) -> CountingEmbedder:
    return CountingEmbedder(default_embedder)


def _norm(q: str) -> str:
    """What the Retriever hands the embedder: the normalised concept."""
    return normalise_concept(q, "en") or q


def _app(kb_dirs, embedder: Any, **settings: Any) -> Any:
    return create_app(kb_dirs["main"], embedder=embedder, **settings)


def _batcher(app: Any) -> BatchingEmbedder:
    emb = app.state.holder.current.retriever.embedder
    assert isinstance(emb, BatchingEmbedder)
    return emb


def _whole_window(app: Any) -> Any:
    """The app with its batcher gathering until the window or the batch is full, never earlier: the requests
    of one `asyncio.gather` reach the server one by one, and with no request on its way in between the batcher
    would rightly start without the rest (that early start has its own tests below)."""
    _batcher(app).arrivals = None
    return app


async def _post_many(app: Any, bodies: list[dict[str, Any]], path: str = "/v1/lookup") -> list[httpx.Response]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        return list(await asyncio.gather(*(client.post(path, json=b) for b in bodies)))


async def _get(app: Any, path: str) -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        return await client.get(path)


def test_concurrent_lookups_share_one_encode_call_and_get_their_own_rows(kb_dirs, counting, default_embedder):
    app = _whole_window(_app(kb_dirs, counting, batch_max_wait_ms=1000, batch_max_size=len(SEMANTIC),
                             batch_encoders=1))
    bodies = [{"concepts": [q], "culture": "en", "tau": 0.0} for q in SEMANTIC]
    responses = asyncio.run(_post_many(app, bodies))
    assert [r.status_code for r in responses] == [200] * len(SEMANTIC)
    assert len(counting.calls) == 1 and sorted(counting.calls[0]) == sorted(_norm(q) for q in SEMANTIC)
    assert _batcher(app).stats.encode_calls == 1 and _batcher(app).stats.jobs == len(SEMANTIC)

    # each answer is the one a server without batching gives for that request alone
    plain = _app(kb_dirs, default_embedder, batching=False)
    alone = [asyncio.run(_post_many(plain, [b]))[0].json()["results"][0] for b in bodies]
    for r, q, solo in zip(responses, SEMANTIC, alone, strict=True):
        item = r.json()["results"][0]
        assert item["query"] == q and item["match"]["kind"] == "semantic"
        assert item["match"]["tuple"]["id"] == solo["match"]["tuple"]["id"]
        assert item["match"]["score"] == pytest.approx(solo["match"]["score"], abs=1e-4)


def test_augment_requests_are_batched_with_lookups(kb_dirs, counting):
    app = _whole_window(_app(kb_dirs, counting, batch_max_wait_ms=1000, batch_max_size=4, batch_encoders=1))

    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            return list(await asyncio.gather(
                client.post("/v1/augment", json={"concepts": ["ocean waves"], "culture": "en", "mode": "know"}),
                client.post("/v1/augment", json={"concepts": ["heavy rain storm"], "culture": "en", "mode": "know"}),
                client.post("/v1/lookup", json={"concepts": ["bamboo forest"], "culture": "zh"}),
                client.post("/v1/lookup", json={"concepts": ["human skeleton"], "culture": "zh"}),
            ))

    responses = asyncio.run(go())
    assert [r.status_code for r in responses] == [200] * 4
    assert len(counting.calls) == 1 and len(counting.calls[0]) == 4


def test_an_error_in_one_item_fails_only_its_request(kb_dirs, counting):
    app = _whole_window(_app(kb_dirs, counting, batch_max_wait_ms=1000, batch_max_size=5, batch_encoders=1))
    bodies = [{"concepts": [q], "culture": "en"} for q in SEMANTIC[:4]]
    bodies.insert(2, {"concepts": ["boom box"], "culture": "en"})
    responses = asyncio.run(_post_many(app, bodies))
    codes = [r.status_code for r in responses]
    assert codes == [200, 200, 503, 200, 200]
    assert "boom" in responses[2].json()["detail"]
    assert len(counting.calls[0]) == 5  # the gathered call failed, then each request was encoded alone
    assert len(counting.calls) == 1 + 5 and _batcher(app).stats.fallbacks == 1
    for r, body in zip([*responses[:2], *responses[3:]], [*bodies[:2], *bodies[3:]], strict=True):
        assert r.json()["results"][0]["query"] == body["concepts"][0]


def test_exact_hits_never_wait_for_the_encoder(kb_dirs, counting):
    app = _app(kb_dirs, counting, batch_max_wait_ms=0)
    counting.release.clear()  # the encoder hangs until released

    async def go() -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            slow = asyncio.create_task(client.post("/v1/lookup", json={"concepts": ["ocean waves"], "culture": "en"}))
            while not counting.entered.is_set():
                await asyncio.sleep(0.01)
            exact = await asyncio.wait_for(
                client.post("/v1/lookup", json={"concepts": ["Storms", "full moon"], "culture": "en"}), 10)
            assert not slow.done()  # answered while the semantic request is still held in the encoder
            counting.release.set()
            return exact, await slow

    exact, slow = asyncio.run(go())
    assert exact.status_code == 200 and [i["match"]["kind"] for i in exact.json()["results"]] == ["exact", "exact"]
    assert slow.status_code == 200 and slow.json()["results"][0]["query"] == "ocean waves"
    assert counting.calls == [[_norm("ocean waves")]]


def test_repeated_queries_come_from_the_lru(kb_dirs, counting):
    app = _app(kb_dirs, counting, batch_max_wait_ms=0, embed_cache_size=2)
    for q in ("ocean waves", "ocean waves", "Ocean  Waves", "heavy rain storm", "ocean waves"):
        r = asyncio.run(_post_many(app, [{"concepts": [q], "culture": "en"}]))[0]
        assert r.status_code == 200
    # normalised the same ("Ocean  Waves" -> "ocean waves"): encoded once
    assert counting.calls == [[_norm("ocean waves")], [_norm("heavy rain storm")]]
    assert _batcher(app).cache.hits == 3
    text = asyncio.run(_get(app, "/metrics")).text
    assert 'culturekb_query_embedding_cache_total{source="lru"} 3.0' in text
    assert 'culturekb_query_embedding_cache_total{source="encoder"} 2.0' in text
    assert "culturekb_encode_batch_texts_count 2.0" in text

    off = _app(kb_dirs, counting, batch_max_wait_ms=0, embed_cache_size=0)
    counting.calls.clear()
    for _ in range(2):
        asyncio.run(_post_many(off, [{"concepts": ["ocean waves"], "culture": "en"}]))
    assert counting.calls == [[_norm("ocean waves")]] * 2


def test_lru_evicts_the_least_recently_used():
    lru = EmbeddingLRU(2)
    a, b, c = (cache_key("m", t) for t in ("a", "b", "c"))
    for key in (a, b):
        lru.put(key, np.ones(3, dtype=np.float32))
    assert lru.get(a) is not None  # a is now the most recent
    lru.put(c, np.zeros(3, dtype=np.float32))
    assert lru.get(b) is None and lru.get(a) is not None and lru.get(c) is not None
    assert cache_key("m", " e\u0301  y ") == cache_key("m", "\u00e9 y")  # NFC, whitespace collapsed
    assert cache_key("m", "x") != cache_key("other", "x")


def test_a_full_queue_answers_503_with_retry_after(kb_dirs, counting):
    app = _app(kb_dirs, counting, batch_max_wait_ms=0, batch_max_size=1, batch_queue=1, batch_encoders=1)
    counting.release.clear()

    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            def post(q: str) -> asyncio.Task[httpx.Response]:
                return asyncio.create_task(client.post("/v1/lookup", json={"concepts": [q], "culture": "en"}))

            first = post("ocean waves")  # taken by the worker, held in the encoder
            while not counting.entered.is_set():
                await asyncio.sleep(0.01)
            second = post("heavy rain storm")  # waits in the queue (size 1)
            while _batcher(app)._queue.qsize() < 1:
                await asyncio.sleep(0.01)
            third = await asyncio.wait_for(post("white crane bird"), 10)  # no room
            counting.release.set()
            return [await first, await second, third]

    first, second, third = asyncio.run(go())
    assert (first.status_code, second.status_code, third.status_code) == (200, 200, 503)
    assert third.headers["retry-after"] == "1" and "overloaded" in third.json()["detail"]
    assert _batcher(app).stats.rejected == 1
    assert "culturekb_embedding_queue_full_total 1.0" in asyncio.run(_get(app, "/metrics")).text


def test_several_encoders_encode_batches_at_the_same_time(kb_dirs, counting):
    app = _app(kb_dirs, counting, batch_max_wait_ms=0, batch_max_size=1, batch_encoders=2)
    counting.release.clear()  # every encode call is held until released

    async def go() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            tasks = [asyncio.create_task(client.post("/v1/lookup", json={"concepts": [q], "culture": "en"}))
                     for q in SEMANTIC[:2]]
            deadline = time.monotonic() + 10
            while len(counting.calls) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            both_held = len(counting.calls) == 2  # the second call started while the first is still held
            counting.release.set()
            responses = list(await asyncio.gather(*tasks))
            assert both_held
            return responses

    assert [r.status_code for r in asyncio.run(go())] == [200, 200]


class _Vectors:
    """A tiny embedder for the batcher alone: one row per text (its length), every call recorded."""

    id = "vectors"
    dim = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def _encode_in_thread(batcher: BatchingEmbedder, text: str, cell: list[bool] | None) -> threading.Thread:
    """`batcher.encode([text])` in a thread, as the request of `cell` (its threadpool call) would."""
    def run() -> None:
        _ARRIVING.set(cell)
        batcher.encode([text])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_the_gathering_window_ends_when_no_request_is_on_its_way():
    inner = _Vectors()
    arrivals = Arrivals()
    batcher = BatchingEmbedder(inner, max_wait_ms=600_000, arrivals=arrivals)  # a window of ten minutes
    alone = _encode_in_thread(batcher, "alone", arrivals.come())
    alone.join(60)
    assert not alone.is_alive(), "with nothing on its way the encoder should not wait out the window"
    assert inner.calls == [["alone"]] and arrivals.pending() == 0


def test_the_encoder_waits_for_a_request_on_its_way_and_batches_it():
    inner = _Vectors()
    arrivals = Arrivals()
    batcher = BatchingEmbedder(inner, max_wait_ms=600_000, arrivals=arrivals)
    first_cell, second_cell = arrivals.come(), arrivals.come()  # two requests came in
    first = _encode_in_thread(batcher, "first", first_cell)
    deadline = time.monotonic() + 30
    while batcher._queue.qsize() + batcher.stats.jobs < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not inner.calls  # the second request is still on its way: the encoder waits
    second = _encode_in_thread(batcher, "second one", second_cell)
    first.join(60)
    second.join(60)
    assert inner.calls == [["first", "second one"]]  # one batch
    assert arrivals.pending() == 0


def test_a_request_that_never_encodes_settles_and_frees_the_encoder(kb_dirs, counting):
    app = _app(kb_dirs, counting, batch_max_wait_ms=1000)
    exact = {"concepts": ["Storms", "full moon"], "culture": "en"}
    responses = asyncio.run(_post_many(app, [exact, {"concepts": ["ocean waves"], "culture": "en"}]))
    assert [r.status_code for r in responses] == [200, 200]  # the exact one settled; the semantic one went
    arrivals = _batcher(app).arrivals
    assert arrivals is not None and arrivals.pending() == 0


def test_a_lookup_waits_for_its_batch_on_the_event_loop_and_runs_there_on_one_core(
        kb_dirs, counting, default_embedder, monkeypatch):
    """A semantic lookup awaits its rows without a thread of its own: with the encoder held, 8 requests wait
    while the threadpool holds none of them; on a worker held to one core the whole lookup runs on the loop, and
    every answer is the one the server without batching gives."""
    import culturekb.api.routes as routes

    app = _whole_window(_app(kb_dirs, counting, batch_max_wait_ms=1000, batch_max_size=len(SEMANTIC),
                             batch_encoders=1))
    bodies = [{"concepts": [q, "bamboo"], "culture": "en", "tau": 0.0} for q in SEMANTIC]
    waiting: list[int] = []

    async def run() -> list[httpx.Response]:
        import anyio.to_thread

        counting.release.clear()
        task = asyncio.ensure_future(_post_many(app, bodies))
        while not counting.entered.is_set():
            await asyncio.sleep(0.01)
        waiting.append(anyio.to_thread.current_default_thread_limiter().borrowed_tokens)
        counting.release.set()
        return await task

    monkeypatch.setattr(routes, "available_cores", lambda: 1)
    responses = asyncio.run(run())
    assert waiting == [0]  # no request holds a threadpool thread while its batch is encoded
    assert [r.status_code for r in responses] == [200] * len(SEMANTIC)
    assert len(counting.calls) == 1 and sorted(counting.calls[0]) == sorted(_norm(q) for q in SEMANTIC)
    plain = _app(kb_dirs, default_embedder, batching=False)
    for body, r in zip(bodies, responses, strict=True):
        solo = asyncio.run(_post_many(plain, [body]))[0].json()["results"]
        got = r.json()["results"]
        assert [x["match"]["kind"] for x in got] == ["semantic", "exact"]
        assert [x["match"]["tuple"]["id"] for x in got] == [x["match"]["tuple"]["id"] for x in solo]
        assert got[0]["match"]["score"] == pytest.approx(solo[0]["match"]["score"], abs=1e-4)


def test_encode_async_reads_the_lru_and_settles_a_request_with_nothing_to_encode(counting):
    arrivals = Arrivals()
    batcher = BatchingEmbedder(counting, max_wait_ms=0, arrivals=arrivals)

    async def one(texts: list[str]) -> tuple[np.ndarray, int]:
        token = _ARRIVING.set(arrivals.come())
        try:
            rows = await batcher.encode_async(texts)
            return rows, arrivals.pending()
        finally:
            _ARRIVING.reset(token)

    rows, pending = asyncio.run(one(["ocean waves", "bamboo forest"]))
    assert pending == 0 and len(counting.calls) == 1
    np.testing.assert_allclose(rows, batcher.encode(["ocean waves", "bamboo forest"]), atol=1e-6)
    again, pending = asyncio.run(one(["bamboo forest"]))  # from the LRU: no encode call, settled at once
    assert pending == 0 and len(counting.calls) == 1
    np.testing.assert_array_equal(again[0], rows[1])
    empty, pending = asyncio.run(one([]))
    assert empty.shape == (0, batcher.dim) and pending == 0
    off = BatchingEmbedder(counting, batching=False)
    np.testing.assert_allclose(asyncio.run(off.encode_async(["tea cup"])), batcher.encode(["tea cup"]), atol=1e-6)
