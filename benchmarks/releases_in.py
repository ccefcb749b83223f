"""Public releases read as published (issue 22): for each release, the records in its files, the items loaded,
the time, and that a run starts on it (culturaltom / commet / ricevl-vqa with the offline or scripted model).

The full releases are not shipped; give the folder that holds them as RELEASES_DIR (the layout each release has
upstream: ToMBench's data/, BLEnD's data/annotations/, Hi-ToM_data.json, XED's AnnotatedData/), else the shipped
samples in tests/fixtures/releases are measured. Results: benchmarks/results/releases_in.json and .md.

    RELEASES_DIR=/path/to/releases .venv/bin/python benchmarks/releases_in.py
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
RELEASES = [
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
]


def _load(kind: str, path: Path, field_map: str | None) -> tuple[int, LoadReport]:
    from culturekb._records import parse_field_map

    report = LoadReport()
    fm = parse_field_map(field_map)
    if kind == "culturaltom":
        return len(load_culturaltom(path, field_map=fm, report=report)), report
    if kind == "commet":
        return len(load_story_turns(path, field_map=fm, report=report)), report
    if kind == "ricevl-vqa":
        return len(load_ricevl_vqa(path, field_map=fm, report=report, check_images=False)), report
    samples, info = load_data([path], scheme="plutchik8", field_map=fm)
    report.items = sum(s["rows_read"] for s in info["sources"])
    return len(samples), report


def _run_offline(kind: str, path: Path) -> str:
    """Start the benchmark's run from the CLI on the release (offline model), to show it runs as published."""
    if kind != "culturaltom":
        return "load only"
    from typer.testing import CliRunner

    from culturekb.cli import app

    with tempfile.TemporaryDirectory() as tmp:
        res = CliRunner().invoke(app, ["eval", "culturaltom", str(path), "--out", str(Path(tmp) / "run")])
        return f"eval exit {res.exit_code}"


def main() -> None:
    root = Path(os.environ["RELEASES_DIR"]) if os.environ.get("RELEASES_DIR") else SAMPLES
    rows: list[dict[str, Any]] = []
    for name, source, rel, kind, field_map in RELEASES:
        path = root / rel
        if not path.exists():
            print(f"{name}: {path} not found, skipped")
            continue
        records = sum(1 for _ in read_records(path, None if kind != "build" else _xed_map()))
        t0 = time.perf_counter()
        loaded, report = _load(kind, path, field_map)
        seconds = time.perf_counter() - t0
        ran = _run_offline(kind, path) if "zh" not in name else "load only"
        row = {"release": name, "source": source, "path": rel, "records": records, "loaded": loaded,
               "seconds": round(seconds, 3), "field_map": report.field_map or field_map, "run": ran,
               "left_out": records - loaded, "notes": len(report.notes)}
        rows.append(row)
        print(json.dumps(row, ensure_ascii=False))
    full = root != SAMPLES
    out = Path(__file__).resolve().parent / "results" / ("releases_in.json" if full else "releases_in_samples.json")
    out.write_text(json.dumps({"full_releases": full, "rows": rows}, indent=2, ensure_ascii=False) + "\n",
                   encoding="utf-8")
    lines = ["| release | source | records | loaded | seconds | map | run |", "|---|---|---:|---:|---:|---|---|"]
    lines += [f"| {r['release']} | {r['source']} | {r['records']} | {r['loaded']} | {r['seconds']} | "
              f"{r['field_map']} | {r['run']} |" for r in rows]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written {out}")


def _xed_map() -> Any:
    from culturekb._records import parse_field_map

    return parse_field_map("xed")


if __name__ == "__main__":
    main()
