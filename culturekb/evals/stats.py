"""Statistics of the knowledge report as pure functions: bootstrap intervals, the paired bootstrap and the exact
McNemar test, reliability bins, expected calibration error, Brier score and log loss.

Inputs follow the conventions of `culturekb.evals.metrics` (aligned sequences, a None prediction is wrong, NaN
for an undefined value); every random draw takes a seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from culturekb.errors import ConfigError, DataError
from culturekb.evals._metric_inputs import NAN, check_aligned, check_golds

__all__ = [
    "Interval",
    "McNemarResult",
    "ReliabilityBin",
    "bootstrap_interval",
    "brier_score",
    "correctness",
    "expected_calibration_error",
    "log_loss",
    "mcnemar_exact",
    "paired_bootstrap_difference",
    "reliability_bins",
]


def correctness(preds: Sequence[str | None], golds: Sequence[str | None]) -> list[bool]:
    """Per item, whether pred == gold (a None prediction is wrong): the input of the interval and paired tests."""
    check_aligned("preds", preds, "golds", golds, "correctness")
    check_golds(golds, "correctness")
    return [p is not None and p == g for p, g in zip(preds, golds, strict=True)]


@dataclass(frozen=True)
class Interval:
    """A point estimate (the mean over the items) with a percentile-bootstrap interval; NaN when there are no items."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float = 0.95

    def contains(self, value: float) -> bool:
        """Whether `value` lies in [low, high] (False when the interval is undefined)."""
        return self.low <= value <= self.high

    def to_dict(self) -> dict[str, Any]:
        """JSON form: estimate, low, high, n, confidence."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "n": self.n,
                "confidence": self.confidence}


_BOOTSTRAP_CELLS = 4_000_000
"""At most this many resampled values are held at once (resamples x items); larger problems go in slices."""


def _check_bootstrap(n_resamples: int, confidence: float, where: str) -> None:
    if n_resamples < 1:
        raise ConfigError(f"{where}: n_resamples must be at least 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"{where}: confidence must be between 0 and 1 (e.g. 0.95), got {confidence}")


def _bootstrap_means(values: Any, n_resamples: int, seed: int) -> Any:
    """Means of `n_resamples` resamples (with replacement, same size) of the 1-D array `values`, vectorised."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = int(values.shape[0])
    step = max(1, _BOOTSTRAP_CELLS // n)
    parts = []
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        idx = rng.integers(0, n, size=(size, n))
        parts.append(values[idx].mean(axis=1))
    return np.concatenate(parts)


def bootstrap_interval(values: Sequence[float], *, n_resamples: int = 2000, confidence: float = 0.95,
                       seed: int = 0) -> Interval:
    """The mean of `values` with its percentile-bootstrap interval.

    `n_resamples` resamples of the items (with replacement, the same size) are drawn with a numpy generator seeded
    by `seed`, so a rerun gives the same interval; the interval is the (1 - confidence)/2 and (1 + confidence)/2
    percentiles of the resampled means. Pass 0/1 correctness for an accuracy, or per-item differences for a paired
    difference (`paired_bootstrap_difference`). No items: estimate and bounds are NaN. A NaN value raises
    `DataError` (score the item, e.g. as wrong, or leave it out).
    """
    import numpy as np

    _check_bootstrap(n_resamples, confidence, "bootstrap_interval")
    arr = np.asarray([float(v) for v in values], dtype=float)
    if arr.size == 0:
        return Interval(NAN, NAN, NAN, 0, confidence)
    if not np.all(np.isfinite(arr)):
        raise DataError("bootstrap_interval: the values contain NaN or inf; score every item before resampling")
    means = _bootstrap_means(arr, n_resamples, seed)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Interval(float(arr.mean()), float(low), float(high), int(arr.size), confidence)


def paired_bootstrap_difference(correct_a: Sequence[bool], correct_b: Sequence[bool], *, n_resamples: int = 2000,
                                confidence: float = 0.95, seed: int = 0) -> Interval:
    """Accuracy of a minus accuracy of b on the same items, with a paired percentile-bootstrap interval.

    The items are resampled together (one resample draws the same items for both), which is what makes the
    interval of a difference between two systems on one test set narrower than two separate intervals suggest.
    """
    check_aligned("correct_a", correct_a, "correct_b", correct_b, "paired_bootstrap_difference")
    diffs = [float(bool(a)) - float(bool(b)) for a, b in zip(correct_a, correct_b, strict=True)]
    return bootstrap_interval(diffs, n_resamples=n_resamples, confidence=confidence, seed=seed)


@dataclass(frozen=True)
class McNemarResult:
    """The exact McNemar test of two systems on the same items.

    `a_only`: items a gets right and b wrong; `b_only`: the reverse; `p_value`: two-sided exact binomial p-value
    of `a_only` among the discordant items under "each discordant item is equally likely to go either way"
    (1.0 when there are none).
    """

    a_only: int
    b_only: int
    p_value: float

    @property
    def discordant(self) -> int:
        """Items on which the two systems disagree in correctness."""
        return self.a_only + self.b_only

    def to_dict(self) -> dict[str, Any]:
        """JSON form: a_only, b_only, discordant, p_value."""
        return {"a_only": self.a_only, "b_only": self.b_only, "discordant": self.discordant, "p_value": self.p_value}


def mcnemar_exact(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> McNemarResult:
    """Exact McNemar test: binomial test of the discordant pairs, p = 0.5, two-sided (`scipy.stats.binomtest`).

    Only the items where exactly one system is right count; with b items "a right, b wrong" and c items "a wrong,
    b right" the p-value is min(1, 2 P(X <= min(b, c))) for X ~ Binomial(b + c, 1/2). Concordant items carry no
    evidence either way, so two systems that agree everywhere get p = 1.
    """
    from scipy.stats import binomtest

    check_aligned("correct_a", correct_a, "correct_b", correct_b, "mcnemar_exact")
    a_only = sum(1 for a, b in zip(correct_a, correct_b, strict=True) if a and not b)
    b_only = sum(1 for a, b in zip(correct_a, correct_b, strict=True) if b and not a)
    n = a_only + b_only
    p = float(binomtest(a_only, n, 0.5, alternative="two-sided").pvalue) if n else 1.0
    return McNemarResult(a_only, b_only, min(1.0, p))


@dataclass(frozen=True)
class ReliabilityBin:
    """One confidence bin of a reliability diagram: [low, high), its items, their mean confidence and accuracy."""

    low: float
    high: float
    count: int
    mean_confidence: float
    accuracy: float

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the bin."""
        return {"low": self.low, "high": self.high, "count": self.count, "mean_confidence": self.mean_confidence,
                "accuracy": self.accuracy}


def _check_confidences(confidences: Sequence[float], correct: Sequence[bool], where: str) -> None:
    check_aligned("confidences", confidences, "correct", correct, where)
    for i, c in enumerate(confidences):
        if not 0.0 <= float(c) <= 1.0:  # also rejects NaN
            raise DataError(f"{where}: confidence {c!r} at position {i} is outside [0, 1]; pass probabilities")


def reliability_bins(confidences: Sequence[float], correct: Sequence[bool], n_bins: int = 10
                     ) -> list[ReliabilityBin]:
    """`n_bins` equal-width bins over [0, 1] (the last one closed): per bin, the items whose confidence falls in
    it, their mean confidence and their accuracy (NaN for an empty bin)."""
    if n_bins < 1:
        raise ConfigError(f"reliability_bins: n_bins must be at least 1, got {n_bins}")
    _check_confidences(confidences, correct, "reliability_bins")
    members: list[list[int]] = [[] for _ in range(n_bins)]
    for i, c in enumerate(confidences):
        members[min(int(float(c) * n_bins), n_bins - 1)].append(i)
    out = []
    for b, idx in enumerate(members):
        conf = sum(float(confidences[i]) for i in idx) / len(idx) if idx else NAN
        acc = sum(1 for i in idx if correct[i]) / len(idx) if idx else NAN
        out.append(ReliabilityBin(b / n_bins, (b + 1) / n_bins, len(idx), conf, acc))
    return out


def expected_calibration_error(confidences: Sequence[float], correct: Sequence[bool], n_bins: int = 10) -> float:
    """ECE = sum over bins of (n_bin / n) |accuracy_bin - mean confidence_bin| (`reliability_bins`); empty: NaN.

    0 is perfectly calibrated; a predictor that is always sure (confidence 1) has ECE = 1 - accuracy.
    """
    bins = reliability_bins(confidences, correct, n_bins)
    n = sum(b.count for b in bins)
    if n == 0:
        return NAN
    return sum(b.count / n * abs(b.accuracy - b.mean_confidence) for b in bins if b.count)


def _check_distributions(probabilities: Sequence[Mapping[str, float]], golds: Sequence[str | None], where: str
                         ) -> None:
    check_aligned("probabilities", probabilities, "golds", golds, where)
    check_golds(golds, where)


def brier_score(probabilities: Sequence[Mapping[str, float]], golds: Sequence[str | None],
                labels: Sequence[str]) -> float:
    """Multi-class Brier score: the mean over items of sum over `labels` of (p(label) - [label == gold])^2.

    In [0, 2]; 0 is a sure and right forecast, 2 a sure and wrong one. A label missing from an item's
    distribution has probability 0. Empty: NaN.
    """
    _check_distributions(probabilities, golds, "brier_score")
    if not golds:
        return NAN
    total = 0.0
    for dist, gold in zip(probabilities, golds, strict=True):
        total += sum((float(dist.get(lab, 0.0)) - (1.0 if lab == gold else 0.0)) ** 2 for lab in labels)
    return total / len(golds)


def log_loss(probabilities: Sequence[Mapping[str, float]], golds: Sequence[str | None], eps: float = 1e-15) -> float:
    """Mean negative log-likelihood (nats) of the gold labels, each probability floored at `eps`; empty: NaN."""
    _check_distributions(probabilities, golds, "log_loss")
    if not golds:
        return NAN
    return sum(-math.log(max(float(dist.get(str(g), 0.0)), eps)) for dist, g in zip(probabilities, golds, strict=True)
               ) / len(golds)
