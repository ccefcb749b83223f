"""Evaluation metrics as pure functions of predictions and golds (PAPERS.md sections 1-3).

(Why one module over 500 lines: every metric of PAPERS.md sections 1-3 is a small pure function, and keeping them
side by side keeps their shared conventions, below, in one place; about a third of it is formula docstrings.)

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
    """1-based ranks in ascending order; tied values share the average of the ranks they span."""
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


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson correlation of average ranks (ties handled).

    Fewer than two items, or a side whose values are all equal (zero rank variance): NaN.
    """
    _check_aligned("xs", x, "ys", y, "spearman")
    for name, seq in (("x", x), ("y", y)):
        if any(math.isnan(float(v)) for v in seq):
            raise DataError(f"spearman: {name} contains NaN; score every item or leave it out of both sides")
    n = len(x)
    if n < 2:
        return NAN
    rx, ry = rank_average(x), rank_average(y)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx)
    vy = sum((b - my) ** 2 for b in ry)
    if vx == 0 or vy == 0:
        return NAN
    return cov / math.sqrt(vx * vy)


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
