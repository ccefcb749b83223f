"""Cedar's propensity and Russell quadrant bias (culturekb.evals.cedar.metrics) against values computed by hand."""

from __future__ import annotations

import math

import pytest

from culturekb.errors import ConfigError
from culturekb.evals.cedar import metrics as cm
from culturekb.kb import get_scheme

nan = float("nan")


def same(a: dict, b: dict) -> bool:
    """Dict equality where NaN equals NaN and floats compare approximately; key order matters."""
    if list(a) != list(b):
        return False
    for k in a:
        x, y = a[k], b[k]
        if isinstance(x, dict):
            if not same(x, y):
                return False
        elif isinstance(x, float) and math.isnan(x):
            if not (isinstance(y, float) and math.isnan(y)):
                return False
        elif x != pytest.approx(y):
            return False
    return True


def test_prediction_propensity() -> None:
    labels = ["a", "b", "c"]
    golds = ["a", "a", "b", "b"]
    preds = ["a", "a", "a", None]
    # a: 3 predicted / 2 gold; b: 0 / 2; c: never gold -> NaN
    assert same(cm.prediction_propensity(preds, golds, labels), {"a": 1.5, "b": 0.0, "c": nan})
    # a label predicted but never gold stays NaN (not inf)
    assert math.isnan(cm.prediction_propensity(["c"], ["a"], labels)["c"])


def test_prediction_propensity_by_group() -> None:
    out = cm.prediction_propensity_by_group(["a", "a", "a", None], ["a", "a", "b", "b"], ["en", "en", "zh", "zh"],
                                           ["a", "b"])
    # en: a 2/2, b never gold; zh: a predicted once but never gold -> NaN, b 0/2
    assert same(out, {"en": {"a": 1.0, "b": nan}, "zh": {"a": nan, "b": 0.0}})


def test_quadrant_bias_cedar_by_hand() -> None:
    quads = get_scheme("cedar14").quadrants
    golds = ["happiness", "anger", "sadness", "awe"]  # one gold in each of Q1..Q4 -> denominator 4
    preds = ["amusement", "happiness", None, "fear"]  # Q1, Q1, none, Q2
    # Q1 (2-1)/4 = +25; Q2 (1-1)/4 = 0; Q3 (0-1)/4 = -25; Q4 (0-1)/4 = -25 (the invalid answer costs 25)
    assert cm.quadrant_bias(preds, golds, quads) == {"Q1": 25.0, "Q2": 0.0, "Q3": -25.0, "Q4": -25.0}
    by_lang = cm.quadrant_bias_by_group(preds, golds, ["en", "en", "zh", "zh"], quads)
    # en: golds Q1,Q2, preds Q1,Q1 -> Q1 +50, Q2 -50; zh: golds Q3,Q4, preds none,Q2 -> Q2 +50, Q3 -50, Q4 -50
    assert by_lang == {"en": {"Q1": 50.0, "Q2": -50.0, "Q3": 0.0, "Q4": 0.0},
                       "zh": {"Q1": 0.0, "Q2": 50.0, "Q3": -50.0, "Q4": -50.0}}


def test_quadrant_bias_edge_cases() -> None:
    out = cm.quadrant_bias([], [], {"Q1": ["a"], "Q2": ["b"]})
    assert all(math.isnan(v) for v in out.values())
    with pytest.raises(ConfigError, match="label 'a' is in quadrants Q1 and Q2"):
        cm.quadrant_bias(["a"], ["a"], {"Q1": ["a"], "Q2": ["a"]})
    with pytest.raises(ConfigError, match="no quadrants"):
        cm.quadrant_bias(["a"], ["a"], {})
