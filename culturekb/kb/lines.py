"""The one renderer of a tuple's label line: ``fear (7/10), awe (2/10)``, the tuple's own label always first.

Every place that shows a tuple's labels in words (the knowledge block and the cue blocks, `culturekb lookup`,
``/v1/lookup``, ``/v1/augment``, ``/v1/concepts``, `compare`, `inspect`, the demo and the notebook) calls
`tuple_summary`, so a person and a model read the same line:

* the tuple's label leads (the dominant label of Eq. (1), or the label a reviewer gave it), then the other labels
  by count, ties in the scheme's order;
* when the dominant count is shared, the line says so and which tie-break chose the label:
  ``neutral (1/3), joy (1/3) (tied: neutral, joy, sadness; neutral chosen as the most frequent in the culture)``,
  in the line's language (`culturekb/data/languages/lines/ties.json`; English where a language has no entry).

The tie-breaks are the build's (`BuildConfig.tie_break`, `culturekb.builders.association.label_priority`):
``prior`` (the label more frequent among the culture's concept occurrences, then the scheme's order) and
``scheme-order``. Callers pass the KB's (`kb_tie_break`).

To add a mark to every line (a review decision, say), add a keyword to `tuple_summary` and `TieNote`'s neighbours
here; callers then get it everywhere at once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from culturekb.kb.distribution import counts_of
from culturekb.kb.schema import KnowledgeTuple

if TYPE_CHECKING:
    from culturekb.kb.schemes import EmotionScheme
    from culturekb.kb.store import KnowledgeBase

__all__ = ["TIE_BREAKS", "TieNote", "distribution_table", "kb_tie_break", "review_note", "tie_note", "tied_labels",
           "tuple_summary"]

TIE_BREAKS = ("prior", "scheme-order")
"""The build's tie-breaks (`BuildConfig.tie_break`)."""

DEFAULT_TIE_BREAK = "prior"


def kb_tie_break(kb: KnowledgeBase | None) -> str:
    """The tie-break the KB was built with (``prior`` for a KB whose build config does not say)."""
    if kb is None:
        return DEFAULT_TIE_BREAK
    value = kb.build_config.get("tie_break") if isinstance(kb.build_config, Mapping) else None
    return str(value) if value in TIE_BREAKS else DEFAULT_TIE_BREAK


def tied_labels(t: KnowledgeTuple, order: Sequence[str] | None = None) -> list[str]:
    """The labels sharing the tuple's label's count (its own first, then the scheme's order); empty when the
    label's count is not shared or is not the highest."""
    counts = counts_of(t.distribution, t.support)
    own = counts.get(t.label, 0)
    if own <= 0 or any(c > own for c in counts.values()):
        return []
    rank = {lab: i for i, lab in enumerate(order or list(t.distribution))}
    others = sorted((lab for lab, c in counts.items() if c == own and lab != t.label),
                    key=lambda lab: rank.get(lab, len(rank)))
    return [t.label, *others] if others else []


@functools.lru_cache(maxsize=1)
def _phrases() -> dict[str, dict[str, str]]:
    path = resources.files("culturekb.data").joinpath("languages", "lines", "ties.json")
    raw: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return {k: v for k, v in raw.items() if not k.startswith("_") and isinstance(v, dict)}


@dataclass(frozen=True)
class TieNote:
    """A tie of the tuple's label: the tied labels (its own first) and the tie-break that chose it."""

    tied: tuple[str, ...]
    tie_break: str

    def text(self, language: str = "en", words: Mapping[str, str] | None = None) -> str:
        """The remark in `language` (English where it has none), labels shown with `words`."""
        phrases = _phrases()
        p = phrases.get(language) or phrases["en"]
        show = [words.get(lab, lab) if words else lab for lab in self.tied]
        choice = p.get(self.tie_break, p.get(DEFAULT_TIE_BREAK, "")).format(label=show[0])
        return p["note"].format(tied=p.get("joiner", ", ").join(show), choice=choice)


def tie_note(t: KnowledgeTuple, order: Sequence[str] | None = None, tie_break: str | None = None) -> TieNote | None:
    """The tuple's tie (None when its label's count is not shared)."""
    tied = tied_labels(t, order)
    return TieNote(tuple(tied), tie_break or DEFAULT_TIE_BREAK) if tied else None


def tuple_summary(
    t: KnowledgeTuple,
    *,
    scheme: EmotionScheme | None = None,
    language: str = "en",
    k: int = 2,
    tie_break: str | None = None,
    order: Sequence[str] | None = None,
) -> str:
    """``fear (7/10), awe (2/10)``: the tuple's label first, then the next `k` - 1 labels by count (ties in the
    scheme's order), each with its count out of the support, and a tie remark when the label's count is shared
    (a label a reviewer set gets the review remark instead: no tie-break chose it; the counts still show the tie).

    `scheme` gives the label order and, for a `language` other than English, the label words; `order` overrides
    the order (default: the scheme's labels, else the distribution's); `tie_break` is the KB's (`kb_tie_break`)."""
    order = list(order) if order is not None else list(scheme.labels) if scheme is not None else list(t.distribution)
    words: dict[str, str] | None = None
    if scheme is not None and language != "en":
        words = {lab: scheme.translate(lab, language) for lab in {*t.distribution, t.label}}
    counts = counts_of(t.distribution, t.support)
    rank = {lab: i for i, lab in enumerate(order)}
    rest = sorted((lab for lab, c in counts.items() if c > 0 and lab != t.label),
                  key=lambda lab: (-counts[lab], rank.get(lab, len(rank))))
    shown = [t.label, *rest][: max(k, 1)]
    text = ", ".join(f"{words.get(lab, lab) if words else lab} ({counts.get(lab, 0)}/{t.support})" for lab in shown)
    reviewed = review_note(t, language, words)
    note = None if reviewed else tie_note(t, order, tie_break)  # a reviewer's label was chosen by no tie-break
    return text + (note.text(language, words) if note is not None else "") + reviewed


def review_note(t: KnowledgeTuple, language: str = "en", words: Mapping[str, str] | None = None) -> str:
    """The remark of a tuple a reviewer relabelled (the review ledger, `culturekb.kb.ledger`), in `language`
    (`culturekb/data/languages/lines/review.json`; English where it has none); empty for any other tuple."""
    from culturekb.kb.ledger import relabelled

    before = relabelled(t)
    if before is None:
        return ""
    raw: dict[str, Any] = json.loads(resources.files("culturekb.data").joinpath(
        "languages", "lines", "review.json").read_text(encoding="utf-8"))
    phrase = (raw.get(language) or raw["en"])["relabelled"]
    return str(phrase).format(label=words.get(before, before) if words else before)


def distribution_table(tuples: Sequence[KnowledgeTuple], labels: Sequence[str], *, tie_break: str | None = None,
                       k: int = 3) -> str:
    """A Markdown table of `tuples`: concept, culture, support, the label line (`tuple_summary` with `k` labels, in
    the order of `labels`: the tuple's label leads and a tie or a review says so) and P(e) of each of `labels`
    (the notebook's table of the best-supported concepts)."""
    rows = ["| concept | culture | support | dominant | " + " | ".join(labels) + " |",
            "|---|---|---:|---|" + "---:|" * len(labels)]
    for t in tuples:
        line = tuple_summary(t, k=k, order=labels, tie_break=tie_break)
        rows.append(f"| {t.concept} | {t.culture} | {t.support} | {line} | "
                    + " | ".join(f"{t.distribution.get(lab, 0.0):.2f}" for lab in labels) + " |")
    return "\n".join(rows)
