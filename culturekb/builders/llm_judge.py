"""The LLM judge of reverse validation (paper step 4): any chat model infers the emotion from the rationales alone,
answering in JSON. It lives apart from the offline judges in `culturekb.builders.judges`, which re-exports it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from culturekb.builders._chat_step import ChatStep
from culturekb.builders._faults import BAD_ANSWER_DETAIL, settle
from culturekb.builders.base import JudgeInput
from culturekb.builders.rationales import culture_display_name
from culturekb.kb.schema import JudgeVerdict
from culturekb.kb.schemes import EmotionScheme
from culturekb.models.base import ModelClient
from culturekb.models.json_output import complete_json_each

__all__ = ["LLMJudge"]


def _validate_judgement(scheme: EmotionScheme) -> Callable[[Any], tuple[str, str]]:
    """Validator for the judge's answer {"emotion": ..., "reason": ...} -> (scheme label, reason)."""

    def validate(obj: Any) -> tuple[str, str]:
        if not isinstance(obj, dict) or not isinstance(obj.get("emotion"), str):
            raise ValueError('expected a JSON object {"emotion": "<one emotion from the list>", "reason": "..."}')
        raw = obj["emotion"].strip().strip("\"'.").strip()
        label = scheme.match(raw)
        if label is None:
            raise ValueError(f"emotion {raw!r} is not one of {list(scheme.labels)}")
        reason = obj.get("reason", "")
        return label, reason.strip() if isinstance(reason, str) else str(reason)

    return validate


class LLMJudge(ChatStep):
    """A chat model reads only the rationales and names the one emotion they express (JSON answer).

    The prompt is a data file (`judge.<language>.txt`, or your own template path) with the placeholders
    {rationales} and {labels}, and optionally {concept} and {culture}. The whole batch goes through
    `client.complete_many`; an answer that is not valid JSON or names no label of the scheme is asked again, then
    follows the bad-answer policy of `faults` (fail: ModelOutputError naming the item; skip/flag: a verdict with
    label None whose detail starts with `BAD_ANSWER_DETAIL`). Items without rationales are not sent and get label
    None.
    """

    _REQUIRED = ("rationales", "labels")
    _ALLOWED = ("concept", "culture")

    def __init__(
        self,
        client: ModelClient,
        scheme: EmotionScheme | str,
        language: str = "en",
        prompt: str | Path = "judge",
        retries: int = 2,
        temperature: float = 0.0,
        max_tokens: int = 200,
        culture_name: Callable[[str], str] = culture_display_name,
    ) -> None:
        super().__init__(client, scheme, language=language, prompt=prompt, retries=retries, temperature=temperature,
                         max_tokens=max_tokens, culture_name=culture_name)
        self.id = self._step_id("llm-judge")

    def messages(self, item: JudgeInput) -> list[dict[str, Any]]:
        """The chat messages sent for one item."""
        text = self.template.fill(
            {
                "concept": item.concept,
                "culture": self.culture_name(item.culture),
                "rationales": "\n".join(f"- {r.strip()}" for r in item.rationales if r.strip()),
                "labels": "\n".join(f"- {self._label(lab)}" for lab in self.scheme.labels),
            }
        )
        return [{"role": "user", "content": text}]

    def judge(self, items: Sequence[JudgeInput]) -> list[JudgeVerdict]:
        """Per tuple, the emotion the model reads from its rationales alone (no verdict without rationales)."""
        todo = [i for i, it in enumerate(items) if any(r.strip() for r in it.rationales)]
        out: list[JudgeVerdict] = [
            JudgeVerdict(judge=self.id, label=None, agrees=False, detail="no rationales") for _ in items
        ]
        if not todo:
            return out
        answers = complete_json_each(
            self.client, [self.messages(items[i]) for i in todo], _validate_judgement(self.scheme),
            retries=self.retries, **self.params,
        )
        names = [f"concept {items[i].concept!r} (culture {items[i].culture}, {items[i].label})" for i in todo]
        values = settle(answers, names, f"LLM judge {self.client.id}", self.faults)
        for i, value, answer in zip(todo, values, answers, strict=True):
            if value is None:
                out[i] = JudgeVerdict(judge=self.id, label=None, agrees=False,
                                      detail=f"{BAD_ANSWER_DETAIL} ({self.faults.policy}): {answer.error}")
                continue
            label, reason = value
            out[i] = JudgeVerdict(judge=self.id, label=label, agrees=label == items[i].label, detail=reason)
        return out
