"""Evaluation metrics as pure functions of predictions and golds (PAPERS.md sections 1-3).

(Why one module over 500 lines: every metric of PAPERS.md sections 1-3 is a small pure function, and keeping them
side by side keeps their shared conventions, below, in one place; about a third of it is formula docstrings. The
statistics of the knowledge report, bootstrap intervals, the exact McNemar test and calibration, sit at the end
under the same conventions.)

Conventions shared by every function here:

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
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from culturekb.errors import ConfigError, DataError

__all__ = [
    "INVALID",
    "ConfusionMatrix",
    "Box",
    "accuracy",
    "accuracy_by_group",
    "accuracy_grid",
    "align_predictions",
    "box_iou",
    "box_ious",
    "confusion_matrix",
    "cross_lingual_variance",
    "iou_accuracy",
    "macro_average",
    "majority_baseline_accuracy",
    "majority_labels",
    "mean_by_group",
    "mean_iou_by_group",
    "mean_score",
    "prediction_propensity",
    "prediction_propensity_by_group",
    "quadrant_bias",
    "quadrant_bias_by_group",
    "rank_average",
    "sea_lave",
    "spearman",
    "spearman_agreement",
    "western_group",
    # statistics of the knowledge report: intervals, paired tests, calibration
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

logger = logging.getLogger(__name__)

NAN = float("nan")
INVALID = "invalid"
"""Name of the confusion-matrix column that counts invalid (None or out-of-list) predictions."""

Box = Sequence[float]
"""A box [x1, y1, x2, y2] in one coordinate system (absolute pixels or normalised, the same for both boxes)."""

K = TypeVar("K", bound=Hashable)
R = TypeVar("R")


# -- helpers ------------------------------------------------------------------------------------------------


def _check_aligned(name_a: str, a: Sequence[Any], name_b: str, b: Sequence[Any], where: str) -> None:
    if len(a) != len(b):
        raise DataError(
            f"{where}: {name_a} has {len(a)} items but {name_b} has {len(b)}; pass one {name_a[:-1]} per "
            f"{name_b[:-1]}, in the same order"
        )


def _check_golds(golds: Sequence[str | None], where: str) -> None:
    for i, g in enumerate(golds):
        if g is None:
            raise DataError(f"{where}: gold label at position {i} is None; every scored item needs a gold label")


def _sorted_dict(d: Mapping[K, Any]) -> dict[K, Any]:
    return {k: d[k] for k in sorted(d, key=str)}


def _group_indices(groups: Sequence[K]) -> dict[K, list[int]]:
    out: dict[K, list[int]] = defaultdict(list)
    for i, g in enumerate(groups):
        out[g].append(i)
    return _sorted_dict(out)


def _per_group(metric: Callable[[list[str | None], list[str | None]], R], preds: Sequence[str | None],
               golds: Sequence[str | None], groups: Sequence[K], where: str) -> dict[K, R]:
    """`metric(preds, golds)` over the items of each group that occurs (groups in first-seen order)."""
    _check_aligned("preds", preds, "golds", golds, where)
    _check_aligned("preds", preds, "groups", groups, where)
    return {g: metric([preds[i] for i in idx], [golds[i] for i in idx]) for g, idx in _group_indices(groups).items()}


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
    _check_aligned("preds", preds, "golds", golds, "accuracy")
    _check_golds(golds, "accuracy")
    if not golds:
        return NAN
    return sum(1 for p, g in zip(preds, golds, strict=True) if p is not None and p == g) / len(golds)


def accuracy_by_group(
    preds: Sequence[str | None], golds: Sequence[str | None], groups: Sequence[K]
) -> dict[K, float]:
    """Accuracy per group (culture, language, 'western'/'non-western' ...); only groups that occur."""
    return _per_group(accuracy, preds, golds, groups, "accuracy_by_group")


def accuracy_grid(
    preds: Sequence[str | None],
    golds: Sequence[str | None],
    rows: Sequence[K],
    cols: Sequence[K],
) -> dict[K, dict[K, float]]:
    """Accuracy for every (row, col) pair, e.g. the prompt-language x data-language grid.

    The grid is the full rectangle of the row and column values that occur; a cell with no items is NaN.
    """
    _check_aligned("preds", preds, "golds", golds, "accuracy_grid")
    _check_aligned("preds", preds, "rows", rows, "accuracy_grid")
    _check_aligned("preds", preds, "cols", cols, "accuracy_grid")
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
    _check_aligned("preds", preds, "golds", golds, "confusion_matrix")
    _check_golds(golds, "confusion_matrix")
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
    _check_aligned("xs", x, "ys", y, "spearman")
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


# -- Cedar: propensity and Russell quadrant bias -------------------------------------------------------------------


def prediction_propensity(
    preds: Sequence[str | None], golds: Sequence[str | None], labels: Sequence[str]
) -> dict[str, float]:
    """rho_e(S) = N_S(pred = e) / N_S(gold = e) for each e in `labels` (GEPP on the whole set).

    1 means the label is predicted as often as it is true, above 1 over-predicted. A label with no gold items
    gives NaN (even when it is predicted). None predictions count for no label.
    """
    _check_aligned("preds", preds, "golds", golds, "prediction_propensity")
    _check_golds(golds, "prediction_propensity")
    n_pred = Counter(p for p in preds if p is not None)
    n_gold = Counter(golds)
    return {e: (n_pred[e] / n_gold[e] if n_gold[e] else NAN) for e in labels}


def prediction_propensity_by_group(
    preds: Sequence[str | None], golds: Sequence[str | None], groups: Sequence[K], labels: Sequence[str]
) -> dict[K, dict[str, float]]:
    """rho_e per group, e.g. per language (LSEPP)."""
    return _per_group(lambda p, g: prediction_propensity(p, g, labels), preds, golds, groups,
                      "prediction_propensity_by_group")


def _quadrant_lookup(quadrants: Mapping[str, Sequence[str]]) -> dict[str, str]:
    lookup: dict[str, str] = {}
    for q, labs in quadrants.items():
        for lab in labs:
            if lab in lookup:
                raise ConfigError(f"quadrant_bias: label {lab!r} is in quadrants {lookup[lab]} and {q}; "
                                  "each label belongs to one quadrant")
            lookup[lab] = q
    if not lookup:
        raise ConfigError("quadrant_bias: no quadrants given; pass e.g. get_scheme('cedar14').quadrants")
    return lookup


def quadrant_bias(
    preds: Sequence[str | None], golds: Sequence[str | None], quadrants: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """beta_q(S) = (N_S(pred in q) - N_S(gold in q)) / sum_k N_S(gold in k) x 100, per quadrant (GRQB).

    `quadrants` maps quadrant name -> labels (an `EmotionScheme.quadrants`). None predictions, and labels in
    no quadrant, fall in no quadrant, so invalid answers push every bias down. No gold in any quadrant: NaN.
    """
    _check_aligned("preds", preds, "golds", golds, "quadrant_bias")
    _check_golds(golds, "quadrant_bias")
    lookup = _quadrant_lookup(quadrants)
    n_pred = Counter(lookup[p] for p in preds if p is not None and p in lookup)
    n_gold = Counter(lookup[g] for g in golds if g in lookup)
    total = sum(n_gold.values())
    return {q: ((n_pred[q] - n_gold[q]) / total * 100 if total else NAN) for q in quadrants}


def quadrant_bias_by_group(
    preds: Sequence[str | None],
    golds: Sequence[str | None],
    groups: Sequence[K],
    quadrants: Mapping[str, Sequence[str]],
) -> dict[K, dict[str, float]]:
    """beta_q per group, e.g. per language (LSRQB)."""
    return _per_group(lambda p, g: quadrant_bias(p, g, quadrants), preds, golds, groups, "quadrant_bias_by_group")


# -- RICE-VL: SEA-LAVE and grounding --------------------------------------------------------------------------------


def _judge_score(name: str, value: Any, allowed: tuple[int, ...]) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value not in allowed:
        raise DataError(f"sea_lave: {name}={value!r} is out of range; the judge must give one of {list(allowed)}")
    return int(value)


def sea_lave(tu: float, cu: float, ci: float) -> float:
    """SEA-LAVE of one item: (TU + CU + CI / 2) / 3, in [0, 1].

    TU (text understanding) and CU (cultural understanding) are 0 or 1; CI (country identification) is 0, 1 or
    2. Any other value (including bools and NaN) raises `DataError`.
    """
    t = _judge_score("TU", tu, (0, 1))
    c = _judge_score("CU", cu, (0, 1))
    i = _judge_score("CI", ci, (0, 1, 2))
    return (t + c + i / 2) / 3


def mean_score(values: Sequence[float]) -> float:
    """Arithmetic mean; empty: NaN; a NaN value propagates (a failure must be scored, e.g. as 0, to be counted)."""
    return sum(values) / len(values) if values else NAN


def mean_by_group(values: Sequence[float], groups: Sequence[K]) -> dict[K, float]:
    """Mean of per-item scores per group (SEA-LAVE per country or category, IoU per group ...)."""
    _check_aligned("values", values, "groups", groups, "mean_by_group")
    return {g: mean_score([values[i] for i in idx]) for g, idx in _group_indices(groups).items()}


def _check_box(box: Box, what: str) -> tuple[float, float, float, float]:
    if len(box) != 4:
        raise DataError(f"box_iou: {what} box {list(box)!r} has {len(box)} values; expected [x1, y1, x2, y2]")
    x1, y1, x2, y2 = (float(v) for v in box)
    if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
        raise DataError(f"box_iou: {what} box {list(box)!r} has a non-finite coordinate")
    return x1, y1, x2, y2


def box_iou(pred: Box | None, gold: Box) -> float:
    """IoU = area(pred ∩ gold) / area(pred ∪ gold) of two [x1, y1, x2, y2] boxes.

    A missing (unparsed) prediction or a degenerate box (x2 <= x1 or y2 <= y1, zero area) on either side
    scores 0.0. Boxes are not clipped to the image: pass them in the same coordinate system.
    """
    g = _check_box(gold, "gold")
    if pred is None:
        return 0.0
    p = _check_box(pred, "predicted")
    if p[2] <= p[0] or p[3] <= p[1] or g[2] <= g[0] or g[3] <= g[1]:
        return 0.0
    iw = min(p[2], g[2]) - max(p[0], g[0])
    ih = min(p[3], g[3]) - max(p[1], g[1])
    inter = iw * ih if iw > 0 and ih > 0 else 0.0
    union = (p[2] - p[0]) * (p[3] - p[1]) + (g[2] - g[0]) * (g[3] - g[1]) - inter
    return inter / union


def box_ious(preds: Sequence[Box | None], golds: Sequence[Box]) -> list[float]:
    """IoU per item; see `box_iou`."""
    _check_aligned("preds", preds, "golds", golds, "box_ious")
    return [box_iou(p, g) for p, g in zip(preds, golds, strict=True)]


def mean_iou_by_group(preds: Sequence[Box | None], golds: Sequence[Box], groups: Sequence[K]) -> dict[K, float]:
    """Mean IoU per group (country, category)."""
    return mean_by_group(box_ious(preds, golds), groups)


def iou_accuracy(ious: Sequence[float], threshold: float = 0.5) -> float:
    """Fraction of items with IoU >= `threshold` (Acc@0.5 by default); empty: NaN."""
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"iou_accuracy: threshold {threshold} is outside [0, 1]")
    return sum(1 for v in ious if v >= threshold) / len(ious) if ious else NAN


# -- majority-class baseline -----------------------------------------------------------------------------------------


def majority_labels(
    labels: Sequence[str | None], groups: Sequence[K], order: Sequence[str] | None = None
) -> dict[K, str]:
    """The most frequent training label per group (culture).

    Ties go to the label that comes first in `order` (the scheme's label order) when given, else to the
    alphabetically first label. None labels are skipped; a group with only None labels is left out.
    """
    _check_aligned("labels", labels, "groups", groups, "majority_labels")
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
    return _sorted_dict(out)


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
    _check_aligned("test_golds", test_golds, "test_groups", test_groups, "majority_baseline_accuracy")
    majority = majority_labels(train_labels, train_groups, order)
    unseen = sorted({g for g in test_groups if g not in majority}, key=str)
    if unseen:
        logger.warning("majority baseline: cultures %s have no training labels; their items are scored wrong", unseen)
    return accuracy([majority.get(g) for g in test_groups], test_golds)


# -- statistics of the knowledge report: bootstrap intervals, paired tests, calibration -------------------------------


def correctness(preds: Sequence[str | None], golds: Sequence[str | None]) -> list[bool]:
    """Per item, whether pred == gold (a None prediction is wrong): the input of the interval and paired tests."""
    _check_aligned("preds", preds, "golds", golds, "correctness")
    _check_golds(golds, "correctness")
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
    _check_aligned("correct_a", correct_a, "correct_b", correct_b, "paired_bootstrap_difference")
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

    _check_aligned("correct_a", correct_a, "correct_b", correct_b, "mcnemar_exact")
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
    _check_aligned("confidences", confidences, "correct", correct, where)
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
    _check_aligned("probabilities", probabilities, "golds", golds, where)
    _check_golds(golds, where)


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
