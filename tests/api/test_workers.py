"""Workers that add up (issue 25): connections spread over the workers' SO_REUSEPORT sockets, and the warm-up
request each worker answers before it accepts connections."""

from __future__ import annotations

import asyncio
import os
import selectors
import socket
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from culturekb.api import create_app
from culturekb.api._batching import BatchingEmbedder
from culturekb.api._pinning import claim_slot, pin_worker, slot_cores
from culturekb.api._workers import bind_reuse_port, reuse_port_supported, worker_listener
from culturekb.api.app import WARM_UP_PHRASE, warm_request
from culturekb.errors import ConfigError
from culturekb.testing.raw_http import raw_request, stop_server
from culturekb.text.normalise import normalise_concept

from .conftest import READ_KEY

needs_reuse_port = pytest.mark.skipif(not reuse_port_supported(), reason="needs Linux SO_REUSEPORT")


def _accept_all(listeners: list[socket.socket], expected: int) -> list[int]:
    """Connections accepted by each listener until `expected` in all (or 10 s without one)."""
    counts = [0] * len(listeners)
    with selectors.DefaultSelector() as sel:
        for i, sock in enumerate(listeners):
            sock.setblocking(False)
            sel.register(sock, selectors.EVENT_READ, i)
        while sum(counts) < expected:
            events = sel.select(timeout=10)
            if not events:
                break
            for key, _ in events:
                conn, _ = key.fileobj.accept()  # type: ignore[union-attr]
                conn.close()
                counts[key.data] += 1
    return counts


@needs_reuse_port
def test_connections_opened_together_spread_over_the_worker_sockets() -> None:
    parent = bind_reuse_port("127.0.0.1", 0)  # bound, never listening: it must get no connection
    port = parent.getsockname()[1]
    workers = [worker_listener(parent.dup()) for _ in range(2)]
    for sock in workers:
        assert sock.getsockname() == ("127.0.0.1", port)
        assert sock.proto == socket.IPPROTO_TCP  # asyncio sets TCP_NODELAY on what it accepts
        sock.listen(128)
    clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(64)]
    try:
        counts = _accept_all(workers, 64)
    finally:
        for c in clients:
            c.close()
        for s in [parent, *workers]:
            s.close()
    # every connection reached a worker, and both workers got some (all 64 on one: chance 2**-63)
    assert sum(counts) == 64 and min(counts) > 0, counts


@needs_reuse_port
def test_shared_socket_hands_a_burst_to_one_accept_loop() -> None:
    """The bug the per-worker sockets remove: asyncio accepts every waiting connection of a shared socket in the
    loop that woke first (here: the first of two accept loops on one socket gets all 16)."""

    async def first_loop_takes(n: int) -> list[int]:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        port = listener.getsockname()[1]
        clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(n)]
        await asyncio.sleep(0.2)  # all n are waiting in the accept queue, as when a pool opens them together
        loop = asyncio.get_running_loop()
        counts = [0, 0]

        def counter(i: int) -> Any:
            class Count(asyncio.Protocol):
                def connection_made(self, transport: Any) -> None:  # type: ignore[override]
                    counts[i] += 1
            return Count

        servers = [await loop.create_server(counter(i), sock=listener.dup()) for i in range(2)]
        for _ in range(50):
            if sum(counts) == n:
                break
            await asyncio.sleep(0.02)
        for server in servers:
            server.close()
        for c in clients:
            c.close()
        listener.close()
        return counts

    counts = asyncio.run(first_loop_takes(16))
    assert sorted(counts) == [0, 16], counts


def test_a_taken_port_fails_with_one_clear_line() -> None:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        with pytest.raises(ConfigError, match=r"cannot listen on 127\.0\.0\.1:\d+ .*--port"):
            bind_reuse_port("127.0.0.1", holder.getsockname()[1]).close()
    finally:
        holder.close()


class _Recording:
    """The test embedder, recording the texts of every encode call."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self.spec = getattr(inner, "spec", None)
        self.calls: list[list[str]] = []

    def encode(self, texts: Any, batch_size: int = 64) -> np.ndarray:
        self.calls.append(list(texts))
        return np.asarray(self.inner.encode(list(texts), batch_size=batch_size), dtype=np.float32)


def _batcher(app: Any) -> BatchingEmbedder:
    emb = app.state.holder.current.retriever.embedder
    assert isinstance(emb, BatchingEmbedder)
    return emb


@pytest.mark.parametrize("keys", [{}, {"read_keys": [READ_KEY]}])
def test_warm_request_runs_a_real_lookup_before_serving_and_counts_nowhere(kb_dirs, default_embedder,
                                                                           keys: dict[str, Any]) -> None:
    recording = _Recording(default_embedder)
    app = create_app(kb_dirs["main"], embedder=recording, warm_request=True, **keys)
    assert recording.calls == []  # nothing before the server starts
    with TestClient(app) as client:
        # the warm-up went through the whole stack, key check included, down to the model
        assert recording.calls == [[normalise_concept(WARM_UP_PHRASE, "en") or WARM_UP_PHRASE]]
        assert _batcher(app).stats.encode_calls == 0 and len(_batcher(app).cache) == 0  # reset after it
        headers = {"X-API-Key": READ_KEY} if keys else {}
        metrics = client.get("/metrics", headers=headers).text
        assert 'route="/v1/lookup"' not in metrics and "culturekb_lookup_concepts_total{" not in metrics
        r = client.post("/v1/lookup", json={"concepts": ["storm at sea"], "culture": "en"}, headers=headers)
        assert r.status_code == 200
        assert 'route="/v1/lookup",status="200"} 1.0' in client.get("/metrics", headers=headers).text
        assert _batcher(app).stats.encode_calls == 1


def test_no_warm_request_unless_asked(kb_dirs, default_embedder) -> None:
    recording = _Recording(default_embedder)
    with TestClient(create_app(kb_dirs["main"], embedder=recording)):
        assert recording.calls == []


def test_a_failing_warm_request_is_logged_and_never_stops_the_server(kb_dirs, default_embedder, caplog) -> None:
    class Broken(_Recording):
        def encode(self, texts: Any, batch_size: int = 64) -> np.ndarray:
            raise RuntimeError("model file truncated")

    app = create_app(kb_dirs["main"], embedder=Broken(default_embedder), warm_request=True)
    status = asyncio.run(warm_request(app))
    assert status != 200
    assert "warm-up request answered" in caplog.text
    assert app.state.metrics.muted is False


@pytest.fixture
def uvicorn_runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Calls of `uvicorn.run` (nothing started): the app or import string, its options and the environment."""
    import uvicorn

    runs: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: runs.append({"app": app, "env": dict(os.environ), **kw}))
    return runs


def test_serve_turns_the_warm_request_on_unless_the_environment_says_false(
        kb_dirs, uvicorn_runs, monkeypatch: pytest.MonkeyPatch) -> None:
    from culturekb.api.server import serve

    serve(kb_dirs["main"], workers=2, port=0)
    assert uvicorn_runs[-1]["env"]["CULTUREKB_API_WARM_REQUEST"] == "true"
    serve(kb_dirs["main"], workers=1, port=0)
    assert uvicorn_runs[-1]["app"].state.settings.warm_request is True
    monkeypatch.setenv("CULTUREKB_API_WARM_REQUEST", "false")
    serve(kb_dirs["main"], workers=2, port=0)
    assert uvicorn_runs[-1]["env"]["CULTUREKB_API_WARM_REQUEST"] == "false"


@needs_reuse_port
def test_serve_workers_bind_one_reuse_port_socket_and_restore_uvicorn(kb_dirs, monkeypatch) -> None:
    import uvicorn
    from uvicorn.config import Config
    from uvicorn.supervisors import multiprocess

    from culturekb.api._workers import ReusePortProcess
    from culturekb.api.server import serve

    seen: list[tuple[int, type]] = []

    def run(app: str, **options: Any) -> None:  # what uvicorn.run does with workers > 1, up to starting them
        sock = Config(app, **options).bind_socket()
        seen.append((sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT), multiprocess.Process))
        sock.close()

    original = Config.bind_socket, multiprocess.Process
    monkeypatch.setattr(uvicorn, "run", run)
    serve(kb_dirs["main"], workers=2, port=0)
    serve(kb_dirs["main"], workers=2, port=0, reuse_port=False)
    assert seen[0][0] != 0 and seen[0][1] is ReusePortProcess
    assert seen[1][0] == 0 and seen[1][1] is original[1]
    assert (Config.bind_socket, multiprocess.Process) == original



def test_serve_gives_each_worker_encoders_for_the_cores_it_may_use(kb_dirs, uvicorn_runs, monkeypatch) -> None:
    """One encoder thread per core this process may run on (taskset, CPU sets), shared among the workers: not
    os.cpu_count(), which counts the whole machine."""
    from culturekb.api.server import serve

    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    serve(kb_dirs["main"], workers=1, port=0)
    assert uvicorn_runs[-1]["app"].state.settings.batch_encoders == 4
    serve(kb_dirs["main"], workers=2, port=0)
    assert uvicorn_runs[-1]["env"]["CULTUREKB_API_BATCH_ENCODERS"] == "2"



def test_core_slots_cut_the_cores_evenly_and_need_one_core_per_worker() -> None:
    assert slot_cores([0, 1], 2) == [[0], [1]]
    assert slot_cores([0, 1, 2, 3, 4], 2) == [[0, 1], [2, 3]]  # the odd core goes to no worker
    assert slot_cores([4, 5, 6, 7], 1) == [[4, 5, 6, 7]]
    assert slot_cores([0, 1], 3) == []


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs Linux CPU affinity and flock")
def test_each_worker_claims_a_free_slot_and_a_dead_workers_slot_is_freed(tmp_path) -> None:
    first = claim_slot(tmp_path, 2)
    second = claim_slot(tmp_path, 2)
    assert first is not None and second is not None and (first[0], second[0]) == (0, 1)
    try:
        assert claim_slot(tmp_path, 2) is None  # both held
        os.close(first[1])  # the worker on slot 0 died: the kernel dropped its lock
        again = claim_slot(tmp_path, 2)
        assert again is not None and again[0] == 0
        os.close(again[1])
    finally:
        os.close(second[1])


def test_one_worker_is_never_pinned(tmp_path) -> None:
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    assert pin_worker(tmp_path, 1) is None
    assert list(tmp_path.iterdir()) == []
    if before is not None:
        assert os.sched_getaffinity(0) == before


def test_serve_gives_the_workers_a_folder_to_claim_their_cores_in_unless_told_not_to(kb_dirs, uvicorn_runs) -> None:
    from culturekb.api.server import serve

    serve(kb_dirs["main"], workers=2, port=0)
    assert uvicorn_runs[-1]["env"]["CULTUREKB_API_PIN_DIR"]
    serve(kb_dirs["main"], workers=2, port=0, pin_workers=False)
    assert "CULTUREKB_API_PIN_DIR" not in uvicorn_runs[-1]["env"]


@pytest.mark.slow
@needs_reuse_port
def test_two_real_workers_share_connections_opened_at_once(kb_dirs) -> None:
    """`culturekb serve --workers 2` for real: 16 keep-alive connections opened together reach both workers (with
    the shared socket of before, the first worker to wake took them all)."""
    import json
    import signal
    import subprocess
    import sys
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CULTUREKB_API_WARM_REQUEST": "true"}
    proc = subprocess.Popen([sys.executable, "-m", "culturekb.cli", "serve", "--kb", str(kb_dirs["main"]), "--port",
                             str(port), "--workers", "2", "--no-build-index", "--log-level", "warning"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        pids: set[int] = set()
        deadline = time.monotonic() + 120
        while len(pids) < 2 and time.monotonic() < deadline:  # each worker joins once it is ready
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                    status, body = raw_request(conn, "GET", "/readyz")
                    if status == 200:
                        pids.add(json.loads(body)["pid"])
                        continue
            except OSError:
                pass
            time.sleep(0.2)
        assert len(pids) == 2, "both workers should answer /readyz"
        cpus = []
        for _ in range(50):  # each worker's cores (api/_pinning.py): disjoint halves of the server's
            with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
                answer = json.loads(raw_request(conn, "GET", "/readyz")[1])
                if answer["cpus"] not in cpus:
                    cpus.append(answer["cpus"])
            if len(cpus) == 2:
                break
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) >= 2:
            assert sorted(len(c) for c in cpus) == [len(cores) // 2] * 2 and not set(cpus[0]) & set(cpus[1])
        # the 16 connections wait in the kernel together (both workers stopped), as when a pool opens them at once,
        # and one worker wakes first
        first, second = sorted(pids)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(16)]
            os.kill(first, signal.SIGCONT)
            time.sleep(0.5)
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
        try:
            served = {json.loads(raw_request(c, "GET", "/readyz")[1])["pid"] for c in conns}
            metrics = raw_request(conns[0], "GET", "/metrics")[1].decode()
        finally:
            for c in conns:
                c.close()
        assert served == pids  # all 16 on one worker: chance 2**-15
        assert 'route="/v1/lookup"' not in metrics  # the warm-up requests are not counted
    finally:
        stop_server(proc)
