"""`culturekb eval knowledge` on a tiny KB whose every number is known: coverage, hit precision, calibration,
accuracy with intervals and paired tests, concepts that helped and hurt, annotator agreement."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from culturekb.cli import app
from culturekb.errors import ConfigError
from culturekb.evals.knowledge import (
    KnowledgeRunner,
    annotator_agreement,
    annotator_counts,
    concept_effects,
    coverage_summary,
    hit_precision,
)
from culturekb.evals.knowledge.spec import KnowledgeSpec
from culturekb.evals.runner import get_runner
from culturekb.inference.augmenter import Augmenter
from culturekb.inference.base import Prediction
from culturekb.kb import KnowledgeBase, KnowledgeTuple, Sample
from culturekb.kb.distribution import js_divergence, normalise
from culturekb.retrieval.retriever import open_retriever

PRIOR = {"en": "sadness", "zh": "awe"}


def _tuple(concept: str, culture: str, label: str, support: int = 3) -> KnowledgeTuple:
    return KnowledgeTuple(concept=concept, culture=culture, label=label, distribution={label: 1.0}, support=support)


class FirstTuplePredictor:
    """Says the first given tuple's dominant emotion, else the culture's prior label; optional fixed confidences."""

    id = "first-tuple"

    def __init__(self, augmenter: Augmenter, confidence: tuple[float, float] | None = None) -> None:
        self.augmenter = augmenter
        self.confidence = confidence  # (with a tuple, without one)

    def predict(self, samples: Sequence[Sample], mode: str = "know", prompt_language: str | None = None
                ) -> list[Prediction]:
        out = []
        for s, a in zip(samples, self.augmenter.augment_many(samples, mode=mode), strict=True):
            label = a.tuples[0].label if a.tuples else PRIOR[s.culture]
            probs = None
            if self.confidence is not None:
                c = self.confidence[0] if a.tuples else self.confidence[1]
                probs = {label: c, "something else": 1 - c}
            out.append(Prediction(sample_id=s.id, culture=a.culture, mode=mode, label=label,
                                  tuples_used=a.tuple_ids, parse_status="json", probabilities=probs))
        return out


def _test(i: int, culture: str, concepts: list[str], gold: str, **metadata: Any) -> Sample:
    return Sample(id=f"t{i}::{culture}", culture=culture, label=gold, split="test", concepts=concepts,
                  metadata=metadata)


TRAIN = [Sample(id=f"tr{i}::{c}", culture=c, label=lab, split="train", concepts=["x"])
         for i in range(3) for c, lab in PRIOR.items()]
SAMPLES = [
    _test(0, "en", ["skull"], "fear", label_counts={"fear": 3, "awe": 1}),  # know right, orig wrong: skull helps
    _test(1, "en", ["skull"], "fear"),                                     # helps again
    _test(2, "en", ["cat"], "sadness", annotator_labels=["sadness", "sadness", "amusement"]),  # cat hurts
    _test(3, "en", ["river"], "sadness", label_counts={"sadness": 1}),     # nothing retrieved; one annotator only
    _test(4, "zh", ["garden"], "contentment"),                             # garden helps
    _test(5, "zh", ["skull", "garden"], "fear"),                           # both given; skull first
    _test(6, "zh", ["human skull"], "fear"),                               # semantic match of skull
    *TRAIN,
]


@pytest.fixture(scope="module")
def augmenter(default_embedder: Any) -> Augmenter:
    kb = KnowledgeBase(
        [_tuple("skull", "en", "fear"), _tuple("cat", "en", "amusement", 4), _tuple("skull", "zh", "fear", 5),
         _tuple("garden", "zh", "contentment")],
        extra_counts={"label_prior": {"en": {"sadness": 3}, "zh": {"awe": 3}}},
    )
    return Augmenter(open_retriever(kb, default_embedder, backend="numpy"))


@pytest.fixture(scope="module")
def run(augmenter: Augmenter, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    out = tmp_path_factory.mktemp("knowledge")
    runner = KnowledgeRunner(SAMPLES, FirstTuplePredictor(augmenter), augmenter, n_resamples=500, progress=False)
    return runner.run(out), out


def test_runner_is_registered_with_its_command() -> None:
    assert get_runner("knowledge") is KnowledgeRunner
    res = CliRunner().invoke(app, ["eval", "knowledge", "--help"])
    assert res.exit_code == 0, res.output
    for option in ("--kb", "--split", "--resamples", "--seed", "--bins", "--top", "--out"):
        assert option in res.output


def test_coverage_counts_exact_and_semantic(run: tuple[Any, Path]) -> None:
    res, _ = run
    cov = res.metrics["coverage"]
    assert {k: cov["overall"][k] for k in ("n", "covered", "exact", "semantic_only", "tuples")} == {
        "n": 7, "covered": 6, "exact": 5, "semantic_only": 1, "tuples": 7}
    assert cov["overall"]["share"] == pytest.approx(6 / 7)
    assert cov["overall"]["semantic_tuples"] == 1 and cov["overall"]["other_tuples"] == 0
    assert (cov["en"]["covered"], cov["en"]["n"], cov["zh"]["covered"], cov["zh"]["semantic_only"]) == (3, 4, 3, 1)


def test_hit_precision_per_tuple_and_per_sample(run: tuple[Any, Path]) -> None:
    hp = run[0].metrics["hit_precision"]["overall"]["know"]
    # tuples: skull x2 (hit), cat (miss), garden (hit), skull + garden for a fear sample (hit, miss), skull (hit)
    assert (hp["tuples"], hp["hits"], hp["samples"]) == (7, 5, 6)
    assert hp["per_tuple"] == pytest.approx(5 / 7)
    assert hp["per_sample"] == pytest.approx((1 + 1 + 0 + 1 + 0.5 + 1) / 6)
    assert hp["any_hit"] == pytest.approx(5 / 6)
    assert "random-know" in run[0].metrics["hit_precision"]["overall"]


def test_accuracy_intervals_and_paired_tests(run: tuple[Any, Path]) -> None:
    m = run[0].metrics
    acc = m["accuracy"]["overall"]
    # know: t0 t1 t3 t4 t5 t6 right, t2 wrong; orig (the prior) right on t2 and t3 only; majority = orig here
    assert acc["know"]["estimate"] == pytest.approx(6 / 7) and acc["orig"]["estimate"] == pytest.approx(2 / 7)
    assert acc["majority"]["estimate"] == pytest.approx(2 / 7) and m["orig_equals_majority"] is True
    for group in m["accuracy"].values():
        for entry in group.values():
            assert entry["low"] <= entry["estimate"] <= entry["high"]
    vs_orig = m["comparisons"]["overall"]["know - orig"]
    assert (vs_orig["mcnemar"]["a_only"], vs_orig["mcnemar"]["b_only"]) == (5, 1)
    assert vs_orig["mcnemar"]["p_value"] == pytest.approx(2 * (1 + 6) / 2**6)  # 2 P(X <= 1), X ~ Bin(6, 1/2)
    assert vs_orig["difference"]["estimate"] == pytest.approx(4 / 7)
    assert vs_orig["difference"]["low"] <= 4 / 7 <= vs_orig["difference"]["high"]
    assert set(m["comparisons"]["overall"]) == {"know - orig", "know - random-know", "know - cross-culture-know",
                                                "know - majority"}
    assert "difference" in m["comparisons"]["zh"]["know - cross-culture-know"]  # two cultures: it ran


def test_concepts_that_helped_and_hurt(run: tuple[Any, Path]) -> None:
    c = run[0].metrics["concepts"]
    helped = {r["tuple"]: r["helped"] for r in c["helped"]}
    assert helped == {"en::skull": 2, "zh::skull": 2, "zh::garden": 2}
    assert c["helped"][0]["tuple"] == "zh::skull"  # tied on 2 helped, 0 hurt: larger support first
    assert [(r["tuple"], r["hurt"], r["label"], r["support"]) for r in c["hurt"]] == [("en::cat", 1, "amusement", 4)]
    assert "en::cat" not in helped


def test_annotator_agreement_from_label_counts_and_annotator_labels(run: tuple[Any, Path], augmenter: Augmenter
                                                                    ) -> None:
    a = run[0].metrics["annotators"]
    assert a["available"] and a["sources"] == {"retrieved mix": 6, "culture prior": 1}
    en = a["groups"]["en"]
    assert en["n"] == 2 and en["mean_annotators"] == pytest.approx(3.5)  # t3 has one annotator: left out
    labels = list(augmenter.retriever.kb.scheme.labels)
    fear, prior = normalise({"fear": 1.0}, labels), normalise({"sadness": 1.0}, labels)
    emp0, emp2 = normalise({"fear": 3, "awe": 1}), normalise({"sadness": 2, "amusement": 1})
    amusement = normalise({"amusement": 1.0}, labels)
    assert en["jsd"] == pytest.approx((js_divergence(fear, emp0) + js_divergence(amusement, emp2)) / 2)
    assert en["jsd_prior"] == pytest.approx((js_divergence(prior, emp0) + js_divergence(prior, emp2)) / 2)
    assert (en["top1"], en["top1_prior"]) == (0.5, 0.5)  # know agrees on t0, the prior on t2
    assert a["groups"]["zh"]["n"] == 0


def test_calibration_falls_back_to_one_hot(run: tuple[Any, Path]) -> None:
    cal = run[0].metrics["calibration"]["know"]
    assert cal["source"] == "one-hot" and cal["brier"] is None and cal["log_loss"] is None
    assert cal["ece"] == pytest.approx(1 - 6 / 7)  # sure of every answer: ECE = 1 - accuracy
    assert "one-hot" in run[0].metrics["confidences"]


def test_calibration_with_probabilities(augmenter: Augmenter, tmp_path: Path) -> None:
    runner = KnowledgeRunner(SAMPLES, FirstTuplePredictor(augmenter, confidence=(0.8, 0.4)), augmenter,
                             n_resamples=200, progress=False)
    cal = runner.run(tmp_path).metrics["calibration"]["know"]
    assert cal["source"] == "probabilities" and cal["n"] == 7
    # bin 8 (0.8): 6 answers, 5 right; bin 4 (0.4): 1 answer (t3), right
    assert cal["ece"] == pytest.approx(6 / 7 * abs(5 / 6 - 0.8) + 1 / 7 * abs(1 - 0.4))
    # Brier: right at 0.8 -> 0.04 + 0.64; wrong (cat) at 0.8 -> 0.64 + 1 + 0.04; right at 0.4 -> 0.36 + 0.36
    assert cal["brier"] == pytest.approx((5 * 0.08 + 1.68 + 0.72) / 7)


def test_report_files_and_tables(run: tuple[Any, Path], augmenter: Augmenter) -> None:
    _, out = run
    report = json.loads((out / "knowledge.json").read_text(encoding="utf-8"))
    assert report["n_samples"] == 7 and report["bootstrap"]["n_resamples"] == 500
    for name in ("accuracy", "differences", "reliability", "coverage"):
        assert (out / f"knowledge-{name}.png").read_bytes()[:4] == b"\x89PNG"
    md = (out / "knowledge.md").read_text(encoding="utf-8")
    for title in ("Accuracy with 95% intervals", "Paired differences", "Coverage", "Hit precision", "Calibration",
                  "Concepts that helped most", "Concepts that hurt most", "Agreement with held-out annotators"):
        assert title in md
    assert "Fewer than 100 samples" in md and "not corrected" in md and "same answer on every sample" in md
    assert "| know - orig | +0.571 |" in md
    # resumable: a rerun predicts nothing new
    again = KnowledgeRunner(SAMPLES, FirstTuplePredictor(augmenter), augmenter, n_resamples=500, progress=False)
    assert sum(again.run(out).n_predicted.values()) == 0


def test_one_culture_kb_reports_cross_culture_as_not_applicable(default_embedder: Any, tmp_path: Path) -> None:
    kb = KnowledgeBase([_tuple("skull", "en", "fear")], extra_counts={"label_prior": {"en": {"sadness": 3}}})
    aug = Augmenter(open_retriever(kb, default_embedder, backend="numpy"))
    en_only = [s for s in SAMPLES if s.culture == "en"]
    res = KnowledgeRunner(en_only, FirstTuplePredictor(aug), aug, n_resamples=200, progress=False).run(tmp_path)
    assert [s.key for s in res.settings] == ["orig", "know", "random-know"]
    m = res.metrics
    assert m["accuracy"]["overall"]["cross-culture-know"] == {"note": "n/a (one culture)"}
    assert m["comparisons"]["overall"]["know - cross-culture-know"] == {"note": "n/a (one culture)"}
    assert "n/a (one culture)" in (tmp_path / "knowledge.md").read_text(encoding="utf-8")


def test_no_annotators_and_no_train_split_are_said(augmenter: Augmenter, tmp_path: Path) -> None:
    plain = [s.model_copy(update={"metadata": {}}) for s in SAMPLES if s.split == "test"]
    m = KnowledgeRunner(plain, FirstTuplePredictor(augmenter), augmenter, n_resamples=200, progress=False
                        ).run(tmp_path).metrics
    assert m["annotators"]["available"] is False and "not measured" in m["annotators"]["note"]
    assert m["accuracy"]["overall"]["majority"] == {"note": "n/a (no train split in the data)"}
    assert m["orig_equals_majority"] is False
    md = (tmp_path / "knowledge.md").read_text(encoding="utf-8")
    assert "not measured" in md and "n/a (no train split in the data)" in md


def test_section_functions_directly() -> None:
    kb = {t.id: t for t in [_tuple("a", "en", "fear"), _tuple("b", "en", "awe")]}
    cov = coverage_summary([["en::a"], [], ["en::b", "en::a"]], [{"en::a": "semantic"}, {}, {"en::a": "exact"}])
    assert (cov["covered"], cov["exact"], cov["semantic_only"], cov["other_tuples"]) == (2, 1, 1, 1)
    assert math.isnan(hit_precision([[], []], ["fear", "awe"], kb)["per_tuple"])  # no tuples: undefined
    with pytest.raises(ConfigError, match="another KB"):
        hit_precision([["zh::a"]], ["fear"], kb)
    # a concept that always helps is listed first as helping and never as hurting
    effects = concept_effects([["en::a"], ["en::a", "en::b"], ["en::b"]], [True, True, False], [False, False, True],
                              kb, top=1)
    assert [r["tuple"] for r in effects["helped"]] == ["en::a"] and effects["helped"][0]["helped"] == 2
    assert [r["tuple"] for r in effects["hurt"]] == ["en::b"] and effects["n_helped"] == 2
    assert annotator_counts(Sample(id="x", culture="en", metadata={"annotator_labels": ["awe", "awe", "fear"]})
                            ) == {"awe": 2, "fear": 1}
    assert annotator_counts(Sample(id="x", culture="en")) is None
    agree = annotator_agreement([{"awe": 1, "fear": 1}], [{"awe": 1.0}], ["fear"], [{"sadness": 1.0}])
    assert agree["top1"] == 1.0 and agree["top1_prior"] == 0.0  # a tie: either top label agrees
    assert agree["jsd"] == pytest.approx(js_divergence({"awe": 1.0}, {"awe": 0.5, "fear": 0.5}))


def test_spec_checks() -> None:
    data, kb, out = (Path("d.csv"),), Path("kb"), Path("o")
    with pytest.raises(ConfigError, match="kb-prior"):
        KnowledgeSpec(data=data, kb_dir=kb, out=out, model="openai:gpt-4o-mini")
    with pytest.raises(ConfigError, match="needs a KB"):
        KnowledgeSpec(data=data, out=out)
    spec = KnowledgeSpec(data=data, kb_dir=kb, out=out)
    assert spec.n_resamples == 2000 and spec.split == "test" and spec.status is None
