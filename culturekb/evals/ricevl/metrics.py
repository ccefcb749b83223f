"""RICE-VL's own metrics (PAPERS.md section 3): SEA-LAVE of a judged answer, and box IoU for visual grounding,
pure functions under the conventions of `culturekb.evals.metrics`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from culturekb.errors import ConfigError, DataError
from culturekb.evals._metric_inputs import NAN, K, check_aligned
from culturekb.evals.metrics import mean_by_group

__all__ = ["Box", "box_iou", "box_ious", "iou_accuracy", "mean_iou_by_group", "sea_lave"]

Box = Sequence[float]
"""A box [x1, y1, x2, y2] in one coordinate system (absolute pixels or normalised, the same for both boxes)."""


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
    check_aligned("preds", preds, "golds", golds, "box_ious")
    return [box_iou(p, g) for p, g in zip(preds, golds, strict=True)]


def mean_iou_by_group(preds: Sequence[Box | None], golds: Sequence[Box], groups: Sequence[K]) -> dict[K, float]:
    """Mean IoU per group (country, category)."""
    return mean_by_group(box_ious(preds, golds), groups)


def iou_accuracy(ious: Sequence[float], threshold: float = 0.5) -> float:
    """Fraction of items with IoU >= `threshold` (Acc@0.5 by default); empty: NaN."""
    if not 0.0 <= threshold <= 1.0:
        raise ConfigError(f"iou_accuracy: threshold {threshold} is outside [0, 1]")
    return sum(1 for v in ious if v >= threshold) / len(ious) if ious else NAN
