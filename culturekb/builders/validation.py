"""Dual-judge reverse validation (paper step 4) and the agreement statistic between the judges."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from culturekb.builders.base import Judge, JudgeInput
from culturekb.errors import ConfigError
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple

__all__ = ["Policy", "POLICIES", "ValidationOutcome", "apply_verdicts", "cohen_kappa", "judge_inputs", "run_judges"]

Policy = Literal["drop", "pending", "keep"]
POLICIES: tuple[str, ...] = ("drop", "pending", "keep")
"""drop: remove flagged tuples; pending: keep them with status 'pending' for human review; keep: keep all."""


@dataclass(frozen=True)
class ValidationOutcome:
    """Tuples after reverse validation, with how many were judged, flagged and dropped, and the judges' kappa."""

    tuples: list[KnowledgeTuple]
    flagged: int
    dropped: int
    kappa: float | None
    judged: int


def judge_inputs(tuples: Sequence[KnowledgeTuple]) -> list[JudgeInput]:
    """What the judges see of each tuple: concept, culture and rationales, and the dominant emotion to check."""
    return [JudgeInput(t.concept, t.culture, tuple(t.rationales), t.label) for t in tuples]


def cohen_kappa(a: Sequence[str | None], b: Sequence[str | None]) -> float | None:
    """Cohen's kappa of two raters over the same items; None (no verdict) is a category of its own.

    Returns None for no items; 1.0 when both raters always give the one same category (no chance to disagree).
    """
    if len(a) != len(b):
        raise ValueError(f"kappa needs paired ratings, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return None
    cats = sorted({str(x) for x in a} | {str(x) for x in b})
    p_o = sum(str(x) == str(y) for x, y in zip(a, b, strict=True)) / n
    p_e = sum((sum(str(x) == c for x in a) / n) * (sum(str(y) == c for y in b) / n) for c in cats)
    if p_e >= 1.0:
        return 1.0
    return (p_o - p_e) / (1.0 - p_e)


def apply_verdicts(
    tuples: Sequence[KnowledgeTuple],
    verdicts: Sequence[Sequence[JudgeVerdict]],
    policy: str = "pending",
) -> ValidationOutcome:
    """Attach each tuple's verdicts; flag it when ANY judge disagrees; apply the policy.

    Tuples without rationales cannot be judged: they are flagged (the judges saw nothing to agree with).
    """
    if policy not in POLICIES:
        raise ConfigError(f"unknown flag policy {policy!r}; use one of {list(POLICIES)}")
    out: list[KnowledgeTuple] = []
    flagged = dropped = 0
    for t, vs in zip(tuples, verdicts, strict=True):
        is_flagged = (not vs) or any(not v.agrees for v in vs)
        flagged += is_flagged
        if is_flagged and policy == "drop":
            dropped += 1
            continue
        status = "pending" if (is_flagged and policy == "pending") else "accepted"
        out.append(t.model_copy(update={"verdicts": list(vs), "flagged": is_flagged, "status": status}))
    kappa = None
    if verdicts and all(len(vs) >= 2 for vs in verdicts):
        kappa = cohen_kappa([vs[0].label for vs in verdicts], [vs[1].label for vs in verdicts])
    return ValidationOutcome(out, flagged, dropped, kappa, len(verdicts))


def run_judges(judges: Sequence[Judge], tuples: Sequence[KnowledgeTuple]) -> list[list[JudgeVerdict]]:
    """Every judge over every tuple; result[i] holds tuple i's verdicts in judge order."""
    items = judge_inputs(tuples)
    per_judge = [j.judge(items) for j in judges]
    return [[pj[i] for pj in per_judge] for i in range(len(items))]
