"""What one tuple's evidence says, in numbers and in words: counts, the dominant share's interval, review status.

Every place that shows a tuple (the knowledge block, `culturekb lookup`, ``/v1/lookup``, ``/v1/augment``,
``/v1/concepts``) takes these values from `tuple_evidence`, so the "fear (7/10)" a model reads is the "7 of 10"
a person or a service sees:

* `counts`: training images (or texts) per label, support times P(e) rounded (`culturekb.kb.distribution.counts_of`);
* `summary`: the tuple's label first, then the next labels with their counts, ``fear (7/10), awe (2/10)``, and
  when the label's count is shared a remark naming the tied labels and the tie-break that chose it
  (`culturekb.kb.lines.tuple_summary`, the one renderer of these lines), in the requested language;
* `tied`: the labels tied with the tuple's label (its own first; empty when there is no tie) and `tie_break`;
* `interval`: the 95% Wilson score interval of the dominant label's share, from its count and the support: wide
  for thin evidence (1/1 gives 21-100%), narrow for well-supported tuples;
* `review`: the tuple's review status (``accepted``: both judges agreed with the dominant emotion; ``approved``:
  a person approved it; ``pending``: a judge disagreed and nobody has reviewed it yet). Pending tuples are the
  unreviewed ones; blocks mark them (`unreviewed`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from culturekb.kb.distribution import counts_of, wilson_interval
from culturekb.kb.lines import tied_labels, tuple_summary
from culturekb.kb.schema import KnowledgeTuple
from culturekb.kb.schemes import EmotionScheme

__all__ = ["TupleEvidence", "tuple_evidence", "format_interval", "UNREVIEWED"]

UNREVIEWED = frozenset({"pending"})
"""Review statuses of tuples that no judge pair agreed on and no person has reviewed: shown as unreviewed."""


def format_interval(interval: tuple[float, float]) -> str:
    """``35-88%``: an interval of shares as whole percentages."""
    lo, hi = interval
    return f"{lo * 100:.0f}-{hi * 100:.0f}%"


@dataclass(frozen=True)
class TupleEvidence:
    """The numbers behind one tuple (see the module docstring); `to_dict` gives them as plain JSON values."""

    label: str
    distribution: Mapping[str, float]
    support: int
    counts: Mapping[str, int]
    interval: tuple[float, float]
    summary: str
    review: str
    tied: tuple[str, ...] = ()
    """The labels sharing the label's count, its own first (empty: no tie)."""
    tie_break: str | None = None
    """The build's tie-break that chose the label among `tied` (None without a tie)."""

    @property
    def unreviewed(self) -> bool:
        """True for a tuple nobody has reviewed although a judge disagreed (status ``pending``)."""
        return self.review in UNREVIEWED

    @property
    def interval_text(self) -> str:
        """The interval as ``35-88%``."""
        return format_interval(self.interval)

    def to_dict(self) -> dict[str, Any]:
        """Distribution, support, counts, interval [lo, hi] (rounded to 4 places), summary and review status."""
        return {"label": self.label, "distribution": dict(self.distribution), "support": self.support,
                "counts": dict(self.counts), "interval": [round(self.interval[0], 4), round(self.interval[1], 4)],
                "summary": self.summary, "review": self.review, "tied": list(self.tied), "tie_break": self.tie_break}


def tuple_evidence(t: KnowledgeTuple, scheme: EmotionScheme | None = None, language: str = "en",
                   k: int = 2, *, tie_break: str | None = None) -> TupleEvidence:
    """The evidence of `t`: its label and the next `k` - 1 labels in `summary` (`culturekb.kb.lines.tuple_summary`:
    in `language`'s label words when `scheme` is given and the language is not English; a tie of the label said,
    with the KB's `tie_break`) and the Wilson interval of its label's share."""
    counts = counts_of(t.distribution, t.support)
    order = list(scheme.labels) if scheme is not None else None
    tied = tuple(tied_labels(t, order))
    return TupleEvidence(
        label=t.label, distribution=dict(t.distribution), support=t.support, counts=counts,
        interval=wilson_interval(counts.get(t.label, 0), t.support),
        summary=tuple_summary(t, scheme=scheme, language=language, k=k, tie_break=tie_break),
        review=t.status, tied=tied, tie_break=(tie_break or "prior") if tied else None,
    )
