"""What concept extraction left out, and why: the record behind the build report's `dropped_concepts`.

An extractor that reports its drops (`ReportsDrops`, e.g. the offline `TextConceptExtractor`) returns one
`Extraction` per sample: the concepts, and per reason the words that would otherwise have been candidates.
Plain stopwords (the `[stopwords]` lists), words too short to be concepts and words left out by their form (the
English -ing/-ed/-ly rules) are not recorded: they are the grammar of every sentence, not decisions worth a look.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from culturekb.errors import DataError
from culturekb.kb.schema import Sample

__all__ = ["DROP_REASONS", "Extraction", "ReportsDrops", "summarise_drops"]

DROP_REASONS: dict[str, str] = {
    "instruction": "a word of task instructions or answer formats (answer, option, picture ...)",
    "function": "a function word or expression the stopword list lacks (adverbs, auxiliaries, 'no matter', "
                "interjections, placeholders such as 'username')",
    "emotion": "an emotion word of the label schemes or of the language's word lists (it would name its label)",
    "name": "a person's name (an artist, author or speaker; a name particle or title; a capitalised unknown word)",
    "fragment": "a piece of Chinese text that the word list does not confirm as a word (a cross-word piece)",
    "non_concept": "a listed word that names the artwork or text itself, a judgement, a perception or a generic "
                   "thing (picture, beautiful, look, thing ...)",
}
"""Why a candidate was dropped, reason -> what it means (the build report's legend)."""


@dataclass(frozen=True)
class Extraction:
    """One sample's concepts and, per reason (`DROP_REASONS`), the distinct words dropped, in first-seen order."""

    concepts: list[str]
    dropped: dict[str, list[str]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The JSON form kept in the build's step cache."""
        return {"concepts": list(self.concepts), "dropped": {k: list(v) for k, v in self.dropped.items()}}

    @classmethod
    def from_json(cls, raw: Any) -> Extraction:
        """Read `as_json`'s form back (DataError for anything else)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("concepts"), list):
            raise DataError(f"cached concept extraction has an unexpected form: {str(raw)[:120]!r}; delete the "
                            "build cache (--cache-dir) and rebuild")
        dropped = raw.get("dropped") or {}
        return cls([str(c) for c in raw["concepts"]], {str(k): [str(w) for w in v] for k, v in dropped.items()})


@runtime_checkable
class ReportsDrops(Protocol):
    """A concept extractor that can say what it dropped and why."""

    id: str

    def extract_detailed(self, samples: Sequence[Sample]) -> list[Extraction]:
        """One `Extraction` per sample, in input order."""
        ...


def summarise_drops(samples: Sequence[Sample], extractions: Sequence[Extraction], top: int = 15
                    ) -> dict[str, Any]:
    """The build report's `dropped_concepts`: per culture and reason, how many (sample, word) drops there were,
    how many distinct words, and the `top` most frequent words with the number of samples that dropped them;
    plus the totals per reason and the reasons' legend."""
    per: dict[str, dict[str, Counter[str]]] = {}
    for s, ex in zip(samples, extractions, strict=True):
        by_reason = per.setdefault(s.culture, {})
        for reason, words in ex.dropped.items():
            by_reason.setdefault(reason, Counter()).update(set(words))
    order = {r: i for i, r in enumerate(DROP_REASONS)}
    cultures: dict[str, dict[str, Any]] = {}
    totals: Counter[str] = Counter()
    for culture in sorted(per):
        rows: dict[str, Any] = {}
        for reason in sorted(per[culture], key=lambda r: (order.get(r, len(order)), r)):
            counts = per[culture][reason]
            total = sum(counts.values())
            totals[reason] += total
            rows[reason] = {"count": total, "distinct": len(counts),
                            "top": [[w, n] for w, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))[:top]]}
        cultures[culture] = rows
    return {"reasons": dict(DROP_REASONS), "totals": dict(totals), "per_culture": cultures}
