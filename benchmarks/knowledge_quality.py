"""Does knowledge help? The knowledge report on the ArtEmis subset and on the BRIGHTER sample (issue 11).

For each dataset: build the KB from the training split, index it, calibrate the kb-prior (valid split plus the
training samples left out of their own tuples), and run `culturekb eval knowledge` on the test split. The tables of
both reports and the chosen calibration go to benchmarks/results/knowledge_quality.md (and .json).

    python benchmarks/knowledge_quality.py --artemis ../shared/data/artemis_subset/artemis_dev.csv \
        --work /tmp/kq --out benchmarks/results

The ArtEmis subset is not shipped whole (research-only terms; 200 of its rows are, in culturekb/data/demo); without
--artemis the shipped 200-row sample is used.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BRIGHTER = ROOT / "culturekb" / "data" / "demo" / "brighter"


def _cli(*args: object, env: dict[str, str] | None = None) -> str:
    cmd = [sys.executable, "-m", "culturekb.cli", *map(str, args)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def run_dataset(name: str, data: Path, work: Path, build_args: list[str], embedder: str | None) -> dict[str, object]:
    """Build, index, calibrate and report one dataset; the report's JSON and Markdown, and timings."""
    kb, out = work / name / "kb", work / name / "knowledge"
    env = {"CULTUREKB_EMBEDDER": embedder} if embedder else {}
    times: dict[str, float] = {}
    for step, args in (
        ("build", ["build", data, *build_args, "--out", kb, "--cache-dir", work / "cache"]),
        ("index", ["index", "--kb", kb]),
        ("calibrate", ["calibrate", data, "--kb", kb]),
        ("report", ["eval", "knowledge", data, "--kb", kb, "--out", out]),
    ):
        if step == "build" and (kb / "manifest.json").is_file():
            continue
        t0 = time.perf_counter()
        _cli(*args, env=env)
        times[step] = round(time.perf_counter() - t0, 1)
    report = json.loads((out / "knowledge.json").read_text(encoding="utf-8"))
    markdown = (out / "knowledge.md").read_text(encoding="utf-8")
    calibration = json.loads((kb / "calibration.json").read_text(encoding="utf-8"))
    calibration.pop("grid", None)
    return {"data": str(data), "report": report, "markdown": markdown, "calibration": calibration, "seconds": times}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artemis", type=Path, default=ROOT / "culturekb" / "data" / "demo" / "artemis_demo.csv")
    ap.add_argument("--work", type=Path, default=Path("/tmp/culturekb-knowledge-quality"))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    results = {
        "artemis": run_dataset("artemis", args.artemis, args.work, [], None),
        "brighter": run_dataset(
            "brighter", BRIGHTER / "brighter_sample.jsonl", args.work,
            ["--scheme", str(BRIGHTER / "brighter_scheme.json"),
             "--cultures-file", str(BRIGHTER / "brighter_cultures.json")],
            "use"),
    }
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    lines = [
        "# Does knowledge help? The knowledge report on two real datasets",
        "",
        f"Made by `benchmarks/knowledge_quality.py` at commit `{commit.stdout.strip() or '?'}` (2 shared CPU cores). "
        "Each KB is built from the training split, calibrated (valid split + training samples left out of their own "
        "tuples; docs/knowledge-model.md) and reported on the test split with `culturekb eval knowledge` "
        "(docs/knowledge-report.md).",
        "",
    ]
    for name, title in (("artemis", "ArtEmis subset (English, split by painting)"),
                        ("brighter", "BRIGHTER sample (en de es zh ru hi, texts, native annotators)")):
        r = results[name]
        cal = r["calibration"]
        assert isinstance(cal, dict)
        lines += [f"## {title}", "", f"Data: `{Path(str(r['data'])).name}`; seconds per step: {r['seconds']}.", "",
                  "Calibration chosen: " + ", ".join(f"{k} {cal.get(k)}" for k in (
                      "min_support", "min_informativeness", "alpha", "beta", "gamma", "pool",
                      "prior_only_cultures"))
                  + f"; fitted on {cal.get('fitted_on')}; valid figures {cal.get('valid')}; "
                  f"hidden tuples {cal.get('dropped', {}).get('total')} of {cal.get('dropped', {}).get('of')}.", "",
                  str(r["markdown"]).split("\n", 1)[1] if str(r["markdown"]).startswith("#") else str(r["markdown"]),
                  ""]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "knowledge_quality.md").write_text("\n".join(lines), encoding="utf-8")
    (args.out / "knowledge_quality.json").write_text(
        json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "markdown"} for k, v in results.items()},
                   indent=1, ensure_ascii=False, default=str), encoding="utf-8")
    print(f"wrote {args.out / 'knowledge_quality.md'}")


if __name__ == "__main__":
    main()
