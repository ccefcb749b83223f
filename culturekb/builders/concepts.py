"""Concept extraction (paper step 1): the salient, normalised concepts of each sample.

Four `ConceptExtractor`s, chosen by `make_concept_extractor(spec)`:

- ``precomputed``: `Sample.concepts` as given, normalised;
- ``text``: offline, from titles, captions and narratives (content words and two-word phrases, with emotion and
  judgement words removed so that a concept never names its own label);
- ``vlm``: the paper's way, a vision-language model lists the concepts of the image;
- ``clip``: zero-shot tagging of the image over a fixed vocabulary with an open_clip model from a local
  checkpoint.

Every extractor has a stable `id` that includes its parameters; the build uses it in cache keys.
"""

from __future__ import annotations

import inspect
import logging
import pickle
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from culturekb._io import sha256_file, sha256_text, stable_hash
from culturekb.builders._llm import complete_json_batch
from culturekb.builders._prompts import PromptTemplate, load_prompt
from culturekb.builders.base import ConceptExtractor
from culturekb.builders.normalise import english_stopwords, normalise_concept
from culturekb.errors import ConfigError, DataError, ModelOutputError, require
from culturekb.kb.schema import Sample
from culturekb.models.base import ModelClient

__all__ = [
    "PrecomputedConcepts",
    "TextConceptExtractor",
    "VLMConceptExtractor",
    "ClipConceptExtractor",
    "make_concept_extractor",
    "CONCEPT_EXTRACTORS",
]

logger = logging.getLogger(__name__)


def _dedup(items: Sequence[str | None], limit: int | None = None) -> list[str]:
    """Drop None and repeats, keep first-seen order, cut at `limit`."""
    seen: set[str] = set()
    out: list[str] = []
    for it in items:
        if it and it not in seen:
            seen.add(it)
            out.append(it)
            if limit is not None and len(out) >= limit:
                break
    return out


def _check_positive(name: str, value: int, owner: str) -> None:
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"{owner}: {name} must be a positive integer, got {value!r}")


# ----------------------------------------------------------------------------------------------------------
# precomputed
# ----------------------------------------------------------------------------------------------------------
class PrecomputedConcepts:
    """Uses `Sample.concepts` (e.g. from a concepts column or an earlier VLM run), normalised and de-duplicated.

    `on_missing`: "error" raises DataError for a sample without concepts; "empty" gives it no concepts.
    """

    def __init__(self, language: str = "en", on_missing: Literal["error", "empty"] = "error") -> None:
        if on_missing not in ("error", "empty"):
            raise ConfigError(f"PrecomputedConcepts: on_missing must be 'error' or 'empty', got {on_missing!r}")
        self.language = language
        self.on_missing = on_missing
        self.id = f"precomputed:{language}"

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        out: list[list[str]] = []
        for s in samples:
            if s.concepts is None:
                if self.on_missing == "error":
                    raise DataError(
                        f"sample {s.id!r} has no precomputed concepts; add a 'concepts' list to every sample, "
                        "or use another concept extractor ('text', 'vlm', 'clip')"
                    )
                out.append([])
                continue
            out.append(_dedup([normalise_concept(c, self.language) for c in s.concepts]))
        return out


# ----------------------------------------------------------------------------------------------------------
# text (offline, English)
# ----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _WordLists:
    stop: frozenset[str]
    non_concepts: frozenset[str]
    modifiers: frozenset[str]
    colours: frozenset[str]
    nouns: frozenset[str]
    sha: str


_EMOTION_SCHEMES = ("artemis9", "cedar14", "plutchik8")


@lru_cache(maxsize=1)
def _word_lists() -> _WordLists:
    """The packaged word lists (text_concepts_en.txt, stopwords_en.txt) plus every emotion-scheme surface form."""
    from culturekb.kb.schemes import get_scheme

    text = resources.files("culturekb.data").joinpath("text_concepts_en.txt").read_text("utf-8")
    sections: dict[str, set[str]] = {}
    current: set[str] | None = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip().lower()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], set())
            continue
        if current is None:
            raise DataError(f"culturekb/data/text_concepts_en.txt: word {line!r} before the first [section]")
        current.add(line)
    emotion_words: set[str] = set()
    for name in _EMOTION_SCHEMES:  # emotion label sets only; a category scheme (ricevl14) names real concepts
        for form in get_scheme(name).surface_forms("en"):
            emotion_words.update(form.split())
    stop = english_stopwords()
    return _WordLists(
        stop=stop,
        non_concepts=frozenset(sections.get("non_concepts", set()) | emotion_words),
        modifiers=frozenset(sections.get("modifiers", set())),
        colours=frozenset(sections.get("colours", set())),
        nouns=frozenset(sections.get("nouns", set())),
        sha=sha256_text(text + "\n".join(sorted(stop)) + "\n".join(sorted(emotion_words))),
    )


_CLAUSE_SPLIT = re.compile(r"[.,;:!?()\[\]{}\"“”‘’…\n\t/|&]+|\s-\s|--")
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")
_YEAR = re.compile(r"^\d+$")
_ADJ_SUFFIXES = (
    ("ous", 4), ("ful", 6), ("ive", 7), ("able", 7), ("ible", 7), ("less", 6), ("ish", 6), ("est", 6), ("ness", 6)
)
_VERB_SUFFIXES = (("ing", 5), ("ed", 5), ("ly", 5))

_Kind = Literal["stop", "head", "colour", "modifier"]


def _title_text(title: str) -> str:
    """Readable title words: an ArtEmis/WikiArt slug `artist-name_title-words-1920` becomes `title words`."""
    t = title.strip()
    if t and not any(ch.isspace() for ch in t) and "_" in t:
        t = t.split("_", 1)[1]
    words = [w for w in re.split(r"[-_\s]+", t) if w and not _YEAR.match(w)]
    return " ".join(words)


class TextConceptExtractor:
    """Offline English concepts from a sample's text fields: content words and two-word phrases.

    Heuristics, in order: text is split into clauses at punctuation; stopwords, emotion and judgement words
    (see culturekb/data/text_concepts_en.txt), words shorter than 3 letters, and words that look like verbs,
    adverbs or adjectives by their suffix (-ing, -ed, -ly, -ous, -ful ...; listed nouns excepted) end a phrase.
    Kept are content words and colours alone, and two-word phrases whose first word is a colour or a listed
    modifier ("red dress", "full moon") or that occur at least `min_phrase_count` times in the sample.
    Title words count `title_weight` times. Candidates are normalised (`normalise_concept`), ranked by count
    (phrases x `phrase_weight`), ties by first position; the top `max_concepts` are returned.

    `fields`: any of "title", "text", "question", "explanations".
    """

    _FIELDS = ("title", "text", "question", "explanations")

    def __init__(
        self,
        fields: Sequence[str] = ("title", "text"),
        language: str = "en",
        max_concepts: int = 12,
        min_phrase_count: int = 2,
        title_weight: float = 2.0,
        phrase_weight: float = 1.5,
    ) -> None:
        bad = [f for f in fields if f not in self._FIELDS]
        if bad or not fields:
            raise ConfigError(f"TextConceptExtractor: unknown fields {bad or list(fields)}; use some of {self._FIELDS}")
        if language != "en":
            raise ConfigError(
                f"TextConceptExtractor supports English text only (language 'en'), got {language!r}; "
                "for other languages use the 'vlm' or 'clip' extractor or precomputed concepts"
            )
        _check_positive("max_concepts", max_concepts, "TextConceptExtractor")
        _check_positive("min_phrase_count", min_phrase_count, "TextConceptExtractor")
        self.fields = tuple(fields)
        self.language = language
        self.max_concepts = max_concepts
        self.min_phrase_count = min_phrase_count
        self.title_weight = float(title_weight)
        self.phrase_weight = float(phrase_weight)
        self._words = _word_lists()
        self.id = (
            f"text:{language}:{'+'.join(self.fields)}:k{max_concepts}:p{min_phrase_count}"
            f":tw{self.title_weight:g}:pw{self.phrase_weight:g}:{self._words.sha[:10]}"
        )

    def _kind(self, tok: str) -> _Kind:
        w = self._words
        if tok in w.stop or tok in w.non_concepts or len(tok) < 3:
            return "stop"
        if tok in w.colours:
            return "colour"
        if tok in w.nouns:
            return "head"
        if tok in w.modifiers:
            return "modifier"
        for suffix, min_len in (*_VERB_SUFFIXES, *_ADJ_SUFFIXES):
            if tok.endswith(suffix) and len(tok) >= min_len:
                return "stop"
        singular = normalise_concept(tok, "en")
        if singular is None or singular in w.non_concepts or singular in w.stop:
            return "stop"
        return "head"

    def _texts(self, sample: Sample) -> list[tuple[str, float, bool]]:
        """(text, weight, is_title) for each non-empty field."""
        out: list[tuple[str, float, bool]] = []
        for f in self.fields:
            if f == "title":
                if sample.title:
                    out.append((_title_text(sample.title), self.title_weight, True))
            elif f == "explanations":
                out.extend((e, 1.0, False) for e in sample.explanations if e)
            else:
                value = getattr(sample, f)
                if value:
                    out.append((str(value), 1.0, False))
        return out

    def extract_one(self, sample: Sample) -> list[str]:
        """The concepts of one sample (see the class docstring for the heuristics)."""
        score: dict[str, float] = {}
        first: dict[str, int] = {}
        phrase_count: dict[str, int] = {}
        phrase_ok: dict[str, bool] = {}
        pos = 0

        def add(concept: str | None, weight: float) -> None:
            if concept is None:
                return
            score[concept] = score.get(concept, 0.0) + weight
            first.setdefault(concept, pos)

        for text, weight, is_title in self._texts(sample):
            text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
            for clause in _CLAUSE_SPLIT.split(text):
                toks = [t[:-2] if t.endswith("'s") else t.replace("'", "") for t in _TOKEN.findall(clause)]
                kinds = [self._kind(t) for t in toks]
                for i, (tok, kind) in enumerate(zip(toks, kinds, strict=True)):
                    pos += 1
                    if kind in ("head", "colour"):
                        add(normalise_concept(tok, "en"), weight)
                    if i > 0 and kind == "head" and kinds[i - 1] != "stop":
                        phrase = normalise_concept(f"{toks[i - 1]} {tok}", "en")
                        if phrase is None:
                            continue
                        phrase_count[phrase] = phrase_count.get(phrase, 0) + 1
                        if kinds[i - 1] in ("colour", "modifier") or is_title:
                            phrase_ok[phrase] = True
                        phrase_ok.setdefault(phrase, False)
                        add(phrase, weight * self.phrase_weight)
        for phrase, ok in phrase_ok.items():
            if not ok and phrase_count[phrase] < self.min_phrase_count:
                del score[phrase]
        ranked = sorted(score, key=lambda c: (-score[c], first[c], c))
        return ranked[: self.max_concepts]

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        return [self.extract_one(s) for s in samples]


# ----------------------------------------------------------------------------------------------------------
# VLM
# ----------------------------------------------------------------------------------------------------------
_PROMPT_ALIASES = {"concepts": "concept_extraction"}


def _validate_concept_list(max_concepts: int, language: str = "en") -> Callable[[Any], list[str]]:
    """A validator for the VLM's answer: a JSON list (or {"concepts": [...]}) of 1.. strings."""

    def validate(obj: Any) -> list[str]:
        if isinstance(obj, dict) and len(obj) == 1:
            obj = next(iter(obj.values()))
        if not isinstance(obj, list):
            raise ValueError(f"expected a JSON list of strings, got {type(obj).__name__}")
        if not all(isinstance(x, str) for x in obj):
            raise ValueError("every item of the list must be a string")
        concepts = _dedup([normalise_concept(x, language) for x in obj], limit=max_concepts)
        if obj and not concepts:
            raise ValueError("none of the listed items is a usable concept (all empty or stopwords)")
        return concepts

    return validate


class VLMConceptExtractor:
    """The paper's step 1: a vision-language model lists each image's salient concepts as a JSON list.

    `prompt`: a packaged template name ("concepts" = concept_extraction) or the path of your own template
    (placeholder `{max_concepts}`); `language` picks the packaged template's language and the normalisation
    rules of the answers. Images are sent as JPEG data URLs, resized to at most `max_side` pixels.
    A malformed answer is retried (`retries`), then raises ModelOutputError.
    """

    def __init__(
        self,
        client: ModelClient,
        prompt: str | Path = "concepts",
        max_concepts: int = 10,
        language: str = "en",
        max_side: int = 768,
        retries: int = 2,
        temperature: float = 0.0,
        max_tokens: int = 256,
    ) -> None:
        _check_positive("max_concepts", max_concepts, "VLMConceptExtractor")
        self.client = client
        self.max_concepts = max_concepts
        self.language = language
        self.max_side = max_side
        self.retries = retries
        self.params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
        name = _PROMPT_ALIASES.get(str(prompt), prompt)
        self.template: PromptTemplate = load_prompt(name, language, required=(), allowed=("max_concepts",))
        self.id = (
            f"vlm:{client.id}:{self.template.id}:k{max_concepts}:px{max_side}"
            f":{stable_hash(self.params)[:8]}"
        )

    def _messages(self, sample: Sample) -> list[dict[str, Any]]:
        from culturekb.builders._images import image_data_url

        if not sample.image:
            raise DataError(
                f"sample {sample.id!r} has no image; the 'vlm' concept extractor needs Sample.image "
                "(a path or URL), or use the 'text' extractor for text-only samples"
            )
        url = image_data_url(sample.image, where=f"sample {sample.id!r}", max_side=self.max_side)
        text = self.template.fill({"max_concepts": self.max_concepts})
        return [
            {
                "role": "user",
                "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}],
            }
        ]

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        if not samples:
            return []
        batch = [self._messages(s) for s in samples]
        try:
            return complete_json_batch(
                self.client,
                batch,
                _validate_concept_list(self.max_concepts, self.language),
                retries=self.retries,
                **self.params,
            )
        except ModelOutputError as exc:
            raise ModelOutputError(f"concept extraction with {self.client.id}: {exc}") from exc


# ----------------------------------------------------------------------------------------------------------
# CLIP zero-shot tagging
# ----------------------------------------------------------------------------------------------------------
def _file_fingerprint(path: Path) -> str:
    """SHA-256 of small files; of size + first and last MiB for large ones (checkpoints are hundreds of MB)."""
    size = path.stat().st_size
    if size <= 8 << 20:
        return sha256_file(path)[:16]
    with open(path, "rb") as fh:
        head = fh.read(1 << 20)
        fh.seek(-(1 << 20), 2)
        tail = fh.read()
    import hashlib

    return hashlib.sha256(str(size).encode() + head + tail).hexdigest()[:16]


class ClipConceptExtractor:
    """Zero-shot tagging with open_clip: the `top_k` vocabulary concepts most probable for each image.

    Text prompts are `template.format(concept=...)` ("a painting with {concept}"). Weights come from a local
    checkpoint file (`checkpoint`, loaded with `open_clip.create_model_and_transforms(model_name,
    pretrained=path)`) or a ready `model` with its `preprocess` and `tokenizer`; nothing is ever downloaded.
    Concepts with probability below `min_prob` are dropped.
    """

    def __init__(
        self,
        vocabulary: Sequence[str],
        model_name: str = "ViT-B-32",
        checkpoint: str | Path | None = None,
        top_k: int = 5,
        min_prob: float = 0.0,
        device: str = "cpu",
        model: Any = None,
        preprocess: Callable[[Any], Any] | None = None,
        tokenizer: Callable[[list[str]], Any] | None = None,
        template: str = "a painting with {concept}",
        batch_size: int = 32,
        model_id: str | None = None,
    ) -> None:
        _check_positive("top_k", top_k, "ClipConceptExtractor")
        _check_positive("batch_size", batch_size, "ClipConceptExtractor")
        if not 0.0 <= min_prob < 1.0:
            raise ConfigError(f"ClipConceptExtractor: min_prob must be in [0, 1), got {min_prob}")
        if "{concept}" not in template:
            raise ConfigError(f"ClipConceptExtractor: template {template!r} needs a '{{concept}}' placeholder")
        vocab = _dedup([normalise_concept(v, "en") for v in vocabulary])
        if not vocab:
            raise ConfigError("ClipConceptExtractor: the vocabulary is empty; give a list of concept strings")
        if model is None:
            if checkpoint is None:
                raise ConfigError(
                    f"ClipConceptExtractor: no weights for {model_name!r}; pass checkpoint=<path to a local "
                    "open_clip checkpoint file (.pt/.bin/.safetensors)> or a loaded model= with preprocess= and "
                    "tokenizer=. Weights are never downloaded."
                )
            checkpoint = Path(checkpoint)
            if not checkpoint.is_file():
                raise ConfigError(
                    f"ClipConceptExtractor: checkpoint file {checkpoint} does not exist; give the path of a local "
                    f"open_clip checkpoint for {model_name!r} (weights are never downloaded)"
                )
            weights = f"{checkpoint.name}#{_file_fingerprint(checkpoint)}"
        else:
            if preprocess is None or tokenizer is None:
                raise ConfigError("ClipConceptExtractor: a given model= also needs preprocess= and tokenizer=")
            weights = model_id or "custom"
        self.vocabulary = tuple(vocab)
        self.model_name = model_name
        self.checkpoint = checkpoint
        self.top_k = top_k
        self.min_prob = float(min_prob)
        self.device = device
        self.template = template
        self.batch_size = batch_size
        self._model = model
        self._preprocess = preprocess
        self._tokenizer = tokenizer
        self._text_features: Any = None
        self.id = (
            f"clip:{model_name}:{weights}:k{top_k}:p{self.min_prob:g}"
            f":v{stable_hash(list(self.vocabulary))[:10]}:t{sha256_text(template)[:8]}"
        )

    def _load(self) -> None:
        if self._model is not None:
            return
        open_clip: Any = require("open_clip", "vision", "CLIP concept extraction")
        try:
            model, _, preprocess = open_clip.create_model_and_transforms(
                self.model_name, pretrained=str(self.checkpoint), device=self.device
            )
            tokenizer = open_clip.get_tokenizer(self.model_name)
        except (RuntimeError, ValueError, KeyError, OSError, pickle.UnpicklingError) as exc:
            reason = " ".join(str(exc).split())[:400]
            raise ConfigError(
                f"ClipConceptExtractor: cannot load open_clip model {self.model_name!r} from {self.checkpoint} "
                f"({type(exc).__name__}: {reason}); check that the file is an open_clip checkpoint (a state_dict) "
                "for this architecture (see open_clip.list_models())"
            ) from exc
        self._model, self._preprocess, self._tokenizer = model, preprocess, tokenizer

    def _encode_text(self) -> Any:
        import torch

        if self._text_features is None:
            assert self._tokenizer is not None
            prompts = [self.template.format(concept=c) for c in self.vocabulary]
            with torch.no_grad():
                tokens = self._tokenizer(prompts).to(self.device)
                feats = self._model.encode_text(tokens).float()
                self._text_features = feats / feats.norm(dim=-1, keepdim=True)
        return self._text_features

    def probabilities(self, samples: Sequence[Sample]) -> Any:
        """Shape (len(samples), len(vocabulary)): softmax over the vocabulary for each image (numpy)."""
        import numpy as np
        import torch

        from culturekb.builders._images import load_image

        self._load()
        self._model.eval()
        assert self._preprocess is not None
        text = self._encode_text()
        scale = float(self._model.logit_scale.exp().item()) if hasattr(self._model, "logit_scale") else 100.0
        rows: list[Any] = []
        for start in range(0, len(samples), self.batch_size):
            chunk = samples[start : start + self.batch_size]
            images = []
            for s in chunk:
                if not s.image:
                    raise DataError(f"sample {s.id!r} has no image; the 'clip' concept extractor needs Sample.image")
                images.append(self._preprocess(load_image(s.image, where=f"sample {s.id!r}")))
            with torch.no_grad():
                feats = self._model.encode_image(torch.stack(images).to(self.device)).float()
                feats = feats / feats.norm(dim=-1, keepdim=True)
                rows.append(torch.softmax(scale * feats @ text.T, dim=-1).cpu().numpy())
        if not rows:
            return np.zeros((0, len(self.vocabulary)), dtype=np.float32)
        return np.concatenate(rows, axis=0)

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        import numpy as np

        probs = self.probabilities(samples)
        out: list[list[str]] = []
        for row in probs:
            order = np.argsort(-row, kind="stable")[: self.top_k]
            out.append([self.vocabulary[i] for i in order if row[i] >= self.min_prob])
        return out


# ----------------------------------------------------------------------------------------------------------
# registry
# ----------------------------------------------------------------------------------------------------------
CONCEPT_EXTRACTORS: dict[str, Callable[..., ConceptExtractor]] = {
    "precomputed": PrecomputedConcepts,
    "text": TextConceptExtractor,
    "vlm": VLMConceptExtractor,
    "clip": ClipConceptExtractor,
}


def make_concept_extractor(spec: str, **kw: Any) -> ConceptExtractor:
    """A concept extractor by name: "precomputed", "text", "vlm" (needs client=), "clip" (needs vocabulary=)."""
    factory = CONCEPT_EXTRACTORS.get(spec)
    if factory is None:
        raise ConfigError(f"unknown concept extractor {spec!r}; use one of {sorted(CONCEPT_EXTRACTORS)}")
    try:
        inspect.signature(factory).bind(**kw)
    except TypeError as exc:
        raise ConfigError(f"concept extractor {spec!r}: bad arguments {sorted(kw)} ({exc})") from exc
    return factory(**kw)
