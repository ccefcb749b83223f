"""Regional cues: concepts of a narrative or question, looked up in the target culture, rendered as a block.

The block is what Cedar and RICE-VL runs add to a prompt. Its wording is data: the block template
`culturekb/data/prompts/cues.<language>.txt` (placeholders {culture}, {items}) and the line template
`cue_item.<language>.txt` (placeholders {concept}, {query}, {label}, {share}, {support}, {rationale}); a
user's own `.txt` files can be given by path. No match gives an empty block (the prompt goes without one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from culturekb.errors import ConfigError
from culturekb.kb.cultures import default_registry
from culturekb.kb.schema import Sample
from culturekb.retrieval.retriever import Match, Retriever
from culturekb.text.concepts import TextConceptExtractor
from culturekb.text.prompts import PromptTemplate, load_prompt

__all__ = ["CueBlock", "cues", "render_cues"]

_ITEM_FIELDS = ("concept", "query", "label", "share", "support", "rationale")


@dataclass(frozen=True)
class CueBlock:
    """The rendered block (`text`, "" when nothing matched), the matches used and the concepts queried."""

    text: str
    matches: tuple[Match, ...]
    concepts: tuple[str, ...]
    template_id: str = ""

    def __bool__(self) -> bool:
        return bool(self.matches)


def _templates(block: str | Path, item: str | Path, language: str) -> tuple[PromptTemplate, PromptTemplate]:
    return (
        load_prompt(block, language, required=("culture", "items")),
        load_prompt(item, language, required=("concept", "label"), allowed=_ITEM_FIELDS),
    )


def _display(culture: str) -> str:
    reg = default_registry()
    return reg.resolve(culture).name if culture in reg else culture


def render_cues(
    matches: Sequence[Match],
    culture: str,
    language: str = "en",
    block_template: str | Path = "cues",
    item_template: str | Path = "cue_item",
) -> tuple[str, str]:
    """(text, template id) of a cue block for these matches; ("", id) when there are none."""
    block, item = _templates(block_template, item_template, language)
    tid = f"{block.id}+{item.id}"
    if not matches:
        return "", tid
    lines = []
    for m in matches:
        t = m.tuple
        share = t.distribution.get(t.label)
        lines.append(
            item.fill(
                {
                    "concept": t.concept,
                    "query": m.query,
                    "label": t.label,
                    "share": f"{share:.0%}" if isinstance(share, int | float) else "n/a",
                    "support": t.support,
                    "rationale": t.rationales[0] if t.rationales else "",
                }
            ).rstrip()
        )
    return block.render(culture=_display(culture), items="\n".join(lines)).rstrip() + "\n", tid


def cues(
    text_or_concepts: str | Sequence[str],
    culture: str,
    retriever: Retriever,
    extractor: TextConceptExtractor | None = None,
    max_items: int = 5,
    *,
    tau: float | None = None,
    cross_culture: bool | str | Sequence[str] = False,
    language: str = "en",
    block_template: str | Path = "cues",
    item_template: str | Path = "cue_item",
) -> CueBlock:
    """Cue block for a narrative/question (concepts extracted with `extractor`, default TextConceptExtractor)
    or for a list of concepts, looked up in `culture` with one batched lookup.

    At most `max_items` distinct tuples are kept, in the extractor's salience order (list order for a list).
    """
    if not isinstance(max_items, int) or max_items < 1:
        raise ConfigError(f"max_items must be a positive integer; got {max_items!r}")
    target = retriever.resolve_culture(culture)
    if isinstance(text_or_concepts, str):
        ext = extractor or TextConceptExtractor(fields=("text",))
        concepts = (
            ext.extract_one(Sample(id="cue-query", culture=target, text=text_or_concepts))
            if text_or_concepts.strip()
            else []
        )
    else:
        concepts = list(text_or_concepts)
    matches: list[Match] = []
    seen: set[str] = set()
    if concepts:
        for m in retriever.lookup(concepts, target, tau=tau, cross_culture=cross_culture):
            if m is not None and m.tuple.id not in seen:
                seen.add(m.tuple.id)
                matches.append(m)
            if len(matches) >= max_items:
                break
    text, tid = render_cues(matches, target, language, block_template, item_template)
    return CueBlock(text, tuple(matches), tuple(concepts), tid)
