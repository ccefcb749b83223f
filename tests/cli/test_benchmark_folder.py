"""Adding a benchmark is one new folder and nothing else: `tests/fixtures/benchmark_folder/tinyqa` (spec, options,
runner; no culturekb file names it) is found on CULTUREKB_BENCHMARKS and run by `culturekb eval tinyqa`, its
model reached over real HTTP through the run context's client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from culturekb.testing import ScriptedOpenAIServer

FOLDERS = Path(__file__).resolve().parents[1] / "fixtures" / "benchmark_folder"


def _answer(body: dict[str, Any]) -> str:
    question = body["messages"][-1]["content"]
    return {"Capital of France?": "Paris", "2 + 2?": "4"}.get(question, "no idea")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CULTUREKB_BENCHMARKS": str(FOLDERS)}
    return subprocess.run([sys.executable, "-m", "culturekb.cli", *args], capture_output=True, text=True, env=env,
                          timeout=180)


def test_a_benchmark_folder_is_listed_and_runs_from_culturekb_eval(tmp_path: Path) -> None:
    listed = _cli("eval", "--help")
    assert listed.returncode == 0, listed.stderr
    assert "tinyqa" in listed.stdout and "cedar" in listed.stdout

    data = tmp_path / "qa.jsonl"
    rows = [{"id": "q1", "culture": "fr", "question": "Capital of France?", "answer": "paris"},
            {"id": "q2", "culture": "en", "question": "2 + 2?", "answer": "4"},
            {"id": "q3", "culture": "en", "question": "Colour of the sky?", "answer": "blue"}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "run"
    with ScriptedOpenAIServer(_answer) as server:
        ran = _cli("eval", "tinyqa", str(data), "--out", str(out), "--base-url", server.base_url)
        assert ran.returncode == 0, ran.stderr
        assert len(server.requests) == 3
    report = json.loads((out / "tinyqa.json").read_text(encoding="utf-8"))
    assert report["n"] == 3 and abs(report["accuracy"] - 2 / 3) < 1e-9
    assert "## Tiny QA" in ran.stdout


def test_a_missing_benchmark_directory_is_a_clear_error(tmp_path: Path) -> None:
    env = {**os.environ, "CULTUREKB_BENCHMARKS": str(tmp_path / "nowhere")}
    ran = subprocess.run([sys.executable, "-m", "culturekb.cli", "eval", "--help"], capture_output=True, text=True,
                         env=env, timeout=180)
    assert ran.returncode != 0
    assert "CULTUREKB_BENCHMARKS" in ran.stdout + ran.stderr and "not a directory" in ran.stdout + ran.stderr
