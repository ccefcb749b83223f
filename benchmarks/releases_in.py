"""Public releases read as published (issue 22): for each release, the records in its files, the items loaded,
the time, and a run on it from the CLI: culturaltom with its offline baseline; commet and ricevl-vqa against the
scripted OpenAI-compatible server (`culturekb mock-server`'s), with its exit code, seconds and model calls.

The full releases are not shipped; give the folder that holds them as RELEASES_DIR (the layout each release has
upstream: ToMBench's data/, BLEnD's data/annotations/, Hi-ToM_data.json, XED's AnnotatedData/, BanglaVerse's
data/<category>/{annotations,images}/), else the shipped samples in tests/fixtures/releases are measured. Results:
benchmarks/results/releases_in.json and .md. Words on the command line measure only the releases whose names
contain one of them (``BanglaVerse``); the other rows are kept from the last results.

    RELEASES_DIR=/path/to/releases .venv/bin/python benchmarks/releases_in.py [WORD ...]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from culturekb._records import LoadReport, read_records  # noqa: E402
from culturekb.evals.commet.stories import load_story_turns  # noqa: E402
from culturekb.evals.culturaltom.data import load_culturaltom  # noqa: E402
from culturekb.evals.ricevl.data import load_ricevl_vqa  # noqa: E402
from culturekb.workflows import load_data  # noqa: E402

SAMPLES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "releases"
RELEASES: list[tuple[Any, ...]] = [
    # name, repository@commit, path under the releases folder (full) / under the samples, loader, map
    ("ToMBench (culturaltom)", "zhchen18/ToMBench@4f491f0784ed31ef93a8837615fbc48f885cf78d", "tombench/data",
     "culturaltom", None),
    ("ToMBench (commet)", "zhchen18/ToMBench@4f491f0784ed31ef93a8837615fbc48f885cf78d", "tombench/data",
     "commet", None),
    ("ToMBench zh keys (culturaltom)", "zhchen18/ToMBench@4f491f0784ed31ef93a8837615fbc48f885cf78d",
     "tombench/data", "culturaltom", "tombench-zh"),
    ("Hi-ToM (culturaltom)", "ying-hui-he/Hi-ToM_dataset@56dda76fbbbcd510d51e91837fe19b7df2108562",
     "hitom/Hi-ToM_data.json", "culturaltom", None),
    ("BLEnD (ricevl-vqa)", "nlee0212/BLEnD@24e7d732c082c224b3bc9c7dc3b884fe83fb8cc8", "blend/data/annotations",
     "ricevl-vqa", None),
    ("BLEnD local-language questions (ricevl-vqa)", "nlee0212/BLEnD@24e7d732c082c224b3bc9c7dc3b884fe83fb8cc8",
     "blend/data/annotations", "ricevl-vqa", "blend-local"),
    ("XED en (build)", "Helsinki-NLP/XED@76666d251f147cf518071bef4f8415dab6b96115",
     "xed/AnnotatedData/en-annotated.tsv", "build", "xed"),
    ("XED fi (build)", "Helsinki-NLP/XED@76666d251f147cf518071bef4f8415dab6b96115",
     "xed/AnnotatedData/fi-annotated.tsv", "build", "xed"),
    ("BanglaVerse VQA (ricevl-vqa)", "faiyazabdullah/BanglaVerse@dbbafe2fdf5a33bab5774dd0b95876be375c9ddb",
     "banglaverse/data/*/annotations/*_qa_pairs.json", "ricevl-vqa", "banglaverse", ".."),
    ("BanglaVerse commonsense questions (ricevl-vqa)",
     "faiyazabdullah/BanglaVerse@dbbafe2fdf5a33bab5774dd0b95876be375c9ddb",
     "banglaverse/data/*/annotations/*_commonsense_reasoning.json", "ricevl-vqa", "banglaverse", ".."),
]
"""Each release: name, repository@commit, its path under the releases folder (a glob pattern: every file that
matches, each loaded and run on its own), the loader, the field map named (None: none), and optionally the data
root of its images relative to each data file's folder (BanglaVerse: "..", the category folder that holds
annotations/ and images/)."""


def _load(kind: str, path: Path, field_map: str | None, data_root: Path | None = None) -> tuple[list[Any], LoadReport]:
    from culturekb._records import parse_field_map

    report = LoadReport()
    fm = parse_field_map(field_map)
    if kind == "culturaltom":
        return list(load_culturaltom(path, field_map=fm, report=report)), report
    if kind == "commet":
        return list(load_story_turns(path, field_map=fm, report=report)), report
    if kind == "ricevl-vqa":
        return load_ricevl_vqa(path, field_map=fm, report=report, check_images=False, data_root=data_root), report
    samples, info = load_data([path], scheme="plutchik8", field_map=fm)
    report.items = sum(s["rows_read"] for s in info["sources"])
    return list(samples), report


def _run(kind: str, path: Path, field_map: str | None, data_root: Path | None = None) -> dict[str, Any]:
    """Run the benchmark on the release from the CLI, in process: culturaltom with its offline baseline, commet and
    ricevl-vqa against the scripted OpenAI-compatible server (`culturekb.testing.ScriptedOpenAIServer`, the server
    of `culturekb mock-server`: every answer "A"); the command, its exit code, seconds and model calls."""
    from typer.testing import CliRunner

    from culturekb.cli import app
    from culturekb.testing import ScriptedOpenAIServer

    if kind not in ("culturaltom", "commet", "ricevl-vqa"):
        return {"run": "load only", "run_exit": None, "run_seconds": None, "model_calls": None}
    mapped = ["--map", field_map] if field_map else []
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer(lambda body: "A") as server:
        options = [*mapped]
        if kind != "culturaltom":
            options += ["--model", "openai:m", "--base-url", server.base_url]
        if kind == "ricevl-vqa":
            options += ["--settings", "global"]
        rooted = ["--data-root", str(data_root)] if data_root is not None else []
        t0 = time.perf_counter()
        res = CliRunner(env={"XDG_CACHE_HOME": str(Path(tmp) / "cache")}).invoke(  # no answer from an earlier run
            app, ["eval", kind, str(path), "--out", str(Path(tmp) / "run"), *options, *rooted])
        seconds = time.perf_counter() - t0
        if res.exit_code != 0:
            print(res.output[-3000:], file=sys.stderr)
        shown = " ".join(["culturekb eval", kind, "DATA", *options, *(["--data-root FOLDER"] if rooted else []),
                          "--out RUN"])
        return {"run": shown.replace(server.base_url, "SERVER"), "run_exit": res.exit_code,
                "run_seconds": round(seconds, 2), "model_calls": server.chat_calls}


def _measure(name: str, rel: str, kind: str, field_map: str | None, paths: list[Path], above: str | None
             ) -> dict[str, Any]:
    """Records, items loaded, load seconds and the run of one release, summed over its files (each file loaded
    and run on its own, with its images' data root when the release has one)."""
    total: dict[str, Any] = {"records": 0, "loaded": 0, "seconds": 0.0, "notes": 0, "map": None, "no_image": 0}
    runs: list[dict[str, Any]] = []
    for path in paths:
        data_root = (path.parent / above).resolve() if above else None
        total["records"] += sum(1 for _ in read_records(path, None if kind != "build" else _xed_map()))
        t0 = time.perf_counter()
        loaded, report = _load(kind, path, field_map, data_root)
        total["seconds"] += time.perf_counter() - t0
        total["loaded"] += len(loaded)
        total["no_image"] += sum(1 for s in loaded if getattr(s, "image", None) and not Path(s.image).is_file())
        total["notes"] += len(report.notes)
        total["map"] = report.field_map or field_map
        runs.append(_run(kind, path, field_map, data_root) if "zh keys" not in name
                    else _run("load only", path, None))
    ran = dict(runs[0])
    if len(runs) > 1 and ran["run_exit"] is not None:
        ran["run_exit"] = next((r["run_exit"] for r in runs if r["run_exit"] != 0), 0)
        ran["run_seconds"] = round(sum(r["run_seconds"] for r in runs), 2)
        ran["model_calls"] = sum(r["model_calls"] for r in runs)
        refused = sum(1 for r in runs if r["run_exit"] != 0)
        ran["run"] += f" (once per file, {len(runs)} files" + (f"; exit {ran['run_exit']} on {refused}" if refused
                                                               else "") + ")"
    if above:
        ran["run"] += f"; {total['no_image']} item(s) whose image is not in this copy"
    return {"release": name, "source": "", "path": rel, "records": total["records"], "loaded": total["loaded"],
            "seconds": round(total["seconds"], 3), "field_map": total["map"], **ran,
            "left_out": total["records"] - total["loaded"], "notes": total["notes"]}


def main() -> None:
    """Measure every release (or those whose names contain a word given on the command line: the other rows are
    kept from the last results file) and write the results."""
    root = Path(os.environ["RELEASES_DIR"]) if os.environ.get("RELEASES_DIR") else SAMPLES
    full = root != SAMPLES
    out = Path(__file__).resolve().parent / "results" / ("releases_in.json" if full else "releases_in_samples.json")
    only = [word.lower() for word in sys.argv[1:]]
    kept = {r["release"]: r for r in json.loads(out.read_text(encoding="utf-8"))["rows"]} \
        if only and out.exists() else {}
    rows: list[dict[str, Any]] = []
    for name, source, rel, kind, field_map, *rest in RELEASES:
        if only and not any(word in name.lower() for word in only):
            if name in kept:
                rows.append(kept[name])
            continue
        paths = sorted(root.glob(rel)) if "*" in rel else [root / rel]
        if not paths or not all(p.exists() for p in paths):
            print(f"{name}: {root / rel} not found, skipped")
            continue
        row = {**_measure(name, rel, kind, field_map, paths, rest[0] if rest else None), "source": source}
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False))
    out.write_text(json.dumps({"full_releases": full, "rows": rows}, indent=2, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    write_markdown(rows, out.with_suffix(".md"))
    print(f"written {out}")


def write_markdown(rows: list[dict[str, Any]], out: Path) -> None:
    """The rows as the Markdown table of `out` (releases_in.md, releases_in_samples.md)."""
    lines = ["Each release as published (`benchmarks/releases_in.py`): items in its file(s), items loaded, seconds "
             "to load; then the benchmark run from the CLI (culturaltom offline; commet and ricevl-vqa against "
             "the scripted OpenAI-compatible server, every answer \"A\"), its exit code, seconds and model calls. "
             "Items left out are those the release gives no answer for (BLEnD), noted in the run report. Model "
             "calls are the chat requests the server received: an item whose prompt repeats another's in the same "
             "country (BLEnD has 1 such English question, 2 local ones) is answered from the run's cache. "
             "BanglaVerse is run once per question file with --data-root its category folder (data/<category>, "
             "which holds images/), each question sent with its image; its sample ships no images (the release "
             "does not say who owns its photographs), so there the run is refused before any model call (exit 2), "
             "as an image run without its images is; so is the run of a file one of whose images is missing from "
             "the copy measured (the run column counts those items).", "",
             "| release | repository@commit | items in file | items loaded | load s | map | run | exit | run s | "
             "model calls |", "|---|---|---:|---:|---:|---|---|---:|---:|---:|"]
    for r in rows:
        exit_code = "" if r["run_exit"] is None else r["run_exit"]
        lines.append(f"| {r['release']} | {r['source']} | {r['records']} | {r['loaded']} | {r['seconds']} | "
                     f"{r['field_map']} | {r['run']} | {exit_code} | {r['run_seconds'] or ''} | "
                     f"{'' if r['model_calls'] is None else r['model_calls']} |")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _xed_map() -> Any:
    from culturekb._records import parse_field_map

    return parse_field_map("xed")


if __name__ == "__main__":
    main()
