"""What a tuple's emotion distribution says, and how sure it is: counts, intervals, informativeness, readable text.

A tuple of support n keeps P(e) over the scheme's labels (Eq. 1), so its counts are n * P(e). From those:

* **Wilson score interval** of the dominant share (95% by default): the uncertainty shown beside "mostly fear
  (7/10)". It stays inside [0, 1] and is sensible for small n, unlike the normal approximation.
* **Dirichlet posterior** (`posterior`): (counts + alpha * prior) / (n + alpha), the tuple's distribution shrunk
  toward its culture's label prior with strength alpha (alpha pseudo-observations). This is what the calibrated
  KB prior combines (`culturekb.inference.calibration`).
* **Informativeness** (`informativeness`): n * KL(P || prior) in nats, i.e. half the G statistic of the
  likelihood-ratio test "this concept's labels are drawn from the culture prior". A concept whose distribution
  equals the prior scores 0 whatever its support; a thin concept (small n) scores little even when its P(e) is
  extreme. The calibration chooses a threshold on it on the valid split.
* **Jensen-Shannon divergence** (base 2, in [0, 1]) between two distributions, for comparing cultures and for
  scoring a KB against held-out annotator distributions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy.typing as npt

__all__ = [
    "counts_of",
    "wilson_interval",
    "posterior",
    "kl_divergence",
    "informativeness",
    "js_divergence",
    "js_bits",
    "top_labels",
    "describe",
    "normalise",
]

Dist = Mapping[str, float]


def counts_of(distribution: Dist, support: int) -> dict[str, int]:
    """Integer counts per label (support times probability, rounded); labels with no count are left out."""
    out = {lab: int(round(p * support)) for lab, p in distribution.items()}
    return {lab: c for lab, c in out.items() if c > 0}


def wilson_interval(successes: float, n: float, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion `successes / n` (95% for the default z); (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def normalise(dist: Dist, labels: Sequence[str] | None = None) -> dict[str, float]:
    """`dist` over `labels` (default its own keys) scaled to sum to 1; uniform when it is all zero."""
    labels = list(labels) if labels is not None else list(dist)
    total = sum(max(0.0, float(dist.get(lab, 0.0))) for lab in labels)
    if total <= 0:
        return {lab: 1.0 / len(labels) for lab in labels} if labels else {}
    return {lab: max(0.0, float(dist.get(lab, 0.0))) / total for lab in labels}


def posterior(distribution: Dist, support: int, prior: Dist, alpha: float) -> dict[str, float]:
    """Dirichlet posterior mean with the prior as base measure: (n P(e) + alpha prior(e)) / (n + alpha)."""
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    n = float(support)
    labels = list(prior) or list(distribution)
    if n + alpha <= 0:
        return normalise(prior, labels)
    return {lab: (n * float(distribution.get(lab, 0.0)) + alpha * float(prior.get(lab, 0.0))) / (n + alpha)
            for lab in labels}


def kl_divergence(p: Dist, q: Dist, eps: float = 1e-12) -> float:
    """KL(p || q) in nats over p's labels; q is floored at `eps` so a label q never saw does not give infinity."""
    total = 0.0
    for lab, pv in p.items():
        if pv > 0:
            total += pv * math.log(pv / max(float(q.get(lab, 0.0)), eps))
    return max(0.0, total)


def informativeness(distribution: Dist, support: int, prior: Dist) -> float:
    """n * KL(P || prior) in nats (half the likelihood-ratio G statistic against "labels follow the prior")."""
    return float(support) * kl_divergence(distribution, prior)


def js_bits(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    """Jensen-Shannon divergence in bits of two non-negative vectors with mass (each normalised), in [0, 1].

    `scipy.spatial.distance.jensenshannon` returns the Jensen-Shannon *distance* (the square root), so it is
    squared here; base 2 makes disjoint supports exactly 1."""
    from scipy.spatial.distance import jensenshannon  # 0.26 s to import; lookups that never compare skip it

    return max(0.0, min(1.0, float(jensenshannon(p, q, base=2.0)) ** 2))


def js_divergence(p: Dist, q: Dist) -> float:
    """Jensen-Shannon divergence in bits (0: same distribution, 1: disjoint), over the union of labels.

    Negative weights count as zero; a distribution without mass is uniform (see `normalise`)."""
    labels = list(dict.fromkeys([*p, *q]))
    if not labels:
        return 0.0
    pn, qn = normalise(p, labels), normalise(q, labels)
    return js_bits([pn[lab] for lab in labels], [qn[lab] for lab in labels])


def top_labels(distribution: Dist, k: int = 2, order: Sequence[str] | None = None) -> list[tuple[str, float]]:
    """The k labels of highest probability (> 0), ties in scheme `order` (default: the mapping's order)."""
    order = list(order) if order is not None else list(distribution)
    rank = {lab: i for i, lab in enumerate(order)}
    items = [(lab, float(p)) for lab, p in distribution.items() if p > 0]
    items.sort(key=lambda x: (-x[1], rank.get(x[0], len(rank))))
    return items[:k]


def describe(distribution: Dist, support: int, k: int = 2, order: Sequence[str] | None = None,
             translate: Mapping[str, str] | None = None) -> str:
    """``fear (7/10), awe (2/10)``: the top `k` labels with their counts out of the support.

    `translate` maps scheme labels to the words to show (a prompt language's label words)."""
    parts = []
    for lab, p in top_labels(distribution, k, order):
        word = translate.get(lab, lab) if translate else lab
        parts.append(f"{word} ({int(round(p * support))}/{support})")
    return ", ".join(parts)
