"""The fault-injection benchmark (benchmarks/fault_injection.py) on a small sample: a build with LLM rationales and
an LLM judge and a Cedar eval against the scripted server with timeouts, 429, 500, HTML pages with status 200 and
prose instead of JSON; the build killed once and failed once (server down) midway, then resumed; the eval failed
midway and rerun. Nothing is lost, the KB is the fault-free one byte for byte, and no resume re-pays an answer."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "fault_injection.py"


@pytest.fixture(scope="module")
def fault_injection():  # noqa: ANN201 - the benchmark module
    spec = importlib.util.spec_from_file_location("fault_injection_bench", BENCH)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fault_injection_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_faults_lose_nothing_and_resumes_repay_nothing(fault_injection, tmp_path, monkeypatch):
    monkeypatch.setenv("CULTUREKB_MODEL_BACKOFF_S", "0.02")
    res = fault_injection.run_fault_injection(rate=0.25, rows=30, workdir=tmp_path, down_after=12,
                                              eval_down_after=6, kill_at="rationales@1", backoff_s=0.02)
    build, ev = res["build"], res["eval"]
    killed, failed, final = build["runs"]
    assert killed["exit"] == 137
    assert failed["exit"] not in (0, 137) and failed["by_kind"].get("down", 0) > 0
    assert "LLM judge openai:fi-model: concept" in failed["message"]  # the failing item is named
    assert final["exit"] == 0
    assert build["items_lost"] == 0 and build["kb_bytes_identical"]
    assert build["repaid_answers"] == 0
    faults = sum(n for r in build["runs"] for k, n in r["by_kind"].items() if k not in ("ok", "down"))
    assert faults > 0, "the fault mix injected nothing"
    assert build["requests_spent"] > build["minimum_requests"]
    # the build report counts what the server saw in the run that wrote it
    model = build["final_report_model"]
    assert model["attempts"] == final["requests"]
    assert model["retries"] == sum(model["retries_by_cause"].values())

    assert ev["items_lost"] == 0 and ev["repaid_answers"] == 0
    assert ev["runs"][0]["items_failed"] > 0
    assert ev["run_json_model"]["all_runs"]["attempts"] == ev["requests_spent"]
    assert ev["run_json_model"]["failed_items"] == {}
