"""Concept extraction contract and the offline extractors (paper step 1).

`ConceptExtractor` is the protocol every extractor follows. The offline ones live here, in the text layer, so
the build, the retrieval-side augmenter and the benchmark runners can all use them without importing build code:

- ``precomputed``: `Sample.concepts` as given, normalised;
- ``text``: offline, from titles, captions and narratives in any language with word lists (content words and
  two-word phrases, or the word candidates of Chinese and Japanese segmentation, with emotion and judgement words
  removed so that a concept never names its own label).

`STIMULUS_FIELDS` is the one definition of what a sample shows a model (title, text, question): the test-time
callers (the augmenter, the harness adapters, the benchmark cue blocks) extract from these fields and the build
from the same fields plus the training explanations (`BUILD_FIELDS`).

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
from culturekb.text.languages import (
    SCRIPT_LANGUAGE,
    LanguageRules,
    base_language,
    culture_language,
    dominant_script,
    is_emotion_word,
    language_rules,
    script_of,
    segment_cjk,
    supported_languages,
    warn_unsupported,
    word_tokens,
    words_sha,
)
from culturekb.text.normalise import english_stopwords, normalise_concept

__all__ = [
    "BUILD_FIELDS",
    "STIMULUS_FIELDS",
    "TRAINING_FIELDS",
    "ConceptExtractor",
    "PrecomputedConcepts",
    "TextConceptExtractor",
    "check_positive",
    "dedup_concepts",
    "guess_language",
    "mentions",
]

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
# text (offline, any language with word lists)
# ----------------------------------------------------------------------------------------------------------
STIMULUS_FIELDS: tuple[str, ...] = ("title", "text", "question")
"""The non-leaky fields of a sample: what a model is shown (title, text or narrative, question), never the
explanations or the label. Test-time concepts come from these fields only, and the build extracts from the same
fields (plus the training explanations, `TRAINING_FIELDS`), so a text stimulus finds the KB's concepts."""

TRAINING_FIELDS: tuple[str, ...] = ("explanations",)
"""Fields that exist for training samples only (annotators' explanations): read at build time, never at test time."""

BUILD_FIELDS: tuple[str, ...] = ("title", *TRAINING_FIELDS, "text", "question")
"""What the build's text extractor reads: the stimulus fields plus the training explanations (title first; the
order only breaks ties between equally frequent concepts)."""


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
# the same marks plus those of other scripts: Devanagari danda, Arabic comma and question mark, CJK punctuation
_CLAUSE_SPLIT_ANY = re.compile(
    r"[.,;:!?()\[\]{}\"“”‘’«»…\n\t/|&।॥،؛؟。，、；：！？（）「」『』【】《》〈〉・¿¡]+|\s-\s|--"
)
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?")
_YEAR = re.compile(r"^\d+$")
_ADJ_SUFFIXES = (
    ("ous", 4), ("ful", 6), ("ive", 7), ("able", 7), ("ible", 7), ("less", 6), ("ish", 6), ("est", 6), ("ness", 6)
)
_VERB_SUFFIXES = (("ing", 5), ("ed", 5), ("ly", 5))

_Kind = Literal["stop", "head", "colour", "modifier"]
LanguageChoice = str
"""A language code ("en", "zh" ...) or "auto": each text in the language of its script and of its sample's culture."""


def _title_text(title: str) -> str:
    """Readable title words: an ArtEmis/WikiArt slug `artist-name_title-words-1920` becomes `title words`."""
    t = title.strip()
    if t and not any(ch.isspace() for ch in t) and "_" in t:
        t = t.split("_", 1)[1]
    words = [w for w in re.split(r"[-_\s]+", t) if w and not _YEAR.match(w)]
    return " ".join(words)


class _Scores:
    """Candidate concepts of one sample: weighted counts, first positions, two-word phrases and their evidence."""

    def __init__(self) -> None:
        self.score: dict[str, float] = {}
        self.first: dict[str, int] = {}
        self.phrase_count: dict[str, int] = {}
        self.phrase_ok: dict[str, bool] = {}
        self.pos = 0

    def add(self, concept: str | None, weight: float) -> None:
        if concept is None:
            return
        self.score[concept] = self.score.get(concept, 0.0) + weight
        self.first.setdefault(concept, self.pos)

    def phrase(self, phrase: str | None, weight: float, ok: bool) -> None:
        if phrase is None:
            return
        self.phrase_count[phrase] = self.phrase_count.get(phrase, 0) + 1
        if ok:
            self.phrase_ok[phrase] = True
        self.phrase_ok.setdefault(phrase, False)
        self.add(phrase, weight)

    def ranked(self, min_phrase_count: int, limit: int) -> list[str]:
        for phrase, ok in self.phrase_ok.items():
            if not ok and self.phrase_count[phrase] < min_phrase_count:
                del self.score[phrase]
        return sorted(self.score, key=lambda c: (-self.score[c], self.first[c], c))[:limit]


class TextConceptExtractor:
    """Offline concepts from a sample's text fields, in any language with word lists (`supported_languages()`).

    English heuristics, in order: text is split into clauses at punctuation; stopwords, emotion and judgement
    words (see culturekb/data/text_concepts_en.txt), words shorter than 3 letters, and words that look like
    verbs, adverbs or adjectives by their suffix (-ing, -ed, -ly, -ous, -ful ...; listed nouns excepted) end a
    phrase. Kept are content words and colours alone, and two-word phrases whose first word is a colour or a
    listed modifier ("red dress", "full moon") or that occur at least `min_phrase_count` times in the sample.

    Other space-separated languages (es de fr pt ru ar hi sw): words that are not stopwords, non-concepts or
    emotion words (`culturekb/data/languages/<code>.txt` and the label vocabularies) and have at least the
    language's `min_chars` letters are concepts; two adjacent ones form a phrase kept when it occurs at least
    `min_phrase_count` times or in the title. Chinese and Japanese: the word candidates of `segment_cjk`.

    Title words count `title_weight` times. Candidates are normalised (`normalise_concept`), ranked by count
    (phrases x `phrase_weight`), ties by first position; the top `max_concepts` are returned.

    `fields`: any of "title", "text", "question", "explanations" (default `STIMULUS_FIELDS`; the build adds
    "explanations"). `language`: "auto" (default) reads each text in the language of its script; Latin-script
    text is read as the sample culture's language when that language uses the Latin script and the text has
    more of its stopwords than of English ones, else as English. A text in a language without word lists gives
    no concepts (with a one-time warning). A language code instead reads every text with that language's rules.
    """

    _FIELDS = ("title", "text", "question", "explanations")

    def __init__(
        self,
        fields: Sequence[str] = STIMULUS_FIELDS,
        language: LanguageChoice = "auto",
        max_concepts: int = 12,
        min_phrase_count: int = 2,
        title_weight: float = 2.0,
        phrase_weight: float = 1.5,
    ) -> None:
        bad = [f for f in fields if f not in self._FIELDS]
        if bad or not fields:
            raise ConfigError(f"TextConceptExtractor: unknown fields {bad or list(fields)}; use some of {self._FIELDS}")
        if language != "auto":
            language = language_rules(language).code  # ConfigError naming the languages with word lists
        check_positive("max_concepts", max_concepts, "TextConceptExtractor")
        check_positive("min_phrase_count", min_phrase_count, "TextConceptExtractor")
        self.fields = tuple(fields)
        self.language = language
        self.max_concepts = max_concepts
        self.min_phrase_count = min_phrase_count
        self.title_weight = float(title_weight)
        self.phrase_weight = float(phrase_weight)
        self._words = _word_lists()
        sha = self._words.sha if language == "en" else sha256_text(self._words.sha + words_sha(
            None if language == "auto" else [language]))
        self.id = (
            f"text:{language}:{'+'.join(self.fields)}:k{max_concepts}:p{min_phrase_count}"
            f":tw{self.title_weight:g}:pw{self.phrase_weight:g}:{sha[:10]}"
        )

    # -- English --------------------------------------------------------------------------------------------
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

    def _english(self, text: str, weight: float, is_title: bool, acc: _Scores) -> None:
        text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
        for clause in _CLAUSE_SPLIT.split(text):
            toks = [t[:-2] if t.endswith("'s") else t.replace("'", "") for t in _TOKEN.findall(clause)]
            kinds = [self._kind(t) for t in toks]
            for i, (tok, kind) in enumerate(zip(toks, kinds, strict=True)):
                acc.pos += 1
                if kind in ("head", "colour"):
                    acc.add(normalise_concept(tok, "en"), weight)
                if i > 0 and kind == "head" and kinds[i - 1] != "stop":
                    ok = kinds[i - 1] in ("colour", "modifier") or is_title
                    acc.phrase(normalise_concept(f"{toks[i - 1]} {tok}", "en"), weight * self.phrase_weight, ok)

    # -- other languages ------------------------------------------------------------------------------------
    def _content(self, tok: str, rules: LanguageRules) -> bool:
        if len(tok) < rules.min_chars or tok.isdigit() or tok in rules.stopwords or tok in rules.non_concepts:
            return False
        return not is_emotion_word(tok, rules.code)

    def _other(self, text: str, weight: float, is_title: bool, acc: _Scores, rules: LanguageRules) -> None:
        text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
        for clause in _CLAUSE_SPLIT_ANY.split(text):
            if not rules.spaced:
                for word in segment_cjk(clause, rules.code):
                    acc.pos += 1
                    acc.add(normalise_concept(word, rules.code), weight)
                continue
            toks = word_tokens(clause)
            keep = [self._content(t, rules) for t in toks]
            for i, tok in enumerate(toks):
                acc.pos += 1
                if not keep[i]:
                    continue
                acc.add(normalise_concept(tok, rules.code), weight)
                if i > 0 and keep[i - 1]:
                    acc.phrase(normalise_concept(f"{toks[i - 1]} {tok}", rules.code), weight * self.phrase_weight,
                               is_title)

    # -- which language ---------------------------------------------------------------------------------------
    def text_language(self, text: str, culture: str | None) -> str | None:
        """The language `text` is read in (None: no word lists for it, or no letters)."""
        if self.language != "auto":
            return self.language
        return guess_language(text, culture_language(culture) if culture else None)

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
        acc = _Scores()
        for text, weight, is_title in self._texts(sample):
            lang = self.text_language(text, sample.culture)
            if lang == "en":
                self._english(text, weight, is_title, acc)
            elif lang is not None:
                self._other(text, weight, is_title, acc, language_rules(lang))
        return acc.ranked(self.min_phrase_count, self.max_concepts)

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        """The content words and two-word phrases of each sample's text."""
        return [self.extract_one(s) for s in samples]


def guess_language(text: str, hint: str | None = None) -> str | None:
    """The language to read `text` in: by its main script, with `hint` (e.g. the sample culture's language)
    deciding between the languages of one script; None for text without letters or in a language without word
    lists (warned once). Latin script: `hint` when it is a supported Latin-script language and the text has at
    least as many of its stopwords as of English ones, else English."""
    script = dominant_script(text)
    if script is None:
        return None
    hint = base_language(hint) or None
    supported = supported_languages()
    if script == "latin":
        if hint is None or hint == "en" or hint not in supported or language_rules(hint).script != "latin":
            return "en"
        toks = word_tokens(text)
        own = sum(t in language_rules(hint).stopwords for t in toks)
        english = sum(t in english_stopwords() for t in toks)
        return hint if own >= english else "en"
    if script in ("han", "kana"):
        if script == "kana" or hint == "ja" or any(script_of(c) == "kana" for c in text):
            return "ja"
        return "zh"
    lang = hint if hint in supported and language_rules(hint).script == script else SCRIPT_LANGUAGE.get(script)
    if lang is None or lang not in supported:
        warn_unsupported(hint if hint and hint != "en" else (lang or script), script)
        return None
    return lang


def mentions(text: str, concept: str, language: str = "auto") -> bool:
    """Whether `text` names `concept` (a normalised concept): its words in a row, each compared in normalised form
    ("Red dresses" names "red dress"); for Chinese and Japanese, the characters anywhere in the text."""
    if not concept or not text:
        return False
    if dominant_script(concept) in ("han", "kana"):
        return concept.replace(" ", "") in re.sub(r"\s+", "", unicodedata.normalize("NFKC", text).lower())
    lang = language if language != "auto" else (guess_language(concept) or "en")
    wanted = concept.split()
    plain = re.sub(r"(?<=\w)['’]s\b", "", text) if lang == "en" else text
    words = [normalise_concept(t, lang) or t for t in word_tokens(plain)]
    n = len(wanted)
    return any(words[i : i + n] == wanted for i in range(len(words) - n + 1))
