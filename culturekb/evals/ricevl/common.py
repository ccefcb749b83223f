"""What the RICE-VL runs share: the region and its countries, country names in answers, question formats, prompts."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from culturekb.kb.cultures import default_registry
from culturekb.kb.schema import Sample
from culturekb.text.prompts import PromptTemplate, load_prompt

__all__ = [
    "SEA_COUNTRIES",
    "FORMATS",
    "Region",
    "region_from_samples",
    "culture_terms",
    "country_names",
    "mentions",
    "item_counts",
    "load_template",
]

SEA_COUNTRIES: tuple[str, ...] = ("BN", "KH", "ID", "LA", "MY", "MM", "PH", "SG", "TH", "TL", "VN")
FORMATS: tuple[str, ...] = ("qa", "tf", "fill")
"""The VQA question formats: open question, true/false, fill in the blank (each has its own judge rubric)."""


def culture_terms(culture: str) -> tuple[str, list[str]]:
    """(display name, lower-case names that mention it) of a culture id or a declared country name."""
    reg = default_registry()
    if culture in reg:
        c = reg.resolve(culture)
        terms = {c.name.lower(), *(a.lower() for a in c.aliases if len(a) > 3)}
        return c.name, sorted(terms)
    return culture, [culture.lower()]


def country_names(countries: Sequence[str]) -> dict[str, str]:
    """Display name of each distinct country id, in sorted order (the reports' ``country_names``)."""
    return {c: culture_terms(c)[0] for c in sorted(set(countries))}


def item_counts(samples: Sequence[Sample]) -> dict[str, Any]:
    """What a RICE-VL report says about its items: the countries' display names and the item counts per country
    and per category (sorted)."""
    countries = [s.culture for s in samples]
    categories = [str(s.metadata.get("category")) for s in samples]
    return {"country_names": country_names(countries), "n_per_country": dict(sorted(Counter(countries).items())),
            "n_per_category": dict(sorted(Counter(categories).items()))}


def mentions(text: str, terms: Sequence[str]) -> bool:
    """Whether `text` names any of `terms` as a whole word (case-insensitive; empty terms never match)."""
    low = text.lower()
    return any(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", low) for t in terms if t)


@dataclass(frozen=True)
class Region:
    """The region the ``sea`` framing names, and the countries that earn CI = 1 when named instead."""

    name: str = "Southeast Asia"
    countries: tuple[str, ...] = SEA_COUNTRIES

    @property
    def country_names(self) -> list[str]:
        """Display names of the region's countries, in the region's order."""
        return [culture_terms(c)[0] for c in self.countries]

    def describe(self) -> str:
        """The countries as one comma-separated line, for prompts."""
        return ", ".join(self.country_names)


def region_from_samples(samples: Sequence[Sample], name: str | None = None) -> Region:
    """The SEA region when every item's country is one of the 11, else a region of the data's own countries."""
    countries = sorted({s.culture for s in samples})
    if all(c in SEA_COUNTRIES for c in countries):
        return Region(name or "Southeast Asia", SEA_COUNTRIES)
    return Region(name or "the region", tuple(countries))


def load_template(name: str, required: tuple[str, ...], allowed: tuple[str, ...],
                  template_dir: str | Path | None) -> PromptTemplate:
    """An English RICE-VL prompt template by name, checked for its placeholders (user overrides in `template_dir`)."""
    return load_prompt(name, "en", required=required, allowed=allowed, override_dir=template_dir)
