"""Dual-judge reverse validation (paper step 4) and the agreement statistic between the judges.

A verdict is in one of three states (`verdict_state`): the judge inferred the tuple's dominant emotion
("agrees"), another label ("disagrees"), or nothing, because the rationales held no evidence it could read: no
rationales at all, or no emotion word for the lexicon judge ("no-evidence", label None). A tuple is flagged when
a judge does not agree (as before: a judge without evidence did not confirm it); the outcome counts separately the
flagged tuples that a judge contradicted and those that no judge could read. Cohen's kappa between the judges
leaves out the tuples where both found no evidence: two abstentions say nothing about how the judges agree, and
counting them as agreement gave a kappa of 1.0 for a KB whose rationales were all empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from culturekb.builders.base import Judge, JudgeInput
from culturekb.errors import ConfigError
from culturekb.kb.schema import JudgeVerdict, KnowledgeTuple

__all__ = [
    "Policy",
    "POLICIES",
    "ValidationOutcome",
    "VerdictState",
    "apply_verdicts",
    "cohen_kappa",
    "judge_inputs",
    "run_judges",
    "verdict_state",
]

Policy = Literal["drop", "pending", "keep"]
POLICIES: tuple[str, ...] = ("drop", "pending", "keep")
"""drop: remove flagged tuples; pending: keep them with status 'pending' for human review; keep: keep all."""


VerdictState = Literal["agrees", "disagrees", "no-evidence"]


def verdict_state(verdict: JudgeVerdict) -> VerdictState:
    """What a verdict says: the dominant emotion, another label, or no evidence (label None)."""
    if verdict.label is None:
        return "no-evidence"
    return "agrees" if verdict.agrees else "disagrees"


@dataclass(frozen=True)
class ValidationOutcome:
    """Tuples after reverse validation, with how many were judged, flagged and dropped, and the judges' kappa.

    `disagreed`: flagged tuples that some judge gave another label; `no_evidence`: tuples that no judge found
    evidence for (every verdict "no-evidence", or no verdicts); `no_evidence_by_judge`: judge id -> its
    "no-evidence" verdicts; `kappa_items`: the tuples kappa was computed over (at least one judge had evidence).
    """

    tuples: list[KnowledgeTuple]
    flagged: int
    dropped: int
    kappa: float | None
    judged: int
    disagreed: int = 0
    no_evidence: int = 0
    no_evidence_by_judge: dict[str, int] = field(default_factory=dict)
    kappa_items: int = 0


def judge_inputs(tuples: Sequence[KnowledgeTuple]) -> list[JudgeInput]:
    """What the judges see of each tuple: concept, culture and rationales, and the dominant emotion to check."""
    return [JudgeInput(t.concept, t.culture, tuple(t.rationales), t.label) for t in tuples]


def cohen_kappa(a: Sequence[str | None], b: Sequence[str | None]) -> float | None:
    """Cohen's kappa of two raters over the same items; None (no verdict) is a category of its own.

    Returns None for no items; 1.0 when both raters always give the one same category (no chance to disagree;
    scikit-learn's `cohen_kappa_score` answers NaN there). Otherwise `sklearn.metrics.cohen_kappa_score`.
    """
    if len(a) != len(b):
        raise ValueError(f"kappa needs paired ratings, got {len(a)} and {len(b)}")
    if not a:
        return None
    ra, rb = [str(x) for x in a], [str(y) for y in b]
    if len(set(ra) | set(rb)) == 1:
        return 1.0
    from sklearn.metrics import cohen_kappa_score  # ~1 s to import: only when a build has judges to compare

    return float(cohen_kappa_score(ra, rb))


def apply_verdicts(
    tuples: Sequence[KnowledgeTuple],
    verdicts: Sequence[Sequence[JudgeVerdict]],
    policy: str = "pending",
) -> ValidationOutcome:
    """Attach each tuple's verdicts; flag it when ANY judge does not agree; apply the policy.

    Tuples without rationales cannot be judged: they are flagged (the judges saw nothing to agree with) and
    counted under `no_evidence`, apart from the tuples a judge contradicted (`disagreed`). Kappa is computed over
    the tuples where at least one of the first two judges had evidence (None when there are none).
    """
    if policy not in POLICIES:
        raise ConfigError(f"unknown flag policy {policy!r}; use one of {list(POLICIES)}")
    out: list[KnowledgeTuple] = []
    flagged = dropped = disagreed = no_evidence = 0
    by_judge: dict[str, int] = {}
    for t, vs in zip(tuples, verdicts, strict=True):
        states = [verdict_state(v) for v in vs]
        for v, st in zip(vs, states, strict=True):
            if st == "no-evidence":
                by_judge[v.judge] = by_judge.get(v.judge, 0) + 1
        is_flagged = (not vs) or any(st != "agrees" for st in states)
        flagged += is_flagged
        disagreed += "disagrees" in states
        no_evidence += all(st == "no-evidence" for st in states)
        if is_flagged and policy == "drop":
            dropped += 1
            continue
        status = "pending" if (is_flagged and policy == "pending") else "accepted"
        out.append(t.model_copy(update={"verdicts": list(vs), "flagged": is_flagged, "status": status}))
    kappa = None
    pairs: list[tuple[str | None, str | None]] = []
    if verdicts and all(len(vs) >= 2 for vs in verdicts):
        pairs = [(vs[0].label, vs[1].label) for vs in verdicts if vs[0].label is not None or vs[1].label is not None]
        kappa = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])
    return ValidationOutcome(out, flagged, dropped, kappa, len(verdicts), disagreed, no_evidence, by_judge,
                             len(pairs))


def run_judges(judges: Sequence[Judge], tuples: Sequence[KnowledgeTuple]) -> list[list[JudgeVerdict]]:
    """Every judge over every tuple; result[i] holds tuple i's verdicts in judge order."""
    items = judge_inputs(tuples)
    per_judge = [j.judge(items) for j in judges]
    return [[pj[i] for pj in per_judge] for i in range(len(items))]
