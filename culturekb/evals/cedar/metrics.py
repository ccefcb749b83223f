"""Cedar's own metrics (PAPERS.md section 2): prediction propensity (GEPP, LSEPP) and Russell quadrant bias
(GRQB, LSRQB), pure functions under the conventions of `culturekb.evals.metrics`; the bias is in percent, as in
the Cedar paper.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from culturekb.errors import ConfigError
from culturekb.evals._metric_inputs import NAN, K, check_aligned, check_golds, per_group

__all__ = ["prediction_propensity", "prediction_propensity_by_group", "quadrant_bias", "quadrant_bias_by_group"]


def prediction_propensity(
    preds: Sequence[str | None], golds: Sequence[str | None], labels: Sequence[str]
) -> dict[str, float]:
    """rho_e(S) = N_S(pred = e) / N_S(gold = e) for each e in `labels` (GEPP on the whole set).

    1 means the label is predicted as often as it is true, above 1 over-predicted. A label with no gold items
    gives NaN (even when it is predicted). None predictions count for no label.
    """
    check_aligned("preds", preds, "golds", golds, "prediction_propensity")
    check_golds(golds, "prediction_propensity")
    n_pred = Counter(p for p in preds if p is not None)
    n_gold = Counter(golds)
    return {e: (n_pred[e] / n_gold[e] if n_gold[e] else NAN) for e in labels}


def prediction_propensity_by_group(
    preds: Sequence[str | None], golds: Sequence[str | None], groups: Sequence[K], labels: Sequence[str]
) -> dict[K, dict[str, float]]:
    """rho_e per group, e.g. per language (LSEPP)."""
    return per_group(lambda p, g: prediction_propensity(p, g, labels), preds, golds, groups,
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
    check_aligned("preds", preds, "golds", golds, "quadrant_bias")
    check_golds(golds, "quadrant_bias")
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
    return per_group(lambda p, g: quadrant_bias(p, g, quadrants), preds, golds, groups, "quadrant_bias_by_group")
