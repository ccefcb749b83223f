"""The statistics of a tuple's distribution: intervals, shrinkage, informativeness, divergence, text."""

import math

import pytest

from culturekb.errors import DataError
from culturekb.kb.calibration import Calibration, read_calibration, write_calibration
from culturekb.kb.distribution import (
    counts_of,
    describe,
    informativeness,
    js_divergence,
    posterior,
    top_labels,
    wilson_interval,
)


def test_wilson_interval_matches_a_hand_computation_and_stays_in_bounds():
    lo, hi = wilson_interval(7, 10)
    # z = 1.96: centre (0.7 + 0.19208) / 1.38416 = 0.6445, half 1.96 * sqrt(0.021 + 0.009604) / 1.38416 = 0.2477
    assert lo == pytest.approx(0.3968, abs=1e-3) and hi == pytest.approx(0.8922, abs=1e-3)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    assert wilson_interval(0, 0) == (0.0, 1.0)
    narrow, wide = wilson_interval(70, 100), wilson_interval(7, 10)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]  # more support, less uncertainty


def test_posterior_shrinks_toward_the_prior_by_alpha():
    prior = {"fear": 0.2, "joy": 0.8}
    assert posterior({"fear": 1.0}, 2, prior, 0.0) == {"fear": 1.0, "joy": 0.0}
    p = posterior({"fear": 1.0}, 2, prior, 2.0)  # (2 + 0.4) / 4, (0 + 1.6) / 4
    assert p == pytest.approx({"fear": 0.6, "joy": 0.4})
    assert posterior({"fear": 1.0}, 2, prior, 1e9) == pytest.approx(prior)
    with pytest.raises(ValueError):
        posterior({"fear": 1.0}, 2, prior, -1)


def test_informativeness_is_zero_for_the_prior_and_grows_with_support():
    prior = {"fear": 0.25, "joy": 0.75}
    assert informativeness(prior, 500, prior) == pytest.approx(0.0)
    skewed = {"fear": 0.75, "joy": 0.25}
    one = informativeness(skewed, 4, prior)
    assert one > 0 and informativeness(skewed, 40, prior) == pytest.approx(10 * one)
    # KL = 0.75 ln 3 + 0.25 ln(1/3) = 0.5 ln 3
    assert one == pytest.approx(4 * 0.5 * math.log(3))


def test_js_divergence_bounds_and_symmetry():
    a, b = {"fear": 1.0}, {"joy": 1.0}
    assert js_divergence(a, b) == pytest.approx(1.0) and js_divergence(a, a) == pytest.approx(0.0)
    p, q = {"fear": 0.7, "joy": 0.3}, {"fear": 0.2, "joy": 0.8}
    assert 0 < js_divergence(p, q) < 1 and js_divergence(p, q) == pytest.approx(js_divergence(q, p))


def test_describe_counts_and_top_labels_follow_scheme_order_on_ties():
    dist = {"awe": 0.2, "fear": 0.7, "sadness": 0.1}
    assert describe(dist, 10) == "fear (7/10), awe (2/10)"
    assert describe(dist, 10, k=1, translate={"fear": "恐惧"}) == "恐惧 (7/10)"
    assert counts_of({"awe": 0.5, "fear": 0.5, "joy": 0.0}, 4) == {"awe": 2, "fear": 2}
    assert [lab for lab, _ in top_labels({"b": 0.5, "a": 0.5}, order=["a", "b"])] == ["a", "b"]


def test_calibration_file_round_trip_and_stale_version(tmp_path):
    cal = Calibration(kb_version="abc", min_support=3, beta=0.5)
    write_calibration(tmp_path, cal)
    assert read_calibration(tmp_path) == cal and read_calibration(tmp_path, "abc") == cal
    assert read_calibration(tmp_path / "nowhere") is None
    with pytest.raises(DataError, match="culturekb calibrate"):
        read_calibration(tmp_path, "other")
    (tmp_path / "calibration.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not a valid calibration"):
        read_calibration(tmp_path)
