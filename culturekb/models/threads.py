"""One thread policy for every compute library culturekb drives: ONNX Runtime (the MiniLM encoder), numpy's BLAS,
torch and FAISS (OpenMP).

The rule (docs/scaling.md, "Thread policy"):

- A process computes on `compute_threads()` threads: the cores this process may run on
  (`os.sched_getaffinity`, which also follows `taskset` and container CPU sets), divided among the processes that
  serve side by side (`CULTUREKB_PROCESSES`, set by `culturekb serve --workers N` for its workers), and no more
  than the cores left free by the rest of the machine when the threads are chosen (cores minus the 1-minute load
  average, rounded up; this process's own part of that average, `own_load`, is not counted), at least 1.
  `CULTUREKB_THREADS=N` overrides it. Measured on 2 cores at load 3: ONNX Runtime on 1 thread encoded 1.27x faster
  than on 2 (benchmarks/results/embed_floor.json).
- Threads never spin while they wait: ONNX Runtime's intra-op threads run with spinning off, and the numpy runtime
  keeps one BLAS thread (OpenBLAS's workers spin-wait). So when the machine is free a batch uses every core, and
  when other processes hold the cores the waiting threads sleep instead of taking the cores from them.
- FAISS searches one query (or a handful) on one OpenMP thread: its per-query work at 10^5 vectors is a fraction
  of a millisecond, and OpenMP's fork/join and spin-wait cost more than that on a loaded machine (measured 3.5-15x
  slower than one thread, issue 25). Large batches (`FAISS_PARALLEL_MIN` queries or more) use `compute_threads()`.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from culturekb.errors import ConfigError

__all__ = ["FAISS_PARALLEL_MIN", "available_cores", "compute_threads", "faiss_threads", "own_load"]

THREADS_ENV = "CULTUREKB_THREADS"
PROCESSES_ENV = "CULTUREKB_PROCESSES"
FAISS_PARALLEL_MIN = 64
"""Queries in one FAISS search call from which OpenMP threads pay off."""


def available_cores() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS and Windows have no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def _positive_env(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{name}={raw!r} is not a positive whole number; set it to a thread or process count "
                          f"such as {available_cores()}, or unset it")
    return value


def compute_threads() -> int:
    """Threads one process should compute on (see the module docstring)."""
    override = _positive_env(THREADS_ENV)
    if override is not None:
        return override
    processes = _positive_env(PROCESSES_ENV) or 1
    cores = available_cores()
    share = max(1, cores // processes)
    try:
        busy = max(0.0, os.getloadavg()[0] - own_load())
    except (AttributeError, OSError):  # pragma: no cover - Windows has no load average
        return share
    return max(1, min(share, math.ceil(cores - busy)))


_LOADAVG_S = 60.0
"""The time constant of the 1-minute load average (an exponentially weighted mean of runnable tasks)."""


def own_load() -> float:
    """This process's own part of the 1-minute load average, estimated from its CPU time and age: a process that
    has computed at r cores for T seconds adds about r * (1 - exp(-T / 60)). The load average counts every
    runnable task, this one's threads too, so a process that has been computing (a build, a benchmark's earlier
    rounds) would otherwise see its own work as another job's and halve its threads (measured: 0.42 of the
    compute floor instead of 0.77, `benchmarks/bench_embed_floor.py`). 0.0 where /proc is not there. Called
    before each encode of new texts, so only the start time is read from /proc, once per process."""
    started = _started(os.getpid())
    if started is None:  # pragma: no cover - not Linux
        return 0.0
    age = max(time.clock_gettime(time.CLOCK_BOOTTIME) - started, 1e-3)
    cpu = time.process_time()  # user + system time, every thread of this process
    return (cpu / age) * (1.0 - math.exp(-age / _LOADAVG_S))


@lru_cache(maxsize=4)
def _started(pid: int) -> float | None:
    """When process `pid` (this one: the key makes a forked child read its own) started, in seconds since boot."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, AttributeError):  # pragma: no cover - not Linux
        return None


@contextmanager
def faiss_threads(faiss: Any, queries: int) -> Iterator[None]:
    """FAISS's OpenMP threads for one search of `queries` vectors: 1 below `FAISS_PARALLEL_MIN`, else
    `compute_threads()`. OpenMP keeps the setting per calling thread, so concurrent searches from other threads
    are not affected; it is restored on exit."""
    wanted = 1 if queries < FAISS_PARALLEL_MIN else compute_threads()
    before = faiss.omp_get_max_threads()
    if before != wanted:
        faiss.omp_set_num_threads(wanted)
    try:
        yield
    finally:
        if before != wanted:
            faiss.omp_set_num_threads(before)
