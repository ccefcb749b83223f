"""Rationale generation (paper step 3, Eq. 2): short reasons why a concept goes with its dominant emotion.

- `ExtractiveRationaleGenerator` (offline default): the most representative real training explanations of that
  culture for images with that concept and that label, chosen by embedding centrality.
- `LLMRationaleGenerator` (the paper's way): an LLM is given the concept, the culture and the emotion
  distribution P(e) and writes the rationales, as a JSON list.

Data without explanations (text stimuli with labels only, a Cedar-like narrative set): the build hands the
extractive generator `stimulus_evidence` instead, the sentences of the training stimuli with that label that name
the concept, so the rationales come from the stimulus texts themselves.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from culturekb.builders._chat_step import ChatStep
from culturekb.builders._faults import settle
from culturekb.builders._topic import default_topic_threshold, topic_verdicts
from culturekb.builders.base import RationaleRequest
from culturekb.errors import ConfigError
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme
from culturekb.models.base import Embedder, ModelClient
from culturekb.models.json_output import complete_json_each

__all__ = [
    "ExtractiveRationaleGenerator",
    "LLMRationaleGenerator",
    "split_sentences",
    "format_distribution",
    "culture_display_name",
    "stimulus_evidence",
]

logger = logging.getLogger(__name__)

_SENTENCE_END = re.compile(r"(?<=[.!?؟])\s+|(?<=[。！？।॥])\s*|\n+")
_CLAUSE_END = re.compile(r"(?<=[;:,，；：])\s*")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_SPACES = re.compile(r"\s+")


def _length(text: str) -> int:
    """Text length with CJK characters counted twice (one CJK character carries about a word)."""
    return len(text) + len(_CJK.findall(text))


def split_sentences(text: str, max_chars: int | None = None) -> list[str]:
    """Split an explanation into sentences (Latin, Arabic, Devanagari and CJK end marks, line breaks).

    A sentence longer than `max_chars` is split further at clause marks (; : , and their CJK forms).
    """
    out: list[str] = []
    for sent in _SENTENCE_END.split(text):
        sent = _SPACES.sub(" ", sent).strip()
        if not sent:
            continue
        if max_chars is not None and _length(sent) > max_chars:
            out.extend(c.strip() for c in _CLAUSE_END.split(sent) if c.strip())
        else:
            out.append(sent)
    return out


EVIDENCE_FIELDS: tuple[str, ...] = ("text", "question")
"""The stimulus fields whose sentences can be rationales (the title is a name, not a reason)."""


def stimulus_evidence(samples: Sequence[Sample], concept: str, label: str,
                      fields: Sequence[str] = EVIDENCE_FIELDS) -> list[str]:
    """The sentences of the stimulus texts of `samples` labelled `label` that name `concept`, in input order.

    For training data without explanations: a narrative that was labelled "joy" and mentions the concept is the
    evidence for the tuple, as an annotator's explanation would be. Each text is read in its own language
    (`culturekb.text.concepts.guess_language`, with the sample culture's language as hint); sentences are split
    as `split_sentences` does, and a sentence names the concept as `culturekb.text.concepts.mentions` says.
    """
    from culturekb.text.concepts import guess_language, mentions
    from culturekb.text.languages import culture_language

    out: list[str] = []
    for s in samples:
        if s.label != label:
            continue
        hint = culture_language(s.culture)
        for f in fields:
            value = getattr(s, f, None)
            if not value:
                continue
            for sent in split_sentences(str(value)):
                lang = guess_language(sent, hint) or "en"
                if mentions(sent, concept, lang) and sent not in out:
                    out.append(sent)
    return out


def _dedup_key(text: str) -> str:
    return re.sub(r"[\W_]+", " ", text.lower()).strip()


class ExtractiveRationaleGenerator:
    """Offline rationales: the most central real explanations for (concept, culture, label).

    For each request, `evidence` explanations are split into sentences; sentences of `min_chars`..`max_chars`
    characters (CJK characters count twice) are candidates. Candidates are ranked by cosine similarity to the
    normalised mean of the request's candidate embeddings (centrality: the sentence most like the others is the
    most representative), plus `concept_bonus` for a sentence that names the concept. Exact duplicates
    (ignoring case and punctuation) and near-duplicates (cosine > `dedup_threshold` to an already chosen one)
    are skipped. All candidates of a batch are embedded in one `encode` call.

    `on_topic` (default): a candidate must speak about its concept (`culturekb.builders._topic`): name it, or
    have a cosine to the concept of at least `topic_threshold` ("measured": the threshold measured for this
    embedder on labelled pairs, none for an embedder never measured, which leaves the mention rule alone). The
    others are dropped; a request none of whose candidates is on topic gets no rationale.
    """

    def __init__(
        self,
        embedder: Embedder,
        max_rationales: int = 4,
        min_chars: int = 15,
        max_chars: int = 240,
        dedup_threshold: float = 0.9,
        concept_bonus: float = 0.05,
        on_topic: bool = True,
        topic_threshold: float | None | str = "measured",
    ) -> None:
        if max_rationales < 1:
            raise ConfigError(f"ExtractiveRationaleGenerator: max_rationales must be >= 1, got {max_rationales}")
        if not 0 < min_chars <= max_chars:
            raise ConfigError(
                f"ExtractiveRationaleGenerator: need 0 < min_chars <= max_chars, got {min_chars} and {max_chars}"
            )
        if not 0.0 < dedup_threshold <= 1.0:
            raise ConfigError(
                f"ExtractiveRationaleGenerator: dedup_threshold must be in (0, 1], got {dedup_threshold}"
            )
        self.embedder = embedder
        self.max_rationales = max_rationales
        self.min_chars = min_chars
        self.max_chars = max_chars
        self.dedup_threshold = float(dedup_threshold)
        self.concept_bonus = float(concept_bonus)
        if topic_threshold == "measured":
            topic_threshold = default_topic_threshold(embedder.id)
        elif isinstance(topic_threshold, str):
            raise ConfigError(f"ExtractiveRationaleGenerator: topic_threshold must be a number, None or 'measured', "
                              f"got {topic_threshold!r}")
        self.on_topic = bool(on_topic)
        self.topic_threshold = None if topic_threshold is None else float(topic_threshold)
        threshold = "" if self.topic_threshold is None else f"{self.topic_threshold:g}"
        topic = f":topic{threshold}" if self.on_topic else ""
        self.id = (
            f"extractive:{embedder.id}:n{max_rationales}:c{min_chars}-{max_chars}"
            f":d{self.dedup_threshold:g}:b{self.concept_bonus:g}{topic}"
        )

    def candidates(self, request: RationaleRequest) -> list[str]:
        """The request's candidate sentences: sensible length, exact duplicates removed, first-seen order."""
        seen: set[str] = set()
        out: list[str] = []
        for text in request.evidence:
            for sent in split_sentences(text, self.max_chars):
                if not self.min_chars <= _length(sent) <= self.max_chars:
                    continue
                key = _dedup_key(sent)
                if key and key not in seen:
                    seen.add(key)
                    out.append(sent)
        return out

    def _mentions(self, sentence: str, concept: str) -> bool:
        if not concept:
            return False
        if _CJK.search(concept):
            return concept in sentence
        return re.search(rf"\b{re.escape(concept)}", sentence, flags=re.IGNORECASE) is not None

    def embedding_texts(self, requests: Sequence[RationaleRequest]) -> list[str]:
        """The distinct sentences `generate(requests)` embeds, first-seen order: a build embeds them in one pass
        (`culturekb.builders._stepcache.CachedEmbedder`) before it asks for the rationales chunk by chunk."""
        texts = [s for r in requests for s in self.candidates(r)]
        if self._uses_concept_vectors():
            texts += [r.concept for r in requests if r.concept]
        return list(dict.fromkeys(texts))

    def _uses_concept_vectors(self) -> bool:
        return self.on_topic and self.topic_threshold is not None

    def with_embedder(self, embedder: Embedder) -> ExtractiveRationaleGenerator:
        """The same generator (same settings, same id) embedding through `embedder`, e.g. a build's vector cache
        in front of this generator's embedder; `embedder.id` must be this one's."""
        if embedder.id != self.embedder.id:
            raise ConfigError(f"ExtractiveRationaleGenerator.with_embedder: embedder {embedder.id!r} is not "
                              f"{self.embedder.id!r}; the generator's id names its embedder")
        clone = copy.copy(self)
        clone.embedder = embedder
        return clone

    def generate(self, requests: Sequence[RationaleRequest]) -> list[list[str]]:
        """Per request, its most central candidate explanations (concept mentions favoured, near-duplicates skipped)."""
        per_request = [self.candidates(r) for r in requests]
        flat = [s for cands in per_request for s in cands]
        if not flat:
            return [[] for _ in requests]
        concepts = [r.concept for r in requests] if self._uses_concept_vectors() else []
        vectors = np.asarray(self.embedder.encode(flat + concepts), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.maximum(norms, 1e-12)
        concept_vectors = vectors[len(flat):]
        out: list[list[str]] = []
        start = 0
        for n, (req, cands) in enumerate(zip(requests, per_request, strict=True)):
            vecs = vectors[start : start + len(cands)]
            start += len(cands)
            if self.on_topic and cands:
                cvec = concept_vectors[n] if len(concept_vectors) else None
                keep = [i for i, v in enumerate(topic_verdicts(cands, req.concept, vecs, cvec, self.topic_threshold))
                        if v.on_topic]
                cands, vecs = [cands[i] for i in keep], vecs[keep]
            out.append(self._select(req, cands, vecs))
        return out

    def _select(self, req: RationaleRequest, cands: list[str], vecs: np.ndarray) -> list[str]:
        if not cands:
            return []
        mean = vecs.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        centrality = vecs @ (mean / norm) if norm > 1e-12 else np.zeros(len(cands), dtype=np.float32)
        bonus = np.array([self.concept_bonus if self._mentions(c, req.concept) else 0.0 for c in cands])
        score = centrality + bonus
        order = np.argsort(-score, kind="stable")
        chosen: list[int] = []
        for i in order:
            if chosen and float(np.max(vecs[chosen] @ vecs[i])) > self.dedup_threshold:
                continue
            chosen.append(int(i))
            if len(chosen) >= self.max_rationales:
                break
        return [cands[i] for i in chosen]


# ----------------------------------------------------------------------------------------------------------
# LLM
# ----------------------------------------------------------------------------------------------------------
def culture_display_name(culture: str) -> str:
    """The registry's display name of a culture id or alias ("zh" -> "Chinese")."""
    from culturekb.kb.cultures import default_registry

    return default_registry().resolve(culture).name


def format_distribution(distribution: dict[str, float], scheme: EmotionScheme, language: str = "en") -> str:
    """P(e) as "sadness 60%, fear 25%, awe 15%": non-zero labels, largest first, ties in scheme order."""
    order = {lab: i for i, lab in enumerate(scheme.labels)}
    items = [(lab, p) for lab, p in distribution.items() if p > 0]
    items.sort(key=lambda kv: (-kv[1], order.get(kv[0], len(order))))
    parts = [f"{scheme.translate(lab, language) if language != 'en' else lab} {100 * p:.0f}%" for lab, p in items]
    return ", ".join(parts) if parts else "no recorded emotions"


_MAX_RATIONALE_CHARS = 300


def _validate_rationales(max_rationales: int) -> Callable[[Any], list[str]]:
    def validate(obj: Any) -> list[str]:
        if isinstance(obj, dict) and len(obj) == 1:
            obj = next(iter(obj.values()))
        if not isinstance(obj, list):
            raise ValueError(f"expected a JSON list of strings, got {type(obj).__name__}")
        if not 1 <= len(obj) <= max_rationales:
            raise ValueError(f"expected 1 to {max_rationales} rationales, got {len(obj)}")
        out: list[str] = []
        for i, item in enumerate(obj):
            if not isinstance(item, str) or not item.strip():
                raise ValueError(f"item {i} is not a non-empty string")
            text = _SPACES.sub(" ", item).strip()
            if len(text) > _MAX_RATIONALE_CHARS:
                raise ValueError(f"item {i} is {len(text)} characters long; keep each under {_MAX_RATIONALE_CHARS}")
            if text not in out:
                out.append(text)
        return out

    return validate


class LLMRationaleGenerator(ChatStep):
    """Rationales written by an LLM from (concept, culture, P(e), dominant emotion), as the paper does.

    The prompt is a data file (`rationale_generation.<language>.txt`, or your own template path) with the
    placeholders {concept}, {culture}, {distribution}, {dominant_emotion} and optionally {max_rationales},
    {labels}. The whole batch goes through `client.complete_many`; each answer must be a JSON list of 1 to
    `max_rationales` non-empty strings of at most 300 characters, else it is asked again and finally follows the
    bad-answer policy of `faults` (fail: ModelOutputError naming the item; skip/flag: None for the item).
    """

    _REQUIRED = ("concept", "culture", "distribution", "dominant_emotion")
    _ALLOWED = ("max_rationales", "labels")

    def __init__(
        self,
        client: ModelClient,
        scheme: EmotionScheme | str,
        max_rationales: int = 4,
        language: str = "en",
        prompt: str | Path = "rationale_generation",
        retries: int = 2,
        temperature: float = 0.0,
        max_tokens: int = 512,
        culture_name: Callable[[str], str] = culture_display_name,
    ) -> None:
        if max_rationales < 1:
            raise ConfigError(f"LLMRationaleGenerator: max_rationales must be >= 1, got {max_rationales}")
        super().__init__(client, scheme, language=language, prompt=prompt, retries=retries, temperature=temperature,
                         max_tokens=max_tokens, culture_name=culture_name)
        self.max_rationales = max_rationales
        self.id = self._step_id("llm-rationales", f"n{max_rationales}")

    def messages(self, request: RationaleRequest) -> list[dict[str, Any]]:
        """The chat messages sent for one request."""
        text = self.template.fill(
            {
                "concept": request.concept,
                "culture": self.culture_name(request.culture),
                "distribution": format_distribution(request.distribution, self.scheme, self.language),
                "dominant_emotion": self._label(request.label),
                "max_rationales": self.max_rationales,
                "labels": ", ".join(self._label(lab) for lab in self.scheme.labels),
            }
        )
        return [{"role": "user", "content": text}]

    def generate(self, requests: Sequence[RationaleRequest]) -> list[list[str] | None]:
        """One batched chat call per request; each answer is a validated JSON list of rationales. A request
        without a valid answer gets None under a `faults` policy of skip or flag (see `culturekb.builders._faults`);
        under fail (the default), and for a call that failed, the build stops naming the item."""
        if not requests:
            return []
        batch = [self.messages(r) for r in requests]
        answers = complete_json_each(
            self.client, batch, _validate_rationales(self.max_rationales), retries=self.retries, **self.params
        )
        items = [f"concept {r.concept!r} (culture {r.culture}, {r.label})" for r in requests]
        values: list[list[str] | None] = settle(answers, items, f"rationale generation with {self.client.id}",
                                                self.faults)
        return values
