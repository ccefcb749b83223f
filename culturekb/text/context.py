"""Concepts a sample carries in its metadata rather than its text: today its art style.

The build adds them to each training sample's extracted concepts and the Augmenter to each test sample's, so
what the KB knows about a style ("expressionism": mostly sadness) is found for test paintings of that style.
"""

from __future__ import annotations

from culturekb.kb.schema import Sample
from culturekb.text.normalise import normalise_concept

__all__ = ["context_concepts"]


def context_concepts(sample: Sample) -> list[str]:
    """The normalised art style of a sample (``Post_Impressionism`` -> ``post impressionism``), if it has one."""
    style = sample.metadata.get("art_style")
    if not style:
        return []
    concept = normalise_concept(str(style).replace("_", " "))
    return [concept] if concept else []
