"""Building a knowledge base (paper steps 1-4): concepts, association, rationales, judges, validation."""

from culturekb.builders.base import ConceptExtractor, Judge, JudgeInput, RationaleGenerator, RationaleRequest

# --- begin: concept extraction, rationales, judges (normalise.py, concepts.py, rationales.py, judges.py) -------
# Light imports only: torch, open_clip, Pillow and sentence-transformers are imported inside the classes.
from culturekb.builders.concepts import (
    ClipConceptExtractor,
    PrecomputedConcepts,
    TextConceptExtractor,
    VLMConceptExtractor,
    make_concept_extractor,
)
from culturekb.builders.judges import LexiconJudge, LLMJudge, PrototypeJudge, make_judge
from culturekb.builders.normalise import normalise_concept
from culturekb.builders.rationales import ExtractiveRationaleGenerator, LLMRationaleGenerator

# --- end: concept extraction, rationales, judges ----------------------------------------------------------------

__all__ = [
    "ConceptExtractor",
    "RationaleGenerator",
    "RationaleRequest",
    "Judge",
    "JudgeInput",
    # --- begin: concept extraction, rationales, judges
    "normalise_concept",
    "PrecomputedConcepts",
    "TextConceptExtractor",
    "VLMConceptExtractor",
    "ClipConceptExtractor",
    "make_concept_extractor",
    "ExtractiveRationaleGenerator",
    "LLMRationaleGenerator",
    "LexiconJudge",
    "PrototypeJudge",
    "LLMJudge",
    "make_judge",
    # --- end: concept extraction, rationales, judges
]
