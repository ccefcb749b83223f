"""The calibrated KB prior: the fit chooses evidence only when it helps on valid, the filter hides what it says,
and the CLI writes, applies and refuses calibrations."""

import json

import numpy as np
import pytest

from culturekb.errors import ConfigError
from culturekb.inference.augmenter import Augmenter
from culturekb.inference.calibration import PriorModel, dropped_summary, fit_calibration
from culturekb.inference.predictors import KBPriorPredictor
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample
from culturekb.kb.calibration import Calibration
from culturekb.retrieval.filters import TupleFilter
from culturekb.retrieval.retriever import open_retriever
from tests.cli_build import build_kb, storm_garden_rows, write_jsonl
from tests.cli_build import run_cli as _run


def _t(concept, dist, support, status="accepted"):
    return KnowledgeTuple(concept=concept, culture="en", label=max(dist, key=dist.get), distribution=dist,
                          support=support, status=status, flagged=status == "pending")


@pytest.fixture(scope="module")
def kb():
    # prior: contentment 60, fear 40. storm: strongly fear; thing: the prior itself; ghost: fear, seen once
    return KnowledgeBase(
        [_t("storm", {"fear": 0.9, "contentment": 0.1}, 20), _t("thing", {"contentment": 0.6, "fear": 0.4}, 50),
         _t("ghost", {"fear": 1.0}, 1), _t("shipwreck", {"fear": 0.8, "contentment": 0.2}, 10, "pending")],
        extra_counts={"label_prior": {"en": {"contentment": 60, "fear": 40}}})


@pytest.fixture(scope="module")
def retriever(kb, default_embedder):
    return open_retriever(kb, default_embedder, backend="numpy")


def _valid(pairs):
    return [Sample(id=f"v{i}", culture="en", label=label, concepts=list(cs), split="valid")
            for i, (cs, label) in enumerate(pairs)]


def test_evidence_that_helps_is_weighted_and_filters_chosen(retriever):
    valid = _valid([(["storm"], "fear")] * 6 + [(["thing"], "contentment")] * 6
                   + [(["nothing at all"], "contentment")] * 3)
    cal = fit_calibration(retriever, valid, [s.concepts or [] for s in valid])
    assert cal.beta > 0 and not cal.is_prior_only
    assert cal.valid["accuracy"] == 1.0 > cal.valid["prior_accuracy"] == pytest.approx(9 / 15)
    assert cal.valid["log_loss"] < cal.valid["prior_log_loss"]
    assert len(cal.grid) == cal.valid["settings_tried"] > 100
    pred = KBPriorPredictor(Augmenter(retriever), calibration=cal)
    out = pred.predict(_valid([(["storm"], "fear"), (["thing"], "contentment")]))
    assert [p.label for p in out] == ["fear", "contentment"]
    assert all(p.probabilities is not None and abs(sum(p.probabilities.values()) - 1.0) < 1e-5 for p in out)


def test_evidence_that_misleads_falls_back_to_the_prior(retriever):
    # on valid, storm's samples are contentment: following the KB loses; the prior (contentment) is kept
    valid = _valid([(["storm"], "contentment")] * 5 + [(["thing"], "contentment")] * 3 + [(["storm"], "fear")])
    cal = fit_calibration(retriever, valid, [s.concepts or [] for s in valid])
    assert cal.is_prior_only and cal.valid["fell_back_to_prior"]
    assert (cal.min_support, cal.min_informativeness) == (1, 0.0)  # the filter is left open
    assert cal.valid["accuracy"] == cal.valid["prior_accuracy"]
    labels = {p.label for p in KBPriorPredictor(Augmenter(retriever), calibration=cal).predict(valid)}
    assert labels == {"contentment"}


def test_the_fit_is_never_below_the_prior_on_valid(retriever):
    rng = np.random.default_rng(0)
    concepts = ["storm", "thing", "ghost", "nothing at all"]
    for _ in range(5):
        valid = _valid([([concepts[i]], ["fear", "contentment"][j])
                        for i, j in zip(rng.integers(0, 4, 12), rng.integers(0, 2, 12), strict=True)])
        cal = fit_calibration(retriever, valid, [s.concepts or [] for s in valid])
        assert cal.valid["accuracy"] >= cal.valid["prior_accuracy"]


def test_filter_hides_tuples_in_exact_and_semantic_lookup(retriever, kb):
    strict = retriever.with_filter(TupleFilter(min_support=2))
    assert strict.lookup(["ghost"], "en")[0] is None or strict.lookup(["ghost"], "en")[0].concept != "ghost"
    assert strict.hidden == {"en::ghost": "support"}
    assert [t.concept for t in strict.served("en")] == ["shipwreck", "storm", "thing"]
    reviewed = retriever.with_filter(status="accepted")
    m = reviewed.lookup(["shipwreck"], "en", tau=0.3)[0]
    assert m is None or m.concept != "shipwreck"
    assert retriever.with_filter(status="pending").served("en") == [kb.get("shipwreck", "en")]
    informative = retriever.with_filter(TupleFilter(min_informativeness=1.0))
    assert informative.hidden["en::thing"] == "informativeness"
    summary = dropped_summary(kb, TupleFilter(min_support=2, min_informativeness=1.0))
    assert summary["total"] == 2 and set(summary["reasons"]) == {"support", "informativeness"}
    assert summary["reasons"]["informativeness"]["en"]["examples"][0].startswith("thing (n=50")
    with pytest.raises(ConfigError, match="status filter"):
        retriever.with_filter(status="reviewed")


def test_a_calibration_for_another_kb_is_refused(retriever):
    with pytest.raises(ConfigError, match="culturekb calibrate"):
        KBPriorPredictor(Augmenter(retriever), calibration=Calibration(kb_version="0" * 16))
    with pytest.raises(ConfigError, match="invalid KB-prior weights"):
        PriorModel(pool="max")


# -- the command ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def kb_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cal")
    rows = storm_garden_rows(40, lambda i: i % 2 == 0, lambda i: "train" if i < 24 else "valid" if i < 32 else "test")
    data = write_jsonl(root / "data.jsonl", rows)
    kb, _ = build_kb(root, data)
    return kb, data


def test_calibrate_writes_the_file_and_eval_uses_it(kb_dir, tmp_path, monkeypatch, default_embedder):
    monkeypatch.setattr("culturekb.models.factory.make_embedder", lambda *a, **k: default_embedder)
    kb, data = kb_dir
    res = _run("calibrate", data, "--kb", kb, "--split", "test")
    assert res.exit_code == 2 and "test split" in res.output
    res = _run("calibrate", data, "--kb", kb)
    assert res.exit_code == 0, res.output
    assert "valid accuracy: prior 0.5000 -> calibrated 1.0000" in res.output
    cal = json.loads((kb / "calibration.json").read_text(encoding="utf-8"))
    assert cal["beta"] > 0 and cal["fitted_on"]["samples"] == 8 and cal["fitted_on"]["data"] == ["data.jsonl"]
    res = _run("eval", "artemculture", data, "--kb", kb, "--out", tmp_path / "run", "--modes", "orig,know")
    assert res.exit_code == 0, res.output
    report = json.loads((tmp_path / "run" / "artemculture.json").read_text(encoding="utf-8"))
    results = report.get("metrics", report)
    assert results["calibration"]["source"] == "the KB's calibration.json"
    assert results["calibration"]["beta"] == cal["beta"]
    assert results["settings"]["know"]["accuracy"] == 1.0 and results["settings"]["orig"]["accuracy"] == 0.5
    res = _run("calibrate", data, "--kb", kb, "--split", "nosuch")
    assert res.exit_code == 2 and "no labelled samples in split 'nosuch'" in res.output


def test_a_culture_whose_evidence_misleads_falls_back_alone(default_embedder):
    def t(culture):
        return KnowledgeTuple(concept="storm", culture=culture, label="fear",
                              distribution={"fear": 0.9, "contentment": 0.1}, support=20)

    kb = KnowledgeBase([t("en"), t("zh")],
                       extra_counts={"label_prior": {c: {"contentment": 60, "fear": 40} for c in ("en", "zh")}})
    retriever = open_retriever(kb, default_embedder, backend="numpy")
    valid = [Sample(id=f"{c}{i}", culture=c, concepts=["storm"], split="valid",
                    label="fear" if c == "en" or i == 0 else "contentment")
             for c in ("en", "zh") for i in range(8)]
    valid += [Sample(id=f"x{c}{i}", culture=c, concepts=["nothing at all"], split="valid", label="contentment")
              for c in ("en", "zh") for i in range(4)]
    cal = fit_calibration(retriever, valid, [s.concepts or [] for s in valid])
    assert cal.beta > 0 and cal.prior_only_cultures == ["zh"]
    assert cal.valid["accuracy"] >= cal.valid["prior_accuracy"]
    out = KBPriorPredictor(Augmenter(retriever), calibration=cal).predict(
        [Sample(id="a", culture="en", concepts=["storm"]), Sample(id="b", culture="zh", concepts=["storm"])])
    assert [p.label for p in out] == ["fear", "contentment"]


def test_leave_one_out_removes_the_sample_from_its_own_tuples():
    from culturekb.inference.calibration import _leave_out

    t = _t("storm", {"fear": 0.9, "contentment": 0.1}, 20)
    left = _leave_out(t, "fear")
    assert left is not None and left.support == 19
    assert left.distribution["fear"] == pytest.approx(17 / 19)
    assert left.distribution["contentment"] == pytest.approx(2 / 19)
    flipped = _leave_out(_t("pair", {"fear": 0.5, "contentment": 0.5}, 2), "fear")
    assert flipped is not None and flipped.label == "contentment" and flipped.support == 1
    assert _leave_out(_t("once", {"fear": 1.0}, 1), "fear") is None


def test_left_out_training_samples_join_the_fit(default_embedder):
    # 'rare' rests on two training images; each of them, left out, sees it at support 1 (< the build's min_support
    # 2): it is not there, so those samples fall back to the prior, as a build without them would
    kb = KnowledgeBase([_t("storm", {"fear": 0.9, "contentment": 0.1}, 20), _t("rare", {"fear": 1.0}, 2)],
                       build_config={"min_support": 2},
                       extra_counts={"label_prior": {"en": {"contentment": 60, "fear": 40}}})
    retriever = open_retriever(kb, default_embedder, backend="numpy")
    valid = _valid([(["storm"], "fear")] * 2 + [(["nothing at all"], "contentment")] * 2)
    train = [Sample(id=f"t{i}", culture="en", label="fear", split="train") for i in range(2)]
    left_out = [(s, ["rare"], {"rare"}) for s in train] + [
        (Sample(id=f"s{i}", culture="en", label="fear", split="train"), ["storm"], {"storm"}) for i in range(4)]
    cal = fit_calibration(retriever, valid, [s.concepts or [] for s in valid], left_out=left_out)
    assert cal.fitted_on["left_out_training_samples"] == 6 and cal.fitted_on["samples"] == 4
    # storm's left-out samples are still fear (17/19); rare's fall back to the prior (contentment): 4 of 6
    assert cal.beta > 0 and cal.valid["left_out_accuracy"] == pytest.approx(4 / 6)
    assert cal.valid["left_out_prior_accuracy"] == 0.0
