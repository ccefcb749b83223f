"""Wall time of `culturekb build` as a user runs it, on a base commit and on this tree, side by side in one run.

    python benchmarks/build_before_after.py [BASE] [--data CSV] [--rounds N]

BASE (default aa5c5d6, the last commit before issue 13's work) is checked out into a temporary worktree and run
with its own package first on PYTHONPATH (both use this environment's dependencies); this tree runs as it is.
Rounds alternate base, head, base, head ... with a fresh cache folder and output each time (a cold build, model
load and imports included, as a new user waits for it). Medians go to benchmarks/results/build_before_after.md
and .json, with each side's KB version and tuple count.
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
RESULTS = HERE / "results"
DEFAULT_DATA = REPO.parent / "shared/data/artemis_subset/artemis_dev.csv"


def _build(src: Path, data: Path, work: Path) -> dict[str, Any]:
    """One cold `culturekb build` of `data` with the package at `src`; wall seconds and the KB's version."""
    out, cache = work / "kb", work / "cache"
    env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "XDG_CACHE_HOME": str(work / "xdg")}
    cmd = [sys.executable, "-c", "from culturekb.cli import main; main()", "build", str(data), "--out", str(out),
           "--cache-dir", str(cache)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"build with {src} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    tuples = sum(1 for line in (out / "tuples.jsonl").read_text("utf-8").split("\n") if line.strip())
    return {"wall_s": round(wall, 2), "kb_version": manifest.get("version", manifest.get("kb_version")),
            "tuples": tuples}


def main(base: str, data: Path, rounds: int) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree), base], check=True,
                       capture_output=True)
        try:
            for r in range(rounds):
                for side, src in (("base", tree), ("head", REPO)):
                    work = Path(tmp) / f"{side}-{r}"
                    work.mkdir()
                    runs[side].append(_build(src, data, work))
                    print(side, runs[side][-1], flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=False,
                           capture_output=True)
    med = {side: round(statistics.median(r["wall_s"] for r in rs), 2) for side, rs in runs.items()}
    head_rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=False).stdout.strip()
    result = {"base": base, "head": head_rev, "data": str(data), "rounds": rounds, "cpus": os.cpu_count(),
              "load_average_1m_at_end": round(os.getloadavg()[0], 2), "runs": runs, "median_wall_s": med,
              "base_over_head": round(med["base"] / med["head"], 2)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "build_before_after.json").write_text(json.dumps(result, indent=1) + "\n", "utf-8")
    lines = [
        "# `culturekb build` before and after (cold cache, imports and model load included)", "",
        f"Data: `{data}`; {rounds} alternating rounds; {os.cpu_count()} CPUs; 1-minute load average "
        f"{result['load_average_1m_at_end']} at the end. Base `{base}` (before issue 13), head `{head_rev}`.", "",
        "| side | median wall s | runs (s) | KB version | tuples |", "|---|---:|---|---|---:|",
    ]
    for side, rs in runs.items():
        lines.append(f"| {side} | {med[side]} | {', '.join(str(r['wall_s']) for r in rs)} | "
                     f"`{rs[0]['kb_version']}` | {rs[0]['tuples']} |")
    lines += ["", f"Ratio base / head: {result['base_over_head']}x (issue 13's goal: >= 4x).", ""]
    (RESULTS / "build_before_after.md").write_text("\n".join(lines), "utf-8")
    print(json.dumps(result["median_wall_s"]), result["base_over_head"])
    return result


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", nargs="?", default="aa5c5d6")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    main(args.base, args.data, args.rounds)
