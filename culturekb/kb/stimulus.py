"""What a KB's samples are (its `stimulus_kind`): artworks, images, texts or scenarios.

The kind is decided once, at build time, from the training samples (`detect_stimulus_kind`; a build may name it:
``culturekb build --stimulus-kind``) and stored in the manifest's build config. Prompts, knowledge headers and
reports read it (`kb_stimulus_kind`) so a text dataset is never presented as "annotated artworks". The words for
each kind, per prompt language, are data: ``culturekb/data/prompts/stimulus_kinds.json`` (the phrase that fills
``{stimuli}`` in a knowledge header, and the plural noun a report uses).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from culturekb.errors import ConfigError

if TYPE_CHECKING:
    from culturekb.kb.schema import Sample
    from culturekb.kb.store import KnowledgeBase

__all__ = ["DEFAULT_STIMULUS_KIND", "STIMULUS_KINDS", "check_stimulus_kind", "detect_stimulus_kind",
           "kb_stimulus_kind", "stimulus_noun", "stimulus_phrase"]

STIMULUS_KINDS = ("artworks", "images", "texts", "scenarios")
DEFAULT_STIMULUS_KIND = "artworks"
"""The kind of a KB built before the kind was recorded (every such build was ArtEmis-style)."""


def check_stimulus_kind(kind: str) -> str:
    """`kind` if it is one of `STIMULUS_KINDS`, else a ConfigError listing them."""
    if kind not in STIMULUS_KINDS:
        raise ConfigError(f"unknown stimulus kind {kind!r}; use one of {', '.join(STIMULUS_KINDS)}")
    return kind


def detect_stimulus_kind(samples: Iterable[Sample]) -> str:
    """The kind of `samples`: ``artworks`` when any names a WikiArt style (``art_style``, ArtEmis and ArtELingo
    layouts, images present or not), ``images`` when any has an image, else ``texts``. ``scenarios`` is never
    guessed: a build names it."""
    has_image = False
    for s in samples:
        if s.metadata.get("art_style"):
            return "artworks"
        has_image = has_image or bool(s.image)
    return "images" if has_image else "texts"


def kb_stimulus_kind(kb: KnowledgeBase | Mapping[str, Any] | None) -> str:
    """The kind recorded in a KB's build config (or a build config itself); `DEFAULT_STIMULUS_KIND` when none."""
    config = kb if isinstance(kb, Mapping) else getattr(kb, "build_config", None)
    kind = config.get("stimulus_kind") if isinstance(config, Mapping) else None
    return kind if kind in STIMULUS_KINDS else DEFAULT_STIMULUS_KIND


@lru_cache(maxsize=1)
def _words() -> dict[str, Any]:
    text = resources.files("culturekb.data").joinpath("prompts/stimulus_kinds.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def stimulus_phrase(kind: str, language: str) -> str:
    """The phrase that fills ``{stimuli}`` in a knowledge header of `language` (English when the language has
    none): "annotated artworks" and its equivalents, grammar included."""
    table = _words()["phrases"][check_stimulus_kind(kind)]
    return str(table.get(language, table["en"]))


def stimulus_noun(kind: str, language: str = "en") -> str:
    """The plural noun for `kind` in `language` (English when the language has none): "texts", "画像"."""
    table = _words()["nouns"][check_stimulus_kind(kind)]
    return str(table.get(language, table["en"]))
