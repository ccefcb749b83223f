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
from collections.abc import Callable, Sequence
from typing import Literal, Protocol, runtime_checkable

from culturekb import registry
from culturekb._io import sha256_text, stable_hash
from culturekb.errors import ConfigError, DataError
from culturekb.kb.schema import Sample
from culturekb.kb.schemes import EmotionScheme
from culturekb.text._candidates import (
    ADJ_SUFFIXES,
    CLAUSE_SPLIT,
    CLAUSE_SPLIT_ANY,
    INTERJECTION,
    VERB_SUFFIXES,
    Context,
    Scores,
    english_word_lists,
    split_clauses,
    title_text,
    tokens_of,
)
from culturekb.text.cjk import segment_cjk_detailed
from culturekb.text.drops import DROP_REASONS, Extraction, ReportsDrops
from culturekb.text.languages import (
    SCRIPT_LANGUAGE,
    EmotionWords,
    LanguageRules,
    base_language,
    culture_language,
    dominant_script,
    instruction_words,
    is_emotion_scheme,
    is_emotion_word,
    language_rules,
    scheme_emotion_words,
    script_of,
    strip_suffixes,
    supported_languages,
    warn_unsupported,
    word_tokens,
    words_sha,
)
from culturekb.text.names import Token, artist_tokens, name_positions
from culturekb.text.ngrams import NGRAM_SCRIPTS, ngram_candidates
from culturekb.text.normalise import english_stopwords, normalise_concept
from culturekb.text.thai import segment_thai

__all__ = [
    "BUILD_FIELDS",
    "DROP_REASONS",
    "STIMULUS_FIELDS",
    "TRAINING_FIELDS",
    "ConceptExtractor",
    "Extraction",
    "PrecomputedConcepts",
    "ReportsDrops",
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


_Kind = Literal["stop", "head", "colour", "modifier"]
_Verdict = tuple[_Kind, str | None]
LanguageChoice = str
"""A language code ("en", "zh" ...) or "auto": each text in the language of its script and of its sample's culture."""


class TextConceptExtractor:
    """Offline concepts from a sample's text fields, in any language with word lists (`supported_languages()`).

    English heuristics, in order: text is split into clauses at punctuation; stopwords, instruction words,
    function words and expressions ("no matter"), emotion, judgement and generic words (see
    culturekb/data/text_concepts_en.txt), people's names (`culturekb.text.names`), words shorter than 3 letters,
    and words that look like verbs, adverbs or adjectives by their suffix (-ing, -ed, -ly, -ous, -ful ...; listed
    nouns excepted) end a phrase. Kept are content words and colours alone, and two-word phrases whose first word
    is a colour or a listed modifier ("red dress", "full moon") or that occur at least `min_phrase_count` times
    in the sample.

    Other space-separated languages (es de fr pt ru ar hi sw): words that are not stopwords, instruction,
    function, emotion or listed non-concept words (`culturekb/data/languages/<code>.txt`, `.../instructions/`
    and the label vocabularies) nor names, and have at least the language's `min_chars` letters are concepts; two
    adjacent ones form a phrase kept when it occurs at least `min_phrase_count` times or in the title. Chinese
    and Japanese: the word candidates of `culturekb.text.cjk` (Chinese pieces confirmed by a word list).

    `scheme`: the KB's label scheme; when it labels emotions, its label words in every language are dropped
    too (a user scheme's `neutral`), on top of those of the packaged emotion schemes. People's names are dropped
    unless the scheme labels categories (ricevl14 has "notable figures": there a name is the knowledge);
    `names` True or False overrides that.

    Title words count `title_weight` times. Candidates are normalised (`normalise_concept`), ranked by count
    (phrases x `phrase_weight`), ties by first position; the top `max_concepts` are returned.
    `extract_detailed` also says, per sample, which candidates were dropped and why (`culturekb.text.drops`).

    `fields`: any of "title", "text", "question", "explanations" (default `STIMULUS_FIELDS`; the build adds
    "explanations"). `language`: "auto" (default) reads each text in the language of its script; Latin-script
    text is read as the sample culture's language when that language uses the Latin script and the text has
    more of its stopwords than of English ones, else as English. A text in a language without word lists gives
    no concepts (with a one-time warning), except text in Khmer, Lao or Burmese script, which gives character
    n-grams (`culturekb.text.ngrams`; warned too); Japanese in kana only is cut at particles (`culturekb.text.cjk`).
    A language code instead reads every text with that language's rules.
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
        scheme: str | EmotionScheme | None = None,
        names: bool | None = None,
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
        self._words = english_word_lists()
        self.scheme: EmotionScheme | None = None
        scheme_part = ""
        category_scheme = False
        if scheme is not None:
            from culturekb.kb.schemes import get_scheme

            self.scheme = get_scheme(scheme) if isinstance(scheme, str) else scheme
            if is_emotion_scheme(self.scheme):
                scheme_part = f":s{stable_hash(self.scheme.to_dict())[:8]}"
            else:
                self.scheme, category_scheme = None, True
        self.names = not category_scheme if names is None else bool(names)
        if not self.names:
            scheme_part += ":keepnames"
        self._scheme_words: dict[str, EmotionWords] = {}
        sha = sha256_text(self._words.sha + words_sha(None if language == "auto" else [language]))
        self.id = (
            f"text:{language}:{'+'.join(self.fields)}:k{max_concepts}:p{min_phrase_count}"
            f":tw{self.title_weight:g}:pw{self.phrase_weight:g}{scheme_part}:{sha[:10]}"
        )

    # -- word classes ---------------------------------------------------------------------------------------
    def _emotion(self, word: str, language: str) -> bool:
        extra = None
        if self.scheme is not None:
            if language not in self._scheme_words:
                self._scheme_words[language] = scheme_emotion_words(self.scheme, language)
            extra = self._scheme_words[language]
        return is_emotion_word(word, language, extra)

    def _dropped(self, tok: str, rules: LanguageRules) -> str | None:
        """The reason a word that passed the stopword list is still no concept (None: it may be one)."""
        if tok in instruction_words(rules.code):
            return "instruction"
        if tok in rules.function_words or tok in self._words.placeholders or INTERJECTION.match(tok):
            return "function"
        if self._emotion(tok, rules.code) or (rules.code == "en" and tok in self._words.emotion):
            return "emotion"
        if tok in rules.non_concepts:
            return "non_concept"
        return None

    def _kind(self, tok: str) -> _Verdict:
        w = self._words
        if tok in w.stop or len(tok) < 3:
            return "stop", None
        reason = self._dropped(tok, language_rules("en"))
        if reason is not None:
            return "stop", reason
        if tok in w.colours:
            return "colour", None
        if tok in w.nouns:
            return "head", None
        if tok in w.modifiers:
            return "modifier", None
        for suffix, min_len in (*VERB_SUFFIXES, *ADJ_SUFFIXES):
            if tok.endswith(suffix) and len(tok) >= min_len:
                return "stop", None
        singular = normalise_concept(tok, "en")
        if singular is None or singular in w.stop:
            return "stop", None
        reason = self._dropped(singular, language_rules("en"))
        return ("stop", reason) if reason is not None else ("head", None)

    def _content(self, tok: str, rules: LanguageRules) -> tuple[bool, str | None]:
        if len(tok) < rules.min_chars or tok.isdigit() or tok in rules.stopwords:
            return False, None
        if rules.verb_endings and tok.endswith(rules.verb_endings) and tok not in rules.proper_concepts:
            return False, "function"
        reason = self._dropped(tok, rules)
        return reason is None, reason

    def _known(self, rules: LanguageRules, ctx: Context) -> Callable[[str], bool]:
        """Whether a lowercased word is a known word of the language (so a capitalised one is no name)."""
        def known(word: str) -> bool:
            if word in ctx.lowercase or word in rules.stopwords or word in rules.proper_concepts:
                return True
            if rules.code == "en":
                singular = normalise_concept(word, "en")
                return word in self._words.known or (singular is not None and singular in self._words.known)
            return self._dropped(word, rules) is not None

        return known

    # -- function expressions and names ---------------------------------------------------------------------
    def _pre_drops(self, text: str, tokens: list[Token], clauses: list[list[int]], rules: LanguageRules,
                   ctx: Context, acc: Scores) -> dict[int, str]:
        """Token index -> reason for the words of function expressions ("no matter") and of people's names."""
        out: dict[int, str] = {}
        for clause in clauses:
            low = [tokens[i].lower for i in clause]
            for phrase in rules.function_phrases:
                n = len(phrase)
                for k in range(len(low) - n + 1):
                    if tuple(low[k : k + n]) == phrase and not any(clause[k + j] in out for j in range(n)):
                        out.update((clause[k + j], "function") for j in range(n))
                        acc.drop("function", " ".join(phrase))
        if self.names:
            for i in name_positions(text, tokens, rules, self._known(rules, ctx), ctx.artist):
                out.setdefault(i, "name")
        return out

    # -- English --------------------------------------------------------------------------------------------
    def _english(self, text: str, weight: float, is_title: bool, acc: Scores, ctx: Context) -> None:
        text = unicodedata.normalize("NFKC", text).replace("’", "'")
        tokens = tokens_of(text, english=True)
        clauses = split_clauses(text, tokens, CLAUSE_SPLIT)
        pre = self._pre_drops(text, tokens, clauses, language_rules("en"), ctx, acc)
        for clause in clauses:
            toks = [tokens[i].lower for i in clause]
            verdicts = [self._kind(t) for t in toks]
            kinds: list[_Kind] = []
            for i, tok, (kind, reason) in zip(clause, toks, verdicts, strict=True):
                if i in pre and (kind != "stop" or pre[i] == "function"):
                    kind, reason = "stop", (pre[i] if pre[i] == "name" else None)
                    acc.drop(reason, tok)
                else:
                    acc.drop(reason, normalise_concept(tok, "en") or tok)
                kinds.append(kind)
            for i, (tok, kind) in enumerate(zip(toks, kinds, strict=True)):
                acc.pos += 1
                if kind in ("head", "colour"):
                    acc.add(normalise_concept(tok, "en"), weight)
                if i > 0 and kind == "head" and kinds[i - 1] != "stop":
                    ok = kinds[i - 1] in ("colour", "modifier") or is_title
                    acc.phrase(normalise_concept(f"{toks[i - 1]} {tok}", "en"), weight * self.phrase_weight, ok)

    # -- other languages ------------------------------------------------------------------------------------
    def _cjk(self, text: str, weight: float, acc: Scores, rules: LanguageRules) -> None:
        for clause in CLAUSE_SPLIT_ANY.split(text.lower()):
            seg = segment_cjk_detailed(clause, rules.code)
            for cut in seg.cut_at:
                if cut not in rules.stopwords and cut not in rules.function_chars:
                    acc.drop(self._dropped(cut, rules), cut)
            for frag in seg.fragments:
                acc.drop("fragment", frag)
            for word in seg.words:
                acc.pos += 1
                if self._emotion(word, rules.code):
                    acc.drop("emotion", word)
                    continue
                acc.add(normalise_concept(word, rules.code), weight)

    def _thai(self, text: str, weight: float, acc: Scores, rules: LanguageRules) -> None:
        """Thai: the words of the dictionary segmenter (`culturekb.text.thai`), each kept as `_content` says."""
        for clause in CLAUSE_SPLIT_ANY.split(text.lower()):
            for word in segment_thai(clause):
                acc.pos += 1
                ok, reason = self._content(word, rules)
                acc.drop(reason, word)
                if ok:
                    acc.add(normalise_concept(word, rules.code), weight)

    def _ngrams(self, text: str, weight: float, acc: Scores) -> None:
        """Text in a script without word lists nor segmenter (Khmer, Lao, Burmese): character n-gram candidates
        (`culturekb.text.ngrams`); text in any other script without word lists gives nothing."""
        script = dominant_script(unicodedata.normalize("NFKC", text))
        if script not in NGRAM_SCRIPTS:
            return
        for gram in ngram_candidates(text):
            acc.pos += 1
            acc.add(normalise_concept(gram, SCRIPT_LANGUAGE[script]), weight)

    def _other(self, text: str, weight: float, is_title: bool, acc: Scores, rules: LanguageRules,
               ctx: Context) -> None:
        if rules.segmentation == "thai":  # before NFKC, which splits the vowel ำ into two marks
            self._thai(unicodedata.normalize("NFC", text), weight, acc, rules)
            return
        text = unicodedata.normalize("NFKC", text).replace("’", "'")
        if not rules.spaced:
            self._cjk(text, weight, acc, rules)
            return
        tokens = tokens_of(text, english=False)
        clauses = split_clauses(text, tokens, CLAUSE_SPLIT_ANY)
        pre = self._pre_drops(text, tokens, clauses, rules, ctx, acc)
        for clause in clauses:
            toks = [strip_suffixes(tokens[i].lower, rules) for i in clause]
            keep: list[bool] = []
            for i, tok in zip(clause, toks, strict=True):
                ok, reason = self._content(tok, rules)
                if i in pre and (ok or pre[i] == "function"):
                    ok, reason = False, (pre[i] if pre[i] == "name" else None)
                acc.drop(reason, tok)
                keep.append(ok)
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
                    out.append((title_text(sample.title), self.title_weight, True))
            elif f == "explanations":
                out.extend((e, 1.0, False) for e in sample.explanations if e)
            else:
                value = getattr(sample, f)
                if value:
                    out.append((str(value), 1.0, False))
        return out

    def _extraction(self, sample: Sample) -> Extraction:
        acc = Scores()
        texts = self._texts(sample)
        lowercase = frozenset(t.lower for text, _, _ in texts for t in tokens_of(text, english=False)
                              if t.text[:1].islower())
        ctx = Context(artist_tokens(sample), lowercase)
        for text, weight, is_title in texts:
            lang = self.text_language(text, sample.culture)
            if lang == "en":
                self._english(text, weight, is_title, acc, ctx)
            elif lang is not None:
                self._other(text, weight, is_title, acc, language_rules(lang), ctx)
            elif self.language == "auto":
                self._ngrams(text, weight, acc)
        return acc.extraction(self.min_phrase_count, self.max_concepts)

    def extract_one(self, sample: Sample) -> list[str]:
        """The concepts of one sample (see the class docstring for the heuristics)."""
        return self._extraction(sample).concepts

    def extract(self, samples: Sequence[Sample]) -> list[list[str]]:
        """The content words and two-word phrases of each sample's text."""
        return [self._extraction(s).concepts for s in samples]

    def extract_detailed(self, samples: Sequence[Sample]) -> list[Extraction]:
        """Each sample's concepts and the candidates dropped from it, per reason (`culturekb.text.drops`)."""
        return [self._extraction(s) for s in samples]


def guess_language(text: str, hint: str | None = None) -> str | None:
    """The language to read `text` in: by its main script, with `hint` (e.g. the sample culture's language)
    deciding between the languages of one script; None for text without letters or in a language without word
    lists (warned once). Latin script: `hint` when it is a supported Latin-script language and the text has at
    least as many of its stopwords as of English ones, else English."""
    script = dominant_script(unicodedata.normalize("NFKC", text))  # superscript and fullwidth letters count as Latin
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
        warn_unsupported(lang, script, hint)
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


# -- the registered factories (culturekb.registry.CONCEPT_EXTRACTORS) ------------------------------------------
precomputed_factory = registry.without_argument(PrecomputedConcepts, "concept extractor", "precomputed")
text_factory = registry.without_argument(TextConceptExtractor, "concept extractor", "text")
