"""CulturalToM-VQA end to end on the shipped sample, with a scripted model over real HTTP and with the offline
positivity baseline: every strategy, the blind run, and the per-question model calls of each setting.

The scripted "model" is a few rules, not a VLM: its numbers test the pipeline (prompts, token budgets, scene-graph
validation and re-asks, parsing, diagnostics, call counting), not any model. Per request:

- a scene-graph request: a valid JSON scene graph, except that the first request of one question in 7 (by a hash
  of its text) gets prose, so the re-ask path runs;
- a letter-only request: "(X)" with X chosen by a hash of the question;
- a reasoning request (chain of thought, or an answer from a scene graph): a short reasoning line and
  "Answer: X", X by a hash of the question and the strategy.

Usage (from the repository root)::

    python benchmarks/run_culturaltom_sample.py --out benchmarks/results/culturaltom_sample
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from culturekb.evals.culturaltom.spec import CulturalToMSpec  # noqa: E402
from culturekb.evals.reports import render_markdown_table  # noqa: E402
from culturekb.testing import ScriptedOpenAIServer  # noqa: E402
from culturekb.workflows import run_benchmark  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "culturekb" / "data" / "demo" / "culturaltom" / "culturaltom_sample.jsonl"
GRAPH = {"setting": "a scene", "entities": [{"id": "p1", "type": "person", "attributes": ["looking ahead"]}],
         "relations": []}


def _h(text: str) -> int:
    return int(hashlib.sha1(text.encode("utf-8")).hexdigest()[:8], 16)


def _text(body: dict[str, Any]) -> str:
    out = []
    for m in body["messages"]:
        content = m["content"]
        out.append(content if isinstance(content, str) else "\n".join(
            p.get("text", "") for p in content if p.get("type") == "text"))
    return "\n".join(out)


def model(body: dict[str, Any]) -> str:
    """The scripted model (see the module docstring)."""
    text = _text(body)
    letters = "ABCD"
    if "scene graph before any question" in text:
        if len(body["messages"]) == 1 and _h(text) % 7 == 0:
            return "The picture shows some people."
        return "```json\n" + json.dumps(GRAPH) + "\n```"
    if "nothing else" in text:
        return f"({letters[_h(text) % 4]})"
    return f"Thinking about what each person knows.\nAnswer: {letters[_h('r' + text) % 4]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "culturaltom_sample")
    args = ap.parse_args()
    summary: dict[str, Any] = {"sample": SAMPLE.name}
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer(model) as srv:
        t0 = time.perf_counter()
        spec = CulturalToMSpec(data=SAMPLE, out=Path(tmp) / "run", model="openai:scripted", base_url=srv.base_url,
                               cache_dir=Path(tmp) / "cache", progress=False)
        run = run_benchmark("culturaltom", spec)
        seconds = time.perf_counter() - t0
        first_calls = srv.calls
        rerun = run_benchmark("culturaltom", spec)
        calls: dict[str, dict[str, float]] = {}
        for key, preds in run.predictions.items():
            per = [int(getattr(p, "calls", 0)) for p in preds]
            calls[key] = {"questions": len(per), "calls": sum(per), "per question": round(sum(per) / len(per), 3),
                          "max per question": max(per)}
        summary.update({"server_requests": first_calls, "rerun_server_requests": srv.calls - first_calls,
                        "rerun_predicted": {k: v for k, v in rerun.n_predicted.items() if v},
                        "seconds": round(seconds, 1),
                        "calls": calls, "metrics": run.metrics})
        md_files = [f for f in run.files if f.suffix == ".md"]
        report_md = md_files[0].read_text(encoding="utf-8") if md_files else ""
    args.out.mkdir(parents=True, exist_ok=True)
    lines = ["# CulturalToM-VQA on the shipped sample (scripted model over HTTP; offline positivity baseline)", "",
             "Made by `benchmarks/run_culturaltom_sample.py`; the scripted model's rules are in its docstring: these "
             "numbers test the pipeline, not a model.", "",
             f"Server requests: {first_calls} in {summary['seconds']} s; the rerun made "
             f"{summary['rerun_server_requests']} (predicted again: {summary['rerun_predicted'] or 'nothing'}).", "",
             "## Model calls per question", "",
             render_markdown_table(_calls_table(calls)), "", report_md]
    (args.out / "culturaltom_sample.md").write_text("\n".join(lines), encoding="utf-8")
    (args.out / "culturaltom_sample.json").write_text(json.dumps(summary, indent=1, default=str), encoding="utf-8")
    print(f"wrote {args.out / 'culturaltom_sample.md'}; server requests {first_calls}, "
          f"rerun {summary['rerun_server_requests']}")
    print(Counter({k: v["calls"] for k, v in calls.items()}))


def _calls_table(calls: dict[str, dict[str, float]]) -> Any:
    from culturekb.evals.reports import Table

    return Table.from_nested("Model calls per question, per setting", calls, row_label="setting")


if __name__ == "__main__":
    main()
