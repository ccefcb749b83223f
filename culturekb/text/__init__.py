"""The text layer: concept normalisation, prompt templates as data, word lists per language, and the offline concept
extractors.

It sits on the ground floor beside `culturekb.kb`: builders, retrieval, inference and evals all import it, and
it imports none of them.
"""

from culturekb.text.concepts import (
    BUILD_FIELDS,
    STIMULUS_FIELDS,
    ConceptExtractor,
    PrecomputedConcepts,
    TextConceptExtractor,
    guess_language,
    mentions,
)
from culturekb.text.languages import language_rules, supported_languages
from culturekb.text.normalise import MAX_CONCEPT_CHARS, english_stopwords, normalise_concept, singularise
from culturekb.text.prompts import (
    PROMPT_LANGUAGES,
    PromptCheck,
    PromptTemplate,
    available_prompt_languages,
    load_prompt,
    resolve_prompt,
    template_check_status,
)

__all__ = [
    "BUILD_FIELDS",
    "STIMULUS_FIELDS",
    "guess_language",
    "mentions",
    "language_rules",
    "supported_languages",
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
    "resolve_prompt",
    "template_check_status",
]
