"""Label schemes: ordered label sets with synonyms, translations, quadrants and mappings, stored as data."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from culturekb.errors import ConfigError, DataError

__all__ = ["EmotionScheme", "get_scheme", "list_schemes", "load_scheme", "scheme_from_labels", "map_distribution"]

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

    def __post_init__(self) -> None:
        if not self.labels:
            raise ConfigError(f"label scheme {self.name!r} has no labels; give at least two labels")
        if len(set(self.labels)) != len(self.labels):
            raise ConfigError(f"label scheme {self.name!r} repeats a label: {list(self.labels)}")
        for section, keys in (("synonyms", self.synonyms), ("descriptions", self.descriptions)):
            extra = set(keys) - set(self.labels)
            if extra:
                raise ConfigError(
                    f"label scheme {self.name!r}: {section} name labels not in the scheme: {sorted(extra)}"
                )
        for lang, table in self.translations.items():
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
        """Exact match of `text` to a label, synonym or translation (case- and separator-insensitive)."""
        return self._lookup().get(_norm(text))

    def _lookup(self) -> dict[str, str]:
        cache = self.__dict__.get("_lookup_cache")
        if cache is None:
            cache = {}
            for lab in self.labels:
                cache[_norm(lab)] = lab
            for lab, syns in self.synonyms.items():
                for s in syns:
                    cache.setdefault(_norm(s), lab)
            for table in self.translations.values():
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
        for q, labs in self.quadrants.items():
            if label in labs:
                return q
        return None

    def translate(self, label: str, language: str) -> str:
        """The first translation of `label` into `language`, or the English label."""
        words = self.translations.get(language, {}).get(label)
        return words[0] if words else label

    def mapping_to(self, other: str) -> dict[str, dict[str, float]]:
        if other not in self.mappings:
            raise ConfigError(
                f"no mapping from scheme {self.name!r} to {other!r}; available: {sorted(self.mappings) or 'none'}. "
                "Add one under 'mappings' in the scheme file."
            )
        return self.mappings[other]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "labels": list(self.labels),
            "synonyms": {k: list(v) for k, v in self.synonyms.items()},
            "translations": {lang: {k: list(v) for k, v in t.items()} for lang, t in self.translations.items()},
            "descriptions": dict(self.descriptions),
            "quadrants": {k: list(v) for k, v in self.quadrants.items()},
            "mappings": self.mappings,
            "description": self.description,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any], source: str = "<dict>") -> EmotionScheme:
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
        )


_CACHE: dict[str, EmotionScheme] = {}


def list_schemes() -> list[str]:
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
        scheme = EmotionScheme.from_dict(raw, source=f"culturekb/data/schemes/{key}.json")
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
    """Load a user-defined scheme: JSON like the packaged ones, or plain text with one label per line."""
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
        return EmotionScheme.from_dict(raw, source=str(path))
    labels = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return scheme_from_labels(labels, name=path.stem)


def scheme_from_labels(labels: list[str], name: str = "custom") -> EmotionScheme:
    clean = [str(x).strip() for x in labels if str(x).strip()]
    if len(clean) < 2:
        raise ConfigError(f"a label scheme needs at least two labels, got {clean}")
    return EmotionScheme(name=name, labels=tuple(clean))


def map_distribution(dist: dict[str, float], source: EmotionScheme, target: EmotionScheme) -> dict[str, float]:
    """Map a distribution over `source` labels to `target` labels through the explicit mapping table."""
    table = source.mapping_to(target.name)
    out = dict.fromkeys(target.labels, 0.0)
    for lab, mass in dist.items():
        for tgt, w in table.get(lab, {}).items():
            out[tgt] += mass * w
    return out
