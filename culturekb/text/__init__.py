"""The text layer: concept normalisation, prompt templates as data, and the offline concept extractors.

It sits on the ground floor beside `culturekb.kb`: builders, retrieval, inference and evals all import it, and
it imports none of them.
"""

from culturekb.text.concepts import ConceptExtractor, PrecomputedConcepts, TextConceptExtractor
from culturekb.text.normalise import MAX_CONCEPT_CHARS, english_stopwords, normalise_concept, singularise
from culturekb.text.prompts import (
    PROMPT_LANGUAGES,
    PromptCheck,
    PromptTemplate,
    available_prompt_languages,
    load_prompt,
    template_check_status,
)

__all__ = [
    "ConceptExtractor",
    "PrecomputedConcepts",
    "TextConceptExtractor",
    "MAX_CONCEPT_CHARS",
    "english_stopwords",
    "normalise_concept",
    "singularise",
    "PROMPT_LANGUAGES",
    "PromptCheck",
    "PromptTemplate",
    "available_prompt_languages",
    "load_prompt",
    "template_check_status",
]
