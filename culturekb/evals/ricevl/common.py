"""What the RICE-VL runs share: the region and its countries, country names in answers, question formats, prompts.

Country names come from the run's culture registry (the cue KB's, `RunContext.cultures`), which the runners
hold and the `Region` carries; without one, the packaged cultures (`culturekb.kb.cultures.packaged_registry`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from culturekb.kb.cultures import CultureRegistry, packaged_registry
from culturekb.kb.schema import Sample
from culturekb.text.prompts import PromptTemplate, resolve_prompt

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


def culture_terms(culture: str, registry: CultureRegistry) -> tuple[str, list[str]]:
    """(display name, lower-case names that mention it) of a culture id or a country name of `registry`."""
    if culture in registry:
        c = registry.resolve(culture)
        terms = {c.name.lower(), *(a.lower() for a in c.aliases if len(a) > 3)}
        return c.name, sorted(terms)
    return culture, [culture.lower()]


def country_names(countries: Sequence[str], registry: CultureRegistry) -> dict[str, str]:
    """Display name of each distinct country id, in sorted order (the reports' ``country_names``)."""
    return {c: culture_terms(c, registry)[0] for c in sorted(set(countries))}


def item_counts(samples: Sequence[Sample], registry: CultureRegistry) -> dict[str, Any]:
    """What a RICE-VL report says about its items: the countries' display names (in `registry`) and the item
    counts per country and per category (sorted)."""
    countries = [s.culture for s in samples]
    categories = [str(s.metadata.get("category")) for s in samples]
    return {"country_names": country_names(countries, registry),
            "n_per_country": dict(sorted(Counter(countries).items())),
            "n_per_category": dict(sorted(Counter(categories).items()))}


def mentions(text: str, terms: Sequence[str]) -> bool:
    """Whether `text` names any of `terms` as a whole word (case-insensitive; empty terms never match)."""
    low = text.lower()
    return any(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", low) for t in terms if t)


@dataclass(frozen=True)
class Region:
    """The region the ``sea`` framing names, and the countries that earn CI = 1 when named instead.

    `cultures`: the registry the countries' names come from (the run's; None: the packaged cultures).
    """

    name: str = "Southeast Asia"
    countries: tuple[str, ...] = SEA_COUNTRIES
    cultures: CultureRegistry | None = field(default=None, compare=False, repr=False)

    @property
    def registry(self) -> CultureRegistry:
        """The registry the region names its countries from."""
        return self.cultures if self.cultures is not None else packaged_registry()

    def terms(self, culture: str) -> tuple[str, list[str]]:
        """(display name, lower-case names that mention it) of `culture`, in the region's registry."""
        return culture_terms(culture, self.registry)

    @property
    def country_names(self) -> list[str]:
        """Display names of the region's countries, in the region's order."""
        registry = self.registry
        return [culture_terms(c, registry)[0] for c in self.countries]

    def describe(self) -> str:
        """The countries as one comma-separated line, for prompts."""
        return ", ".join(self.country_names)


def region_from_samples(samples: Sequence[Sample], name: str | None = None,
                        cultures: CultureRegistry | None = None) -> Region:
    """The SEA region when every item's country is one of the 11, else a region of the data's own countries
    (named from `cultures`)."""
    countries = sorted({s.culture for s in samples})
    if all(c in SEA_COUNTRIES for c in countries):
        return Region(name or "Southeast Asia", SEA_COUNTRIES, cultures)
    return Region(name or "the region", tuple(countries), cultures)


def load_template(name: str, required: tuple[str, ...], allowed: tuple[str, ...],
                  template_dir: str | Path | None) -> PromptTemplate:
    """An English RICE-VL prompt template by name, checked for its placeholders (user overrides in `template_dir`)."""
    return resolve_prompt(name, "en", required=required, allowed=allowed, template_dir=template_dir)
