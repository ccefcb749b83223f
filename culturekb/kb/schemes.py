"""Label schemes: ordered label sets with synonyms, translations, quadrants and mappings, stored as data.

Every scheme loaded through `get_scheme`, `load_scheme` or `scheme_from_labels` is tied to the label vocabularies
of `culturekb.kb.vocab` (19 languages): a label named like a vocabulary concept (or tied to one in the scheme
file: `"concepts": {"blue": "sadness"}`) gets that concept's words in every language as its `vocabulary`, kept
apart from the scheme's own `synonyms` and `translations` (which win where they disagree). `match`, `translate`
and the answer parser use both; `surface_forms` and the judges use the scheme's own words only. A scheme file can
opt out with `"vocabularies": false`. For user schemes the table of ties is logged once, so it can be checked.
A surface form ending in `*` is a stem: it matches a single word that starts with it ("traurig*"); one starting
with `*` is an ending: it matches a single word that ends with it ("*sikitisha").
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError, DataError
from culturekb.kb.vocab import (
    concept_catalogue,
    load_vocabulary,
    match_concepts,
    normalise_form,
    vocabulary_languages,
)

__all__ = [
    "EmotionScheme",
    "attach_vocabularies",
    "get_scheme",
    "list_schemes",
    "load_scheme",
    "scheme_from_labels",
    "map_distribution",
]

log = logging.getLogger(__name__)

_BUILTIN = ("artemis9", "cedar14", "plutchik8", "ricevl14")


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", " ", text.strip().lower())


@dataclass(frozen=True)
class EmotionScheme:
    """A named, ordered label set. Also used for non-emotion label sets (e.g. RICE-VL categories)."""

    name: str
    labels: tuple[str, ...]
    synonyms: dict[str, tuple[str, ...]] = field(default_factory=dict)
    translations: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    quadrants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    mappings: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    description: str = ""
    concepts: dict[str, str] = field(default_factory=dict)
    """label -> the vocabulary concept whose words it took (see `culturekb.kb.vocab`)."""
    vocabulary: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    """language -> label -> words from the shared label vocabularies (English included), after the own words."""

    def __post_init__(self) -> None:
        if not self.labels:
            raise ConfigError(f"label scheme {self.name!r} has no labels; give at least two labels")
        if len(set(self.labels)) != len(self.labels):
            raise ConfigError(f"label scheme {self.name!r} repeats a label: {list(self.labels)}")
        for section, keys in (("synonyms", self.synonyms), ("descriptions", self.descriptions),
                              ("concepts", self.concepts)):
            extra = set(keys) - set(self.labels)
            if extra:
                raise ConfigError(
                    f"label scheme {self.name!r}: {section} name labels not in the scheme: {sorted(extra)}"
                )
        for lang, table in (*self.translations.items(), *self.vocabulary.items()):
            extra = set(table) - set(self.labels)
            if extra:
                raise ConfigError(
                    f"label scheme {self.name!r}: translations[{lang!r}] name labels not in the scheme: {sorted(extra)}"
                )
        for q, labs in self.quadrants.items():
            extra = set(labs) - set(self.labels)
            if extra:
                raise ConfigError(f"label scheme {self.name!r}: quadrant {q} names unknown labels {sorted(extra)}")

    # -- lookups -----------------------------------------------------------------------------------------
    def index(self, label: str) -> int:
        """The position of `label` (or of the label its synonym or translation names) in the scheme."""
        return self.labels.index(self.canonical(label))

    def canonical(self, label: str) -> str:
        """The scheme label for `label`, its synonym or translation; raises DataError if none matches."""
        found = self.match(label)
        if found is None:
            raise DataError(
                f"unknown label {label!r} for scheme {self.name!r}; expected one of {list(self.labels)} "
                "(or a listed synonym/translation)"
            )
        return found

    def match(self, text: str) -> str | None:
        """Exact match of `text` to a label, synonym or translation (case- and separator-insensitive); a single
        word also matches a stem form (`traurig*` matches "traurige") or an ending form (`*sikitisha`)."""
        key = _norm(text)
        lookup = self._lookup()
        hit = lookup.get(key)
        if hit is not None or not key or " " in key:
            return hit
        for end in range(len(key), 0, -1):  # the longest stem first
            hit = lookup.get(key[:end] + "*")
            if hit is not None:
                return hit
        for start in range(len(key)):  # then the longest ending ('*sikitisha')
            hit = lookup.get("*" + key[start:])
            if hit is not None:
                return hit
        return None

    def _lookup(self) -> dict[str, str]:
        cache = self.__dict__.get("_lookup_cache")
        if cache is None:
            cache = {}
            for lab in self.labels:
                cache[_norm(lab)] = lab
            for lab, syns in self.synonyms.items():
                for s in syns:
                    cache.setdefault(_norm(s), lab)
            for table in (*self.translations.values(), *self.vocabulary.values()):
                for lab, words in table.items():
                    for w in words:
                        cache.setdefault(_norm(w), lab)
            object.__setattr__(self, "_lookup_cache", cache)
        return cache

    def surface_forms(self, language: str | None = None) -> dict[str, str]:
        """All surface forms -> label, optionally restricted to one translation language (plus English)."""
        if language is None:
            return dict(self._lookup())
        out = {_norm(lab): lab for lab in self.labels}
        for lab, syns in self.synonyms.items():
            for s in syns:
                out.setdefault(_norm(s), lab)
        for lab, words in self.translations.get(language, {}).items():
            for w in words:
                out.setdefault(_norm(w), lab)
        return out

    def quadrant_of(self, label: str) -> str | None:
        """The Russell quadrant (Q1-Q4) of `label`, or None when the scheme has no quadrants for it."""
        for q, labs in self.quadrants.items():
            if label in labs:
                return q
        return None

    def translate(self, label: str, language: str) -> str:
        """The first translation of `label` into `language` (the scheme's own, else its vocabulary's), or the
        English label. Stem and ending forms (``traurig*``, ``*sikitisha``) are never shown: the first whole word."""
        for table in (self.translations, self.vocabulary if language != "en" else {}):
            words = [w for w in table.get(language, {}).get(label, ()) if not (w.startswith("*") or w.endswith("*"))]
            if words:
                return words[0]
        return label

    def with_words(self, words: Mapping[str, Mapping[str, Sequence[str]]], source: str = "label words"
                   ) -> EmotionScheme:
        """A copy whose `translations` put `words` (language -> label -> words; see `culturekb.kb.label_words`)
        first, so that a prompt shows them (`translate`) and the parser reads them. A label may be named by a
        synonym; a given word leaves the other labels' words in that language (the given words win), and a word given
        for two labels of one language raises ConfigError. `source` names the words in error messages."""
        if not words:
            return self
        translations = {lang: dict(table) for lang, table in self.translations.items()}
        vocabulary = {lang: dict(table) for lang, table in self.vocabulary.items()}
        for lang, table in words.items():
            given: dict[str, list[str]] = {}
            owner: dict[str, str] = {}
            for name, forms in table.items():
                label = name if name in self.labels else self.match(name)
                if label is None:
                    raise ConfigError(f"{source}: {lang}.{name}: {name!r} is not a label of scheme {self.name!r} "
                                      f"(labels: {list(self.labels)}); name the words' label as the scheme does")
                for w in ([forms] if isinstance(forms, str) else forms):
                    key = _norm(w)
                    if owner.setdefault(key, label) != label:
                        raise ConfigError(f"{source}: {lang}: the word {w!r} is given for both {owner[key]!r} and "
                                          f"{label!r}; give each word to one label")
                    given.setdefault(label, []).append(w)
            for tables in (translations, vocabulary):
                current = tables.get(lang)
                if not current:
                    continue
                tables[lang] = {lab: kept for lab, ws in current.items()
                                if (kept := tuple(w for w in ws if owner.get(_norm(w), lab) == lab))}
            target = translations.setdefault(lang, {})
            for label, forms in given.items():
                target[label] = tuple(dict.fromkeys([*forms, *target.get(label, ())]))
        return replace(self, translations=translations,
                       vocabulary={lang: table for lang, table in vocabulary.items() if table})

    def mapping_to(self, other: str) -> dict[str, dict[str, float]]:
        """The explicit table label -> {label of `other`: weight}; ConfigError naming the available ones."""
        if other not in self.mappings:
            raise ConfigError(
                f"no mapping from scheme {self.name!r} to {other!r}; available: {sorted(self.mappings) or 'none'}. "
                "Add one under 'mappings' in the scheme file."
            )
        return self.mappings[other]

    def to_dict(self) -> dict[str, Any]:
        """Everything the scheme holds, as JSON-ready data (what a KB manifest embeds); `from_dict` reads it."""
        return {
            "name": self.name,
            "labels": list(self.labels),
            "synonyms": {k: list(v) for k, v in self.synonyms.items()},
            "translations": {lang: {k: list(v) for k, v in t.items()} for lang, t in self.translations.items()},
            "descriptions": dict(self.descriptions),
            "quadrants": {k: list(v) for k, v in self.quadrants.items()},
            "mappings": self.mappings,
            "description": self.description,
            "concepts": dict(self.concepts),
            "vocabulary": {lang: {k: list(v) for k, v in t.items()} for lang, t in self.vocabulary.items()},
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str = "<dict>") -> EmotionScheme:
        """A scheme from its dict form (a scheme file or `to_dict`); `source` names it in error messages."""
        try:
            name = str(raw["name"])
            labels = tuple(str(x) for x in raw["labels"])
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"{source}: a label scheme needs 'name' and 'labels' (a list of strings)") from exc
        mappings = raw.get("mappings", {}) or {}
        for target, table in mappings.items():
            for src, dist in table.items():
                if src not in labels:
                    raise ConfigError(f"{source}: mapping to {target!r} names unknown source label {src!r}")
                if abs(sum(dist.values()) - 1.0) > 1e-6:
                    raise ConfigError(f"{source}: mapping {src!r} -> {target!r} weights must sum to 1, got {dist}")
        return cls(
            name=name,
            labels=labels,
            synonyms={k: tuple(v) for k, v in (raw.get("synonyms") or {}).items()},
            translations={
                lang: {k: tuple(v) for k, v in t.items()} for lang, t in (raw.get("translations") or {}).items()
            },
            descriptions=dict(raw.get("descriptions") or {}),
            quadrants={k: tuple(v) for k, v in (raw.get("quadrants") or {}).items()},
            mappings={
                t: {s: {k: float(w) for k, w in d.items()} for s, d in tab.items()} for t, tab in mappings.items()
            },
            description=str(raw.get("description", "")),
            concepts={str(k): str(v) for k, v in (raw.get("concepts") or {}).items()},
            vocabulary={
                lang: {k: tuple(v) for k, v in t.items()} for lang, t in (raw.get("vocabulary") or {}).items()
            },
        )


_CACHE: dict[str, EmotionScheme] = {}


def list_schemes() -> list[str]:
    """The names of the built-in schemes."""
    return list(_BUILTIN)


def get_scheme(name_or_path: str | EmotionScheme) -> EmotionScheme:
    """A built-in scheme by name, a scheme file (JSON, or text with one label per line), or a comma list."""
    if isinstance(name_or_path, EmotionScheme):
        return name_or_path
    key = str(name_or_path)
    if key in _CACHE:
        return _CACHE[key]
    if key in _BUILTIN:
        raw = json.loads(resources.files("culturekb.data").joinpath(f"schemes/{key}.json").read_text("utf-8"))
        scheme = attach_vocabularies(EmotionScheme.from_dict(raw, source=f"culturekb/data/schemes/{key}.json"))
    elif Path(key).is_file():
        scheme = load_scheme(key)
    elif "," in key:
        scheme = scheme_from_labels([p for p in key.split(",") if p.strip()])
    else:
        raise ConfigError(
            f"unknown label scheme {key!r}; use one of {list(_BUILTIN)}, a path to a scheme file "
            "(JSON or one label per line), or a comma-separated label list"
        )
    _CACHE[key] = scheme
    return scheme


def load_scheme(path: str | Path) -> EmotionScheme:
    """Load a user-defined scheme: JSON like the packaged ones, or plain text with one label per line.

    Labels are tied to the built-in vocabularies (see the module docstring) unless the JSON says
    `"vocabularies": false`; the table of ties is logged once."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"scheme file {path} does not exist") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not valid UTF-8; re-save it as UTF-8") from exc
    if path.suffix == ".json":
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: invalid JSON in scheme file ({exc.msg} at line {exc.lineno})") from exc
        scheme = EmotionScheme.from_dict(raw, source=str(path))
        if isinstance(raw, dict) and raw.get("vocabularies", True) is False:
            return scheme
        return attach_vocabularies(scheme, log_table=True)
    labels = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return scheme_from_labels(labels, name=path.stem)


def scheme_from_labels(labels: list[str], name: str = "custom", vocabularies: bool = True) -> EmotionScheme:
    """A scheme from a label list; with `vocabularies`, labels that name a vocabulary concept get its words in
    every shipped language (the table of ties is logged once)."""
    clean = [str(x).strip() for x in labels if str(x).strip()]
    if len(clean) < 2:
        raise ConfigError(f"a label scheme needs at least two labels, got {clean}")
    scheme = EmotionScheme(name=name, labels=tuple(clean))
    return attach_vocabularies(scheme, log_table=True) if vocabularies else scheme


# -- vocabularies -------------------------------------------------------------------------------------------------

_LOGGED_TABLES: set[tuple[str, tuple[str, ...]]] = set()


def attach_vocabularies(scheme: EmotionScheme, log_table: bool = False) -> EmotionScheme:
    """`scheme` with the vocabulary words of its labels' concepts as its `vocabulary` (language -> label -> words).

    A label takes its concept's words and those of the concept's `also` neighbours that no other label of the
    scheme holds. A word that is already one of the scheme's own words, or that two labels' concepts claim at the
    same rank in one language, is left out, so within a language every surface form names one label (across
    languages a word may name two: the answer's language decides, see `culturekb.inference.parsing`).
    """
    if scheme.vocabulary:  # already attached (a scheme saved with its vocabulary, e.g. in a KB manifest)
        return scheme
    ties = match_concepts(scheme.labels, scheme.concepts)
    if not ties:
        if log_table:
            _log_ties(scheme, ties, {})
        return scheme
    catalogue = concept_catalogue()
    held = {concept for concept, _ in ties.values()}
    sources: dict[str, list[tuple[str, int]]] = {}
    for label, (concept, _) in ties.items():
        sources[label] = [(concept, 0)] + [(a, 1) for a in catalogue[concept].also if a not in held]
    own: dict[str, set[str]] = {}
    for lab in scheme.labels:
        own.setdefault(normalise_form(lab), set()).add(lab)
    for lab, syns in scheme.synonyms.items():
        for w in syns:
            own.setdefault(normalise_form(w), set()).add(lab)
    for table in scheme.translations.values():
        for lab, words in table.items():
            for w in words:
                own.setdefault(normalise_form(w), set()).add(lab)
    # every candidate form, per language: (language, form) -> {label: best rank}. The same word may name different
    # labels in two languages (ja 愉快 amusement, zh 愉快 happiness): the answer's language decides.
    ranks: dict[tuple[str, str], dict[str, int]] = {}
    per_lang: dict[str, list[tuple[str, str, str]]] = {}  # language -> [(label, form as written, key)]
    for lang in vocabulary_languages():
        vocab = load_vocabulary(lang)
        rows = per_lang.setdefault(lang, [])
        for label, srcs in sources.items():
            for concept, rank in srcs:
                for form in vocab.forms.get(concept, ()):
                    key = normalise_form(form)
                    best = ranks.setdefault((lang, key), {})
                    best[label] = min(rank, best.get(label, rank))
                    rows.append((label, form, key))
    owner: dict[tuple[str, str], str | None] = {}
    for (lang, key), by_label in ranks.items():
        if key in own:
            continue
        top = min(by_label.values())
        winners = [lab for lab, r in by_label.items() if r == top]
        owner[(lang, key)] = winners[0] if len(winners) == 1 else None
    vocabulary: dict[str, dict[str, list[str]]] = {}
    added: dict[str, int] = {}
    for lang, rows in per_lang.items():
        target = vocabulary.setdefault(lang, {})
        seen: set[str] = set()
        for label, form, key in rows:
            if owner.get((lang, key)) != label or key in seen or key in own:
                continue
            target.setdefault(label, []).append(form)
            seen.add(key)
            added[label] = added.get(label, 0) + 1
    result = EmotionScheme(
        name=scheme.name, labels=scheme.labels, synonyms=dict(scheme.synonyms), translations=dict(scheme.translations),
        descriptions=dict(scheme.descriptions), quadrants=dict(scheme.quadrants), mappings=scheme.mappings,
        description=scheme.description, concepts={lab: concept for lab, (concept, _) in ties.items()},
        vocabulary={lang: {lab: tuple(v) for lab, v in t.items()} for lang, t in vocabulary.items() if t},
    )
    if log_table:
        _log_ties(result, ties, added)
    return result


def _log_ties(scheme: EmotionScheme, ties: dict[str, tuple[str, str]], added: dict[str, int]) -> None:
    """Log, once per label set, which vocabulary concept each label took and how many words it gained."""
    key = (scheme.name, scheme.labels)
    if key in _LOGGED_TABLES:
        return
    _LOGGED_TABLES.add(key)
    width = max(len(lab) for lab in scheme.labels)
    rows = [f"  {'label':<{width}}  concept (matched by) -> words added in {len(vocabulary_languages())} languages"]
    for lab in scheme.labels:
        if lab in ties:
            concept, how = ties[lab]
            rows.append(f"  {lab:<{width}}  {concept} ({how}) -> {added.get(lab, 0)}")
        else:
            rows.append(f"  {lab:<{width}}  - (no vocabulary: only the label itself and the scheme's own words)")
    missing = [lab for lab in scheme.labels if lab not in ties]
    head = f"label scheme {scheme.name!r}: labels tied to the built-in label vocabularies"
    if missing:
        log.warning(
            "%s; %d label(s) have none, so answers in other languages cannot name them: give 'translations' or "
            "'concepts' for them in a JSON scheme file\n%s", head, len(missing), "\n".join(rows),
        )
    else:
        log.info("%s\n%s", head, "\n".join(rows))


def map_distribution(dist: dict[str, float], source: EmotionScheme, target: EmotionScheme) -> dict[str, float]:
    """Map a distribution over `source` labels to `target` labels through the explicit mapping table."""
    table = source.mapping_to(target.name)
    out = dict.fromkeys(target.labels, 0.0)
    for lab, mass in dist.items():
        for tgt, w in table.get(lab, {}).items():
            out[tgt] += mass * w
    return out
