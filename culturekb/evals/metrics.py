"""Evaluation metrics as pure functions of predictions and golds (PAPERS.md sections 1-3).

Here the label metrics every benchmark can use: accuracy (overall, per group, grids), confusion matrices, rank
correlation and judge agreement, per-item score means and the majority-class baseline. The statistics (bootstrap
intervals, paired tests, calibration) are in `culturekb.evals.stats`; a metric that only one benchmark uses lives
in that benchmark's folder (Cedar's propensity and quadrant bias in `culturekb.evals.cedar.metrics`, RICE-VL's
SEA-LAVE and box IoU in `culturekb.evals.ricevl.metrics`). All of them follow these conventions.

Conventions shared by every metric function:

- Predictions and golds are aligned sequences of the same length (`DataError` otherwise). A prediction of
  ``None`` is an invalid answer (unparsable output, failed call): it is scored **wrong**, never dropped.
- A gold label is required: a ``None`` gold raises `DataError` naming its position.
- A value that is undefined because its denominator is zero (accuracy of an empty set, propensity of a label
  that never occurs in the golds, Spearman correlation of constant rankings ...) is ``float("nan")``, never
  0 and never an exception. Aggregates over such values (`macro_average`, `cross_lingual_variance`) skip NaN.
  Reports write NaN as JSON ``null`` and as ``n/a`` in Markdown.
- Accuracies, propensities and IoUs are fractions in [0, 1]; the Russell quadrant bias is in percent, as in
  the Cedar paper.
- Group-wise results are dicts with keys sorted by ``str(key)``, so reports are deterministic.
"""

from __future__ import annotations

import logging
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from culturekb.errors import ConfigError, DataError
from culturekb.evals._metric_inputs import NAN, K, check_aligned, check_golds, group_indices, per_group, sorted_dict

__all__ = [
    "INVALID",
    "ConfusionMatrix",
    "accuracy",
    "accuracy_by_group",
    "accuracy_grid",
    "align_predictions",
    "confusion_matrix",
    "cross_lingual_variance",
    "macro_average",
    "majority_baseline_accuracy",
    "majority_labels",
    "mean_by_group",
    "mean_score",
    "rank_average",
    "spearman",
    "spearman_agreement",
    "western_group",
    "wilson_interval",
]

logger = logging.getLogger(__name__)

INVALID = "invalid"
"""Name of the confusion-matrix column that counts invalid (None or out-of-list) predictions."""


def align_predictions(
    samples: Sequence[Any], predictions: Iterable[Any], *, where: str = "align_predictions"
) -> tuple[list[str], list[str | None]]:
    """(golds, preds) in sample order, matching `Prediction.sample_id` to `Sample.id`.

    A sample without a prediction, or a prediction for an unknown sample, raises `DataError`: a missing
    prediction is a bug in the run, not an item to drop.
    """
    by_id: dict[str, Any] = {}
    for p in predictions:
        if p.sample_id in by_id:
            raise DataError(f"{where}: two predictions for sample {p.sample_id!r}; keep one prediction per sample")
        by_id[p.sample_id] = p
    ids = {s.id for s in samples}
    unknown = sorted(set(by_id) - ids)
    if unknown:
        raise DataError(f"{where}: predictions for unknown samples {unknown[:5]}; predict the loaded samples only")
    missing = [s.id for s in samples if s.id not in by_id]
    if missing:
        raise DataError(
            f"{where}: {len(missing)} samples have no prediction (first: {missing[:5]}); "
            "rerun the prediction step, which resumes where it stopped"
        )
    golds: list[str] = []
    for s in samples:
        if s.label is None:
            raise DataError(f"{where}: sample {s.id!r} has no gold label; scored samples need a label")
        golds.append(s.label)
    return golds, [by_id[s.id].label for s in samples]


def western_group(sample: Any) -> str:
    """'western', 'non-western' or 'unknown' from ``sample.metadata["western"]`` (a bool or None)."""
    value = sample.metadata.get("western")
    if value is None:
        return "unknown"
    return "western" if bool(value) else "non-western"


# -- accuracy -------------------------------------------------------------------------------------------------


def accuracy(preds: Sequence[str | None], golds: Sequence[str | None]) -> float:
    """Fraction of items with pred == gold; a None prediction is wrong. Empty input: NaN."""
    check_aligned("preds", preds, "golds", golds, "accuracy")
    check_golds(golds, "accuracy")
    if not golds:
        return NAN
    return sum(1 for p, g in zip(preds, golds, strict=True) if p is not None and p == g) / len(golds)


def wilson_interval(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion `successes / n` (95% with the default `z`); (NaN, NaN) for n = 0.

    It stays inside [0, 1] and is not empty at 0 or n successes (0 of 20 right: [0, 0.161]), unlike the normal
    approximation, so small groups get an honest, wide interval."""
    if n < 0 or not 0 <= successes <= n:
        raise ConfigError(f"wilson_interval: {successes} successes of {n} items; give 0 <= successes <= n")
    if n == 0:
        return NAN, NAN
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def accuracy_by_group(
    preds: Sequence[str | None], golds: Sequence[str | None], groups: Sequence[K]
) -> dict[K, float]:
    """Accuracy per group (culture, language, 'western'/'non-western' ...); only groups that occur."""
    return per_group(accuracy, preds, golds, groups, "accuracy_by_group")


def accuracy_grid(
    preds: Sequence[str | None],
    golds: Sequence[str | None],
    rows: Sequence[K],
    cols: Sequence[K],
) -> dict[K, dict[K, float]]:
    """Accuracy for every (row, col) pair, e.g. the prompt-language x data-language grid.

    The grid is the full rectangle of the row and column values that occur; a cell with no items is NaN.
    """
    check_aligned("preds", preds, "golds", golds, "accuracy_grid")
    check_aligned("preds", preds, "rows", rows, "accuracy_grid")
    check_aligned("preds", preds, "cols", cols, "accuracy_grid")
    cells: dict[tuple[K, K], list[int]] = defaultdict(list)
    for i, (r, c) in enumerate(zip(rows, cols, strict=True)):
        cells[(r, c)].append(i)
    row_keys = sorted(set(rows), key=str)
    col_keys = sorted(set(cols), key=str)
    return {
        r: {
            c: accuracy([preds[i] for i in cells.get((r, c), [])], [golds[i] for i in cells.get((r, c), [])])
            for c in col_keys
        }
        for r in row_keys
    }


def macro_average(values: Mapping[Any, float] | Iterable[float]) -> float:
    """Unweighted mean of per-group values, skipping NaN (empty groups). No finite value: NaN."""
    vals = list(values.values()) if isinstance(values, Mapping) else list(values)
    finite = [float(v) for v in vals if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else NAN


def cross_lingual_variance(per_language: Mapping[Any, float] | Iterable[float]) -> float:
    """Population variance (divide by n, not n - 1) of per-language accuracies, skipping NaN.

    The unit is the square of the input's: pass fractions for fraction^2, percentages for points^2.
    No finite value: NaN; one value: 0.0.
    """
    vals = list(per_language.values()) if isinstance(per_language, Mapping) else list(per_language)
    finite = [float(v) for v in vals if not math.isnan(v)]
    if not finite:
        return NAN
    mean = sum(finite) / len(finite)
    return sum((v - mean) ** 2 for v in finite) / len(finite)


# -- confusion matrix -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfusionMatrix:
    """Counts with gold labels as rows and predicted labels plus a last ``invalid`` column as columns."""

    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    @property
    def columns(self) -> tuple[str, ...]:
        """The predicted labels in scheme order, then ``invalid``."""
        return (*self.labels, INVALID)

    def row_fractions(self) -> list[list[float]]:
        """Each row divided by its total (recall-style); a row with no items is all NaN."""
        out: list[list[float]] = []
        for row in self.counts:
            total = sum(row)
            out.append([c / total if total else NAN for c in row])
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON form: labels, columns and the count rows."""
        return {"labels": list(self.labels), "columns": list(self.columns), "counts": [list(r) for r in self.counts]}


def confusion_matrix(
    preds: Sequence[str | None], golds: Sequence[str | None], labels: Sequence[str]
) -> ConfusionMatrix:
    """Confusion matrix over `labels` (row = gold, column = prediction).

    A None prediction, or one not in `labels`, is counted in the ``invalid`` column. A gold label outside
    `labels` raises `DataError` (the label list is wrong for the data).
    """
    check_aligned("preds", preds, "golds", golds, "confusion_matrix")
    check_golds(golds, "confusion_matrix")
    if len(set(labels)) != len(labels):
        raise ConfigError(f"confusion_matrix: labels repeat a value: {list(labels)}; pass each label once")
    if INVALID in labels:
        raise ConfigError(f"confusion_matrix: {INVALID!r} is reserved for the invalid column; rename that label")
    index = {lab: i for i, lab in enumerate(labels)}
    counts = [[0] * (len(labels) + 1) for _ in labels]
    for pos, (p, g) in enumerate(zip(preds, golds, strict=True)):
        if g not in index:
            raise DataError(
                f"confusion_matrix: gold label {g!r} at position {pos} is not in the label list {list(labels)}; "
                "use the scheme the data was labelled with"
            )
        col = index.get(p, len(labels)) if p is not None else len(labels)
        counts[index[g]][col] += 1  # type: ignore[index]
    return ConfusionMatrix(tuple(labels), tuple(tuple(r) for r in counts))


# -- rank correlation --------------------------------------------------------------------------------------------


def rank_average(values: Sequence[float]) -> list[float]:
    """1-based ranks in ascending order; tied values share the average of the ranks they span
    (`scipy.stats.rankdata`, method ``average``)."""
    from scipy.stats import rankdata

    return [float(r) for r in rankdata([float(v) for v in values], method="average")] if values else []


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson correlation of average ranks (ties handled), by `scipy.stats.spearmanr`.

    Fewer than two items, or a side whose values are all equal (zero rank variance): NaN.
    """
    check_aligned("xs", x, "ys", y, "spearman")
    for name, seq in (("x", x), ("y", y)):
        if any(math.isnan(float(v)) for v in seq):
            raise DataError(f"spearman: {name} contains NaN; score every item or leave it out of both sides")
    if len(x) < 2 or len(set(x)) == 1 or len(set(y)) == 1:
        return NAN  # scipy answers NaN here too, with a ConstantInputWarning
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def spearman_agreement(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> float:
    """Agreement of two judges' model rankings: Spearman's rho over the models both scored.

    Both mappings (model -> mean score) must name the same models; otherwise `DataError`.
    """
    if set(scores_a) != set(scores_b):
        diff = sorted(set(scores_a) ^ set(scores_b))
        raise DataError(f"spearman_agreement: the judges scored different models (only one has {diff}); "
                        "compare rankings over the same models")
    keys = sorted(scores_a)
    return spearman([scores_a[k] for k in keys], [scores_b[k] for k in keys])


# -- per-item scores --------------------------------------------------------------------------------------------


def mean_score(values: Sequence[float]) -> float:
    """Arithmetic mean; empty: NaN; a NaN value propagates (a failure must be scored, e.g. as 0, to be counted)."""
    return sum(values) / len(values) if values else NAN


def mean_by_group(values: Sequence[float], groups: Sequence[K]) -> dict[K, float]:
    """Mean of per-item scores per group (SEA-LAVE per country or category, IoU per group ...)."""
    check_aligned("values", values, "groups", groups, "mean_by_group")
    return {g: mean_score([values[i] for i in idx]) for g, idx in group_indices(groups).items()}


# -- majority-class baseline -----------------------------------------------------------------------------------------


def majority_labels(
    labels: Sequence[str | None], groups: Sequence[K], order: Sequence[str] | None = None
) -> dict[K, str]:
    """The most frequent training label per group (culture).

    Ties go to the label that comes first in `order` (the scheme's label order) when given, else to the
    alphabetically first label. None labels are skipped; a group with only None labels is left out.
    """
    check_aligned("labels", labels, "groups", groups, "majority_labels")
    rank = {lab: i for i, lab in enumerate(order)} if order is not None else {}
    counts: dict[K, Counter[str]] = defaultdict(Counter)
    for lab, g in zip(labels, groups, strict=True):
        if lab is not None:
            counts[g][lab] += 1
    out: dict[K, str] = {}
    for g, c in counts.items():
        if order is not None:
            unknown = sorted(set(c) - set(rank))
            if unknown:
                raise DataError(f"majority_labels: labels {unknown} of group {g!r} are not in the order {list(order)}")
        out[g] = min(c, key=lambda lab: (-c[lab], rank.get(lab, 0), lab))
    return sorted_dict(out)


def majority_baseline_accuracy(
    train_labels: Sequence[str | None],
    train_groups: Sequence[K],
    test_golds: Sequence[str | None],
    test_groups: Sequence[K],
    order: Sequence[str] | None = None,
) -> float:
    """Accuracy on test of predicting each culture's majority training label (see `majority_labels`).

    A test culture absent from training gets no prediction (None, scored wrong) and a logged warning.
    """
    check_aligned("test_golds", test_golds, "test_groups", test_groups, "majority_baseline_accuracy")
    majority = majority_labels(train_labels, train_groups, order)
    unseen = sorted({g for g in test_groups if g not in majority}, key=str)
    if unseen:
        logger.warning("majority baseline: cultures %s have no training labels; their items are scored wrong", unseen)
    return accuracy([majority.get(g) for g in test_groups], test_golds)
