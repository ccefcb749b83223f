"""Each worker of `culturekb serve --workers N` computes on its own cores (issue 25).

Why (measured with `benchmarks/bench_api.py --workers` on 2 cores): two unpinned workers each ran their event
loop, request threads and encoder thread on either core, so every worker's threads handed the GIL and the
encoder's work across cores and both processes' caches were shared out; each worker used 0.87 of a core at 3.2 ms
of CPU per one-concept semantic lookup, against 2.9 ms for one worker held to one core. Held to one core each,
the two workers used 0.92 each at 3.05 ms, and served 11% more lookups (600 vs 540 req/s) and 8% more exact ones.

How: the server process's cores (`os.sched_getaffinity`, which follows `taskset` and container CPU sets) are cut
into N equal slots. Each worker claims the first free slot by taking an exclusive `flock` on the slot's file in the
server's runtime folder and holds it while it lives: the kernel drops the lock when a worker dies, so the worker
uvicorn starts in its place takes the freed slot. A worker that holds a slot computes on its cores alone, so its
thread policy counts one process on them (`CULTUREKB_PROCESSES=1`, `culturekb.models.threads`).

Not pinned: one worker (it may use every core), more workers than cores, a platform without `sched_setaffinity`
or `fcntl` (macOS, Windows), or `CULTUREKB_API_PIN_WORKERS=false`.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["claim_slot", "pin_worker", "slot_cores"]

log = logging.getLogger(__name__)

_held: list[int] = []
"""File descriptors of the slot locks this process holds (kept open for its lifetime)."""


def slot_cores(cores: list[int], workers: int) -> list[list[int]]:
    """`cores` cut into `workers` equal slots (the cores left over by an uneven cut go to no worker); [] when there
    are fewer cores than workers."""
    per = len(cores) // workers if workers > 0 else 0
    if per < 1:
        return []
    return [cores[k * per:(k + 1) * per] for k in range(workers)]


def claim_slot(folder: Path, slots: int) -> tuple[int, int] | None:
    """(slot, lock file descriptor): the first of `slots` slots whose lock file in `folder` this process could
    lock (the lock lasts while the descriptor is open), or None when every slot is held by another worker."""
    import fcntl

    for k in range(slots):
        fd = os.open(folder / f"cores-{k}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return k, fd
    return None


def pin_worker(folder: Path, workers: int) -> list[int] | None:
    """In a worker: claim a slot of this process's cores and run on it alone; the cores, or None when not pinned."""
    if workers < 2 or not hasattr(os, "sched_setaffinity"):
        return None
    try:
        import fcntl  # noqa: F401 - only POSIX has it
    except ImportError:  # pragma: no cover - Windows
        return None
    slots = slot_cores(sorted(os.sched_getaffinity(0)), workers)
    if not slots:
        return None
    try:
        claimed = claim_slot(folder, len(slots))
    except OSError as exc:  # the server's runtime folder is gone (the server stopped): serve unpinned
        log.warning("cannot claim cores in %s (%s); this worker is not pinned", folder, exc.strerror or exc)
        return None
    if claimed is None:
        log.warning("every core slot of this server is held by another worker; this worker is not pinned")
        return None
    k, fd = claimed
    _held.append(fd)
    os.sched_setaffinity(0, slots[k])
    from culturekb.models.threads import PROCESSES_ENV

    os.environ[PROCESSES_ENV] = "1"  # this process now computes alone on its cores
    log.info("worker %d computes on cores %s", os.getpid(), slots[k])
    return slots[k]
