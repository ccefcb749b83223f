"""Cue blocks for benchmark items, shared by the Cedar and RICE-VL runs: one item's block and why it is empty."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.retrieval.cue_blocks import CueBlock, cues
from culturekb.retrieval.retriever import Retriever

__all__ = ["cue_block_for"]


def cue_block_for(concepts: Sequence[str], culture: str, retriever: Retriever, *, language: str = "en",
                  max_items: int = 5, tau: float | None = None, block_template: str | Path = "cues",
                  item_template: str | Path = "cue_item") -> tuple[CueBlock, str]:
    """(cue block, status) for one item: status ``matched``, ``no-match``, ``no-concepts`` or
    ``culture-not-in-kb`` (then the block is empty; the item goes without cues, it is not dropped).

    A template missing in `language` falls back to the English one.
    """
    if not concepts:
        return CueBlock("", (), ()), "no-concepts"
    try:
        retriever.resolve_culture(culture)
    except ConfigError:
        return CueBlock("", (), tuple(concepts)), "culture-not-in-kb"
    try:
        block = cues(list(concepts), culture, retriever, max_items=max_items, tau=tau, language=language,
                     block_template=block_template, item_template=item_template)
    except ConfigError:
        if language == "en":
            raise
        block = cues(list(concepts), culture, retriever, max_items=max_items, tau=tau, language="en",
                     block_template=block_template, item_template=item_template)
    return block, ("matched" if block else "no-match")
