"""Contracts of the build steps (paper steps 1, 3 and 4): concept extraction, rationales, judges.

`ConceptExtractor` lives in the text layer (`culturekb.text.concepts`) and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from culturekb.kb.schema import JudgeVerdict
from culturekb.text.concepts import ConceptExtractor

__all__ = ["ConceptExtractor", "RationaleRequest", "RationaleGenerator", "JudgeInput", "Judge"]


@dataclass(frozen=True)
class RationaleRequest:
    """Input of rationale generation (step 3, Eq. 2): a concept, a culture and its emotion distribution."""

    concept: str
    culture: str
    label: str
    distribution: dict[str, float]
    support: int
    evidence: tuple[str, ...] = field(default_factory=tuple)
    """Real training explanations of this culture for images with this concept and this label."""


@runtime_checkable
class RationaleGenerator(Protocol):
    """Writes the rationales of step 3: why a concept evokes its dominant emotion in a culture."""

    id: str

    def generate(self, requests: Sequence[RationaleRequest]) -> Sequence[list[str] | None]:
        """Short rationales per request, in input order (may be empty when nothing supports the label); None for a
        request a model gave no valid answer for, under a bad-answer policy of skip or flag."""
        ...


@dataclass(frozen=True)
class JudgeInput:
    """What a judge sees (only the rationales) and the label it is checked against."""

    concept: str
    culture: str
    rationales: tuple[str, ...]
    label: str


@runtime_checkable
class Judge(Protocol):
    """Infers the emotion from rationales alone (step 4, reverse validation)."""

    id: str

    def judge(self, items: Sequence[JudgeInput]) -> list[JudgeVerdict]:
        """One verdict per item; `agrees` is True when the inferred label equals `item.label`."""
        ...
