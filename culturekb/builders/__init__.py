"""Building a knowledge base (paper steps 1-4): concepts, association, rationales, judges, validation.

Light imports only: torch, open_clip, Pillow and sentence-transformers are imported inside the classes.
"""

from culturekb.builders.association import Association, associate
from culturekb.builders.base import ConceptExtractor, Judge, JudgeInput, RationaleGenerator, RationaleRequest
from culturekb.builders.concepts import (
    ClipConceptExtractor,
    PrecomputedConcepts,
    TextConceptExtractor,
    VLMConceptExtractor,
    make_concept_extractor,
)
from culturekb.builders.judges import LexiconJudge, LLMJudge, PrototypeJudge, make_judge
from culturekb.builders.pipeline import BuildComponents, BuildConfig, BuildResult, build_kb, make_components
from culturekb.builders.rationales import ExtractiveRationaleGenerator, LLMRationaleGenerator
from culturekb.builders.review import export_review_queue, import_review_decisions
from culturekb.builders.validation import POLICIES, apply_verdicts, cohen_kappa
from culturekb.text.normalise import normalise_concept

__all__ = [
    "ConceptExtractor",
    "RationaleGenerator",
    "RationaleRequest",
    "Judge",
    "JudgeInput",
    "normalise_concept",
    "PrecomputedConcepts",
    "TextConceptExtractor",
    "VLMConceptExtractor",
    "ClipConceptExtractor",
    "make_concept_extractor",
    "Association",
    "associate",
    "ExtractiveRationaleGenerator",
    "LLMRationaleGenerator",
    "LexiconJudge",
    "PrototypeJudge",
    "LLMJudge",
    "make_judge",
    "POLICIES",
    "apply_verdicts",
    "cohen_kappa",
    "export_review_queue",
    "import_review_decisions",
    "BuildConfig",
    "BuildComponents",
    "BuildResult",
    "build_kb",
    "make_components",
]
