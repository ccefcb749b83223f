"""Metrics against values computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import math

import pytest

from culturekb.errors import ConfigError, DataError
from culturekb.evals import metrics as m
from culturekb.inference.base import Prediction
from culturekb.kb.schema import Sample

nan = float("nan")


# -- accuracy ------------------------------------------------------------------------------------------------


def test_accuracy_counts_invalid_as_wrong() -> None:
    # a ok, None wrong, b ok, a!=b wrong -> 2/4
    assert m.accuracy(["a", None, "b", "a"], ["a", "a", "b", "b"]) == 0.5


def test_accuracy_empty_is_nan_and_errors() -> None:
    assert math.isnan(m.accuracy([], []))
    with pytest.raises(DataError, match="preds has 1 items but golds has 2"):
        m.accuracy(["a"], ["a", "b"])
    with pytest.raises(DataError, match="position 1 is None"):
        m.accuracy(["a", "b"], ["a", None])


def test_accuracy_by_group_sorted_keys() -> None:
    preds = ["a", None, "b", "a", "c"]
    golds = ["a", "a", "b", "b", "c"]
    groups = ["en", "en", "zh", "zh", "ar"]
    out = m.accuracy_by_group(preds, golds, groups)
    # ar: 1/1; en: 1/2 (None wrong); zh: 1/2
    assert list(out) == ["ar", "en", "zh"]
    assert out == {"ar": 1.0, "en": 0.5, "zh": 0.5}


def test_accuracy_grid_full_rectangle_with_nan_cells() -> None:
    preds = ["a", "b", "a", "a"]
    golds = ["a", "a", "a", "b"]
    prompt = ["en", "en", "zh", "zh"]
    data = ["en", "zh", "en", "zh"]
    assert m.accuracy_grid(preds, golds, prompt, data) == {"en": {"en": 1.0, "zh": 0.0}, "zh": {"en": 1.0, "zh": 0.0}}
    grid = m.accuracy_grid(preds[:3], golds[:3], prompt[:3], data[:3])
    assert math.isnan(grid["zh"]["zh"])  # no zh-prompt item on zh data
    assert grid["en"] == {"en": 1.0, "zh": 0.0}


def test_macro_average_and_cross_lingual_variance() -> None:
    per_lang = {"ar": 1.0, "en": 0.5, "zh": 0.5}
    assert m.macro_average(per_lang) == pytest.approx(2 / 3)
    # mean 2/3; squared deviations 1/9, 1/36, 1/36 -> sum 1/6; population variance 1/18
    assert m.cross_lingual_variance(per_lang) == pytest.approx(1 / 18)
    assert m.cross_lingual_variance([0.4]) == 0.0
    # NaN (empty group) skipped: mean of 0.2 and 0.4
    assert m.macro_average([0.2, nan, 0.4]) == pytest.approx(0.3)
    assert m.cross_lingual_variance([0.2, nan, 0.4]) == pytest.approx(0.01)
    assert math.isnan(m.macro_average([]))
    assert math.isnan(m.cross_lingual_variance({"en": nan}))


# -- confusion matrix ----------------------------------------------------------------------------------------


def test_confusion_matrix_invalid_column() -> None:
    cm = m.confusion_matrix(["a", "b", None, "zz", "a"], ["a", "a", "b", "b", "b"], ["a", "b"])
    assert cm.columns == ("a", "b", "invalid")
    # gold a: pred a, pred b; gold b: None -> invalid, 'zz' -> invalid, pred a
    assert cm.counts == ((1, 1, 0), (1, 0, 2))
    assert cm.row_fractions()[0] == [0.5, 0.5, 0.0]
    assert cm.to_dict()["counts"] == [[1, 1, 0], [1, 0, 2]]


def test_confusion_matrix_empty_row_and_bad_gold() -> None:
    cm = m.confusion_matrix(["a"], ["a"], ["a", "b"])
    assert cm.counts == ((1, 0, 0), (0, 0, 0))
    assert all(math.isnan(v) for v in cm.row_fractions()[1])
    with pytest.raises(DataError, match="gold label 'q' at position 0 is not in the label list"):
        m.confusion_matrix(["a"], ["q"], ["a", "b"])
    with pytest.raises(ConfigError, match="reserved"):
        m.confusion_matrix([], [], ["a", "invalid"])


# -- Spearman ------------------------------------------------------------------------------------------------


def test_rank_average_ties() -> None:
    assert m.rank_average([10, 20, 20, 30]) == [1.0, 2.5, 2.5, 4.0]
    assert m.rank_average([3, 1, 2]) == [3.0, 1.0, 2.0]
    assert m.rank_average([5, 5, 5]) == [2.0, 2.0, 2.0]


def test_spearman_with_ties_by_hand() -> None:
    # rx = 1..5, ry = [1, 2, 3.5, 5, 3.5]; deviations from 3: dx=[-2,-1,0,1,2], dy=[-2,-1,.5,2,.5]
    # cov = 4+1+0+2+1 = 8; vx = 10; vy = 9.5 -> 8 / sqrt(95)
    assert m.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / math.sqrt(95))
    assert m.spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert m.spearman([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)


def test_spearman_undefined_cases() -> None:
    assert math.isnan(m.spearman([1], [2]))
    assert math.isnan(m.spearman([1, 2, 3], [4, 4, 4]))  # constant ranking
    with pytest.raises(DataError, match="NaN"):
        m.spearman([1, nan], [1, 2])


def test_spearman_agreement_of_judges() -> None:
    # judge a ranks m1 > m2 > m3: ranks by key order [3,2,1]; judge b ranks m2 > m1 > m3: [2,3,1]
    # deviations [1,0,-1] and [0,1,-1] -> cov 1, variances 2 and 2 -> 0.5
    a = {"m1": 4.0, "m2": 3.0, "m3": 2.0}
    b = {"m3": 1.0, "m2": 3.6, "m1": 3.5}
    assert m.spearman_agreement(a, b) == pytest.approx(0.5)
    with pytest.raises(DataError, match="different models"):
        m.spearman_agreement(a, {"m1": 1.0, "m2": 2.0})


# -- per-item scores ---------------------------------------------------------------------------------------


def test_mean_by_group() -> None:
    assert m.mean_by_group([0.5, 1.0, 0.0], ["SG", "SG", "TL"]) == {"SG": 0.75, "TL": 0.0}
    assert math.isnan(m.mean_score([]))


# -- majority baseline and alignment ----------------------------------------------------------------------------


def test_majority_labels_tie_breaks() -> None:
    labels = ["a", "b", "b", "a", "c", None]
    groups = ["en", "en", "en", "zh", "zh", "zh"]
    assert m.majority_labels(labels, groups) == {"en": "b", "zh": "a"}  # zh tie a/c -> alphabetical
    assert m.majority_labels(labels, groups, order=["c", "a", "b"]) == {"en": "b", "zh": "c"}  # scheme order
    with pytest.raises(DataError, match="not in the order"):
        m.majority_labels(["q"], ["en"], order=["a"])


def test_majority_baseline_accuracy(caplog: pytest.LogCaptureFixture) -> None:
    train = (["a", "b", "b", "a", "c"], ["en", "en", "en", "zh", "zh"])
    test_golds = ["b", "a", "c", "x"]
    test_groups = ["en", "en", "zh", "ja"]
    # en -> b (1 of 2 right), zh -> a (wrong), ja unseen -> None (wrong): 1/4
    assert m.majority_baseline_accuracy(*train, test_golds, test_groups) == 0.25
    assert "ja" in caplog.text
    # with scheme order zh -> c: 2/4
    assert m.majority_baseline_accuracy(*train, test_golds, test_groups, order=["c", "a", "b", "x"]) == 0.5


def _pred(sid: str, label: str | None) -> Prediction:
    return Prediction(sample_id=sid, culture="en", mode="orig", label=label)


def test_align_predictions_order_and_errors() -> None:
    samples = [Sample(id="s1", culture="en", label="a"), Sample(id="s2", culture="en", label="b")]
    golds, preds = m.align_predictions(samples, [_pred("s2", None), _pred("s1", "a")])
    assert golds == ["a", "b"] and preds == ["a", None]
    with pytest.raises(DataError, match="1 samples have no prediction"):
        m.align_predictions(samples, [_pred("s1", "a")])
    with pytest.raises(DataError, match="two predictions"):
        m.align_predictions(samples, [_pred("s1", "a"), _pred("s1", "a")])
    with pytest.raises(DataError, match="unknown samples"):
        m.align_predictions(samples, [_pred("s1", "a"), _pred("s2", "a"), _pred("s3", "a")])
    with pytest.raises(DataError, match="no gold label"):
        m.align_predictions([Sample(id="s1", culture="en")], [_pred("s1", "a")])


def test_western_group() -> None:
    assert m.western_group(Sample(id="1", culture="en", metadata={"western": True})) == "western"
    assert m.western_group(Sample(id="2", culture="en", metadata={"western": False})) == "non-western"
    assert m.western_group(Sample(id="3", culture="en")) == "unknown"
