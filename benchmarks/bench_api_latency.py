"""One API worker under light and heavier load, for two checkouts side by side: one-concept semantic lookups at 1, 4
and 16 keep-alive connections, requests/s, p50 latency and server CPU per request.

    git worktree add /tmp/culturekb-base 92625b6~1      # the commit before the micro-batcher's early start
    python benchmarks/bench_api_latency.py --trees /tmp/culturekb-base . [--rounds 2] [--seconds 4]

Each tree's `culturekb serve` runs from that tree (its own package first on the path) with this environment's
dependencies, on the demo KB of `bench_api.py`, with the light client of `bench_api.py --workers` in its own process;
rounds alternate the trees (base, head, base, head ...) so that load from other processes hits both alike. Written
to results/api_latency.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_api as b  # noqa: E402

RESULTS = HERE / "results"
LEVELS = (1, 4, 16)


def measure_tree(tree: Path, kb_dir: Path, seconds: float, rng: random.Random) -> dict[int, dict[str, Any]]:
    """Start one worker from `tree` and measure each connection level in turn."""
    culture, concepts = b.largest_culture(kb_dir)
    phrases = b.Phrases(concepts, rng)
    env = {"PYTHONPATH": os.pathsep.join([str(tree.resolve()), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    served = subprocess.run([sys.executable, "-c", "import culturekb; print(culturekb.__file__)"], cwd=tree,
                            env={**os.environ, **env}, capture_output=True, text=True).stdout.strip()
    if not Path(served).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{tree}: the server would import culturekb from {served}, not from this tree")
    cwd = os.getcwd()
    os.chdir(tree)  # `python -m culturekb.cli serve` puts the working folder first on the path
    try:
        proc, base, _ready, _startup = b._start(kb_dir, 1, True, None, env)
    finally:
        os.chdir(cwd)
    port = int(base.rsplit(":", 1)[1])
    pids = b._process_tree(proc.pid)
    out: dict[int, dict[str, Any]] = {}
    try:
        for level in LEVELS:
            b.CONCURRENCY = level
            requests = b._requests("lookup_1", concepts, culture, phrases, rng, seconds + 1)
            res = b._measure(port, pids, requests, seconds)
            out[level] = {k: res[k] for k in ("rps", "p50_ms", "p99_ms", "server_cpu_ms_per_request")}
    finally:
        b.stop_server(proc)
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trees", nargs=2, type=Path, required=True, metavar=("BASE", "HEAD"))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args(argv)
    kb_dir = b.demo_kb()
    rng = random.Random(b.SEED)
    load_start = round(os.getloadavg()[0], 2)
    names = {}
    for tree in args.trees:
        commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--", "culturekb"],
                               capture_output=True, text=True).stdout.strip()
        names[str(tree)] = commit + ("+changes" if dirty else "")
    runs: dict[str, list[dict[int, dict[str, Any]]]] = {str(t): [] for t in args.trees}
    for _ in range(args.rounds):
        for tree in args.trees:
            runs[str(tree)].append(measure_tree(tree, kb_dir, args.seconds, rng))
    out: dict[str, Any] = {"loadavg_start_end": [load_start, round(os.getloadavg()[0], 2)], "seconds": args.seconds,
                           "rounds": args.rounds, "trees": {names[t]: r for t, r in runs.items()}}
    lines = ["# One API worker at 1, 4 and 16 connections, two checkouts side by side", "",
             f"Written by `python benchmarks/bench_api_latency.py --trees BASE HEAD` ({args.rounds} alternating "
             f"rounds of {args.seconds} s per level; one-concept semantic lookups on the demo KB; load average "
             f"{out['loadavg_start_end'][0]} at the start, {out['loadavg_start_end'][1]} at the end).", "",
             "| checkout | connections | req/s (rounds) | p50 ms (rounds) | server CPU ms per request (rounds) |",
             "|---|---:|---|---|---|"]
    for tree, rounds in runs.items():
        for level in LEVELS:
            rows = [r[level] for r in rounds]
            lines.append(f"| {names[tree]} | {level} | {round(statistics.median(x['rps'] for x in rows), 1)} "
                         f"({', '.join(str(x['rps']) for x in rows)}) | "
                         f"{round(statistics.median(x['p50_ms'] for x in rows), 2)} "
                         f"({', '.join(str(x['p50_ms']) for x in rows)})"
                         f" | {', '.join(str(x['server_cpu_ms_per_request']) for x in rows)} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "api_latency.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "api_latency.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return out


if __name__ == "__main__":
    main()
