"""Every build calibrates the kb-prior (issue 27 item 1): on the valid split and the training samples each left out,
or on the training samples alone when the data has no valid split; the build report and the eval report say how."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli_build import build_kb as _build
from tests.cli_build import run_cli as _run
from tests.cli_build import storm_garden_rows, write_jsonl


def _data(root: Path, with_valid: bool) -> Path:
    """40 images: stormy ones are fear, garden ones contentment, with a 'sea' in both; fear is the majority of the
    training split (so the culture prior alone answers fear)."""
    rows = storm_garden_rows(40, lambda i: i % 3 != 0,
                             lambda i: "train" if i < 24 else ("valid" if with_valid and i < 32 else "test"))
    return write_jsonl(root / "data.jsonl", rows)


@pytest.fixture(autouse=True)
def _packaged_embedder(monkeypatch: pytest.MonkeyPatch, default_embedder: Any) -> None:
    monkeypatch.setattr("culturekb.models.factory.make_embedder", lambda *a, **k: default_embedder)


def test_a_build_without_a_valid_split_calibrates_on_left_out_training_samples(tmp_path: Path) -> None:
    data = _data(tmp_path, with_valid=False)
    kb, res = _build(tmp_path, data)
    assert "## Calibration of the kb-prior" in res.output
    assert "fitted on: 24 training samples, each left out of the tuples it supports (the data has no valid split)" \
        in res.output
    cal = json.loads((kb / "calibration.json").read_text(encoding="utf-8"))
    assert cal["fitted_on"]["samples"] == 0 and cal["fitted_on"]["left_out_training_samples"] == 24
    assert cal["valid"]["prior_accuracy"] is None and cal["beta"] > 0
    # never worse than the culture prior on what it was fitted on
    assert cal["valid"]["left_out_accuracy"] >= cal["valid"]["left_out_prior_accuracy"]
    report = json.loads((kb / "build_report.json").read_text(encoding="utf-8"))
    assert report["calibration"]["source"] == "fitted by the build"
    assert report["calibration"]["left_out_training_samples"] == 24
    assert "Calibration of the kb-prior" in (kb / "build_report.md").read_text(encoding="utf-8")
    assert (kb / "index").is_dir()  # the build indexed the KB to calibrate it

    out = tmp_path / "run"
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", out, "--modes", "orig,know")
    assert res.exit_code == 0, res.output
    results = json.loads((out / "artemculture.json").read_text(encoding="utf-8"))
    results = results.get("metrics", results)
    assert results["calibration"]["source"] == "the KB's calibration.json"
    assert "24 training samples, each left out" in results["calibration"]["method"]
    assert "24 training samples, each left out" in (out / "artemculture.md").read_text(encoding="utf-8")
    know, majority = results["settings"]["know"]["accuracy"], results["settings"]["orig"]["accuracy"]
    assert know >= majority and know == 1.0

    res = _run("calibrate", data, "--kb", kb)  # refit on demand: the same data, the same choice
    assert res.exit_code == 0, res.output
    assert "on 24 training samples, each left out" in res.output


def test_a_build_with_a_valid_split_fits_on_it_too(tmp_path: Path) -> None:
    kb, res = _build(tmp_path, _data(tmp_path, with_valid=True))
    assert "fitted on: the valid split (8 samples) and 24 training samples, each left out" in res.output
    cal = json.loads((kb / "calibration.json").read_text(encoding="utf-8"))
    assert cal["fitted_on"]["samples"] == 8 and cal["valid"]["accuracy"] >= cal["valid"]["prior_accuracy"]


def test_no_calibrate_leaves_the_kb_uncalibrated(tmp_path: Path) -> None:
    kb, res = _build(tmp_path, _data(tmp_path, with_valid=False), "--no-calibrate")
    assert not (kb / "calibration.json").exists() and "Calibration of the kb-prior" not in res.output
