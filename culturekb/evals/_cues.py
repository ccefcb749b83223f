"""Cue blocks for benchmark items, shared by the Cedar and RICE-VL runs: the items' test-time concepts, and one
item's block and why it is empty.

The block itself comes from the knowledge service (`culturekb.inference.injection`), the same one the predictors,
the harness adapters and the HTTP API render through; this module only fixes the benchmark defaults (the cue
templates, `max_items` tuples in concept order) and never drops an item whose culture the KB lacks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from culturekb.errors import CultureKBError
from culturekb.inference.injection import CUES, BlockTemplate, Budget, KnowledgeBlock, KnowledgeService, cue_budget
from culturekb.kb.schema import Sample
from culturekb.retrieval.retriever import Retriever
from culturekb.text.concepts import STIMULUS_FIELDS, ConceptExtractor, TextConceptExtractor

__all__ = ["cue_block_for", "item_concepts"]

log = logging.getLogger(__name__)


def item_concepts(samples: Sequence[Sample], text: ConceptExtractor | None = None,
                  image: ConceptExtractor | None = None) -> list[list[str]]:
    """Each item's test-time concepts: the `image` extractor's for items with an image (first), then `text`'s.

    `text` defaults to the offline extractor over the stimulus fields (`STIMULUS_FIELDS`: title, text or
    narrative, question; never explanations or labels), each text read in its own language, as the build reads
    them. A failed image extraction (a model call, an unreadable image) is logged and those items keep their text
    concepts; nothing is dropped.
    """
    text = text or TextConceptExtractor(fields=STIMULUS_FIELDS)
    out = [list(c) for c in text.extract(list(samples))]
    idx = [i for i, s in enumerate(samples) if s.image] if image is not None else []
    if image is None or not idx:
        return out
    try:
        found = image.extract([samples[i] for i in idx])
    except CultureKBError as exc:
        log.warning("image concept extraction failed for %d items (%s); they use text concepts only", len(idx), exc)
        found = [[] for _ in idx]
    for i, cs in zip(idx, found, strict=True):
        out[i] = list(dict.fromkeys([*cs, *out[i]]))
    return out


def cue_block_for(
    concepts: Sequence[str],
    culture: str,
    retriever: Retriever,
    *,
    language: str = "en",
    max_items: int = 5,
    template: BlockTemplate = CUES,
    budget: Budget | None = None,
    service: KnowledgeService | None = None,
) -> tuple[KnowledgeBlock, str]:
    """(cue block, status) for one item: status ``matched``, ``no-match``, ``no-concepts`` or
    ``culture-not-in-kb`` (then the block is empty; the item goes without cues, it is not dropped).

    `budget` defaults to `cue_budget(max_items)`; a template missing in `language` falls back to English.
    `service`: a service to reuse (else one over `retriever`, whose tau applies).
    """
    service = service or KnowledgeService(retriever)
    block = service.inject(list(concepts), culture, budget=budget or cue_budget(max_items), template=template,
                           language=language, on_unknown_culture="skip")
    return block, block.status
