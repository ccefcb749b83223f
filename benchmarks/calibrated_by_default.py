"""Calibrated by default (issue 27 item 1): `culturekb build` then `culturekb eval artemculture` with the kb-prior,
no `calibrate` step, on the shipped samples and on real labelled sets; `know` against the majority baseline, and
how the build calibrated the prior (on what, how many samples).

    python benchmarks/calibrated_by_default.py --shared ../shared/data --work /tmp/cbd --out benchmarks/results

Sets: the shipped ArtEmis sample (8:1:1 split by image: it has a valid split) and the shipped BRIGHTER sample (six
cultures, its own train/valid/test, the multilingual `use` embedder; the shipped ArtELingo sample has 8 images, all
in train, so nothing to test on); the ArtEmis subset
of ../shared/data (808 WikiArt paintings) as given (8:1:1) and with its split column set to train/test only (90/10
by painting, no valid split: the build then calibrates on the training paintings each left out); FindingEmo
(../shared/data/findingemo, Plutchik-24 labels, the image's search query as its text, one culture 'en'): the first
3,000 annotations, train/test only (80/20 by a hash of the image path). Without --shared only the shipped samples
run. Writes calibrated_by_default.json and .md to --out.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "culturekb" / "data" / "demo"
PLUTCHIK = ("joy,trust,fear,surprise,sadness,disgust,anger,anticipation,serenity,acceptance,apprehension,"
            "distraction,pensiveness,boredom,annoyance,interest,ecstasy,admiration,terror,amazement,grief,loathing,"
            "rage,vigilance")


SOURCES = [
    "- ArtEmis sample, BRIGHTER sample: shipped with culturekb (`culturekb/data/demo/`; `DATA_NOTICE.md`).",
    "- ArtEmis subset: `../shared/data/artemis_subset/artemis_dev.csv`, 808 of the 1,000 rows of "
    "`Dataset/1k_batch.csv` in the GitHub repository `PingjunHong/multimodal_nlp` (snapshot `ce969f3`, file commit "
    "`49251df`), derived from ArtEmis v1; ArtEmis terms (non-commercial research). See that folder's PROVENANCE.md.",
    "- FindingEmo: `../shared/data/findingemo/annotations_single.ann`, the whole file of the PyPI package "
    "`findingemo-light` 1.0.0 (`findingemo_light/data/annotations_single.ann`; Mertens et al., NeurIPS 2024), CC "
    "BY-NC-SA 4.0; the first 3,000 annotations are used. See that folder's PROVENANCE.md.",
]


def _cli(*args: object, env: dict[str, str] | None = None) -> str:
    cmd = [sys.executable, "-m", "culturekb.cli", *map(str, args)]
    done = subprocess.run(cmd, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})
    if done.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def _bucket(key: str) -> float:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def artemis_train_test(src: Path, dst: Path) -> Path:
    """The ArtEmis CSV with a split column: train for 90% of the paintings, test for the rest (no valid)."""
    with src.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    fields = [*rows[0].keys(), "split"]
    with dst.open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({**r, "split": "train" if _bucket(r["painting"]) < 0.9 else "test"})
    return dst


def findingemo_jsonl(src: Path, dst: Path, n: int = 3000) -> Path:
    """FindingEmo annotations as samples: the search query of the image path as text, Plutchik-24 label."""
    out: list[dict[str, Any]] = []
    with src.open(encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            if len(out) >= n:
                break
            parts = r["image_path"].strip("/").split("/")
            if len(parts) < 3 or not r["emotion"].strip():
                continue
            out.append({"id": f"fe{r['index']}", "culture": "en", "label": r["emotion"].strip().lower(),
                        "text": parts[1], "split": "train" if _bucket(r["image_path"]) < 0.8 else "test",
                        "metadata": {"image_id": r["image_path"]}})
    dst.write_text("".join(json.dumps(o) + "\n" for o in out), encoding="utf-8")
    return dst


def xed_head(src: Path, dst: Path, n: int = 3000) -> Path:
    """The first `n` lines of an XED annotated TSV (AnnotatedData/<lang>-annotated.tsv), under its own name (the
    `xed` map reads the culture from it); read as released, with --map xed."""
    dst.mkdir(parents=True, exist_ok=True)
    lines = src.read_text(encoding="utf-8").splitlines()[:n]
    (dst / src.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst / src.name


def run_set(name: str, data: Path, work: Path, build_args: list[str], env: dict[str, str],
            read_args: tuple[str, ...] = ()) -> dict[str, Any]:
    """Build a KB of `data` (defaults: calibrated), then `eval artemculture` on its test split; `read_args` (a field
    map) go to both commands."""
    kb, run = work / name / "kb", work / name / "run"
    t0 = time.perf_counter()
    _cli("build", data, "--out", kb, "--cache-dir", work / "cache", *build_args, *read_args, env=env)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    _cli("eval", "artemculture", data, "--kb", kb, "--out", run, "--modes", "orig,know,random-know", *read_args,
         env=env)
    t_eval = time.perf_counter() - t0
    report = json.loads((run / "artemculture.json").read_text(encoding="utf-8"))
    res = report.get("metrics", report)
    build = json.loads((kb / "build_report.json").read_text(encoding="utf-8"))
    settings = res["settings"]
    majority = res.get("majority_baseline", {})
    maj = majority.get("overall", majority.get("accuracy")) if isinstance(majority, dict) else majority
    return {
        "data": data.name, "test_samples": res.get("n_samples"),
        "know": settings["know"]["accuracy"], "orig": settings["orig"]["accuracy"],
        "random_know": settings["random-know"]["accuracy"], "majority": maj,
        "calibration": {k: v for k, v in build["calibration"].items()},
        "eval_calibration_source": res["calibration"]["source"], "eval_calibration_method": res["calibration"].get(
            "method"), "build_seconds": round(t_build, 1), "eval_seconds": round(t_eval, 1),
        "tuples": build["tuples"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", type=Path, default=None, help="the shared data folder (real sets)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/culturekb-calibrated-by-default"))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--xed", type=Path, default=None,
                    help="XED's AnnotatedData folder (Helsinki-NLP/XED, fetched): its English file's first 3,000 lines")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    brighter = DEMO / "brighter"
    sets: list[tuple[str, Path, list[str], dict[str, str]] | tuple[str, Path, list[str], dict[str, str],
                                                                    tuple[str, ...]]] = [
        ("ArtEmis sample (shipped)", DEMO / "artemis_demo.csv", [], {}),
        ("BRIGHTER sample (shipped, 6 cultures)", brighter / "brighter_sample.jsonl",
         ["--scheme", str(brighter / "brighter_scheme.json"),
          "--cultures-file", str(brighter / "brighter_cultures.json")],
         {"CULTUREKB_EMBEDDER": "use"}),
    ]
    if args.shared is not None:
        subset = args.shared / "artemis_subset" / "artemis_dev.csv"
        sets += [
            ("ArtEmis subset (8:1:1, valid split)", subset, [], {}),
            ("ArtEmis subset (train/test only)", artemis_train_test(subset, args.work / "artemis_train_test.csv"),
             [], {}),
            ("FindingEmo 3000 (train/test only)", findingemo_jsonl(
                args.shared / "findingemo" / "annotations_single.ann", args.work / "findingemo.jsonl"),
             ["--scheme", PLUTCHIK], {}),
        ]
    if args.xed is not None:
        sets.append(("XED en, first 3,000 subtitles (8:1:1 by line)",
                     xed_head(args.xed / "en-annotated.tsv", args.work / "xed"), ["--scheme", "plutchik8"], {},
                     ("--map", "xed")))
    results = {}
    for name, data, extra, env, *read in sets:
        slug = "".join(c if c.isalnum() else "_" for c in name.lower()).strip("_")
        results[name] = run_set(slug, data, args.work, extra, env, *read)
        print(name, json.dumps({k: results[name][k] for k in ("know", "majority", "orig", "build_seconds")}),
              flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    lines = ["# Calibrated by default: build, then eval artemculture (no calibrate)", "",
             f"Made by `benchmarks/calibrated_by_default.py` at commit `{commit.stdout.strip()}` (2 shared CPU cores). "
             "Each KB is built with the default options (which index it and calibrate the kb-prior), then "
             "`culturekb eval artemculture DATA --kb KB --modes orig,know,random-know` runs the kb-prior on the test "
             "split. majority = each culture's most frequent training label (= orig for the kb-prior).", "",
             "| set | test samples | know | majority | random-know | know - majority | calibrated on | build s |",
             "|---|---:|---:|---:|---:|---:|---|---:|"]
    for name, r in results.items():
        diff = r["know"] - r["majority"] if r["majority"] is not None else float("nan")
        lines.append(f"| {name} | {r['test_samples']} | {r['know']:.3f} | {r['majority']:.3f} | "
                     f"{r['random_know']:.3f} | {diff:+.3f} | {r['calibration']['method']} | {r['build_seconds']} |")
    trivial = [name for name, r in results.items() if r["know"] == r["majority"] == r["random_know"]]
    if trivial:
        lines += ["", f"Trivial results (know = majority = random-know: the knowledge changed no answer, so they show "
                  f"no gain and no harm): {', '.join(trivial)}."]
    lines += ["", "Where the data came from:", "", *SOURCES]
    lines += ["", "Chosen settings (from each build report's calibration section):", ""]
    for name, r in results.items():
        c = r["calibration"]
        lines.append(f"- {name}: beta {c.get('beta')}, alpha {c.get('alpha')}, gamma {c.get('gamma')}, pool "
                     f"{c.get('pool')}, min_support {c.get('min_support')}, min_informativeness "
                     f"{c.get('min_informativeness')}; hides {c.get('hidden_tuples')} of {c.get('of_tuples')} tuples; "
                     f"left-out accuracy prior {c.get('left_out_prior_accuracy')} -> {c.get('left_out_accuracy')}; "
                     f"valid prior {c.get('valid_prior_accuracy')} -> {c.get('valid_accuracy')}; index "
                     f"{c.get('index_seconds')} s, fit {c.get('seconds')} s; eval read: {r['eval_calibration_source']}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "calibrated_by_default.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                                         encoding="utf-8")
    (args.out / "calibrated_by_default.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
