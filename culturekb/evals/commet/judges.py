"""Judges of CoMMET answers: is a free-text answer semantically right, and which branch did it match?

- `ModelAnswerJudge`: a judge model reads the rubric (``data/prompts/commet_judge.en.txt``: the story so far, the
  question, the right answers, the answer classes and the known wrong answers) and replies with JSON
  ``{"correct": true|false, "branch": name|null, "reason": "..."}``; the JSON is validated and asked again with the
  problem spelled out (`culturekb.models.json_output.complete_json`). A verdict that stays invalid is scored wrong
  and counted (``invalid``); a failed call is ``error``, and the story is played again on a rerun.
- `OfflineAnswerJudge`: no model. First the normalised answer is compared with every listed answer (equal, or the
  listed answer occurring in it as whole words, when only one class of answers does); failing that, the answer
  and the listed answers are embedded (the default MiniLM embedder) and the nearest listed answer decides, when
  its cosine similarity reaches `threshold`. It is **weaker than a judge model**: it cannot tell a negated or
  hedged answer from the listed one it resembles, it only knows the answers the data lists, and paraphrases far
  from every listed answer count as wrong. It is for tests, offline runs and a quick first look.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from culturekb.errors import ConfigError, CultureKBError, ModelOutputError
from culturekb.evals._judge_model import RubricJudgeModel
from culturekb.evals.commet.stories import Branch
from culturekb.evals.loaders import normalise_truth
from culturekb.models.base import Embedder, Message, ModelClient
from culturekb.models.json_output import complete_json
from culturekb.models.model import Model, as_model
from culturekb.models.tally import CallTally
from culturekb.text.prompts import resolve_prompt

__all__ = ["JudgeRequest", "Verdict", "AnswerJudge", "ModelAnswerJudge", "OfflineAnswerJudge", "normalise_answer",
           "parse_verdict"]

_ARTICLES = frozenset({"a", "an", "the"})
_PREFIX = re.compile(r"^\s*(?:final\s+)?answer\s*[:：]\s*", re.IGNORECASE)
_NON_WORD = re.compile(r"[^\w\s]+", re.UNICODE)


@dataclass(frozen=True)
class JudgeRequest:
    """One answer to judge, with everything the judge may read."""

    story_id: str
    turn: int
    """1-based turn number (for messages)."""
    story: str
    """The story text shown so far."""
    question: str
    answer: str
    expected: tuple[str, ...]
    """Every right answer (the turn's expected answers and the right branches' answers)."""
    wrong_answers: tuple[str, ...] = ()
    branches: tuple[Branch, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on one answer.

    `status`: ``ok``; ``invalid`` (the judge model gave no valid verdict after its re-asks: scored wrong, counted);
    ``error`` (the judge call failed: the story is played again on a rerun). `method`: what decided
    (``exact``, ``contains``, ``embedding``, ``below-threshold``, ``empty`` offline; ``model`` for a judge model).
    """

    correct: bool
    branch: str | None = None
    status: Literal["ok", "invalid", "error"] = "ok"
    method: str = ""
    similarity: float | None = None
    reason: str = ""
    error: str | None = None


@runtime_checkable
class AnswerJudge(Protocol):
    """Judges one answer; `id` goes into the run's config and report."""

    id: str

    def judge(self, request: JudgeRequest, tally: CallTally | None = None) -> Verdict:
        """The verdict on `request.answer`; judge-model calls are added to `tally` when given."""
        ...


def normalise_answer(text: str) -> str:
    """An answer in comparable form: Unicode NFKC, case-folded, a leading ``Answer:`` and punctuation removed,
    English articles dropped (unless the answer is nothing else), whitespace collapsed."""
    text = _PREFIX.sub("", unicodedata.normalize("NFKC", text)).casefold()
    words = _NON_WORD.sub(" ", text).split()
    kept = [w for w in words if w not in _ARTICLES]
    return " ".join(kept or words)


def _contains(answer: str, listed: str) -> bool:
    return bool(listed) and f" {listed} " in f" {answer} "


@dataclass(frozen=True)
class _Candidate:
    text: str
    correct: bool
    branch: str | None


def _candidates(request: JudgeRequest) -> list[_Candidate]:
    """Every listed answer with its class: branches first (they name the class), then the right answers, then
    the known wrong ones; each text once."""
    out: dict[str, _Candidate] = {}
    for b in request.branches:
        for a in b.answers:
            out.setdefault(a, _Candidate(a, b.correct, b.name))
    for a in request.expected:
        out.setdefault(a, _Candidate(a, True, None))
    for a in request.wrong_answers:
        out.setdefault(a, _Candidate(a, False, None))
    return list(out.values())


class OfflineAnswerJudge:
    """Normalised string match, then embedding similarity (weaker than a judge model; see the module docstring).

    `embedder`: an `Embedder` to use; else the one `embedder_spec` names (default ``minilm``), loaded on the
    first answer that no string rule decides. `threshold`: the least cosine similarity to the nearest listed
    answer for it to decide (default 0.6).
    """

    def __init__(self, embedder: Embedder | None = None, *, embedder_spec: str = "minilm",
                 threshold: float = 0.6) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ConfigError(f"the offline judge's threshold must be in (0, 1], got {threshold}")
        self._embedder = embedder
        self.embedder_spec = embedder_spec
        self.threshold = threshold
        name = embedder.id if embedder is not None else embedder_spec
        self.id = f"offline:v1:{name}:t{threshold:g}"
        self._lock = threading.Lock()
        self._vectors: dict[str, np.ndarray] = {}

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:  # stories are judged from several threads; one encode at a time
            if self._embedder is None:
                from culturekb.models.factory import make_embedder

                self._embedder = make_embedder(self.embedder_spec)
            missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
            if missing:
                for t, v in zip(missing, self._embedder.encode(missing), strict=True):
                    self._vectors[t] = v
            return np.stack([self._vectors[t] for t in texts])

    def judge(self, request: JudgeRequest, tally: CallTally | None = None) -> Verdict:
        """The verdict by string rules, else by the nearest listed answer in embedding space."""
        answer = normalise_answer(request.answer)
        if not answer:
            return Verdict(False, method="empty", reason="empty answer")
        candidates = _candidates(request)
        normalised = [normalise_answer(c.text) for c in candidates]
        for rule, test in (("exact", lambda n: n == answer), ("contains", lambda n: _contains(answer, n))):
            hits = [c for c, n in zip(candidates, normalised, strict=True) if n and test(n)]
            classes = {(c.correct, c.branch) for c in hits}
            if len(classes) == 1:
                hit = hits[0]
                return Verdict(hit.correct, hit.branch, method=rule, similarity=1.0 if rule == "exact" else None,
                               reason=f"{rule} match with {hit.text!r}")
        vectors = self._encode([answer, *normalised])
        sims = vectors[1:] @ vectors[0]
        best = int(np.argmax(sims))
        sim = float(sims[best])
        hit = candidates[best]
        if sim < self.threshold:
            return Verdict(False, method="below-threshold", similarity=sim,
                           reason=f"nearest listed answer {hit.text!r} at cosine {sim:.2f} < {self.threshold:g}")
        return Verdict(hit.correct, hit.branch, method="embedding", similarity=sim,
                       reason=f"nearest listed answer {hit.text!r} at cosine {sim:.2f}")


def parse_verdict(obj: Any, branches: Sequence[Branch]) -> tuple[bool, str | None, str]:
    """(correct, branch, reason) from a judge's JSON; ValueError naming what is wrong (for a re-ask).

    ``correct`` must be a boolean (or true/false, yes/no); ``branch`` one of the turn's branch names or null, and
    a named branch must agree with ``correct``.
    """
    if isinstance(obj, list) and len(obj) == 1:
        obj = obj[0]
    if not isinstance(obj, dict):
        raise ValueError('expected a JSON object {"correct": true|false, "branch": name|null, "reason": "..."}')
    keys = {str(k).strip().lower(): v for k, v in obj.items()}
    if "correct" not in keys:
        raise ValueError('missing "correct"; give true when the answer is right, false otherwise')
    truth = normalise_truth(keys["correct"])
    if truth is None:
        raise ValueError(f'"correct" must be true or false, got {keys["correct"]!r}')
    correct = truth == "true"
    raw = keys.get("branch")
    name = str(raw).strip() if raw is not None else ""
    branch: str | None = None if name.lower() in ("", "none", "null") else name
    if branch is not None:
        found = next((b for b in branches if b.name == branch), None)
        if found is None:
            names = [b.name for b in branches]
            raise ValueError(f'"branch" {branch!r} is not one of this question\'s answer classes {names}; '
                             "give one of them or null")
        if found.correct != correct:
            raise ValueError(f'answer class {branch!r} counts as {"right" if found.correct else "wrong"}, but '
                             f'"correct" is {str(correct).lower()}; make them agree')
    reason = next((str(keys[k]) for k in ("reason", "justification", "explanation") if k in keys), "")
    return correct, branch, reason.strip()


def _listed(items: Sequence[str]) -> str:
    return "; ".join(items) if items else "(none listed)"


class ModelAnswerJudge(RubricJudgeModel):
    """A judge model with the CoMMET rubric; JSON validated and re-asked up to `retries` times."""

    def __init__(self, client: ModelClient, *, retries: int = 2, template_dir: str | Path | None = None,
                 temperature: float = 0.0, max_tokens: int = 256) -> None:
        super().__init__(client, retries=retries, template_dir=template_dir, temperature=temperature,
                         max_tokens=max_tokens)
        self.template = resolve_prompt("commet_judge", "en",
                                       required=("question", "expected", "answer"),
                                       allowed=("story", "wrong_answers", "branches"), template_dir=template_dir)
        self.model: Model = as_model(client)
        """The judge's client behind the one wrapper, which counts each story's judge calls (`Model.tally`)."""
        self.client = self.model
        self.id = f"model:{client.id}:{self.template.sha[:10]}:r{retries}"

    def messages(self, request: JudgeRequest) -> list[Message]:
        """The chat messages that ask the judge about one answer."""
        branches = "\n".join(f"- {b.name} (counts as {'right' if b.correct else 'wrong'}): {'; '.join(b.answers)}"
                             for b in request.branches) or "(none)"
        text = self.template.fill({"story": request.story or "(no story text)", "question": request.question,
                                   "expected": _listed(request.expected),
                                   "wrong_answers": _listed(request.wrong_answers), "branches": branches,
                                   "answer": request.answer})
        return [{"role": "user", "content": text}]

    @staticmethod
    def _correction(problem: Exception) -> str:
        return (f"That reply could not be used ({problem}). Reply again with only the JSON object "
                '{"correct": true or false, "branch": "<answer class>" or null, "reason": "..."}.')

    def judge(self, request: JudgeRequest, tally: CallTally | None = None) -> Verdict:
        """The judge model's verdict; ``invalid`` when no valid JSON came after the re-asks, ``error`` when a call
        failed."""
        def validate(obj: Any) -> tuple[bool, str | None, str]:
            return parse_verdict(obj, request.branches)

        try:
            with self.model.tally(tally) if tally is not None else nullcontext():  # the story's judge calls
                correct, branch, reason = complete_json(self.model, self.messages(request), validate, self.retries,
                                                        correction=self._correction, **self.params)
        except ModelOutputError as exc:
            return Verdict(False, status="invalid", method="model", error=str(exc))
        except CultureKBError as exc:
            return Verdict(False, status="error", method="model", error=f"{type(exc).__name__}: {exc}")
        return Verdict(correct, branch, method="model", reason=reason)
