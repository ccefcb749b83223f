"""The knowledge report's statistics (culturekb.evals.stats) against hand computations."""

from __future__ import annotations

import math
from math import comb

import numpy as np
import pytest

from culturekb.errors import ConfigError, DataError
from culturekb.evals import stats as m


def test_correctness_scores_none_as_wrong() -> None:
    assert m.correctness(["a", None, "b"], ["a", "a", "c"]) == [True, False, False]
    with pytest.raises(DataError, match="gold label at position 1"):
        m.correctness(["a", "b"], ["a", None])


def test_mcnemar_exact_equals_the_binomial_by_hand() -> None:
    # a right and b wrong on 1 item, the reverse on 7, both right on 5, both wrong on 3
    a = [True] * 1 + [False] * 7 + [True] * 5 + [False] * 3
    b = [False] * 1 + [True] * 7 + [True] * 5 + [False] * 3
    res = m.mcnemar_exact(a, b)
    assert (res.a_only, res.b_only, res.discordant) == (1, 7, 8)
    # two-sided: 2 * P(X <= 1), X ~ Bin(8, 1/2) = 2 * (C(8,0) + C(8,1)) / 2^8 = 18/256
    assert res.p_value == pytest.approx(2 * (comb(8, 0) + comb(8, 1)) / 2**8) == pytest.approx(0.0703125)
    assert m.mcnemar_exact(b, a).p_value == pytest.approx(res.p_value)  # symmetric
    # 0 vs 6 discordant: 2 * (1/2)^6
    assert m.mcnemar_exact([True] * 6, [False] * 6).p_value == pytest.approx(2 / 64)
    # balanced discordance and no discordance both give p = 1
    assert m.mcnemar_exact([True, False], [False, True]).p_value == pytest.approx(1.0)
    assert m.mcnemar_exact([True, False, True], [True, False, True]).p_value == 1.0
    assert m.mcnemar_exact([True], [False]).to_dict() == {"a_only": 1, "b_only": 0, "discordant": 1,
                                                          "p_value": pytest.approx(1.0)}


def test_bootstrap_interval_is_seeded_contains_the_mean_and_matches_the_normal_width() -> None:
    rng = np.random.default_rng(7)
    values = (rng.random(400) < 0.3).astype(float).tolist()
    iv = m.bootstrap_interval(values, n_resamples=2000, seed=0)
    assert iv.estimate == pytest.approx(sum(values) / 400) and iv.n == 400
    assert iv.low < iv.estimate < iv.high and iv.contains(iv.estimate)
    assert m.bootstrap_interval(values, n_resamples=2000, seed=0) == iv  # the same seed, the same interval
    assert m.bootstrap_interval(values, n_resamples=2000, seed=1) != iv
    # for a proportion the percentile interval is close to p +- 1.96 sqrt(p (1 - p) / n)
    half = 1.96 * math.sqrt(iv.estimate * (1 - iv.estimate) / 400)
    assert iv.high - iv.low == pytest.approx(2 * half, rel=0.1)
    narrower = m.bootstrap_interval(values, confidence=0.5)
    assert iv.low < narrower.low <= narrower.high < iv.high


def test_bootstrap_slices_give_the_same_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    values = [float(i % 3 == 0) for i in range(50)]
    whole = m.bootstrap_interval(values, n_resamples=1000, seed=3)
    monkeypatch.setattr(m, "_BOOTSTRAP_CELLS", 50 * 7)  # 7 resamples per slice
    assert m.bootstrap_interval(values, n_resamples=1000, seed=3) == whole


def test_bootstrap_edge_cases() -> None:
    assert m.bootstrap_interval([1.0, 1.0, 1.0]) == m.Interval(1.0, 1.0, 1.0, 3)
    empty = m.bootstrap_interval([])
    assert empty.n == 0 and math.isnan(empty.estimate) and not empty.contains(0.0)
    with pytest.raises(DataError, match="NaN"):
        m.bootstrap_interval([1.0, float("nan")])
    with pytest.raises(ConfigError, match="confidence"):
        m.bootstrap_interval([1.0], confidence=95)
    with pytest.raises(ConfigError, match="n_resamples"):
        m.bootstrap_interval([1.0], n_resamples=0)


def test_paired_difference_resamples_items_together() -> None:
    a = [True, True, False, True, False, True, True, False] * 5
    same = m.paired_bootstrap_difference(a, a)
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)  # identical systems: no difference at all
    b = [not x for x in a[:8]] + a[8:]  # b differs on the first 8 items only
    diff = m.paired_bootstrap_difference(a, b, seed=0)
    mc = m.mcnemar_exact(a, b)
    assert diff.estimate == pytest.approx((mc.a_only - mc.b_only) / len(a))
    assert diff.low <= diff.estimate <= diff.high
    # paired: narrower than the difference of two independent intervals' extremes
    ia, ib = m.bootstrap_interval([float(x) for x in a]), m.bootstrap_interval([float(x) for x in b])
    assert diff.high - diff.low < (ia.high - ib.low) - (ia.low - ib.high)
    with pytest.raises(DataError):
        m.paired_bootstrap_difference([True], [True, False])


def test_reliability_bins_and_ece_by_hand() -> None:
    conf = [0.9, 0.9, 0.3, 0.3, 1.0]
    right = [True, False, False, False, True]
    bins = m.reliability_bins(conf, right, n_bins=10)
    assert len(bins) == 10 and bins[3].count == 2 and bins[9].count == 3  # 1.0 falls in the last bin
    assert bins[9].mean_confidence == pytest.approx(2.8 / 3) and bins[9].accuracy == pytest.approx(2 / 3)
    assert bins[0].count == 0 and math.isnan(bins[0].accuracy)
    # ECE = 3/5 * |2/3 - 2.8/3| + 2/5 * |0 - 0.3|
    assert m.expected_calibration_error(conf, right) == pytest.approx(3 / 5 * 0.8 / 3 + 2 / 5 * 0.3)
    # always sure: ECE is 1 - accuracy
    assert m.expected_calibration_error([1.0] * 4, [True, False, False, False]) == pytest.approx(0.75)
    assert math.isnan(m.expected_calibration_error([], []))
    with pytest.raises(DataError, match="outside"):
        m.reliability_bins([1.2], [True])


def test_brier_and_log_loss_by_hand() -> None:
    dists = [{"a": 0.7, "b": 0.3}, {"a": 0.2, "b": 0.8}]
    golds = ["a", "a"]
    # (0.3^2 + 0.3^2 + 0^2 + 0.8^2 + 0.8^2) / 2, label c has probability 0 in both
    assert m.brier_score(dists, golds, ["a", "b", "c"]) == pytest.approx((0.18 + 1.28) / 2)
    assert m.log_loss(dists, golds) == pytest.approx(-(math.log(0.7) + math.log(0.2)) / 2)
    assert m.brier_score([{"a": 1.0}], ["a"], ["a", "b"]) == 0.0
    assert m.log_loss([{"b": 1.0}], ["a"]) == pytest.approx(-math.log(1e-15))
    assert math.isnan(m.brier_score([], [], ["a"])) and math.isnan(m.log_loss([], []))
