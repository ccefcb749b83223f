"""How positive an answer option sounds, the positivity heuristic baseline, and Excess Positivity Drift.

**What "positive" means here.** An option's positivity is the net density of sentiment words in its text:

    positivity(option) = (number of positive words - number of negative words) / number of words

A word's polarity comes from two sources, per language:

1. the emotion words of the label vocabularies (``culturekb/data/vocab/<lang>.json``, 20 languages): a word of a
   pleasant concept (joy, happiness, amusement, contentment, awe, excitement, gratitude, hope, love, pride,
   relief, trust) is positive, of an unpleasant one (sadness, anger, fear, disgust, anxiety, shame, guilt,
   embarrassment, envy, loneliness, pain, boredom) negative (``culturekb/data/lexicons/concept_polarity.json``);
   a stem form (``traurig*``) matches the words it starts;
2. in English, the NRC Emotion Lexicon's ``positive`` / ``negative`` flags
   (``culturekb/data/lexicons/nrc_polarity_en.json``; words flagged both are left out), also looked up without a
   plural or -ly/-ed/-ing ending; in Chinese, the polarity of the NRC emotions of the EmoAtlas Chinese lexicon
   (``emoatlas_chinese.json``: joy or trust positive; anger, disgust, fear or sadness negative; both or neither:
   none). The vocabulary wins where they disagree.

A polar word preceded by one of the language's negators (the vocabulary's ``negation.before`` list, within its
``window``: "not", "never", "n't" ...; 不, 没 ...; "nicht", "kein" ...) counts with the opposite sign. Text in a
script written without spaces (Chinese, Japanese, Thai) is matched greedily, longest word first, and each matched
word or left-over character counts as one word. A language without a vocabulary is read with the English lexicon
(usually scoring 0); the report counts such items.

**The positivity baseline** answers every question with its most positive option. Ties (often: several options
with no sentiment word) are broken uniformly at random with a seed per item (`seed` and the item id), so the
pick is reproducible; the report also gives the *expected* accuracy under a uniform tie-break (1/k credit when
the gold option is among k tied options), which does not depend on the seed.

**Excess Positivity Drift (EPD)**, among a model's wrong answers (a valid letter that is not the gold one):

- observed = the fraction of wrong answers whose chosen option is strictly more positive than the correct one;
- chance = the same fraction expected if each wrong answer were a uniform pick among that item's wrong options:
  the mean over those items of ``|{wrong options o : positivity(o) > positivity(gold)}| / (number of options - 1)``;
- EPD = observed - chance (in points of fraction; > 0: the model drifts to more positive options more than
  chance), with ``ratio`` = observed / chance (None when chance is 0).

Invalid answers (no letter) are not wrong answers here; they are counted apart.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from culturekb.errors import ConfigError
from culturekb.kb.vocab import load_vocabulary, normalise_form, vocabulary_languages
from culturekb.text.languages import word_tokens

__all__ = ["PositivityLexicon", "PositivityPick", "polarity_lexicon", "option_positivity", "positivity_pick",
           "excess_positivity_drift", "has_polarity_lexicon"]

_EN_EXTRA_NEGATORS = ("t", "cannot", "hardly", "barely", "nobody", "nothing", "nowhere", "none")
_SUFFIXES = ("ies", "es", "s", "ly", "ed", "ing", "ness")
_ZH_POSITIVE = frozenset({"joy", "trust"})
_ZH_NEGATIVE = frozenset({"anger", "disgust", "fear", "sadness"})


@dataclass(frozen=True)
class PositivityLexicon:
    """One language's polar words (+1/-1), stem forms, negators, and where they came from."""

    language: str
    polarity: dict[str, int]
    stems: tuple[tuple[str, int], ...]
    negators: frozenset[str]
    window: int
    spaced: bool
    sources: tuple[str, ...]
    longest: int = 1

    def lookup(self, word: str) -> int:
        """+1, -1 or 0 for a word: the word itself, a stem it starts with, or (English) the word without a common
        ending."""
        value = self.polarity.get(word)
        if value is not None:
            return value
        for stem, pol in self.stems:
            if word.startswith(stem):
                return pol
        if self.language == "en":
            for suffix in _SUFFIXES:
                if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                    base = word[: -len(suffix)]
                    for candidate in (base, base + "e", base + "y"):
                        if candidate in self.polarity:
                            return self.polarity[candidate]
        return 0


def _read(name: str) -> Any:
    return json.loads(resources.files("culturekb.data").joinpath(f"lexicons/{name}").read_text("utf-8"))


def _vocabulary_polarity(language: str) -> tuple[dict[str, int], list[tuple[str, int]], Any]:
    """Polar words and stems of a language's label vocabulary, and the vocabulary itself."""
    vocab = load_vocabulary(language)
    concepts = _read("concept_polarity.json")
    sign = {c: 1 for c in concepts["positive"]} | {c: -1 for c in concepts["negative"]}
    words: dict[str, int] = {}
    stems: list[tuple[str, int]] = []
    for concept, forms in vocab.forms.items():
        pol = sign.get(concept)
        if pol is None:
            continue
        for form in forms:
            norm = normalise_form(form)
            if norm.endswith("*") and vocab.spaced:
                stems.append((norm.rstrip("*"), pol))
            else:
                words[norm.strip("*")] = pol
    return words, stems, vocab


@cache
def polarity_lexicon(language: str = "en") -> PositivityLexicon:
    """The polarity lexicon of `language` (any language with a label vocabulary; else the English one)."""
    lang = language.strip().lower().replace("_", "-").split("-")[0]
    if lang not in vocabulary_languages():
        lang = "en"
    words, stems, vocab = _vocabulary_polarity(lang)
    sources = [f"vocab/{lang}.json emotion words (concept_polarity.json)"]
    extra: dict[str, int] = {}
    if lang == "en":
        raw = _read("nrc_polarity_en.json")
        extra = {w: 1 for w in raw["positive"]} | {w: -1 for w in raw["negative"]}
        sources.append("NRC EmoLex positive/negative (nrclex 4.1.0)")
    elif lang == "zh":
        for word, emotions in _read("emoatlas_chinese.json").items():
            pos, neg = bool(_ZH_POSITIVE & set(emotions)), bool(_ZH_NEGATIVE & set(emotions))
            if pos != neg:
                extra[word] = 1 if pos else -1
        sources.append("EmoAtlas Chinese NRC emotions (joy, trust +; anger, disgust, fear, sadness -)")
    polarity = {**extra, **words}
    negators = {normalise_form(n) for n in vocab.negation.before}
    if lang == "en":
        negators.update(_EN_EXTRA_NEGATORS)
    stems.sort(key=lambda x: -len(x[0]))
    return PositivityLexicon(lang, polarity, tuple(stems), frozenset(negators), vocab.negation.window, vocab.spaced,
                             tuple(sources), longest=max((len(w) for w in polarity), default=1))


def has_polarity_lexicon(language: str) -> bool:
    """Whether `language` has its own polarity words (else the English lexicon is used)."""
    return language.strip().lower().replace("_", "-").split("-")[0] in vocabulary_languages()


def _spaced(text: str, lexicon: PositivityLexicon) -> tuple[int, int]:
    """(net polarity, number of words) of text written with spaces."""
    words = word_tokens(text)
    net = 0
    for i, w in enumerate(words):
        value = lexicon.lookup(w)
        if value and any(x in lexicon.negators for x in words[max(0, i - lexicon.window): i]):
            value = -value
        net += value
    return net, len(words)


def _unspaced(text: str, lexicon: PositivityLexicon) -> tuple[int, int]:
    """(net polarity, number of segments) of text written without spaces: greedy longest match, a negator
    ending within the `window` characters before a polar word flipping it."""
    norm = normalise_form(text)
    net, segments, i = 0, 0, 0
    while i < len(norm):
        if norm[i].isspace() or not (norm[i].isalnum() or norm[i] in "'"):
            i += 1
            continue
        size = 1
        for n in range(min(lexicon.longest, len(norm) - i), 0, -1):
            if norm[i: i + n] in lexicon.polarity:
                size = n
                break
        value = lexicon.polarity.get(norm[i: i + size], 0)
        before = norm[max(0, i - lexicon.window): i]
        if value and any(neg in before for neg in lexicon.negators):
            value = -value
        net += value
        segments += 1
        i += size
    return net, segments


def option_positivity(text: str, language: str = "en") -> float:
    """The positivity of one option text (see the module docstring); 0.0 for text without words."""
    lexicon = polarity_lexicon(language)
    net, n = _spaced(text, lexicon) if lexicon.spaced else _unspaced(text, lexicon)
    return net / n if n else 0.0


@dataclass(frozen=True)
class PositivityPick:
    """The baseline's answer to one item: its option scores, the most positive options and the pick."""

    scores: tuple[float, ...]
    tied: tuple[int, ...]
    """Indices of the options with the highest score."""
    pick: int

    def expected_credit(self, gold: int) -> float:
        """The expected accuracy of a uniform tie-break: 1/k when `gold` is among the k tied options."""
        return 1.0 / len(self.tied) if gold in self.tied else 0.0


def positivity_pick(options: Sequence[str], language: str = "en", *, seed: int = 0, item_id: str = ""
                    ) -> PositivityPick:
    """The most positive option of an item, ties broken by a seeded uniform draw keyed by `item_id`."""
    if not options:
        raise ConfigError("positivity_pick needs at least one option")
    scores = tuple(option_positivity(o, language) for o in options)
    best = max(scores)
    tied = tuple(i for i, s in enumerate(scores) if s == best)
    pick = tied[0] if len(tied) == 1 else random.Random(f"{seed}:{item_id}").choice(tied)
    return PositivityPick(scores, tied, pick)


def excess_positivity_drift(option_scores: Sequence[Sequence[float]], golds: Sequence[int],
                            chosen: Sequence[int | None]) -> dict[str, Any]:
    """Excess Positivity Drift among wrong answers (definition in the module docstring).

    `option_scores`: per item, the positivity of each option; `golds`: the gold option's index; `chosen`: the
    answer's option index, None for an invalid answer. Returns ``n_wrong``, ``n_invalid``, ``observed``,
    ``chance``, ``drift`` and ``ratio`` (rates None when there is no wrong answer).
    """
    if not len(option_scores) == len(golds) == len(chosen):
        raise ConfigError(f"excess_positivity_drift: {len(option_scores)} score rows, {len(golds)} golds and "
                          f"{len(chosen)} answers; give one of each per item")
    more, chance = [], []
    invalid = 0
    for scores, gold, pick in zip(option_scores, golds, chosen, strict=True):
        if pick is None:
            invalid += 1
            continue
        if pick == gold:
            continue
        wrong = [s for j, s in enumerate(scores) if j != gold]
        more.append(scores[pick] > scores[gold])
        chance.append(sum(s > scores[gold] for s in wrong) / len(wrong))
    if not more:
        return {"n_wrong": 0, "n_invalid": invalid, "observed": None, "chance": None, "drift": None, "ratio": None}
    observed = sum(more) / len(more)
    expected = sum(chance) / len(chance)
    return {"n_wrong": len(more), "n_invalid": invalid, "observed": observed, "chance": expected,
            "drift": observed - expected, "ratio": observed / expected if expected > 0 else None}
