"""The library-backed statistics (scipy, scikit-learn) give the results of the hand-written code they replaced.

Each reference below is the old hand-written implementation, copied verbatim from the commit before the
replacement, and run on fixed inputs including the edge cases (identical distributions, zeros, disjoint supports,
ties, one-category kappa, constant rankings).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from culturekb.builders.validation import cohen_kappa
from culturekb.evals.metrics import rank_average, spearman
from culturekb.kb.distribution import js_divergence
from culturekb.kb.stats import jensen_shannon

# -- the old implementations (references) ------------------------------------------------------------------------


def _old_kappa(a: Sequence[str | None], b: Sequence[str | None]) -> float | None:
    n = len(a)
    if n == 0:
        return None
    cats = sorted({str(x) for x in a} | {str(x) for x in b})
    p_o = sum(str(x) == str(y) for x, y in zip(a, b, strict=True)) / n
    p_e = sum((sum(str(x) == c for x in a) / n) * (sum(str(y) == c for y in b) / n) for c in cats)
    if p_e >= 1.0:
        return 1.0
    return (p_o - p_e) / (1.0 - p_e)


def _old_jensen_shannon(p: Sequence[float], q: Sequence[float]) -> float:
    a = np.asarray(p, dtype=np.float64)
    b = np.asarray(q, dtype=np.float64)
    a = a / a.sum() if a.sum() > 0 else a
    b = b / b.sum() if b.sum() > 0 else b
    m = 0.5 * (a + b)

    def kl(x: np.ndarray) -> float:
        mask = x > 0
        return float(np.sum(x[mask] * np.log2(x[mask] / m[mask])))

    return max(0.0, min(1.0, 0.5 * kl(a) + 0.5 * kl(b)))


def _old_js_divergence(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    def normalise(dist: Mapping[str, float], labels: list[str]) -> dict[str, float]:
        total = sum(max(0.0, float(dist.get(lab, 0.0))) for lab in labels)
        if total <= 0:
            return {lab: 1.0 / len(labels) for lab in labels} if labels else {}
        return {lab: max(0.0, float(dist.get(lab, 0.0))) / total for lab in labels}

    def kl(x: Mapping[str, float], y: Mapping[str, float], eps: float = 1e-12) -> float:
        total = 0.0
        for lab, pv in x.items():
            if pv > 0:
                total += pv * math.log(pv / max(float(y.get(lab, 0.0)), eps))
        return max(0.0, total)

    labels = list(dict.fromkeys([*p, *q]))
    pn, qn = normalise(p, labels), normalise(q, labels)
    m = {lab: 0.5 * (pn[lab] + qn[lab]) for lab in labels}
    return max(0.0, min(1.0, 0.5 * (kl(pn, m) + kl(qn, m)) / math.log(2)))


def _old_rank_average(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        avg = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        i = j + 1
    return ranks


def _old_spearman(x: Sequence[float], y: Sequence[float]) -> float:
    n = len(x)
    if n < 2:
        return math.nan
    rx, ry = _old_rank_average(x), _old_rank_average(y)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return math.nan
    return cov / math.sqrt(vx * vy)


def _same(new: float | None, old: float | None) -> bool:
    if old is None or new is None:
        return old is new
    if math.isnan(old):
        return math.isnan(new)
    return new == pytest.approx(old, abs=1e-12)


# -- Cohen's kappa -------------------------------------------------------------------------------------------------

KAPPA_CASES: list[tuple[list[str | None], list[str | None]]] = [
    ([], []),  # no items: None
    (["fear"] * 5, ["fear"] * 5),  # one category on both sides: 1.0 (no chance to disagree)
    (["fear", "awe", "fear", "anger"], ["fear", "awe", "fear", "anger"]),  # perfect agreement
    (["fear", "fear", "awe", "awe"], ["awe", "awe", "fear", "fear"]),  # perfect disagreement
    (["fear", None, "awe", "fear", None, "anger"], ["fear", "awe", None, "fear", None, "sadness"]),  # None a category
    (["fear"] * 4, ["fear", "fear", "awe", "fear"]),  # one rater constant
    (["a", "b", "a", "c", "b", "a", "c", "c", "a", "b"], ["a", "b", "b", "c", "a", "a", "c", "b", "a", "b"]),
    ([None, None], [None, None]),  # only no-verdicts: one category
]


@pytest.mark.parametrize(("a", "b"), KAPPA_CASES)
def test_cohen_kappa_equals_the_old_formula(a: list[str | None], b: list[str | None]) -> None:
    assert _same(cohen_kappa(a, b), _old_kappa(a, b))


def test_cohen_kappa_known_value_and_length_check() -> None:
    # 2x2 table [[20, 5], [10, 15]]: p_o = 0.7, p_e = 0.5, kappa = 0.4 (hand-computed)
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="paired"):
        cohen_kappa(["a"], [])


# -- Jensen-Shannon ------------------------------------------------------------------------------------------------

ARRAY_CASES: list[tuple[list[float], list[float]]] = [
    ([0.5, 0.5, 0.0], [0.5, 0.5, 0.0]),  # identical
    ([1.0, 0.0], [0.0, 1.0]),  # disjoint: 1 bit
    ([0.7, 0.2, 0.1], [0.1, 0.3, 0.6]),
    ([3.0, 1.0, 0.0], [1.0, 1.0, 2.0]),  # unnormalised counts
    ([0.0, 0.0, 0.0], [0.2, 0.8, 0.0]),  # one side without mass
    ([0.0, 0.0], [0.0, 0.0]),  # both without mass
    ([1e-300, 1.0], [1.0, 1e-300]),
]


@pytest.mark.parametrize(("p", "q"), ARRAY_CASES)
def test_jensen_shannon_equals_the_old_formula(p: list[float], q: list[float]) -> None:
    assert _same(jensen_shannon(p, q), _old_jensen_shannon(p, q))
    assert _same(jensen_shannon(q, p), _old_jensen_shannon(q, p))


DICT_CASES: list[tuple[dict[str, float], dict[str, float]]] = [
    ({"fear": 0.5, "awe": 0.5}, {"awe": 0.5, "fear": 0.5}),  # identical, other key order
    ({"fear": 1.0}, {"awe": 1.0}),  # disjoint labels: 1 bit
    ({"fear": 0.7, "awe": 0.3}, {"fear": 0.2, "anger": 0.8}),  # partly shared labels
    ({"fear": 0.0, "awe": 0.0}, {"fear": 1.0}),  # all zero: uniform
    ({}, {}),
    ({"fear": 2.0, "awe": 6.0}, {"fear": 0.25, "awe": 0.75}),  # unnormalised, same shape: 0
    ({"fear": -1.0, "awe": 1.0}, {"fear": 0.5, "awe": 0.5}),  # a negative weight counts as zero
]


@pytest.mark.parametrize(("p", "q"), DICT_CASES)
def test_js_divergence_equals_the_old_formula(p: dict[str, float], q: dict[str, float]) -> None:
    assert _same(js_divergence(p, q), _old_js_divergence(p, q))


# -- Spearman ------------------------------------------------------------------------------------------------------

SPEARMAN_CASES: list[tuple[list[float], list[float]]] = [
    ([], []),
    ([1.0], [2.0]),
    ([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]),
    ([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]),
    ([1.0, 2.0, 2.0, 3.0, 5.0], [2.0, 1.0, 4.0, 4.0, 3.0]),  # ties on both sides
    ([3.0, 3.0, 3.0], [1.0, 2.0, 3.0]),  # constant side: NaN
    ([0.1, 0.4, 0.35, 0.8, 0.8, 0.2], [0.3, 0.1, 0.5, 0.9, 0.7, 0.2]),
]


@pytest.mark.parametrize(("x", "y"), SPEARMAN_CASES)
def test_spearman_and_ranks_equal_the_old_code(x: list[float], y: list[float]) -> None:
    assert _same(spearman(x, y), _old_spearman(x, y))
    assert rank_average(x) == pytest.approx(_old_rank_average(x))
