"""SEA-LAVE judges for RICE-VL VQA answers: the offline reference-matching judge and the judge-model one.

Each answer gets text understanding TU in {0, 1}, cultural understanding CU in {0, 1} and country identification
CI in {0, 1, 2}; ``SEA-LAVE = (TU + CU + CI / 2) / 3`` (PAPERS.md section 3). A judge answer that stays invalid
JSON after the re-asks, and a failed call, score 0 and are counted; nothing is dropped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from culturekb._io import stable_hash
from culturekb.errors import ConfigError, DataError
from culturekb.evals._judge_model import RubricJudgeModel
from culturekb.evals.loaders import normalise_truth
from culturekb.evals.ricevl.common import FORMATS, Region, load_template, mentions
from culturekb.evals.ricevl.metrics import sea_lave
from culturekb.kb.schema import Sample
from culturekb.models.base import ModelClient
from culturekb.models.json_output import complete_json_each
from culturekb.text.prompts import PromptTemplate

__all__ = ["JudgeScores", "ReferenceJudge", "SeaLaveJudge", "parse_judge_scores", "token_f1"]

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP = frozenset("a an the of and or in on at to for from is are was were be this that it its with by as".split())
_TRUTH = re.compile(r"\b(true|false|yes|no|correct|incorrect)\b", re.IGNORECASE)


@dataclass(frozen=True)
class JudgeScores:
    """One judge verdict: TU, CU, CI, and whether it could be read."""

    tu: int | None
    cu: int | None
    ci: int | None
    status: Literal["ok", "invalid", "error"] = "ok"
    justification: str = ""
    error: str | None = None

    @property
    def score(self) -> float:
        """SEA-LAVE of the item; a judge that failed scores 0."""
        if self.status != "ok" or self.tu is None or self.cu is None or self.ci is None:
            return 0.0
        return sea_lave(self.tu, self.cu, self.ci)


def _int_score(value: Any, name: str, allowed: tuple[int, ...]) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number in {list(allowed)}, got a boolean")
    if isinstance(value, str):
        value = value.strip()
        try:
            value = float(value)
        except ValueError as exc:
            raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}") from exc
    if not isinstance(value, int | float) or not math.isfinite(value) or value != int(value) \
            or int(value) not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return int(value)


def parse_judge_scores(obj: Any) -> tuple[int, int, int, str]:
    """(TU, CU, CI, justification) from a judge's JSON; raises ValueError naming what is wrong (for a re-ask)."""
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]
    if not isinstance(obj, dict):
        raise ValueError('expected a JSON object {"TU": 0|1, "CU": 0|1, "CI": 0|1|2, "justification": "..."}')
    keys = {re.sub(r"[\s\-]+", "_", str(k).strip().lower()): v for k, v in obj.items()}

    def pick(*names: str) -> Any:
        for n in names:
            if n in keys:
                return keys[n]
        raise KeyError(f"missing {names[0].upper()}; give TU, CU and CI")

    tu = _int_score(pick("tu", "text_understanding"), "TU", (0, 1))
    cu = _int_score(pick("cu", "cultural_understanding"), "CU", (0, 1))
    ci = _int_score(pick("ci", "country_identification"), "CI", (0, 1, 2))
    why = next((str(keys[k]) for k in ("justification", "reason", "explanation", "rationale") if k in keys), "")
    return tu, cu, ci, why.strip()


def _tokens(text: str) -> list[str]:
    return [t for t in _WORD.findall(text.lower()) if t not in _STOP]


def token_f1(answer: str, reference: str) -> float:
    """Token-overlap F1 of two texts (lower case, articles and a few function words removed).

    Both empty: 1.0; one empty: 0.0. Repeated tokens count as often as they occur in both.
    """
    a, r = _tokens(answer), _tokens(reference)
    if not a and not r:
        return 1.0
    if not a or not r:
        return 0.0
    common = sum((Counter(a) & Counter(r)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(a), common / len(r)
    return 2 * precision * recall / (precision + recall)


def _answer_truth(answer: str) -> str | None:
    m = _TRUTH.search(answer)
    return normalise_truth(m.group(1)) if m else None


class ReferenceJudge:
    """Offline stand-in for a judge model, by matching against the reference and country names.

    TU: tf, the first truth word of the answer equals the reference; qa/fill, the reference (or any of the item's
    ``reference_answers``, as a release such as BLEnD gives several) occurs in the answer or token F1 >=
    `f1_threshold`. CU: tf, equals TU; qa/fill, the answer names the item's sub-culture (when the
    item has one), else equals TU. CI: 2 when the answer names the item's country (for tf, also a correct
    verdict on a question that names it), 1 when it names another country of the region or the region, else 0.
    """

    def __init__(self, f1_threshold: float = 0.5) -> None:
        if not 0.0 < f1_threshold <= 1.0:
            raise ConfigError(f"f1_threshold must be in (0, 1], got {f1_threshold}")
        self.f1_threshold = f1_threshold
        self.id = f"reference-match:v1:f1{f1_threshold:g}"

    def _ci(self, sample: Sample, answer: str, region: Region, tu: int) -> int:
        _, own = region.terms(sample.culture)
        if mentions(answer, own):
            return 2
        fmt = sample.metadata.get("format")
        if fmt == "tf" and tu == 1 and mentions(sample.question or "", own):
            return 2
        others = [t for c in region.countries if c != sample.culture for t in region.terms(c)[1]]
        if mentions(answer, [*others, region.name.lower()]):
            return 1
        return 0

    def judge(self, items: Sequence[tuple[Sample, str]], region: Region) -> list[JudgeScores]:
        """One verdict per (item, answer), in order."""
        out = []
        for sample, answer in items:
            ref = str(sample.label or "")
            fmt = sample.metadata.get("format")
            if fmt == "tf":
                tu = int(_answer_truth(answer) == normalise_truth(ref))
                cu = tu
            else:
                refs = [str(r) for r in sample.metadata.get("reference_answers") or [ref]]
                said = " ".join(_tokens(answer))
                tu = int(any((" ".join(_tokens(r)) and " ".join(_tokens(r)) in said)
                             or token_f1(answer, r) >= self.f1_threshold for r in refs))
                sub = str(sample.metadata.get("sub_culture") or "").strip().lower()
                cu = int(mentions(answer, [sub])) if sub else tu
            ci = self._ci(sample, answer, region, tu)
            out.append(JudgeScores(tu, cu, ci, "ok", f"reference match (TU {tu}, CU {cu}, CI {ci})"))
        return out


class SeaLaveJudge(RubricJudgeModel):
    """A judge model scoring TU/CU/CI with the rubric of each question format, JSON validated with re-asks."""

    def __init__(self, client: ModelClient, *, retries: int = 2, template_dir: str | Path | None = None,
                 temperature: float = 0.0, max_tokens: int = 256) -> None:
        super().__init__(client, retries=retries, template_dir=template_dir, temperature=temperature,
                         max_tokens=max_tokens)
        self.templates = {fmt: self._template(fmt) for fmt in FORMATS}
        self.id = f"sealave:{client.id}:{stable_hash([t.sha for t in self.templates.values()])[:10]}:r{retries}"

    def _template(self, fmt: str) -> PromptTemplate:
        return load_template(f"sealave_{fmt}", ("question", "reference", "answer", "country"),
                             ("region", "region_countries", "category", "sub_culture"), self.template_dir)

    def messages(self, sample: Sample, answer: str, region: Region) -> list[dict[str, Any]]:
        """The chat messages that ask the judge about one answer, with the rubric of the item's format."""
        fmt = str(sample.metadata.get("format", "qa"))
        if fmt not in self.templates:
            raise DataError(f"item {sample.id!r}: unknown question format {fmt!r}; load it with load_ricevl_vqa")
        text = self.templates[fmt].fill({
            "question": sample.question or "", "reference": sample.label or "", "answer": answer,
            "country": region.terms(sample.culture)[0], "region": region.name,
            "region_countries": region.describe(), "category": sample.metadata.get("category") or "unknown",
            "sub_culture": sample.metadata.get("sub_culture") or "not given",
        })
        return [{"role": "user", "content": text}]

    @staticmethod
    def _correction(problem: Exception) -> str:
        return (f"That reply could not be used ({problem}). Reply again with only the JSON object "
                '{"TU": 0 or 1, "CU": 0 or 1, "CI": 0, 1 or 2, "justification": "..."}.')

    def judge(self, items: Sequence[tuple[Sample, str]], region: Region) -> list[JudgeScores]:
        """One verdict per (item, answer), in order: the first asks go out as one batch, re-asks one by one; a
        verdict that stays invalid is ``invalid``, a failed call ``error`` (both score 0)."""
        batch = [self.messages(s, a, region) for s, a in items]
        out: list[JudgeScores] = []
        for ans in complete_json_each(self.client, batch, parse_judge_scores, self.retries,
                                      correction=self._correction, **self.params):
            if ans.status == "ok":
                tu, cu, ci, why = ans.value
                out.append(JudgeScores(tu, cu, ci, "ok", why))
            else:
                out.append(JudgeScores(None, None, None, ans.status, error=ans.error))
        return out
