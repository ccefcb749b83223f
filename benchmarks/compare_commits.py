"""Run benchmarks on two commits side by side and compare their key figures (a regression check for refactors).

    python benchmarks/compare_commits.py BASE [HEAD] [--only NAME ...] [--rounds N]

Each commit is checked out into its own temporary worktree; every benchmark script of that commit runs there with
the commit's own package first on PYTHONPATH (so both use this environment's dependencies), and its results JSON
is read back. Rounds alternate base, head, base, head ... so that load from other processes hits both alike. The
table (median over rounds) goes to benchmarks/results/compare_<base>_<head>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# benchmark -> (results file, [(metric path, what it is, better)])
METRICS: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "bench_overhead": ("overhead.json", [
        ("component_overhead_ms", "pipeline overhead per sample, ms", "lower"),
        ("component_breakdown_ms.augment (concepts + lookup + block)", "augment, ms", "lower"),
        ("end_to_end_overhead_share", "end-to-end overhead share of a 200 ms call", "lower"),
    ]),
    "bench_association": ("association.json", [
        ("arrays_rows_per_s", "association on arrays, rows/s", "higher"),
        ("associate_rows_per_s", "association from tuples, rows/s", "higher"),
    ]),
    "bench_model_calls": ("model_calls.json", [
        ("fraction_of_ideal", "model calls, fraction of ideal throughput", "higher"),
        ("server_process.client_cpu_ms_per_call", "client CPU per call, ms", "lower"),
    ]),
    "bench_build": ("build.json", [
        ("offline_first.wall_time_s", "offline build, s", "lower"),
        ("offline_second.wall_time_s", "rebuild from cache, s", "lower"),
        ("offline_first.tuples", "offline build, tuples", "same"),
        ("offline_first.flagged", "offline build, flagged tuples", "same"),
        ("llm_first.model_calls", "LLM build, model calls", "same"),
        ("llm_second.model_calls", "LLM rebuild, model calls", "same"),
    ]),
    "bench_lookup": ("bench_lookup.json", [
        ("batched_s_median", "batched lookup of 1,000 concepts, s", "lower"),
        ("throughput_ratio_batched_over_loop", "batched / per-concept loop throughput", "higher"),
        ("outside_embedder_share", "share of lookup time outside the embedder", "lower"),
    ]),
    "bench_api": ("api_load.json", [
        ("workers.1.lookup_1.rps", "API /v1/lookup (1 concept), req/s, 1 worker", "higher"),
        ("workers.1.lookup_32.concepts_per_s", "API /v1/lookup (32 concepts), concepts/s, 1 worker", "higher"),
    ]),
}


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def _get(data: Any, path: str) -> float | None:
    for key in path.split("."):
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return float(data) if isinstance(data, int | float) else None


def _run(tree: Path, name: str) -> dict[str, float | None]:
    results_file, metrics = METRICS[name]
    env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(tree / "benchmarks" / f"{name}.py")], cwd=tree, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    data = json.loads((tree / "benchmarks" / "results" / results_file).read_text("utf-8"))
    out = {path: _get(data, path) for path, _, _ in metrics}
    out["_seconds"] = round(time.perf_counter() - t0, 1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("head", nargs="?", default="HEAD")
    ap.add_argument("--only", nargs="*", default=None, choices=sorted(METRICS))
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    base, head = _git("rev-parse", "--short", args.base), _git("rev-parse", "--short", args.head)
    names = args.only or list(METRICS)
    runs: dict[str, dict[str, list[dict[str, float | None]]]] = {n: {"base": [], "head": []} for n in names}
    with tempfile.TemporaryDirectory(prefix="culturekb-compare-") as tmp:
        trees = {"base": Path(tmp) / "base", "head": Path(tmp) / "head"}
        for side, rev in (("base", base), ("head", head)):
            _git("worktree", "add", "--detach", str(trees[side]), rev)
        try:
            for name in names:
                for _ in range(args.rounds):
                    for side in ("base", "head"):
                        print(f"{name} on {side} ...", flush=True)
                        runs[name][side].append(_run(trees[side], name))
        finally:
            for tree in trees.values():
                _git("worktree", "remove", "--force", str(tree))
    rows: list[dict[str, Any]] = []
    for name in names:
        for path, what, better in METRICS[name][1]:
            vals: dict[str, list[float]] = {
                s: [v for r in runs[name][s] if (v := r[path]) is not None] for s in ("base", "head")
            }
            med = {s: statistics.median(v) if v else None for s, v in vals.items()}
            ratio = med["head"] / med["base"] if med["base"] and med["head"] is not None else None
            rows.append({"benchmark": name, "metric": what, "better": better, "base": med["base"],
                         "head": med["head"], "head_over_base": ratio, "base_runs": vals["base"],
                         "head_runs": vals["head"]})
    out = HERE / "results" / f"compare_{base}_{head}"
    result = {"base": base, "head": head, "rounds": args.rounds, "load_average_1m": os.getloadavg()[0],
              "rows": rows}
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [f"# Benchmarks, {base} (base) vs {head} (head)", "",
             f"Median of {args.rounds} alternating rounds; load average at the end {result['load_average_1m']:.2f}.",
             "", "| benchmark | metric | better | base | head | head / base | runs (base; head) |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        shown = f"{r['head_over_base']:.3f}" if r["head_over_base"] is not None else "n/a"
        fmt = [f"{v:g}" for v in r["base_runs"]], [f"{v:g}" for v in r["head_runs"]]
        lines.append(f"| {r['benchmark']} | {r['metric']} | {r['better']} | {r['base']} | {r['head']} | {shown} | "
                     f"{', '.join(fmt[0])}; {', '.join(fmt[1])} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
