"""`culturekb eval knowledge` from the CLI on the real data shipped in the package: the ArtEmis subset (English,
split by painting) and the BRIGHTER sample (six languages). The report's numbers are checked against the
predictions it wrote and against each other, whatever the KB's accuracy is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from math import comb
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.kb import KnowledgeBase, get_scheme
from culturekb.kb.cultures import reset_default_registry

DEMO = Path(str(resources.files("culturekb.data").joinpath("demo")))
ARTEMIS = DEMO / "artemis_demo.csv"
BRIGHTER = DEMO / "brighter"
runner = CliRunner()


def _run(*args: Any) -> Any:
    return runner.invoke(app, [str(a) for a in args])


def _predictions(out: Path, setting: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    return [r["prediction"] for r in rows if r["setting"] == setting]


def _check_report(out: Path, kb_dir: Path, data: Path) -> dict[str, Any]:
    """What must hold on any data: the report agrees with its own predictions and its statistics with each other."""
    from culturekb.workflows import load_kb_samples

    report: dict[str, Any] = json.loads((out / "knowledge.json").read_text(encoding="utf-8"))
    golds = {s.id: s.label for s in load_kb_samples(kb_dir, [data]) if s.split == "test"}
    n = report["n_samples"]
    know = _predictions(out, "know")
    assert len(know) == n == len(golds)
    assert report["coverage"]["overall"]["covered"] == sum(bool(p["tuples_used"]) for p in know)
    tuples = {t.id: t for t in KnowledgeBase.load(kb_dir).tuples}
    hits = sum(tuples[i].label == golds[p["sample_id"]] for p in know for i in p["tuples_used"])
    assert report["hit_precision"]["overall"]["know"]["hits"] == hits
    for group in report["accuracy"].values():
        for entry in group.values():
            assert "note" in entry or entry["low"] <= entry["estimate"] <= entry["high"]
    for group, comparisons in report["comparisons"].items():
        size = n if group == "overall" else report["per_culture_n"][group]
        for key, v in comparisons.items():
            if "note" in v:
                continue
            d, mc = v["difference"], v["mcnemar"]
            assert d["low"] <= d["estimate"] <= d["high"], (group, key)
            # the paired difference of accuracies is (know right only - other right only) / n
            assert d["estimate"] == pytest.approx((mc["a_only"] - mc["b_only"]) / size)
            k, m = min(mc["a_only"], mc["b_only"]), mc["discordant"]
            by_hand = min(1.0, 2 * sum(comb(m, i) for i in range(k + 1)) / 2**m) if m else 1.0
            assert mc["p_value"] == pytest.approx(by_hand)
    for name in ("accuracy", "differences", "reliability", "coverage"):
        assert (out / f"knowledge-{name}.png").is_file()
    return report


@pytest.fixture(autouse=True)
def _fresh_registry() -> Iterator[None]:
    reset_default_registry()
    yield
    reset_default_registry()


@pytest.fixture(scope="module")
def artemis_kb(default_embedder: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A KB of the ArtEmis subset's training split, built in-process with the offline components."""
    from culturekb.builders.concepts import TextConceptExtractor
    from culturekb.builders.judges import LexiconJudge, PrototypeJudge
    from culturekb.builders.pipeline import BuildComponents, BuildConfig, build_kb
    from culturekb.builders.rationales import ExtractiveRationaleGenerator
    from culturekb.workflows import load_data

    root = tmp_path_factory.mktemp("artemis_knowledge")
    scheme = get_scheme("artemis9")
    components = BuildComponents(extractor=TextConceptExtractor(),
                                 generator=ExtractiveRationaleGenerator(default_embedder),
                                 judges=[LexiconJudge(scheme), PrototypeJudge(default_embedder, scheme)])
    samples, _ = load_data([ARTEMIS])
    build_kb(samples, BuildConfig(), out=root / "kb", cache_dir=root / "cache", components=components, progress=False)
    return root / "kb"


def test_artemis_subset_report(artemis_kb: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    res = _run("eval", "knowledge", ARTEMIS, "--kb", artemis_kb, "--out", out, "--resamples", 1000)
    assert res.exit_code == 0, res.output
    assert "Accuracy with 95% intervals" in res.output and "n/a (one culture)" in res.output
    report = _check_report(out, artemis_kb, ARTEMIS)
    assert report["n_samples"] == 20 and report["kb_cultures"] == "en"  # 200 paintings split 8:1:1
    assert report["accuracy"]["overall"]["cross-culture-know"] == {"note": "n/a (one culture)"}
    assert report["coverage"]["overall"]["covered"] > 0
    assert report["annotators"]["available"] is False  # one row per painting: no individual annotators
    # the KB has no calibration.json: the kb-prior is fitted on the data's valid split, as eval artemculture does
    assert report["kb_prior_calibration"]["source"] == (
        "fitted on this data by the eval (the KB has no calibration.json)")
    assert report["kb_prior_calibration"]["fitted_on"]["split"] == "valid"
    assert "How the kb-prior was calibrated" in (out / "knowledge.md").read_text(encoding="utf-8")

    # accepted only: no pending tuple is served, so no more samples are covered than with all tuples
    accepted = tmp_path / "accepted"
    res = _run("eval", "knowledge", ARTEMIS, "--kb", artemis_kb, "--out", accepted, "--status", "accepted",
               "--resamples", 200)
    assert res.exit_code == 0, res.output
    pending = {t.id for t in KnowledgeBase.load(artemis_kb).tuples if t.status == "pending"}
    assert pending, "the demo KB has flagged tuples pending review"
    used = {i for p in _predictions(accepted, "know") for i in p["tuples_used"]}
    assert used and not used & pending
    # fewer tuples served cannot cover more samples, unless each run's own calibration chose another concept filter
    # (it is fitted per run on what that status serves)
    reviewed = json.loads((accepted / "knowledge.json").read_text())
    filters = [(r["kb_prior_calibration"]["min_support"], r["kb_prior_calibration"]["min_informativeness"])
               for r in (reviewed, report)]
    if filters[0] == filters[1]:
        assert reviewed["coverage"]["overall"]["covered"] <= report["coverage"]["overall"]["covered"]


@pytest.mark.slow
def test_brighter_six_language_report(tmp_path: Path, brighter_use_kb: Path) -> None:
    kb = brighter_use_kb  # built and indexed with `use` from the CLI, once per session (tests/conftest.py)
    sample = BRIGHTER / "brighter_sample.jsonl"
    reset_default_registry()
    out = tmp_path / "run"
    res = _run("eval", "knowledge", sample, "--kb", kb, "--out", out, "--resamples", 1000)
    assert res.exit_code == 0, res.output
    report = _check_report(out, kb, sample)
    cultures = {"en", "de", "es", "zh", "ru", "hi"}
    assert report["per_culture_n"] == {c: 40 for c in sorted(cultures)}
    assert report["coverage"]["overall"]["covered"] > 0
    for key in ("know - random-know", "know - cross-culture-know", "know - majority"):
        assert "mcnemar" in report["comparisons"]["overall"][key]
        assert set(report["comparisons"]) == {"overall", *cultures}
    assert "Paired differences per culture" in (out / "knowledge.md").read_text(encoding="utf-8")
