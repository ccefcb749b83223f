"""Model-call throughput of `OpenAICompatClient.complete_many`, builder style.

A KB build sends thousands of independent chat calls. This measures how close the client gets to the ideal
rate `concurrency / latency` against the scripted OpenAI-compatible server with a fixed per-request latency
(default: 640 calls, 32 in flight, 50 ms each, ideal 640 calls/s; target: at least 0.8 of it).

The headline figure (median of `repeats` runs) runs the server in its own process, as a real model server
would be, so the figure is the client's, on its default transport ("auto": the direct aiohttp one). For
reference, the result also holds the same run through the `openai` SDK on its two transports (aiohttp and
httpx), and on the default transport with the server in a thread of the benchmark process (sharing its GIL).
The client's CPU per call is the number to watch: at 32 in flight and 50 ms, every call must cost well under
1.5 ms of one core. Other jobs on the machine lower the figure; `load_average_1m` (taken before the first
run) and `load_average_1m_after` record how busy it was.

    python benchmarks/bench_model_calls.py [--calls 640] [--concurrency 32] [--latency 0.05]

Prints one JSON line and writes benchmarks/results/model_calls.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from culturekb._io import atomic_write_json
from culturekb.models import OpenAICompatClient
from culturekb.testing import ScriptedOpenAIServer

logger = logging.getLogger("bench_model_calls")

RESULTS = Path(__file__).resolve().parent / "results" / "model_calls.json"
TARGET = 0.8

_SERVER_PROCESS = """
import sys
from culturekb.testing import ScriptedOpenAIServer
server = ScriptedOpenAIServer(latency_s=float(sys.argv[1])).start()
print(server.base_url, flush=True)
sys.stdin.read()  # serve until the parent closes our stdin
server.stop()
"""


@contextmanager
def _server_in_process(latency_s: float) -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SERVER_PROCESS, str(latency_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdin is not None
        base_url = proc.stdout.readline().strip()
        if not base_url.startswith("http://"):
            raise RuntimeError(f"the scripted server process did not start (printed {base_url!r})")
        yield base_url
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def _server_in_thread(latency_s: float) -> Iterator[str]:
    with ScriptedOpenAIServer(latency_s=latency_s) as server:
        yield server.base_url


def _measure(
    base_url: str, calls: int, concurrency: int, repeats: int, ideal: float, http_backend: str = "auto"
) -> dict[str, Any]:
    batch = [[{"role": "user", "content": f"Which emotion does concept {i} evoke?"}] for i in range(calls)]
    with OpenAICompatClient(
        "bench-model", base_url=base_url, max_concurrency=concurrency, timeout_s=30.0, http_backend=http_backend
    ) as client:
        client.complete_many(batch[: 2 * concurrency])  # warm-up: connections, imports
        walls: list[float] = []
        cpus: list[float] = []
        for _ in range(repeats):
            cpu0, wall0 = time.process_time(), time.perf_counter()
            answers = client.complete_many(batch)
            walls.append(time.perf_counter() - wall0)
            cpus.append(time.process_time() - cpu0)
            if len(answers) != calls:
                raise RuntimeError(f"expected {calls} answers, got {len(answers)}")
        backend = getattr(client, "transport", None) or client.provider.transport  # the provider's transport
    wall = statistics.median(walls)
    return {
        "wall_s": round(wall, 4),
        "calls_per_s": round(calls / wall, 1),
        "fraction_of_ideal": round(calls / wall / ideal, 3),
        "best_fraction_of_ideal": round(calls / min(walls) / ideal, 3),
        "client_cpu_ms_per_call": round(1000 * statistics.median(cpus) / calls, 3),
        "runs_wall_s": [round(w, 4) for w in walls],
        "http_backend": backend,
    }


def main(calls: int = 640, concurrency: int = 32, latency_s: float = 0.05, repeats: int = 3) -> dict[str, Any]:
    """Run the benchmark, write benchmarks/results/model_calls.json, and return the result."""
    ideal = concurrency / latency_s
    load_before = os.getloadavg()[0]
    with _server_in_process(latency_s) as url:
        separate = _measure(url, calls, concurrency, repeats, ideal)
        separate_sdk_aiohttp = _measure(url, calls, concurrency, repeats, ideal, http_backend="aiohttp")
        separate_httpx = _measure(url, calls, concurrency, repeats, ideal, http_backend="httpx")
    with _server_in_thread(latency_s) as url:
        shared = _measure(url, calls, concurrency, repeats, ideal)
    fraction = separate["fraction_of_ideal"]
    result: dict[str, Any] = {
        "benchmark": "model_calls",
        "calls": calls,
        "concurrency": concurrency,
        "latency_s": latency_s,
        "ideal_calls_per_s": round(ideal, 1),
        "calls_per_s": separate["calls_per_s"],
        "fraction_of_ideal": fraction,
        "best_fraction_of_ideal": separate["best_fraction_of_ideal"],
        "target": TARGET,
        "meets_target": fraction >= TARGET,
        "server_process": separate,
        "server_process_sdk_aiohttp_backend": separate_sdk_aiohttp,
        "server_process_httpx_backend": separate_httpx,
        "server_thread": shared,
        "cpus": os.cpu_count(),
        "load_average_1m": round(load_before, 2),
        "load_average_1m_after": round(os.getloadavg()[0], 2),
        "python": platform.python_version(),
    }
    atomic_write_json(RESULTS, result)
    return result


def _cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=640)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    result = main(args.calls, args.concurrency, args.latency, args.repeats)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    _cli()
