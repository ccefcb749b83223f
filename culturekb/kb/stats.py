"""What a KB holds, per culture, and where the cultures diverge on the same concept.

Divergence score (`divergence`): for a concept present in two or more cultures whose dominant emotions are not all
the same,

    JSD   = mean over culture pairs (a, b) of the Jensen–Shannon divergence of P_a and P_b, base 2, in [0, 1]
    score = JSD * m / (m + k)

where ``m`` is the smallest support among those cultures and ``k`` (`shrinkage`, default 2) discounts concepts
seen in very few images: a split on one image per culture (m = 1) keeps a third of its JSD, one on 20 images
keeps 91%. Ties rank by concept name.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from culturekb._tables import markdown_table
from culturekb.errors import ConfigError
from culturekb.kb.distribution import js_bits
from culturekb.kb.schema import KnowledgeTuple
from culturekb.kb.stimulus import DEFAULT_STIMULUS_KIND, kb_stimulus_kind, stimulus_noun
from culturekb.kb.store import KnowledgeBase

__all__ = [
    "Divergence",
    "SUPPORT_BINS",
    "kb_stats",
    "divergence",
    "jensen_shannon",
    "render_stats_markdown",
]

SUPPORT_BINS: tuple[tuple[int, str], ...] = ((1, "1"), (2, "2"), (3, "3-4"), (5, "5-9"), (10, "10-19"), (20, "20+"))
"""(lower edge, name) of each support-histogram bin; a bin runs to the next lower edge."""


@dataclass(frozen=True)
class Divergence:
    """A concept on which cultures disagree: each culture's dominant label, distribution and support."""

    concept: str
    score: float
    jsd: float
    """Mean pairwise Jensen–Shannon divergence (base 2) of the cultures' distributions."""
    cultures: tuple[str, ...]
    labels: dict[str, str]
    distributions: dict[str, dict[str, float]]
    supports: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        """JSON form of the divergence."""
        return {
            "concept": self.concept,
            "score": self.score,
            "jsd": self.jsd,
            "cultures": list(self.cultures),
            "labels": dict(self.labels),
            "distributions": {c: dict(d) for c, d in self.distributions.items()},
            "supports": dict(self.supports),
        }


def _support_histogram(supports: Sequence[int]) -> dict[str, int]:
    edges = np.array([lo for lo, _ in SUPPORT_BINS])
    idx = np.searchsorted(edges, np.asarray(supports, dtype=np.int64), side="right") - 1
    counts = np.bincount(idx[idx >= 0], minlength=len(SUPPORT_BINS))
    return {name: int(n) for (_, name), n in zip(SUPPORT_BINS, counts.tolist(), strict=True)}


def _culture_stats(tuples: list[KnowledgeTuple], labels: Sequence[str]) -> dict[str, Any]:
    supports = [t.support for t in tuples]
    label_counts = Counter(t.label for t in tuples)
    return {
        "tuples": len(tuples),
        "rationales": sum(len(t.rationales) for t in tuples),
        "flagged": sum(t.flagged for t in tuples),
        "pending": sum(t.status == "pending" for t in tuples),
        "status": dict(sorted(Counter(t.status for t in tuples).items())),
        "mean_support": float(np.mean(supports)) if supports else 0.0,
        "median_support": float(np.median(supports)) if supports else 0.0,
        "support_histogram": _support_histogram(supports),
        "labels": {lab: label_counts.get(lab, 0) for lab in labels},
    }


def kb_stats(kb: KnowledgeBase) -> dict[str, Any]:
    """Counts of the whole KB and per culture: tuples, rationales, flagged, pending, support histogram, labels."""
    labels = list(kb.scheme.labels)
    by_culture: dict[str, list[KnowledgeTuple]] = {c: [] for c in kb.cultures}
    cultures_of: dict[str, set[str]] = {}
    for t in kb:
        by_culture.setdefault(t.culture, []).append(t)
        cultures_of.setdefault(t.concept, set()).add(t.culture)
    overall = _culture_stats(list(kb), labels)
    return {
        "kb_version": kb.version,
        "label_scheme": kb.scheme.name,
        "stimulus_kind": kb_stimulus_kind(kb),
        "labels": labels,
        "concepts": len(cultures_of),
        "shared_concepts": sum(len(cs) >= 2 for cs in cultures_of.values()),
        **{k: overall[k] for k in ("tuples", "rationales", "flagged", "pending", "support_histogram", "labels")},
        "cultures": {c: _culture_stats(ts, labels) for c, ts in sorted(by_culture.items())},
    }


def jensen_shannon(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    """Jensen–Shannon divergence of two distributions, base 2 (0 = identical, 1 = disjoint support).

    Inputs are normalised; a vector without mass counts as disjoint from one with mass (0.5, half of its KL terms
    vanish) and equal to another without mass (0). Otherwise `js_bits` (scipy)."""
    a = np.asarray(p, dtype=np.float64)
    b = np.asarray(q, dtype=np.float64)
    if a.sum() <= 0 or b.sum() <= 0:
        return 0.0 if a.sum() <= 0 and b.sum() <= 0 else 0.5
    return js_bits(a, b)


def divergence(
    kb: KnowledgeBase,
    top: int | None = 20,
    *,
    shrinkage: float = 2.0,
    min_support: int = 1,
    cultures: Iterable[str] | None = None,
    include_rejected: bool = False,
) -> list[Divergence]:
    """Concepts in >= 2 cultures whose dominant emotions differ, ranked by the score in the module docstring.

    Tuples with support below `min_support`, of other `cultures`, or rejected by a reviewer (unless
    `include_rejected`) are ignored. `top=None` returns all.
    """
    if shrinkage < 0:
        raise ConfigError(f"shrinkage must be >= 0, got {shrinkage}")
    if top is not None and top < 0:
        raise ConfigError(f"top must be >= 0 or None, got {top}")
    wanted = set(cultures) if cultures is not None else None
    labels = list(kb.scheme.labels)
    by_concept: dict[str, list[KnowledgeTuple]] = {}
    for t in kb:
        if t.support < min_support or (wanted is not None and t.culture not in wanted):
            continue
        if t.status == "rejected" and not include_rejected:
            continue
        by_concept.setdefault(t.concept, []).append(t)
    out: list[Divergence] = []
    for concept, ts in by_concept.items():
        if len(ts) < 2 or len({t.label for t in ts}) < 2:
            continue
        ts = sorted(ts, key=lambda t: t.culture)
        vecs = [np.array([t.distribution.get(lab, 0.0) for lab in labels]) for t in ts]
        pairs = list(itertools.combinations(range(len(ts)), 2))
        jsd = float(np.mean([jensen_shannon(vecs[i], vecs[j]) for i, j in pairs]))
        m = min(t.support for t in ts)
        score = jsd * m / (m + shrinkage) if (m + shrinkage) > 0 else jsd
        out.append(
            Divergence(
                concept=concept,
                score=score,
                jsd=jsd,
                cultures=tuple(t.culture for t in ts),
                labels={t.culture: t.label for t in ts},
                distributions={t.culture: {lab: float(t.distribution.get(lab, 0.0)) for lab in labels} for t in ts},
                supports={t.culture: t.support for t in ts},
            )
        )
    out.sort(key=lambda d: (-d.score, d.concept))
    return out if top is None else out[:top]


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    """The table's Markdown lines through the one renderer (`culturekb._tables.markdown_table`): a table wider than
    16 columns (the dominant emotions of a wide label set) is written on its side."""
    return markdown_table(list(header), [list(r) for r in rows]).splitlines()


def render_stats_markdown(stats: dict[str, Any], divergences: Sequence[Divergence] = ()) -> str:
    """A Markdown report of `kb_stats` output and `divergence` results (sections at level 2, no title)."""
    cultures: dict[str, dict[str, Any]] = stats.get("cultures", {})
    labels: list[str] = stats.get("labels", [])
    out = [
        f"KB `{stats.get('kb_version', '?')}`, label scheme `{stats.get('label_scheme', '?')}`: "
        f"{stats.get('tuples', 0)} tuples, "
        f"{stats.get('rationales', 0)} rationales, {stats.get('concepts', 0)} concepts "
        f"({stats.get('shared_concepts', 0)} in two or more cultures), {stats.get('flagged', 0)} flagged, "
        f"{stats.get('pending', 0)} pending review.",
        "",
        "## Per culture",
        "",
        *_table(
            ["culture", "tuples", "rationales", "flagged", "pending", "mean support", "median support"],
            (
                [c, s["tuples"], s["rationales"], s["flagged"], s["pending"], f"{s['mean_support']:.2f}",
                 f"{s['median_support']:.1f}"]
                for c, s in cultures.items()
            ),
        ),
        "",
        f"## Support ({stimulus_noun(stats.get('stimulus_kind', DEFAULT_STIMULUS_KIND))} per concept)",
        "",
        *_table(
            ["culture", *(name for _, name in SUPPORT_BINS)],
            ([c, *s["support_histogram"].values()] for c, s in cultures.items()),
        ),
        "",
        "## Dominant emotions",
        "",
        *_table(["culture", *labels], ([c, *(s["labels"].get(lab, 0) for lab in labels)] for c, s in cultures.items())),
        "",
    ]
    if divergences:
        out += [
            "## Where the cultures diverge",
            "",
            "Ranked by mean pairwise Jensen–Shannon divergence times m/(m+k), m = smallest support.",
            "",
        ]
        rows = []
        for d in divergences:
            per = "; ".join(
                f"{c}: {d.labels[c]} ({d.distributions[c][d.labels[c]]:.2f}, n={d.supports[c]})" for c in d.cultures
            )
            rows.append([d.concept, f"{d.score:.3f}", f"{d.jsd:.3f}", per])
        out += [*_table(["concept", "score", "JSD", "dominant emotion per culture (P, support)"], rows), ""]
    return "\n".join(out)
