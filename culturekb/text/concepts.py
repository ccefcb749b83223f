"""Concept extraction contract and the offline extractors (paper step 1).

`ConceptExtractor` is the protocol every extractor follows. The offline ones live here, in the text layer, so
the build, the retrieval-side augmenter and the benchmark runners can all use them without importing build code:

- ``precomputed``: `Sample.concepts` as given, normalised;
- ``text``: offline, from titles, captions and narratives (content words and two-word phrases, with emotion and
  judgement words removed so that a concept never names its own label).

The model-backed extractors (``vlm``, ``clip``) are build components in `culturekb.builders.concepts`.
Every extractor has a stable `id` that includes its parameters; the build uses it in cache keys.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal, Protocol, runtime_checkable

from culturekb._io import sha256_text
from culturekb.errors import ConfigError, DataError
from culturekb.kb.schema import Sample
from culturekb.text.normalise import english_stopwords, normalise_concept

__all__ = ["ConceptExtractor", "PrecomputedConcepts", "TextConceptExtractor", "dedup_concepts", "check_positive"]

logger = logging.getLogger(__name__)


@runtime_checkable
class ConceptExtractor(Protocol):
    """Lists the salient, normalised concepts of each sample (step 1)."""

    id: str

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        """One list of normalised concepts per sample, in input order."""
        ...


def dedup_concepts(items: Sequence[str | None], limit: int | None = None) -> list[str]:
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


def check_positive(name: str, value: int, owner: str) -> None:
    """Raise ConfigError unless `value` is a positive integer."""
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
        """Each sample's own concepts; a sample without any is an error or gets none, as `on_missing` says."""
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
            out.append(dedup_concepts([normalise_concept(c, self.language) for c in s.concepts]))
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
        check_positive("max_concepts", max_concepts, "TextConceptExtractor")
        check_positive("min_phrase_count", min_phrase_count, "TextConceptExtractor")
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
        """The content words and two-word phrases of each sample's text."""
        return [self.extract_one(s) for s in samples]
