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

Many clients (`CROWD`, issue 15): one worker (batching on) serves lookup_1_exact and lookup_1 to 1 client
(sequential) and to 200 concurrent clients, once with the default in-flight limit (`max_in_flight`, 503 with
Retry-After beyond it) and once unbounded (the server before the limit). Each client is well behaved: after a
503 it waits the Retry-After delay. Reported: successful req/s, p50 and p99 latency of the successful requests,
503 answers and other errors. `python benchmarks/bench_api.py --crowd` runs only this part and merges it into
the recorded results.

1 vs 2 workers (issue 25, `python benchmarks/bench_api.py --workers`, results/api_workers.json and .md): five
servers run at once (1 worker; 2 workers, each pinned to its own core; 2 workers unpinned; 2 workers as before
issue 25's fixes: one shared listening socket, no warm-up request, unpinned; 1 worker held to one CPU), and each
round measures every scenario on each in turn. The client is light (raw
keep-alive HTTP/1.1 on asyncio streams, requests prepared before, in its own process), and its CPU share, each
server process's CPU share and the machine's busy cores over the same seconds are reported beside the figures,
so that a reader can tell a server limit from a machine that has no core left. Then the first lookups of each
worker after /readyz, on fresh servers.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from culturekb.testing.raw_http import raw_request, stop_server

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
    """`culturekb serve` as a fresh process."""
    return [sys.executable, "-m", "culturekb.cli", "serve"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Phrases:
    """Distinct query phrases: 'modifier modifier concept', never repeated within a run."""

    def __init__(self, concepts: list[str], rng: random.Random) -> None:
        pairs = list(itertools.permutations(MODIFIERS, 2))
        triples = list(itertools.permutations(MODIFIERS, 3))  # after the pairs run out (many servers side by side)
        rng.shuffle(pairs)
        rng.shuffle(triples)

        def phrases() -> Iterator[str]:
            for combos in (pairs, triples):
                for _ in range(3):
                    for combo in combos:
                        for c in rng.sample(concepts, 3):
                            yield " ".join((*combo, c))
            raise RuntimeError("bench_api: the distinct query phrases ran out; add MODIFIERS")

        self._iter = phrases()
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


def _start(kb_dir: Path, workers: int, batching: bool, embedder: str | None,
           env_extra: dict[str, str] | None = None, cpus: set[int] | None = None
           ) -> tuple[subprocess.Popen[str], str, dict[str, Any], float]:
    """Start `culturekb serve` and wait for /readyz: (process, base URL, readyz answer, start-up seconds). `cpus`:
    the CPUs the server may run on (its thread policy follows them), as `taskset` would set."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [*serve_argv(), "--kb", str(kb_dir), "--port", str(port), "--workers", str(workers),
            "--no-build-index", "--log-level", "warning", "--batching" if batching else "--no-batching",
            *(["--embedder", embedder] if embedder else [])]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **(env_extra or {})}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
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
    return proc, base, ready, time.perf_counter() - t0


def run_server(kb_dir: Path, workers: int, duration_s: float, rng: random.Random, batching: bool = True,
               embedder: str | None = None) -> dict[str, Any]:
    proc, base, ready, startup_s = _start(kb_dir, workers, batching, embedder)
    try:
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
        stop_server(proc)


CROWD = 200
CROWD_SERVERS: dict[str, dict[str, str]] = {
    "max_in_flight 64 (default)": {},
    "unbounded (before issue 15)": {"CULTUREKB_API_MAX_IN_FLIGHT": "1000000"},
}


class _RawClient:
    """One keep-alive HTTP/1.1 connection over asyncio streams. httpx's pool costs the client so much CPU at 200
    connections that on 2 cores the client, not the server, sets the pace (even /livez drops from 313 to 127
    req/s), so the crowd runs on this minimal client instead."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: Any) -> tuple[int, dict[str, str]]:
        """Send one request; (status, headers). Reconnects when the server closed the connection."""
        if self.writer is None or self.reader is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        data = b"" if body is None else json.dumps(body).encode()
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n").encode()
        self.writer.write(head + data)
        await self.writer.drain()
        raw = await self.reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        await self.reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            await self.close()
        return status, headers

    async def close(self) -> None:
        """Close the connection (the next request opens a new one)."""
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError, ConnectionError):
                await self.writer.wait_closed()
        self.reader = self.writer = None


async def _run_crowd(base: str, make_request: Any, duration_s: float, clients: int,
                     warmup_s: float = 1.0) -> dict[str, Any]:
    """`clients` concurrent clients for `duration_s`; a 503 makes its client wait the Retry-After delay."""
    latencies: list[float] = []
    counts = {"busy_503": 0, "errors": 0}
    host, port = base.removeprefix("http://").split(":")

    async def worker(conn: _RawClient, stop_at: float, record: bool) -> None:
        while time.perf_counter() < stop_at:
            method, path, body = make_request()
            t0 = time.perf_counter()
            headers: dict[str, str] = {}
            try:
                status, headers = await asyncio.wait_for(conn.request(method, path, body), 60)
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError):
                status = 0
                await conn.close()
            if record:
                if status == 200:
                    latencies.append(time.perf_counter() - t0)
                else:
                    counts["busy_503" if status == 503 else "errors"] += 1
            if status == 503:
                await asyncio.sleep(min(1.0, float(headers.get("retry-after", "1"))))

    conns = [_RawClient(host, int(port)) for _ in range(clients)]
    await asyncio.gather(*(worker(c, time.perf_counter() + warmup_s, False) for c in conns))
    t0 = time.perf_counter()
    await asyncio.gather(*(worker(c, t0 + duration_s, True) for c in conns))
    elapsed = time.perf_counter() - t0
    for c in conns:
        await c.close()
    latencies.sort()
    return {
        "clients": clients,
        "ok": len(latencies),
        **counts,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(latencies), 2) if latencies else None,
        "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 2) if latencies
        else None,
    }


def run_crowd(kb_dir: Path, duration_s: float, rng: random.Random) -> dict[str, Any]:
    """Sequential vs `CROWD` clients on one worker, with and without the in-flight limit (see the module doc)."""
    out: dict[str, Any] = {"loadavg_start": [round(x, 2) for x in os.getloadavg()], "duration_s": duration_s}
    for server, env in CROWD_SERVERS.items():
        proc, base, _ready, _ = _start(kb_dir, 1, True, None, env)
        try:
            kb = httpx.get(f"{base}/v1/kb", timeout=30).json()
            culture = max(kb["stats"]["cultures"], key=lambda c: kb["stats"]["cultures"][c]["tuples"])
            concepts = [t["concept"] for t in _kb_tuples(kb_dir) if t["culture"] == culture]
            scenarios = _scenarios(concepts, culture, rng)
            rows = {}
            for name in ("lookup_1_exact", "lookup_1"):
                for clients in (1, CROWD):
                    rows[f"{name}, {clients} client{'s' if clients > 1 else ''}"] = asyncio.run(
                        _run_crowd(base, scenarios[name], duration_s, clients))
            out[server] = rows
        finally:
            stop_server(proc)
    out["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return out


def render_crowd(crowd: dict[str, Any]) -> list[str]:
    """The many-clients table of api_load.md."""
    lines = ["", f"## {CROWD} concurrent clients vs sequential (1 worker, batching on; load average "
             f"{crowd['loadavg_start']} at start, {crowd['loadavg_end']} at end; {crowd['duration_s']} s each)", "",
             "Well-behaved clients: after a 503 a client waits its Retry-After (1 s). req/s counts successful "
             "answers; p50/p99 are over them. The clients are minimal keep-alive HTTP/1.1 connections on asyncio "
             "streams (`_RawClient`): with httpx's pool at 200 connections the client itself was the bottleneck on "
             "2 cores (even /livez fell from 313 req/s with 1 client to 127 with 200), which is what a collapse "
             "below sequential measured with httpx mostly shows.", "",
             "| server | scenario | req/s | p50 ms | p99 ms | 503 | other errors |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for server, rows in crowd.items():
        if not isinstance(rows, dict):
            continue
        for name, r in rows.items():
            lines.append(f"| {server} | {name} | {r['rps']} | {r['p50_ms']} | {r['p99_ms']} | {r['busy_503']} | "
                         f"{r['errors']} |")
    return lines


def _kb_tuples(kb_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (kb_dir / "tuples.jsonl").read_text(encoding="utf-8").splitlines() if line]


def largest_culture(kb_dir: Path) -> tuple[str, list[str]]:
    """The KB's culture with the most tuples, and its concepts (what the lookup scenarios ask for)."""
    tuples = _kb_tuples(kb_dir)
    culture = max({t["culture"] for t in tuples}, key=lambda c: sum(t["culture"] == c for t in tuples))
    return culture, [t["concept"] for t in tuples if t["culture"] == culture]


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
    if result.get("crowd"):
        lines += render_crowd(result["crowd"])
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
    result["crowd"] = run_crowd(kb_dir, duration_s, rng)
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


# -- 1 vs 2 workers (issue 25) -------------------------------------------------------------------------------
WORKER_CONFIGS: dict[str, tuple[int, dict[str, str]]] = {
    "1 worker": (1, {}),
    "2 workers": (2, {}),
    "2 workers, unpinned": (2, {"CULTUREKB_API_PIN_WORKERS": "false"}),
    "2 workers, before": (2, {"CULTUREKB_API_REUSE_PORT": "false", "CULTUREKB_API_WARM_REQUEST": "false",
                              "CULTUREKB_API_PIN_WORKERS": "false"}),
    "1 worker, one core": (1, {}),
}
"""name -> (workers, environment). `2 workers, unpinned`: each worker free to run on every core (before
`culturekb.api._pinning`). `2 workers, before`: the server before issue 25's worker fixes, side by side:
one listening socket shared by the workers and no warm-up request. `1 worker, one core`: one worker held to one
CPU (`ONE_CORE`), so that 2 workers / it shows whether workers add up core for core; on 2 cores the plain 1 worker
already runs on 1.4 of them (its request threads encode at once), which caps 2 workers / 1 worker near 2 / 1.4."""
ONE_CORE = "1 worker, one core"
WORKER_SCENARIOS = ("livez", "lookup_1_exact", "lookup_1", "lookup_32")
_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _process_tree(pid: int) -> list[int]:
    """`pid` and its descendants (Linux /proc): the server's supervisor and its workers."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo += children.get(current, [])
    return out


def _cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU seconds of each process so far."""
    out = {}
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out[pid] = (int(fields[11]) + int(fields[12])) / _HZ
    return out


def _machine_busy() -> tuple[float, float]:
    """(busy CPU seconds of the whole machine, all CPU seconds) so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / _HZ, sum(values[:8]) / _HZ


def _wait_workers(port: int, workers: int, timeout_s: float = 300) -> list[int]:
    """Wait until `workers` distinct worker pids have answered /readyz on new connections (each worker joins
    only once it serves); their pids."""
    seen: set[int] = set()
    t0 = time.perf_counter()
    while len(seen) < workers and time.perf_counter() - t0 < timeout_s:
        with contextlib.suppress(OSError, ValueError, KeyError):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
                status, body = raw_request(conn, "GET", "/readyz")
                if status == 200:
                    seen.add(int(json.loads(body)["pid"]))
                    continue
        time.sleep(0.1)
    return sorted(seen)



async def _light_load(port: int, requests: list[bytes], duration_s: float, concurrency: int,
                      warmup_s: float) -> dict[str, Any]:
    """`concurrency` keep-alive connections sending the prepared `requests` (in order, each once; cycled when
    they run out) for `duration_s` after `warmup_s`. Parses only the status line and Content-Length."""
    latencies: list[float] = []
    errors = 0
    position = 0
    reconnects = 0
    cycled = False

    async def connection(stop_at: float, record: bool) -> None:
        nonlocal errors, position, cycled, reconnects
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while time.perf_counter() < stop_at:
                request = requests[position % len(requests)]
                position += 1
                cycled = cycled or position > len(requests)
                t0 = time.perf_counter()
                writer.write(request)
                head = await reader.readuntil(b"\r\n\r\n")
                lower = head.lower()
                at = lower.find(b"content-length:")
                await reader.readexactly(int(head[at + 15:head.index(b"\r\n", at)]) if at >= 0 else 0)
                if b"\r\nconnection: close\r\n" in lower:  # the server ends this connection: open another
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                    reconnects += record
                if record:
                    latencies.append(time.perf_counter() - t0)
                    errors += not head.startswith(b"HTTP/1.1 200")
        finally:
            writer.close()

    await asyncio.gather(*(connection(time.perf_counter() + warmup_s, False) for _ in range(concurrency)))
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(connection(t0 + duration_s, True) for _ in range(concurrency)))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    latencies.sort()
    return {"requests": len(latencies), "errors": errors, "rps": round(len(latencies) / elapsed, 1),
            "p50_ms": round(1000 * statistics.median(latencies), 2) if latencies else None,
            "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 2)
            if latencies else None,
            "client_cpu_share": round(cpu / elapsed, 3), "requests_reused": cycled, "reconnects": reconnects}


def client_main(argv: list[str]) -> None:
    """The load client's own process (`bench_api.py --client PORT FILE DURATION CONCURRENCY WARMUP`): reads the
    prepared requests (a JSON list of [method, path, body or null]) and prints one JSON line of results."""
    port, path, duration_s, concurrency, warmup_s = int(argv[0]), argv[1], float(argv[2]), int(argv[3]), \
        float(argv[4])
    requests = []
    for method, target, body in json.loads(Path(path).read_text(encoding="utf-8")):
        data = b"" if body is None else json.dumps(body).encode()
        requests.append(f"{method} {target} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                        f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    print(json.dumps(asyncio.run(_light_load(port, requests, duration_s, concurrency, warmup_s))))


def _measure(port: int, pids: list[int], requests: list[tuple[str, str, Any]], duration_s: float,
             warmup_s: float = 1.0) -> dict[str, Any]:
    """One scenario against one server: the light client in its own process; the client's CPU share (of one
    core), each server process's share, and the whole machine's busy cores over the same seconds."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(requests, f)
    try:
        argv = [sys.executable, str(Path(__file__).resolve()), "--client", str(port), f.name, str(duration_s),
                str(CONCURRENCY), str(warmup_s)]
        client = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(warmup_s + 0.3)  # server CPU is counted over the timed part only (the client's import ~0.3 s)
        cpu0, busy0, t0 = _cpu_seconds(pids), _machine_busy(), time.perf_counter()
        out, err = client.communicate(timeout=duration_s + warmup_s + 120)
        elapsed, cpu1, busy1 = time.perf_counter() - t0, _cpu_seconds(pids), _machine_busy()
    finally:
        os.unlink(f.name)
    if client.returncode != 0:
        raise RuntimeError(f"the load client failed: {err[-500:]}")
    res: dict[str, Any] = json.loads(out)
    shares = sorted((round((cpu1.get(p, 0) - cpu0.get(p, 0)) / elapsed, 2) for p in pids), reverse=True)
    res["server_cpu_share"] = [s for s in shares if s > 0.01] or [0.0]
    res["server_cpu_ms_per_request"] = round(1000 * sum(shares) / res["rps"], 2) if res["rps"] else None
    cores = os.cpu_count() or 1
    res["machine_busy_cores"] = round(cores * (busy1[0] - busy0[0]) / max(busy1[1] - busy0[1], 1e-9), 2)
    res["loadavg"] = round(os.getloadavg()[0], 2)
    return res


def _requests(name: str, kb_concepts: list[str], culture: str, phrases: Phrases, rng: random.Random,
              seconds: float) -> list[tuple[str, str, Any]]:
    """Enough distinct requests of scenario `name` for `seconds` at the fastest rate seen on this machine."""
    if name == "livez":
        return [("GET", "/livez", None)]
    if name == "lookup_1_exact":
        return [("POST", "/v1/lookup", {"concepts": [rng.choice(kb_concepts)], "culture": culture})
                for _ in range(2000)]
    if name == "lookup_1":
        return [("POST", "/v1/lookup", {"concepts": [phrases.next()], "culture": culture})
                for _ in range(int(1500 * seconds))]
    return [("POST", "/v1/lookup", {"concepts": rng.sample(kb_concepts, 8) + [phrases.next() for _ in range(24)],
                                    "culture": culture}) for _ in range(int(150 * seconds))]


def first_lookups(kb_dir: Path, workers: int, env: dict[str, str], per_worker: int = 5) -> dict[str, Any]:
    """A fresh server: once every worker has answered /readyz, one-concept semantic lookups (phrases never sent
    before), each on a new connection after a /readyz on it that names the worker, until each worker has
    served `per_worker`; milliseconds per worker, and the worst first-over-later ratio."""
    proc, base, _ready, startup_s = _start(kb_dir, workers, True, None, env)
    port = int(base.rsplit(":", 1)[1])
    try:
        pids = _wait_workers(port, workers)
        seen: dict[int, list[float]] = {}
        for i in range(40 * workers * per_worker):
            with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                _, body = raw_request(conn, "GET", "/readyz")
                pid = int(json.loads(body)["pid"])
                if len(seen.get(pid, [])) >= per_worker:
                    continue
                t0 = time.perf_counter()
                status, _ = raw_request(conn, "POST", "/v1/lookup",
                                         {"concepts": [f"a quiet harbour at dawn number {i}"], "culture": "en"})
                if status != 200:
                    raise RuntimeError(f"lookup answered {status}")
                seen.setdefault(pid, []).append(round(1000 * (time.perf_counter() - t0), 1))
            if len(seen) == workers and all(len(v) >= per_worker for v in seen.values()):
                break
    finally:
        stop_server(proc)
    ratios = [v[0] / statistics.median(v[1:]) for v in seen.values() if len(v) > 1]
    return {"workers": workers, "workers_ready": len(pids), "startup_s": round(startup_s, 1),
            "ms_by_worker": [seen[p] for p in sorted(seen)],
            "first_over_later": round(max(ratios), 2) if ratios else None,
            "loadavg": round(os.getloadavg()[0], 2)}


def workers_main(duration_s: float = 4.0, rounds: int = 3, scenarios: tuple[str, ...] = WORKER_SCENARIOS,
                 configs: tuple[str, ...] = tuple(WORKER_CONFIGS), first: bool = True,
                 name: str = "api_workers") -> dict[str, Any]:
    """1 worker vs 2 workers (and 2 workers as before issue 25's fixes), side by side in one run: the three
    servers run at once and each round measures every scenario on each of them in turn (the order reversed every
    other round), with a light client in its own process whose CPU share is reported beside the figures; then
    the first lookups after /readyz on fresh servers (`first`). Writes results/<name>.json and <name>.md."""
    rng = random.Random(SEED)
    kb_dir = demo_kb()
    out: dict[str, Any] = {
        "duration_s": duration_s, "rounds": rounds, "concurrency": CONCURRENCY, "cpus": os.cpu_count(),
        "client": "raw keep-alive HTTP/1.1 on asyncio streams in its own process (requests prepared before)",
        "loadavg_start": [round(x, 2) for x in os.getloadavg()], "nice": os.nice(0), "configs": {}}
    servers: dict[str, tuple[subprocess.Popen[str], int, list[int]]] = {}
    try:
        for config in configs:
            workers, env = WORKER_CONFIGS[config]
            cpus = {min(os.sched_getaffinity(0))} if config == ONE_CORE else None
            proc, base, _ready, startup_s = _start(kb_dir, workers, True, None, env, cpus)
            port = int(base.rsplit(":", 1)[1])
            ready = _wait_workers(port, workers)
            servers[config] = (proc, port, _process_tree(proc.pid))
            out["configs"][config] = {"workers": workers, "env": env, "startup_s": round(startup_s, 1),
                                      "workers_ready": len(ready), "scenarios": {s: [] for s in scenarios}}
        culture, concepts = largest_culture(kb_dir)
        phrases = Phrases(concepts, rng)
        names = list(configs)
        for r in range(rounds):
            for scenario in scenarios:
                for config in names if r % 2 == 0 else names[::-1]:
                    _proc, port, pids = servers[config]
                    requests = _requests(scenario, concepts, culture, phrases, rng, duration_s + 1)
                    out["configs"][config]["scenarios"][scenario].append(_measure(port, pids, requests,
                                                                                  duration_s))
    finally:
        for proc, _port, _pids in servers.values():
            stop_server(proc)
    for res in out["configs"].values():
        res["median_rps"] = {s: statistics.median(x["rps"] for x in rows) for s, rows in res["scenarios"].items()}
    out["ratios"] = {}
    pairs = [(config, "1 worker") for config in names[1:] if config != ONE_CORE]
    if ONE_CORE in names and "2 workers" in names:
        pairs.append(("2 workers", ONE_CORE))
    for config, base_config in pairs:
        one = out["configs"][base_config]["scenarios"]
        two = out["configs"][config]["scenarios"]
        for scenario in scenarios:
            per_round = [round(b["rps"] / a["rps"], 2) for a, b in zip(one[scenario], two[scenario], strict=True)]
            cpu = [round(sum(b["server_cpu_share"]) / max(sum(a["server_cpu_share"]), 1e-9), 2)
                   for a, b in zip(one[scenario], two[scenario], strict=True)]
            out["ratios"][f"{scenario}: {config} / {base_config}"] = {"median": statistics.median(per_round),
                                                              "rounds": per_round, "server_cpu_rounds": cpu}
    out["first_lookups"] = {config: first_lookups(kb_dir, *WORKER_CONFIGS[config])
                            for config in configs if first and WORKER_CONFIGS[config][0] > 1}
    out["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    (RESULTS / f"{name}.md").write_text(render_workers(out), encoding="utf-8")
    print(json.dumps({"ratios": {k: v["median"] for k, v in out["ratios"].items()},
                      "first_over_later": {k: v["first_over_later"] for k, v in out["first_lookups"].items()},
                      "loadavg": [out["loadavg_start"], out["loadavg_end"]]}))
    return out


def render_workers(out: dict[str, Any]) -> str:
    """api_workers.md: every round of every scenario, the ratios and the first lookups."""
    lines = [f"# 1 vs 2 API workers ({out['cpus']} CPUs, load average {out['loadavg_start']} at start, "
             f"{out['loadavg_end']} at end; {out['rounds']} rounds of {out['duration_s']} s per scenario, "
             f"{out['concurrency']} keep-alive connections"
             f"{'; every process at nice ' + str(out['nice']) if out.get('nice') else ''})", "",
             f"Written by `python benchmarks/bench_api.py --workers`. Client: {out['client']}. CPU shares are CPU "
             "seconds per second (1.0 = one core): the client's, each server process's (largest first: the "
             "workers, then the supervisor), and the whole machine's busy cores (other jobs included).", "",
             "| server | scenario | round | req/s | p50 ms | client CPU | server CPU by process | server CPU ms per "
             "request | machine busy cores | load |", "|---|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for name, res in out["configs"].items():
        for scenario, rows in res["scenarios"].items():
            for i, x in enumerate(rows):
                lines.append(f"| {name} | {scenario} | {i + 1} | {x['rps']} | {x['p50_ms']} | "
                             f"{x['client_cpu_share']} | {' + '.join(map(str, x['server_cpu_share']))} | "
                             f"{x['server_cpu_ms_per_request']} | {x['machine_busy_cores']} | {x['loadavg']} |")
    lines += ["", "| req/s ratio (per round: the two servers measured one after the other) | median | rounds | "
              "server CPU ratio, rounds |", "|---|---:|---|---|"]
    lines += [f"| {k} | {v['median']} | {v['rounds']} | {v['server_cpu_rounds']} |" for k, v in out["ratios"].items()]
    lines += ["", "First one-concept semantic lookups of each worker after /readyz (fresh server, ms, in order):", "",
              "| server | ms by worker | first / median of later (worst worker) | load |", "|---|---|---:|---:|"]
    for name, res in out["first_lookups"].items():
        lines.append(f"| {name} | {res['ms_by_worker']} | {res['first_over_later']} | {res['loadavg']} |")
    return "\n".join(lines) + "\n"


def main_crowd(duration_s: float = 8.0) -> dict[str, Any]:
    """Run only the many-clients part and merge it into the recorded api_load.json / api_load.md."""
    path = RESULTS / "api_load.json"
    result = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    result["crowd"] = run_crowd(demo_kb(), duration_s, random.Random(SEED))
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if result.get("configs"):
        (RESULTS / "api_load.md").write_text(render_markdown(result), encoding="utf-8")
    else:
        (RESULTS / "api_load.md").write_text("\n".join(render_crowd(result["crowd"])) + "\n", encoding="utf-8")
    return result["crowd"]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--client"]:  # the load client's own process (internal)
        client_main(sys.argv[2:])
    else:
        import argparse

        ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
        part = ap.add_mutually_exclusive_group()
        part.add_argument("--workers", action="store_true", help="1 vs 2 workers only (results/api_workers.*)")
        part.add_argument("--crowd", action="store_true", help="the many-clients part only (into api_load.*)")
        args = ap.parse_args()
        if args.workers:
            workers_main()
        else:
            print(json.dumps(main_crowd() if args.crowd else main()))
