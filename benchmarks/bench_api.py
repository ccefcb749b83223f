"""Load on a real `culturekb serve` process over loopback: /v1/lookup with 1 and 32 concepts beside /livez.

Setup: the demo KB (built from culturekb/data/demo with the offline defaults, cached under
.culturekb-cache/bench-api), its FAISS index, and the default embedder (all-MiniLM-L6-v2 on CPU). The server is
started as a separate process, once per configuration (`CONFIGS`): micro-batching off (`--no-batching`: each
request encodes on its own, the server before issue 13) and on, with 1 worker, then on with 2 workers. One
asyncio client (httpx, `CONCURRENCY` requests in flight) runs each scenario for `duration_s` seconds after a
1-second warm-up:

- livez: GET /livez, the trivial endpoint of the same server: the ceiling of this server + client pair.
- lookup_1_exact: POST /v1/lookup with one concept of the KB (an exact hit: no encode call).
- lookup_1: POST /v1/lookup with one concept, a phrase never sent before (the semantic path: one encode call).
- lookup_32: POST /v1/lookup with 32 concepts: 8 exact KB concepts and 24 phrases never sent before.
Every phrase is distinct over the whole run, so neither the embedder's memo nor the server's LRU of query
embeddings ever answers (worst case for the server).

Reported per configuration and scenario: requests/s, p50 and p99 latency (ms), errors, and requests/s as a
share of the /livez ceiling of the same server. The client shares the machine with the server (os.cpu_count()
cores); its CPU seconds are reported too. Writes benchmarks/results/api_load.json and api_load.md; prints one JSON line.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

RESULTS = Path(__file__).parent / "results"
ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".culturekb-cache" / "bench-api"
CONCURRENCY = 16
SEED = 0
MODIFIERS = (
    "red white black golden blue green old young small large ancient broken wooden stone silver dark bright "
    "quiet stormy misty snowy burning sleeping dancing flying fallen lonely distant sacred royal wild gentle "
    "frozen painted hidden shining faded crowded empty narrow tall"
).split()


def demo_kb() -> Path:
    """The demo KB with its FAISS index (built once, then reused from the cache)."""
    from culturekb.kb.store import KnowledgeBase
    from culturekb.workflows import build_from_files, demo_data_files, index_kb

    kb_dir = CACHE / "kb"
    try:
        KnowledgeBase.load(kb_dir)
    except Exception:  # noqa: BLE001 - missing or stale: rebuild
        build_from_files(demo_data_files(), kb_dir, cache_dir=CACHE / "cache", progress=False)
    if not (kb_dir / "index" / "faiss" / "index.json").is_file():
        index_kb(kb_dir, "faiss")
    return kb_dir


def serve_argv() -> list[str]:
    """`culturekb serve` when the command is registered in culturekb.cli, else the same command module."""
    from culturekb.cli import app

    names = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    return [sys.executable, "-m", "culturekb.cli", "serve"] if "serve" in names else \
        [sys.executable, "-m", "culturekb.api.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Phrases:
    """Distinct query phrases: 'modifier modifier concept', never repeated within a run."""

    def __init__(self, concepts: list[str], rng: random.Random) -> None:
        combos = [(a, b) for a, b in itertools.permutations(MODIFIERS, 2)]
        rng.shuffle(combos)
        self._iter = ((f"{a} {b} {c}") for (a, b) in itertools.cycle(combos) for c in rng.sample(concepts, 3))
        self._seen: set[str] = set()

    def next(self) -> str:
        while True:
            p = next(self._iter)
            if p not in self._seen:
                self._seen.add(p)
                return p


async def _run(base: str, make_request: Any, duration_s: float, warmup_s: float = 1.0) -> dict[str, Any]:
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
        async def worker(stop_at: float, record: bool) -> None:
            nonlocal errors
            while time.perf_counter() < stop_at:
                method, path, body = make_request()
                t0 = time.perf_counter()
                try:
                    r = await client.request(method, path, json=body)
                    ok = r.status_code == 200
                except httpx.HTTPError:
                    ok = False
                if record:
                    latencies.append(time.perf_counter() - t0)
                    errors += not ok

        await asyncio.gather(*(worker(time.perf_counter() + warmup_s, False) for _ in range(CONCURRENCY)))
        t0 = time.perf_counter()
        await asyncio.gather(*(worker(t0 + duration_s, True) for _ in range(CONCURRENCY)))
        elapsed = time.perf_counter() - t0
    latencies.sort()
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 2),
        "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 2),
    }


def _scenarios(kb_concepts: list[str], culture: str, rng: random.Random) -> dict[str, Any]:
    phrases = Phrases(kb_concepts, rng)

    def livez() -> tuple[str, str, None]:
        return "GET", "/livez", None

    def lookup_1_exact() -> tuple[str, str, dict[str, Any]]:
        return "POST", "/v1/lookup", {"concepts": [rng.choice(kb_concepts)], "culture": culture}

    def lookup_1() -> tuple[str, str, dict[str, Any]]:
        return "POST", "/v1/lookup", {"concepts": [phrases.next()], "culture": culture}

    def lookup_32() -> tuple[str, str, dict[str, Any]]:
        concepts = rng.sample(kb_concepts, 8) + [phrases.next() for _ in range(24)]
        return "POST", "/v1/lookup", {"concepts": concepts, "culture": culture}

    return {"livez": livez, "lookup_1_exact": lookup_1_exact, "lookup_1": lookup_1, "lookup_32": lookup_32}


SCENARIOS = ("livez", "lookup_1_exact", "lookup_1", "lookup_32")
CONFIGS: dict[str, tuple[int, bool, str | None]] = {
    "1 worker, batching off": (1, False, None),
    "1 worker, batching on": (1, True, None),
    "2 workers, batching on": (2, True, None),
    "1 worker, batching off, minilm:st": (1, False, "minilm:st"),
    "1 worker, batching on, minilm:st": (1, True, "minilm:st"),
}
"""name -> (workers, micro-batching, embedder spec: None for the default `minilm` runtime, `minilm:st` for
sentence-transformers on torch, the runtime of issue 13's figures)."""


def run_server(kb_dir: Path, workers: int, duration_s: float, rng: random.Random, batching: bool = True,
               embedder: str | None = None) -> dict[str, Any]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [*serve_argv(), "--kb", str(kb_dir), "--port", str(port), "--workers", str(workers),
            "--no-build-index", "--log-level", "warning", "--batching" if batching else "--no-batching",
            *(["--embedder", embedder] if embedder else [])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready: dict[str, Any] = {}
        while time.perf_counter() - t0 < 300:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
            try:
                r = httpx.get(f"{base}/readyz", timeout=2)
                if r.status_code == 200:
                    ready = r.json()
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        startup_s = time.perf_counter() - t0
        kb = httpx.get(f"{base}/v1/kb", timeout=30).json()
        culture = max(kb["stats"]["cultures"], key=lambda c: kb["stats"]["cultures"][c]["tuples"])
        concepts = [t["concept"] for t in _kb_tuples(kb_dir) if t["culture"] == culture]
        out: dict[str, Any] = {"workers": workers, "batching": batching, "embedder": embedder or "minilm",
                               "startup_s": round(startup_s, 1),
                               "kb_version": ready.get("kb_version"), "culture": culture}
        cpu0 = time.process_time()
        for name, make in _scenarios(concepts, culture, rng).items():
            out[name] = asyncio.run(_run(base, make, duration_s))
        out["client_cpu_s"] = round(time.process_time() - cpu0, 1)
        ceiling = out["livez"]["rps"]
        for name in SCENARIOS[1:]:
            out[name]["share_of_livez"] = round(out[name]["rps"] / ceiling, 3) if ceiling else None
            out[name]["concepts_per_s"] = round(out[name]["rps"] * (1 if name == "lookup_1" else 32), 1)
        return out
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _kb_tuples(kb_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (kb_dir / "tuples.jsonl").read_text(encoding="utf-8").splitlines() if line]


def render_markdown(result: dict[str, Any]) -> str:
    lines = [f"# API load ({result['machine']['cpus']} CPUs, load average at start "
             f"{result['machine']['loadavg_start']}, {result['duration_s']} s per scenario, "
             f"{result['concurrency']} requests in flight)", "",
             "Measured side by side in one run by benchmarks/bench_api.py; `batching off` is the server before "
             "micro-batching (each request encodes on its own).", "",
             "| server | endpoint | req/s | p50 ms | p99 ms | errors | share of /livez |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for config, res in result["configs"].items():
        for name in SCENARIOS:
            r = res[name]
            lines.append(f"| {config} | {name} | {r['rps']} | {r['p50_ms']} | {r['p99_ms']} | {r['errors']} | "
                         f"{r.get('share_of_livez', 1.0)} |")
    for name, why in result.get("failed", {}).items():
        lines.append(f"| {name} | server did not start: {why.splitlines()[-1] if why else ''} | | | | | |")
    ratios = result.get("ratios")
    if ratios:
        lines += ["", "| goal | measured |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in ratios.items()]
    return "\n".join(lines) + "\n"


def ratios(configs: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    """The issue-13 goals: lookup_1 over /livez on the same server, lookup_32 after over before."""
    out: dict[str, float | None] = {}
    for suffix in ("", ", minilm:st"):
        before = configs.get(f"1 worker, batching off{suffix}")
        after = configs.get(f"1 worker, batching on{suffix}")
        tag = suffix.lstrip(", ") or "minilm"
        if after:
            out[f"{tag}: lookup_1 (semantic) / livez, batching on (goal >= 0.5)"] = after["lookup_1"]["share_of_livez"]
            out[f"{tag}: lookup_1_exact / livez, batching on (goal >= 0.5)"] = after["lookup_1_exact"]["share_of_livez"]
            out[f"{tag}: lookup_32 req/s, on / 19.5 (issue 13's figure; goal >= 5)"] = round(
                after["lookup_32"]["rps"] / 19.5, 2)
        if after and before:
            out[f"{tag}: lookup_32 req/s, on / off (goal >= 5)"] = round(
                after["lookup_32"]["rps"] / before["lookup_32"]["rps"], 2)
            out[f"{tag}: lookup_1 req/s, on / off"] = round(after["lookup_1"]["rps"] / before["lookup_1"]["rps"], 2)
    return out


def main(duration_s: float = 8.0, configs: tuple[str, ...] = tuple(CONFIGS)) -> dict[str, Any]:
    """Run the load scenarios against a real server in each configuration; write and return the results."""
    rng = random.Random(SEED)
    kb_dir = demo_kb()
    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    result: dict[str, Any] = {
        "duration_s": duration_s,
        "concurrency": CONCURRENCY,
        "kb": str(kb_dir.relative_to(ROOT)) if kb_dir.is_relative_to(ROOT) else str(kb_dir),
        "tuples": len(_kb_tuples(kb_dir)),
        "embedder": "all-MiniLM-L6-v2 on CPU: minilm (the default runtime) and minilm:st (sentence-transformers)",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "loadavg_start": [round(x, 2) for x in load_start] if load_start else None},
        "configs": {},
    }
    for name in configs:
        workers, batching, embedder = CONFIGS[name]
        try:
            result["configs"][name] = run_server(kb_dir, workers, duration_s, rng, batching, embedder)
        except RuntimeError as exc:  # e.g. an embedder runtime this checkout does not have
            result.setdefault("failed", {})[name] = str(exc)[-500:]
    result["ratios"] = ratios(result["configs"])
    # the served default (batching on) by worker count, the layout benchmarks/compare_commits.py reads
    result["workers"] = {str(res["workers"]): res for res in result["configs"].values()
                         if res["batching"] and res["embedder"] == "minilm"}
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()] if load_start else None
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "api_load.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "api_load.md").write_text(render_markdown(result), encoding="utf-8")
    return result


if __name__ == "__main__":
    print(json.dumps(main()))
