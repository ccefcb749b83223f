"""Label vocabularies per language: language-neutral concepts -> the words people use for them.

Data, not code: `culturekb/data/vocab/concepts.json` lists the concepts (every label of the built-in schemes plus
common labels of user schemes: guilt, shame, neutral, love, ...), and `culturekb/data/vocab/<lang>.json` gives,
per language, the surface forms of each concept (nouns, adjectives, inflections, common synonyms), the words
that negate them, the words that start a contrasting clause ("but", "sondern", "但是") and the words that
introduce an answer ("Answer:", "Antwort:", "答案：", JSON keys). Each language file names its source and
whether a native speaker checked it.

Form conventions: matching is case-insensitive and NFKC-normalised; a form ending in `*` is a stem and matches
any word that starts with it ("traurig*" matches "traurige", "trauriges"); a form starting with `*` is an ending
and matches any word that ends with it ("*sikitisha" matches "inasikitisha"); the first form of a concept is
never a stem or an ending, because it is the word a prompt shows for the label.

A scheme label is tied to a concept by name (`sadness`) or explicitly by the scheme file's `concepts` table;
`culturekb.kb.schemes.attach_vocabularies` then gives the label that concept's words in every language (the
scheme's `vocabulary`, kept apart from its own synonyms and translations). A concept's `also` list names
neighbours whose words it takes over when the scheme has no label for them (a scheme with `joy` and no
`happiness` reads "glücklich" as joy).
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from culturekb.errors import ConfigError

__all__ = [
    "Concept",
    "LanguageVocabulary",
    "NegationRules",
    "REQUIRED_LANGUAGES",
    "concept_catalogue",
    "load_vocabulary",
    "match_concepts",
    "normalise_form",
    "vocabulary_languages",
]

log = logging.getLogger(__name__)

REQUIRED_LANGUAGES: tuple[str, ...] = (
    "en", "ar", "zh", "hi", "ja", "es", "sw", "de", "fr", "pt", "ru", "id", "ms", "th", "vi", "tl", "am", "ko", "tr",
)
"""The languages culturekb promises a vocabulary for (the seven Cedar languages first after English)."""


@dataclass(frozen=True)
class Concept:
    """A language-neutral label concept: its key, an English gloss, and neighbours it may stand in for."""

    key: str
    gloss: str
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class NegationRules:
    """How a language negates a label word: negators before or after it, within `window` words (or characters,
    for languages written without spaces), minus `exceptions` that only look negative ("not only", "不禁")."""

    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    window: int = 3
    exceptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class LanguageVocabulary:
    """One language's label words, negation, contrast and answer words, and where they came from."""

    language: str
    name: str
    source: str
    native_checked: bool
    spaced: bool
    forms: dict[str, tuple[str, ...]]
    negation: NegationRules
    contrast: tuple[str, ...] = ()
    weak: tuple[str, ...] = ()
    answer_keys: tuple[str, ...] = ()
    explanation_keys: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


def normalise_form(text: str) -> str:
    """The comparison form of a word: NFKC, lower case, separators collapsed to one space, stem mark kept."""
    text = unicodedata.normalize("NFKC", text).replace("’", "'").lower().strip()
    return re.sub(r"[\s_\-]+", " ", text)


def _vocab_file(name: str) -> str:
    try:
        return resources.files("culturekb.data").joinpath(f"vocab/{name}").read_text("utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(
            f"no label vocabulary file culturekb/data/vocab/{name}; shipped languages: {list(vocabulary_languages())}"
        ) from exc


def _strings(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) and x.strip() for x in raw):
        raise ConfigError(f"{where}: expected a list of non-empty strings, got {raw!r}")
    return tuple(x.strip() for x in raw)


@cache
def concept_catalogue() -> dict[str, Concept]:
    """Every concept of the vocabularies, keyed by its (normalised) name."""
    raw = json.loads(_vocab_file("concepts.json"))
    out: dict[str, Concept] = {}
    for key, entry in raw["concepts"].items():
        out[normalise_form(key)] = Concept(
            key=normalise_form(key), gloss=str(entry.get("gloss", "")),
            also=tuple(normalise_form(a) for a in _strings(entry.get("also"), f"concepts.json[{key!r}].also")),
        )
    for c in out.values():
        unknown = [a for a in c.also if a not in out]
        if unknown:
            raise ConfigError(f"culturekb/data/vocab/concepts.json: concept {c.key!r} names unknown 'also' {unknown}")
    return out


@cache
def vocabulary_languages() -> tuple[str, ...]:
    """The language codes that have a vocabulary file (English first, then alphabetical)."""
    folder = resources.files("culturekb.data").joinpath("vocab")
    found = sorted(
        entry.name[: -len(".json")] for entry in folder.iterdir()
        if entry.name.endswith(".json") and entry.name != "concepts.json"
    )
    return tuple(sorted(found, key=lambda code: (code != "en", code)))


@cache
def load_vocabulary(language: str) -> LanguageVocabulary:
    """The vocabulary of one language (ISO 639-1 code, e.g. `de`); ConfigError naming the shipped ones if none."""
    lang = language.strip().lower().replace("_", "-").split("-")[0]
    if lang not in vocabulary_languages():
        raise ConfigError(
            f"no label vocabulary for language {language!r}; shipped: {list(vocabulary_languages())}. Give the scheme "
            "'translations' for it in a scheme file"
        )
    where = f"culturekb/data/vocab/{lang}.json"
    raw = json.loads(_vocab_file(f"{lang}.json"))
    catalogue = concept_catalogue()
    forms: dict[str, tuple[str, ...]] = {}
    for key, words in (raw.get("concepts") or {}).items():
        concept = normalise_form(key)
        if concept not in catalogue:
            raise ConfigError(f"{where}: unknown concept {key!r}; add it to concepts.json or fix the spelling")
        clean = _strings(words, f"{where}[{key!r}]")
        if clean and "*" in clean[0]:
            raise ConfigError(f"{where}[{key!r}]: the first form is shown in prompts and cannot be a stem ('*')")
        forms[concept] = clean
    neg = raw.get("negation") or {}
    return LanguageVocabulary(
        language=lang,
        name=str(raw.get("name", lang)),
        source=str(raw.get("source", "")),
        native_checked=bool(raw.get("native_checked", False)),
        spaced=bool(raw.get("spaced", True)),
        forms=forms,
        negation=NegationRules(
            before=_strings(neg.get("before"), f"{where}.negation.before"),
            after=_strings(neg.get("after"), f"{where}.negation.after"),
            window=int(neg.get("window", 3)),
            exceptions=_strings(neg.get("exceptions"), f"{where}.negation.exceptions"),
        ),
        contrast=_strings(raw.get("contrast"), f"{where}.contrast"),
        weak=_strings(raw.get("weak"), f"{where}.weak"),
        answer_keys=_strings(raw.get("answer_keys"), f"{where}.answer_keys"),
        explanation_keys=_strings(raw.get("explanation_keys"), f"{where}.explanation_keys"),
    )


def match_concepts(labels: Iterable[str], explicit: Mapping[str, str] | None = None) -> dict[str, tuple[str, str]]:
    """For each label, (concept, how): how is `explicit` (the scheme's `concepts` table) or `name` (the label is
    a concept's name, case and separators aside). Unmatched labels are left out; a concept goes to one label.

    Labels are not tied through synonyms ("calm" is not `contentment`): a tie gives a label every word of the
    concept, and a near-synonym would take words that mean something else. Tie those in the scheme file.
    """
    catalogue = concept_catalogue()
    out: dict[str, tuple[str, str]] = {}
    taken: set[str] = set()
    for label in labels:
        found: tuple[str, str] | None = None
        if explicit and label in explicit:
            concept = normalise_form(explicit[label])
            if concept not in catalogue:
                raise ConfigError(
                    f"scheme 'concepts' ties label {label!r} to unknown concept {explicit[label]!r}; "
                    f"known concepts: {sorted(catalogue)}"
                )
            found = (concept, "explicit")
        elif normalise_form(label) in catalogue:
            found = (normalise_form(label), "name")
        if found is not None and found[0] not in taken:
            out[label] = found
            taken.add(found[0])
    return out
